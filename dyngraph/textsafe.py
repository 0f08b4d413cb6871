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

# C0 controls, DEL and C1 controls (0x80-0x9f: a terminal reads 0x9b as ESC [); lone
# surrogates, which no terminal encoding can carry; the line and paragraph separators,
# which end a line in some terminals and editors; and every format character (Unicode
# category Cf) and default-ignorable code point, which a terminal draws as nothing or
# uses to reorder what follows: ``enc\u200b.weight`` showed as ``enc.weight``, and the
# bidirectional overrides and isolates (U+202A-202E, 2066-2069) and the marks (U+200E,
# 200F, 061C) rearrange a line ("Trojan source"). (tests/hostile/test_display_textsafe.py
# checks these ranges against the running Python's Unicode database.)
_INVISIBLE = (
    "\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200c\u200e\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0d\ufeff\uffa0\ufff0-\ufffb"
    "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_JOINERS = "\u200d\ufe0e\ufe0f"  # zero-width joiner, text and emoji presentation
_OTHER = f"\x7f-\x9f\ud800-\udfff\u2028\u2029{_INVISIBLE}"
_ONE_LINE = re.compile(f"[\x00-\x1f{_OTHER}{_JOINERS}]")
# Recorded output and tracebacks keep tab and newline, and an emoji its joiners (the
# family in 👨\u200d👩\u200d👧, the colour of ⚠\ufe0f): right after a character outside ASCII,
# where they hide no ASCII name.
_MULTI_LINE = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER}]|(?<![^\x00-\x7f])[{_JOINERS}]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


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
