"""Issue 11: the one helper every layer uses to show user text (``dyngraph.textsafe``)."""

from __future__ import annotations

import unicodedata

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
    # issue 23: drawn as nothing, or reordering the line
    ("enc\u200b.weight", "enc\\u200b.weight"),  # zero width space: showed as enc.weight
    ("a\u200eb\u200fc\u061cd", "a\\u200eb\\u200fc\\u061cd"),  # LRM, RLM, Arabic letter mark
    ("soft\xadhyphen \ufeffbom \u2060wj", "soft\\xadhyphen \\ufeffbom \\u2060wj"),
    ("tag\U000e0041", "tag\\U000e0041"),  # a tag character (5 hex digits: \\U, 8)
    ("line\u2028sep", "line\\u2028sep"),  # a line separator ends a line in some terminals
    ("a\u200db\ufe0f", "a\\u200db\\ufe0f"),  # joiners in a name: escaped, emoji or not
])
def test_control_characters_become_visible_escapes(text: str, expected: str) -> None:
    assert shown(text) == expected


def test_multiline_keeps_newlines_and_tabs_only() -> None:
    assert shown("a\n\tb\r\x1b[31m", multiline=True) == "a\n\tb\\r\\x1b[31m"
    assert shown("x\u200by\u202e", multiline=True) == "x\\u200by\\u202e"


def test_multiline_keeps_an_emojis_joiners_but_not_an_ascii_words() -> None:
    """Recorded output keeps the family in 👨‍👩‍👧 and the colour of ⚠️; a joiner or
    presentation selector after ASCII (where it could hide a name) is escaped."""
    family, warning = "👨\u200d👩\u200d👧", "⚠\ufe0f"
    assert shown(f"{family} {warning}", multiline=True) == f"{family} {warning}"
    assert shown("pass\u200dword a\ufe0f", multiline=True) == "pass\\u200dword a\\ufe0f"


def test_every_format_and_default_ignorable_character_is_escaped() -> None:
    """Every character of Unicode category Cf (from this Python's Unicode database, so a
    newer Unicode is checked too) and every default-ignorable code point (Unicode's
    DerivedCoreProperties.txt, 15.0), in both modes; the joiners after an emoji aside."""
    cf = [c for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    ignorable = [c for a, b in _DEFAULT_IGNORABLE for c in range(a, b + 1)]
    for c in cf + ignorable:
        for multiline in (False, True):
            assert shown(f"a{chr(c)}b", multiline=multiline) != f"a{chr(c)}b", hex(c)


_DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]


def test_non_strings_are_shown_as_their_str() -> None:
    assert shown(KeyError("[/]")) == "'[/]'"


@pytest.mark.parametrize("text", ["[/]", "[/enc]", "expected shape [batch, seq]",
                                  "[bold red]x[/]", ":fire:"])
def test_literal_is_never_markup(text: str) -> None:
    console = Console(record=True, width=80, color_system=None, emoji=True)
    console.print(literal(text))
    assert console.export_text() == text + "\n"
