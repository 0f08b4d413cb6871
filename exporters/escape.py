"""Escaping user text for DOT, Graphviz HTML-like labels, and SVG/XML.

Module, parameter and tensor names are user data and the SVG is opened in browsers, so
every string that reaches an output goes through one of these functions. The rules:

- DOT quoted strings: ``"`` and ``\\`` are escaped; ``&`` becomes ``&amp;`` because
  Graphviz decodes HTML entities inside ordinary labels and tooltips (a literal ``&lt;``
  in a name would otherwise show as ``<``).
- Control characters are not allowed in XML 1.0 and would make the SVG invalid; they are
  shown as ``\\xNN``. Lone surrogates become U+FFFD.

>>> dot_quote('say "hi"')
'"say \\\\"hi\\\\""'
>>> xml_text('"><script>alert(1)</script>')
'&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;'
"""

from __future__ import annotations

import re

# Characters XML 1.0 forbids (tab, LF and CR are allowed but we show them too: a name
# with a newline would otherwise break a label across lines), plus lone surrogates.
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    return f"\\x{ord(ch):02x}"


def clean(text: str) -> str:
    """Replace characters no output format can carry with visible escapes."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_visible, text)


def _dot_escape(text: str, control: re.Pattern[str]) -> str:
    if control.search(text) is not None:
        text = control.sub(_visible, text)
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if '"' in text:
        text = text.replace('"', '\\"')
    if "&" in text:
        text = text.replace("&", "&amp;")
    return text


def dot_text(text: str) -> str:
    """Escape ``text`` for the inside of a DOT double-quoted label/tooltip (no quotes added)."""
    return _dot_escape(text, _CONTROL)


_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\ud800-\udfff]")


def dot_multiline(text: str) -> str:
    """A quoted DOT string of ``text`` whose newlines become Graphviz line breaks."""
    return '"' + _dot_escape(text, _CONTROL_BUT_NEWLINE).replace("\n", "\\n") + '"'


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


# XML 1.0 allows tab, LF and CR in text; everything else below 0x20 must go.
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def xml_text(text: str) -> str:
    """Escape for XML text or a double-quoted attribute; newlines are kept (tooltips)."""
    if _XML_INVALID.search(text) is not None:
        text = _XML_INVALID.sub(_visible, text)
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
