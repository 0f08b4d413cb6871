"""The status line: RUNNING / PAUSED / FINISHED and why, where, iteration and op seq."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widgets import Static

from dyngraph.capture import events as ev
from dyngraph.textsafe import shown

STATUS_STYLE = {
    "running": "bold black on green",
    "paused": "bold black on yellow",
    "finished": "bold white on blue",
    "error": "bold white on red",
}


def status_text(**facts: Any) -> Text:
    """The line's contents on one line (pure, so tests read it without an app)."""
    head, description = status_parts(**facts)
    if description:
        head.append("  │ ", "dim").append_text(description)
    return head


def status_parts(*, status: str, reason: str, description: str, event: ev.Event | None,
                 iteration: int, iterations: int, live: bool, behind: int = 0,
                 breakpoints: int = 0, nan_break: bool = False, mode: str = "forward",
                 notes: Sequence[str] = (), warnings: Sequence[str] = (),
                 per_op_reads: bool = False) -> tuple[Text, Text]:
    """(the short facts, the description): the line shows both when they fit, else the
    description goes on the lines below, wrapped. ``warnings`` (breakpoints that cannot
    hit) go with the description, so a narrow terminal wraps them rather than cuts.
    ``per_op_reads``: a value breakpoint makes the live script read each op's statistics
    as it runs (``debug.breakpoints.reads_per_op``; on a GPU, a host read per op)."""
    text = Text()
    label = status.upper()
    text.append(f" {label} ", STATUS_STYLE.get(status, "reverse"))
    # Short facts first, the (possibly long) description last: a narrow terminal cuts it.
    if status == "paused" and reason:
        text.append(" ").append(shown(reason), "bold yellow")
    if event is not None:
        what = getattr(event, "op", "") or event.kind
        if isinstance(event, ev.BackwardStep):
            what = event.grad_fn
        text.append("  │ ", "dim").append(shown(what), "bold")
        file, line = getattr(event, "file", ""), getattr(event, "line", 0)
        if file:
            text.append(shown(f" {os.path.basename(file)}:{line}"), "cyan")
        module = getattr(event, "module", "")
        if module:
            text.append(f" in {shown(module)}", "cyan")
        if iteration or iterations:  # (before anything ran: no iteration to name)
            where = f"iter {iteration}/{iterations}" if iteration else "setup (iteration 0)"
            text.append("  │ ", "dim").append(where)
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
    if per_op_reads:
        text.append(" · stats read per op", "yellow")
    for note in notes:  # from the capture: "torch.compile runs eagerly while captured"
        text.append(f" · {shown(note)}", "bold magenta")
    if event is not None:  # the least needed fact last: a narrow line cuts it first
        text.append("  │ ", "dim").append(f"seq {event.seq}", "dim")
    # The description quotes the script ("raised KeyError: '[/]'"): a Text, escaped.
    if status == "paused" and description:
        tail = Text(shown(_compact(description, reason, event)))
    elif status == "finished":
        tail = Text(shown(description or "the run is over"), "bold")
    elif status == "running" and reason == "loading" and description:
        tail = Text(shown(description), "dim")  # a replay's key waiting for the trace
    elif status == "running":
        tail = Text("running until a breakpoint · n: stop at the next op", "dim")
    else:
        tail = Text()
    for warning in warnings:
        if tail:
            tail.append(" · ")
        tail.append(f"⚠ {shown(warning)}", "bold yellow")
    return text, tail


MAX_DESCRIPTION_LINES = 2
# Pauses whose description only repeats what the facts show after its first words.
_PLACE_ONLY = frozenset({"step", "op", "module", "line", "iteration"})


def _compact(description: str, reason: str, event: ev.Event | None) -> str:
    """``breakpoint module:enc: entering module enc.0 at linear -> (16, 16) in module enc.0
    at train.py:22 (iteration 1)`` -> ``breakpoint module:enc: entering module enc.0``: the
    op, its line, module and iteration are in the facts already."""
    if reason not in _PLACE_ONLY or not isinstance(event, ev.Op):
        return description
    cut = description.find(f"{event.op} -> ")
    if cut < 0:
        return description
    head = description[:cut].rstrip(" :")
    return head[:-3].rstrip(" :") if head.endswith(" at") else head


class StatusLine(Static):
    """One line when everything fits; otherwise the description takes up to two lines
    below the facts (cut with … past that), so no terminal width cuts it off unseen."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._parts: tuple[Text, Text] = (Text(), Text())
        self._shown: tuple[Text, int] | None = None
        self._lines = 1

    def update_parts(self, head: Text, description: Text) -> None:
        """New contents. Redrawn without a layout pass (that costs a whole screen) unless
        the number of lines changes."""
        self._parts = (head, description)
        self._draw()

    def update_text(self, text: Text) -> None:
        self.update_parts(text, Text())

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        head, description = self._parts
        width = self.size.width or 200
        one = head.copy()
        if description:
            one.append("  │ ", "dim").append_text(description)
        if one.cell_len <= width or not description:
            text, lines = one, 1
            text.truncate(width, overflow="ellipsis")
        else:
            wrapped = description.wrap(self.app.console, width)
            if len(wrapped) > MAX_DESCRIPTION_LINES:
                wrapped = wrapped[:MAX_DESCRIPTION_LINES]
                wrapped[-1].truncate(width - 1)
                wrapped[-1].append("…")
            text = head.copy()
            text.truncate(width, overflow="ellipsis")
            for line in wrapped:
                text.append("\n").append_text(line)
            lines = 1 + len(wrapped)
        if (text, lines) == self._shown:
            return
        self._shown = (text, lines)
        relayout = lines != self._lines
        self._lines = lines
        if relayout:
            self.styles.height = lines
        self.update(text, layout=relayout)
