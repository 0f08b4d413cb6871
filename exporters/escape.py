"""Escaping user text for DOT, Graphviz HTML-like labels, and SVG/XML.

Module, parameter and tensor names are user data and the SVG is opened in browsers, so
every string that reaches an output goes through one of these functions. The rules:

- DOT quoted strings: ``"`` and ``\\`` are escaped; ``&`` becomes ``&amp;`` because
  Graphviz decodes HTML entities inside ordinary labels and tooltips (a literal ``&lt;``
  in a name would otherwise show as ``<``).
- Control characters are not allowed in XML 1.0 and would make the SVG invalid; they are
  shown as visible escapes (``\\x1b``, ``\\n``) by ``dyngraph.textsafe.shown``, the same
  helper the terminal uses. A name is one line: its newline shows as ``\\n`` and cannot
  start a spoofed line of a tooltip. Only our own tooltips keep their line breaks.

>>> dot_quote('say "hi"')
'"say \\\\"hi\\\\""'
>>> xml_text('"><script>alert(1)</script>')
'&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;'
"""

from __future__ import annotations

import re

from dyngraph.textsafe import shown


def clean(text: str) -> str:
    """One line of user text with every control character (newlines too) made visible."""
    return shown(text)


def _dot_escape(text: str, multiline: bool) -> str:
    text = shown(text, multiline=multiline)
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if '"' in text:
        text = text.replace('"', '\\"')
    if "&" in text:
        text = text.replace("&", "&amp;")
    return text


def dot_text(text: str) -> str:
    """Escape ``text`` for the inside of a DOT double-quoted label/tooltip (no quotes added)."""
    return _dot_escape(text, multiline=False)


def dot_multiline(text: str) -> str:
    """A quoted DOT string of ``text`` whose newlines become Graphviz line breaks (for our
    own multi-line text: build it from ``clean``ed user parts)."""
    return '"' + _dot_escape(text, multiline=True).replace("\n", "\\n") + '"'


def dot_quote(text: str) -> str:
    """A DOT double-quoted string whose displayed value is exactly ``text``."""
    return '"' + dot_text(text) + '"'


def dot_lines(lines: list[str] | tuple[str, ...]) -> str:
    """A quoted, multi-line DOT label: each line escaped, joined by centred line breaks."""
    return '"' + "\\n".join(dot_text(line) for line in lines) + '"'


def html_text(text: str) -> str:
    """Escape for a Graphviz HTML-like label (``label=<...>``) or for HTML/XML text."""
    text = clean(text)
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def xml_text(text: str) -> str:
    """Escape for XML text or a double-quoted attribute; newlines and tabs are kept (our
    tooltips; a user's name in one goes through ``clean`` first)."""
    text = shown(text, multiline=True)
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    if '"' in text:
        text = text.replace('"', "&quot;")
    return text


def xml_attr(text: str) -> str:
    """Escape for a double-quoted XML attribute value; newlines kept as character refs."""
    return "&#10;".join(html_text(line) for line in text.split("\n"))


_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_]")


def sanitize_id(text: str) -> str:
    """A DOT/SVG-safe identifier fragment: anything but ``[A-Za-z0-9_]`` becomes ``_``."""
    return _UNSAFE_ID.sub("_", text)
