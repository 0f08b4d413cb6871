"""The script's stdout and stderr, as the child wrote them (toggle with ``o``)."""

from __future__ import annotations

from textual.widgets import Log


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
            self.write_lines(lines)
            if not self.display:
                self.unseen += len(lines)

    def flush_partial(self) -> None:
        if self._partial:
            self.write_line(self._partial)
            self._partial = ""


def _mark_stderr(text: str) -> str:
    # Log draws plain lines; a prefix tells stderr apart without styling support.
    return "\n".join(("! " + s) if s else s for s in text.split("\n"))
