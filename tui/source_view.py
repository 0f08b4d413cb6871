"""The user's source file with the current op's line marked, scrolled into view.

Files are read once and cached (``linecache`` would also work but keeps no per-file
line list we can share). The keyboard cursor (when focused) picks a line for ``b``.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual.message import Message

from .linelist import LineList


def read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().expandtabs(4).splitlines()
    except OSError:
        return []


class SourceView(LineList):
    """Shows one file; ``show(file, line)`` moves the mark (line numbers are 1-based)."""

    DEFAULT_CSS = """
    SourceView { height: 1fr; }
    """

    class LineChosen(Message):
        def __init__(self, file: str, line: int) -> None:
            super().__init__()
            self.file = file
            self.line = line

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.file = ""
        self.line = 0
        self._lines: list[str] = []
        self._cache: dict[str, list[str]] = {}
        self.breakpoint_lines: set[int] = set()

    def show(self, file: str, line: int, breakpoints: set[int] | None = None) -> None:
        """Show ``file`` with ``line`` marked; a missing file shows a one-line note."""
        if breakpoints is not None and breakpoints != self.breakpoint_lines:
            self.breakpoint_lines = breakpoints
            self._stale = True
        if file == self.file and line == self.line and not self._stale:
            return
        if file != self.file:
            self.file = file
            lines = self._cache.get(file)
            if lines is None:
                lines = self._cache[file] = read_lines(file) if file else []
            self._lines = lines
            width = max((len(s) for s in lines), default=0) + 8
            self.set_rows(len(lines), width)
            if not file:
                self.border_title = "source"
            elif not lines:
                self.border_title = f"source: {os.path.basename(file)} (not readable)"
            else:
                self.border_title = os.path.basename(file)
        self.line = line
        self.set_mark(line - 1 if line > 0 else -1)

    @property
    def cursor_line(self) -> int:
        """The 1-based line under the keyboard cursor."""
        return self.cursor_row + 1

    def row_text(self, row: int) -> Text:
        number = row + 1
        marker = "▶" if number == self.line else ("●" if number in self.breakpoint_lines else " ")
        style = "bold yellow" if marker == "▶" else "bold red"
        return Text.assemble((f"{marker}", style), (f"{number:>5} ", "dim"), self._lines[row])

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        message.stop()
        self.post_message(self.LineChosen(self.file, message.row + 1))
