"""The script's stdout and stderr, as the child wrote them (toggle with ``o``).

Control characters are shown escaped (``\\x1b[31m``, ``\\r``), not obeyed: the output may
come from a stranger's trace, and Log lets ESC through to the terminal. A script's colours
therefore show as escapes too; that is the price of a pane nothing can take over.
"""

from __future__ import annotations

from textual.widgets import Log

from dyngraph.textsafe import shown


class OutputPane(Log):
    DEFAULT_CSS = """
    OutputPane { height: 10; border-top: solid $primary; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=20_000, auto_scroll=True)
        self._partial = ""
        self.unseen = 0

    def add(self, chunks: list[tuple[str, str]]) -> None:
        """Append text chunks ``(stream, text)``; lines are written in one batch."""
        text = self._partial + "".join(
            t if stream != "stderr" else _mark_stderr(t) for stream, t in chunks)
        lines = text.split("\n")
        self._partial = lines.pop()
        if lines:
            self.write_lines([shown(line, multiline=True) for line in lines])
            if not self.display:
                self.unseen += len(lines)

    def flush_partial(self) -> None:
        if self._partial:
            self.write_line(shown(self._partial, multiline=True))
            self._partial = ""


def _mark_stderr(text: str) -> str:
    # Log draws plain lines; a prefix tells stderr apart without styling support.
    return "\n".join(("! " + s) if s else s for s in text.split("\n"))
