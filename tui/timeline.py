"""The timeline: one row per event of the iteration, drawn only where visible.

Rows are history indices (the model's per-iteration list, shared, so a live run's growing
iteration costs nothing to "add"). Picking a row posts ``Timeline.EventChosen`` with the
history index; the app moves the selection to that event's node.
"""

from __future__ import annotations

import bisect
import math
import os

from rich.text import Text
from textual.message import Message

from dyngraph.capture import events as ev
from dyngraph.textsafe import shown

from .compile_view import compile_row
from .linelist import LineList
from .numbers import fmt, norm_of


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")" if shape else "()"


def _norm(summary: ev.Summary | None) -> str:
    norm = norm_of(summary)
    if norm is None:
        return ""
    return f"‖g‖={norm:.3g}" if math.isfinite(norm) else f"‖g‖={fmt(norm)}"


NARROW = 56  # below this many cells a row drops its seq and puts the line before the shape


def describe_event(event: ev.Event, narrow: bool = False) -> Text:
    """One timeline row for ``event`` (also used by tests and the status line).

    ``narrow``: for a thin pane, without the seq column and with ``file:line`` before the
    shape, so the line an op ran on stays in view.
    """
    seq = "" if narrow else f"{event.seq:>7} "
    # Names, paths and messages are the user's: every one goes through shown() (a Text is
    # never read as markup, but control characters in it would reach the terminal).
    if isinstance(event, ev.Op):
        bad = event.summary is not None and not event.summary.finite
        where = shown(f"{os.path.basename(event.file)}:{event.line}") if event.file else ""
        op = (f"{shown(event.op):<12}", "bold red" if bad else "bold")
        module = f" {shown(event.module)}" if event.module else ""
        if narrow:
            text = Text.assemble(op, (f" {where}", "dim"), f" {_shape(event.shape)}",
                                 (module, "cyan"))
        else:
            text = Text.assemble(
                (seq, "dim"), op, f" {_shape(event.shape):<14}", (f" {where}", "dim"),
                (module, "cyan"),
            )
        if bad:
            text.append("  NaN/Inf", "bold red")
        return text
    if isinstance(event, ev.BackwardStep):
        incoming = event.grad_outputs or (event.grad_output,)
        bad = any(s is not None and not s.finite for s in (*incoming, *event.grad_inputs))
        # one norm per output of the op (split's pieces each have their own gradient)
        parts = [_norm(s).removeprefix("‖g‖=") or "–" for s in incoming]
        norms = _norm(incoming[0]) if len(parts) == 1 else (
            "‖g‖=" + " ".join(parts) if any(p != "–" for p in parts) else "")
        return Text.assemble((seq, "dim"), ("← ", "magenta"),
                             (f"{shown(event.grad_fn):<16}", "bold red" if bad else "magenta"),
                             f" {norms}")
    if isinstance(event, ev.TensorCreated):
        what = "param" if event.is_param else "leaf"
        return Text.assemble((seq, "dim"), ("○ ", "green"), (f"{what} ", "green"),
                             (shown(event.name or f"t{event.tensor}"), "bold green"),
                             f" {_shape(event.shape)}")
    if isinstance(event, ev.GradAccumulated):
        bad = event.summary is not None and not event.summary.finite
        return Text.assemble((seq, "dim"), ("⇐ .grad ", "magenta"),
                             (shown(event.name or f"t{event.tensor}"),
                              "bold red" if bad else "magenta"),
                             f" {_norm(event.summary)}")
    if isinstance(event, ev.ModuleCall):
        # A module call begins: named, so the ops below it read as its.
        return Text.assemble((seq, "dim"), ("▸ ", "cyan"),
                             (shown(event.module or "(the model)"), "bold cyan"))
    if isinstance(event, ev.BackwardStart):
        return Text.assemble((seq, "dim"), ("── backward ──", "magenta"))
    if isinstance(event, ev.BackwardEnd):
        return Text.assemble((seq, "dim"), ("── backward done ──", "magenta"))
    if isinstance(event, ev.OptimizerStep):
        return Text.assemble((seq, "dim"), (f"optimizer {shown(event.optimizer)} lr={event.lr:g}",
                                            "yellow"))
    if isinstance(event, ev.IterationEnd):
        return Text.assemble((seq, "dim"), (f"── end of iteration {event.iteration} "
                                            f"({event.node_count} nodes) ──", "bold cyan"))
    if isinstance(event, ev.BreakpointHit):
        return Text.assemble((seq, "dim"), (shown(f"■ paused: {event.reason} {event.description}"),
                                            "bold yellow"))
    if event.kind == "dropped":
        return Text("      … let go to keep memory bounded (see the iteration bar)", "dim")
    if isinstance(event, ev.ExceptionRaised):
        return Text.assemble((seq, "dim"), (shown(f"✖ {event.type}: {event.message}"),
                                            "bold red"))
    if isinstance(event, ev.CompileEvent):  # the compile lane's rows
        return compile_row(event, seq, narrow)
    return Text.assemble((seq, "dim"), shown(event.kind))


class Timeline(LineList):
    """The events of the cursor's iteration."""

    DEFAULT_CSS = """
    Timeline { height: 1fr; overflow-x: hidden; }
    """

    class EventChosen(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._events: list[ev.Event] = []
        self._rows: list[int] = []
        self._row_cache: dict[int, Text] = {}
        self._narrow = False

    def show(self, events: list[ev.Event], rows: list[int], cursor: int) -> None:
        """Show history ``rows`` of ``events``; mark the row of history index ``cursor``."""
        same = rows is self._rows and events is self._events and len(rows) == self.row_count
        if not (rows is self._rows and events is self._events):
            self._row_cache.clear()
        self._events, self._rows = events, rows
        if not same:
            self.set_rows(len(rows), 0)
        self.set_mark(max(bisect.bisect_right(rows, cursor) - 1, 0) if rows else -1)

    def row_text(self, row: int) -> Text:
        index = self._rows[row]
        text = self._row_cache.get(index)
        if text is None:
            if len(self._row_cache) > 2000:
                self._row_cache.clear()
            text = self._row_cache[index] = describe_event(self._events[index], self._narrow)
        return text

    def on_resize(self) -> None:
        super().on_resize()
        narrow = 0 < self.size.width < NARROW
        if narrow != self._narrow:
            self._narrow = narrow
            self._row_cache.clear()
            self.refresh()

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        message.stop()
        self.post_message(self.EventChosen(self._rows[message.row]))
