"""Showing text that came from users, scripts and traces: literally, and harmlessly.

Names, messages, paths, argv, recorded output and source lines are data, and a trace may
come from a stranger. Two things go wrong when data reaches a terminal:

- control characters act: ``ESC ] 0 ; … BEL`` sets the window title, ``ESC [ 2 J`` clears the
  screen, a lone ``CR`` overwrites what was printed before it;
- Rich and Textual read ``[...]`` as markup: ``[/]`` raises MarkupError and
  ``[batch, seq]`` silently vanishes.

``shown`` answers the first (every control character becomes a visible escape, ``\\x1b``).
Answer the second by never giving user text to a markup parser: build ``rich.text.Text``
objects (``literal`` does both at once) or print with ``markup=False``.

Every layer (the CLI, the debugger, the exporters) uses these two; ``dyngraph/`` imports
nothing from the UI, so they live here.

>>> shown("enc\\x1b]0;pwned\\x07")
'enc\\\\x1b]0;pwned\\\\x07'
>>> shown("two\\nlines\\tok", multiline=True)
'two\\nlines\\tok'
>>> literal("[/enc]").plain
'[/enc]'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.style import Style
    from rich.text import Text

# C0 controls, DEL and C1 controls (0x80-0x9f: a terminal reads 0x9b as ESC [); the
# bidirectional overrides and isolates, which reorder what follows them on screen
# ("Trojan source"); lone surrogates, which no terminal encoding can carry.
_OTHER = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_ONE_LINE = re.compile(f"[\x00-\x1f{_OTHER}]")
_MULTI_LINE = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER}]")  # keeps tab and newline
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object, *, multiline: bool = False) -> str:
    """``text`` safe to show: every control character as a visible escape (``\\x1b``,
    ``\\n``, ``\\u202e``). With ``multiline``, newlines and tabs are kept (recorded
    output, a traceback); without, the result is always one line (a name, a path).

    Not markup-safe by itself: put the result in a ``rich.text.Text`` (see ``literal``).
    """
    if not isinstance(text, str):
        text = str(text)
    pattern = _MULTI_LINE if multiline else _ONE_LINE
    if pattern.search(text) is None:  # the common case costs one scan
        return text
    return pattern.sub(_visible, text)


def literal(text: object, style: str | Style = "", *, multiline: bool = False) -> Text:
    """A ``rich.text.Text`` of ``shown(text)``: shown as written, never read as markup.

    >>> literal("expected shape [batch, seq]").plain
    'expected shape [batch, seq]'
    """
    from rich.text import Text

    return Text(shown(text, multiline=multiline), style)
