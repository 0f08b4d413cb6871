"""The status line: RUNNING / PAUSED / FINISHED and why, where, iteration and op seq."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from dyngraph.capture import events as ev

STATUS_STYLE = {
    "running": "bold black on green",
    "paused": "bold black on yellow",
    "finished": "bold white on blue",
    "error": "bold white on red",
}


def status_text(*, status: str, reason: str, description: str, event: ev.Event | None,
                iteration: int, iterations: int, live: bool, behind: int = 0,
                breakpoints: int = 0, nan_break: bool = False, mode: str = "forward",
                notes: Sequence[str] = ()) -> Text:
    """The line's contents (pure, so tests read it without an app)."""
    text = Text()
    label = status.upper()
    text.append(f" {label} ", STATUS_STYLE.get(status, "reverse"))
    # Short facts first, the (possibly long) description last: a narrow terminal cuts it.
    if status == "paused" and reason:
        text.append(" ").append(reason, "bold yellow")
    if event is not None:
        what = getattr(event, "op", "") or event.kind
        if isinstance(event, ev.BackwardStep):
            what = event.grad_fn
        text.append("  │ ", "dim").append(what, "bold")
        file, line = getattr(event, "file", ""), getattr(event, "line", 0)
        if file:
            text.append(f" {os.path.basename(file)}:{line}", "cyan")
        text.append("  │ ", "dim").append(f"iter {iteration}/{iterations}")
        text.append("  │ ", "dim").append(f"seq {event.seq}")
    if behind:
        text.append("  │ ", "dim").append(
            f"history: {behind} event{'s' * (behind != 1)} before the script's position",
            "bold magenta")
    text.append("  │ ", "dim").append("live" if live else "replay", "dim")
    if mode == "backward":
        text.append(" · backward graph", "magenta")
    if breakpoints:
        text.append(f" · {breakpoints} bp", "red")
    if nan_break:
        text.append(" · break on NaN", "red")
    for note in notes:  # from the capture: "torch.compile runs eagerly while captured"
        text.append(f" · {note}", "bold magenta")
    if status == "paused" and description:
        text.append("  │ ", "dim").append(description)
    elif status == "finished":
        text.append("  │ ", "dim").append(description or "the run is over", "bold")
    elif status == "running":
        text.append("  │ ", "dim").append("running until a breakpoint · n: stop at the next op",
                                            "dim")
    return text


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; }
    """

    def update_text(self, text: Text) -> None:
        """New contents; one fixed line, so no layout pass (that costs a whole screen)."""
        if text == getattr(self, "_text", None):
            return
        self._text = text
        self.update(text, layout=False)
