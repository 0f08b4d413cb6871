"""The user's source file with the current op's line marked, scrolled into view.

Files are read once and cached (``linecache`` would also work but keeps no per-file
line list we can share). The keyboard cursor (when focused) picks a line for ``b``.

The file to show is named by the events, and a recorded trace may come from a stranger:
``/dev/zero`` must not fill memory, a FIFO must not hang the UI and ``/etc/shadow`` must not
be put on screen. So only regular files up to ``MAX_SOURCE_BYTES`` are read, and a replay
reads only Python files (``*.py``); otherwise the pane says why it shows nothing.
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Callable

from rich.text import Text
from textual.message import Message

from dyngraph.textsafe import literal, shown

from .linelist import LineList

MAX_SOURCE_BYTES = 4 * 1024 * 1024  # a 100,000-line script; anything bigger is not source
PYTHON_SUFFIXES = (".py", ".pyw")


class SourceNotShown(Exception):
    """Why a file is not shown (the message completes "source not shown: ...")."""


def _check_regular(path: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise SourceNotShown(f"{path} is not a regular file")
    if st.st_size > MAX_SOURCE_BYTES:
        raise SourceNotShown(f"{path} is larger than {MAX_SOURCE_BYTES // 2**20} MB")


def _is_python(path: str) -> bool:
    """Named like Python source, and so is what it links to (``evil.py -> /etc/shadow``)."""
    return all(p.lower().endswith(PYTHON_SUFFIXES) for p in (path, os.path.realpath(path)))


def read_source(path: str, *, python_only: bool = False) -> list[str]:
    """The lines of the text file ``path``; SourceNotShown says why not.

    Checked with ``stat`` before opening (opening a device can itself have effects, and
    a FIFO blocks), and again on the open descriptor (the path may have been swapped in
    between); the read is bounded however large the file has grown since.
    """
    try:
        _check_regular(path, os.stat(path))
        if python_only and not _is_python(path):
            raise SourceNotShown(f"{path} is not a Python file (a recorded trace may name "
                                 "any file; only *.py files are shown)")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        try:
            _check_regular(path, os.fstat(fd))
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(MAX_SOURCE_BYTES + 1)
        finally:
            os.close(fd)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise SourceNotShown(f"cannot read {path}: {getattr(exc, 'strerror', '') or exc}"
                             ) from None
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceNotShown(f"{path} is larger than {MAX_SOURCE_BYTES // 2**20} MB")
    if b"\0" in data:
        raise SourceNotShown(f"{path} is a binary file")
    return data.decode("utf-8", errors="replace").expandtabs(4).splitlines()


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
        # A replay shows only *.py files: its file names come from the trace, not the user.
        self.python_only = False
        # A shared trace names files relative to its script's folder: where they are here.
        self.resolve: Callable[[str], str] | None = None
        self._lines: list[str] = []
        self._cache: dict[str, list[str]] = {}
        self._not_shown: dict[str, str] = {}  # file -> why it is not shown
        self._note = ""
        self.breakpoint_lines: set[int] = set()

    def lines_of(self, file: str) -> list[str]:
        """``file``'s lines, read once (none when it is not shown)."""
        lines = self._cache.get(file)
        if lines is None:
            path = self.resolve(file) if self.resolve is not None and file else file
            try:
                lines = read_source(path, python_only=self.python_only) if path else []
            except SourceNotShown as exc:
                lines, self._not_shown[file] = [], str(exc)
            self._cache[file] = lines
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
            self._note = self._not_shown.get(file, "") if not lines else ""
            width = max((len(shown(s)) for s in lines), default=len(self._note)) + 8
            self.set_rows(len(lines) or (1 if self._note else 0), width)
            # A Text title: a str one would be read as markup, and file names are data.
            if not file:
                self.border_title = Text("source")
            elif not lines:
                self.border_title = literal(f"source: {os.path.basename(file)} (not shown)")
            else:
                self.border_title = literal(os.path.basename(file))
        self.line = line
        self.set_mark(line - 1 if line > 0 else -1)

    @property
    def cursor_line(self) -> int:
        """The 1-based line under the keyboard cursor."""
        return self.cursor_row + 1

    def row_text(self, row: int) -> Text:
        if self._note:
            return literal(f"source not shown: {self._note}", "dim")
        number = row + 1
        marker = "▶" if number == self.line else ("●" if number in self.breakpoint_lines else " ")
        style = "bold yellow" if marker == "▶" else "bold red"
        return Text.assemble((f"{marker}", style), (f"{number:>5} ", "dim"),
                             shown(self._lines[row]))

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        message.stop()
        if self._note:  # the note is not a line of the file
            return
        self.post_message(self.LineChosen(self.file, message.row + 1))
