"""Issue 11: the one helper every layer uses to show user text (``dyngraph.textsafe``)."""

from __future__ import annotations

import pytest
from rich.console import Console

from dyngraph.textsafe import literal, shown


@pytest.mark.parametrize(("text", "expected"), [
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # sets a terminal's title
    ("\x1b[2J", "\\x1b[2J"),  # clears the screen
    ("a\rb", "a\\rb"),  # overwrites what came before
    ("two\nlines\ttab", "two\\nlines\\ttab"),  # one line: a name cannot spoof a second one
    ("del\x7f c1\x9b2J", "del\\x7f c1\\x9b2J"),  # DEL; C1 CSI (a terminal reads ESC [)
    ("abc\u202eevil", "abc\\u202eevil"),  # a bidi override reorders what follows it
    ("lone \udc80", "lone \\udc80"),  # a surrogate no terminal encoding can carry
    ("ünïcode 名前 ✓ [/enc]", "ünïcode 名前 ✓ [/enc]"),  # printable text is left alone
])
def test_control_characters_become_visible_escapes(text: str, expected: str) -> None:
    assert shown(text) == expected


def test_multiline_keeps_newlines_and_tabs_only() -> None:
    assert shown("a\n\tb\r\x1b[31m", multiline=True) == "a\n\tb\\r\\x1b[31m"


def test_non_strings_are_shown_as_their_str() -> None:
    assert shown(KeyError("[/]")) == "'[/]'"


@pytest.mark.parametrize("text", ["[/]", "[/enc]", "expected shape [batch, seq]",
                                  "[bold red]x[/]", ":fire:"])
def test_literal_is_never_markup(text: str) -> None:
    console = Console(record=True, width=80, color_system=None, emoji=True)
    console.print(literal(text))
    assert console.export_text() == text + "\n"
