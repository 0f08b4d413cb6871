"""The one place engine events become UI messages.

The app pulls a batch of events from its source on a timer and posts what ``translate``
returns. High-rate news (``EventsArrived``) coalesces: a newer one replaces an older one still
in the queue, since the handler redraws from the model anyway. Pauses, the end of a run and
the script's output never coalesce: each must be seen.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.message import Message

from dyngraph.capture import events as ev


class EventsArrived(Message):
    """New events are in the model; redraw from it."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EventsArrived)


class Paused(Message):
    """The script stopped: a breakpoint, a step, the start, or post-mortem."""

    def __init__(self, reason: str, description: str, at_seq: int) -> None:
        super().__init__()
        self.reason = reason
        self.description = description
        self.at_seq = at_seq


class IterationsCompleted(Message):
    """Iterations (1-based indices) whose IterationEnd arrived in this batch."""

    def __init__(self, indices: list[int]) -> None:
        super().__init__()
        self.indices = indices


class OutputArrived(Message):
    """Text the script wrote: ``chunks`` of (stream, text), in order."""

    def __init__(self, chunks: list[tuple[str, str]]) -> None:
        super().__init__()
        self.chunks = chunks


class ScriptRaised(Message):
    def __init__(self, type: str, message: str, file: str, line: int, traceback: str) -> None:
        super().__init__()
        self.type = type
        self.message = message
        self.file = file
        self.line = line
        self.traceback = traceback


class RunEnded(Message):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__()
        self.status = status
        self.reason = reason


class SourceFailed(Message):
    """The connection to the script broke (the child died without a goodbye, ...)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


_BORING = frozenset({"op", "backward_step", "tensor", "grad", "backward_start", "backward_end",
                     "optimizer_step", "header", "values"})


def translate(events: Sequence[ev.Event]) -> list[Message]:
    """Messages for one batch of events, in stream order (``EventsArrived`` first)."""
    if not events:
        return []
    out: list[Message] = [EventsArrived(len(events))]
    output: list[tuple[str, str]] = []
    completed: list[int] = []
    tail: list[Message] = []
    boring = _BORING
    for event in events:
        kind = event.kind
        if kind in boring:  # most of a fast stream: skip it with one set lookup
            continue
        if kind == "output":
            output.append((event.stream, event.text))  # type: ignore[attr-defined]
        elif kind == "iteration_end":
            completed.append(event.iteration)
        elif kind == "breakpoint":
            assert isinstance(event, ev.BreakpointHit)
            tail.append(Paused(event.reason, event.description, event.at_seq))
        elif kind == "exception":
            assert isinstance(event, ev.ExceptionRaised)
            tail.append(ScriptRaised(event.type, event.message, event.file, event.line,
                                     event.traceback))
        elif kind == "run_end":
            assert isinstance(event, ev.RunEnd)
            tail.append(RunEnded(event.status, event.reason))
    if output:
        out.append(OutputArrived(output))
    if completed:
        out.append(IterationsCompleted(completed))
    out.extend(tail)
    return out
