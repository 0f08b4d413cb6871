"""The user's source file with the current op's line marked, scrolled into view.

Files are read once and cached (``linecache`` would also work but keeps no per-file
line list we can share). The keyboard cursor (when focused) picks a line for ``b``.
"""

from __future__ import annotations

import ast
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


def first_code_line(lines: list[str]) -> int:
    """The line of a module's first statement (past its docstring), where pdb's ``->``
    points before the script runs; 1 when the text does not parse, 0 when it is empty."""
    if not lines:
        return 0
    try:
        body = ast.parse("\n".join(lines)).body
    except (SyntaxError, ValueError):
        return 1
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body[0].lineno if body else 1


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

    def lines_of(self, file: str) -> list[str]:
        """``file``'s lines, read once."""
        lines = self._cache.get(file)
        if lines is None:
            lines = self._cache[file] = read_lines(file) if file else []
        return lines

    def show(self, file: str, line: int, breakpoints: set[int] | None = None) -> None:
        """Show ``file`` with ``line`` marked; a missing file shows a one-line note."""
        if breakpoints is not None and breakpoints != self.breakpoint_lines:
            self.breakpoint_lines = breakpoints
            self._stale = True
        if file == self.file and line == self.line and not self._stale:
            return
        if file != self.file:
            self.file = file
            lines = self.lines_of(file)
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
