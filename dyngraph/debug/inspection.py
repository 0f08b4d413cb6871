"""What a paused script shows of its Python state: frames, variables, watches, evaluations.

Plain, immutable data. The child builds it (``evaluation``) from live objects and sends it
up the channel as JSON-compatible dicts (``to_wire``); the session turns the dicts back
into these classes (``from_wire``). Nothing here refers to a live object, so a value the
UI shows is always a copy made at one pause, tagged with that pause (``FrameView.pause``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..capture import events as ev


class InspectError(RuntimeError):
    """The question cannot be asked now: the script runs, has ended, or the frame is gone."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of the user's call stack; ``index`` 0 is the innermost (the paused one)."""

    index: int
    file: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A tensor (or array) variable: its statistics and, for dyngraph or PyTorch tensors,
    whether it requires grad and its tensor id (the graph's node id when it is in the
    current iteration's graph)."""

    summary: ev.Summary
    requires_grad: bool | None = None
    node: int | None = None


@dataclass(frozen=True, slots=True)
class Variable:
    """A row of the variables pane: ``text`` is a one-line summary of the value."""

    name: str
    type: str
    text: str
    tensor: TensorInfo | None = None


@dataclass(frozen=True, slots=True)
class EvalResult:
    """What one evaluation gave.

    ``value`` is the text of an expression's value (None for statements and for None);
    ``output`` what it printed; on failure ``error`` is ``"Type: message"`` and
    ``traceback`` shows only the console input's frames (and what they called).
    ``truncated`` says the output was cut at the per-evaluation cap; ``interrupted`` that
    ``Session.interrupt_eval()`` stopped it.
    """

    value: str | None = None
    output: str = ""
    error: str | None = None
    traceback: str = ""
    tensor: TensorInfo | None = None
    truncated: bool = False
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class WatchValue:
    """A watch expression's value at one pause: ``value`` or, on failure, ``error``."""

    id: int
    expression: str
    value: str | None = None
    error: str | None = None
    tensor: TensorInfo | None = None


@dataclass(frozen=True, slots=True)
class FrameView:
    """Everything the variables pane shows at one pause, for the selected frame.

    ``pause`` is the seq of the pause's BreakpointHit: a view whose pause is not the
    session's current one is stale. ``hidden`` counts variables left out (over the cap).
    """

    pause: int
    frames: tuple[Frame, ...]
    frame: int
    variables: tuple[Variable, ...]
    watches: tuple[WatchValue, ...] = ()
    hidden: int = 0


# -- on the wire ------------------------------------------------------------------------------
def tensor_to_wire(t: TensorInfo | None) -> Any:
    if t is None:
        return None
    s = list(t.summary.astuple())
    s[0] = list(s[0])
    s[9] = list(s[9])
    return {"summary": s, "requires_grad": t.requires_grad, "node": t.node}


def tensor_from_wire(d: Any) -> TensorInfo | None:
    if not d:
        return None
    s = list(d["summary"])
    s[0] = tuple(int(n) for n in s[0])
    s[9] = tuple(s[9])
    return TensorInfo(ev.Summary(*s), d.get("requires_grad"), d.get("node"))


def frame_to_wire(f: Frame) -> list[Any]:
    return [f.index, f.file, f.line, f.function]


def frame_from_wire(d: Any) -> Frame:
    return Frame(int(d[0]), str(d[1]), int(d[2]), str(d[3]))


def variable_to_wire(v: Variable) -> list[Any]:
    return [v.name, v.type, v.text, tensor_to_wire(v.tensor)]


def variable_from_wire(d: Any) -> Variable:
    return Variable(str(d[0]), str(d[1]), str(d[2]), tensor_from_wire(d[3]))


def result_to_wire(r: EvalResult) -> dict[str, Any]:
    return {"value": r.value, "output": r.output, "error": r.error, "traceback": r.traceback,
            "tensor": tensor_to_wire(r.tensor), "truncated": r.truncated,
            "interrupted": r.interrupted}


def result_from_wire(d: dict[str, Any]) -> EvalResult:
    return EvalResult(d.get("value"), d.get("output", ""), d.get("error"),
                      d.get("traceback", ""), tensor_from_wire(d.get("tensor")),
                      bool(d.get("truncated")), bool(d.get("interrupted")))


def watch_to_wire(w: WatchValue) -> list[Any]:
    return [w.id, w.expression, w.value, w.error, tensor_to_wire(w.tensor)]


def watch_from_wire(d: Any) -> WatchValue:
    return WatchValue(int(d[0]), str(d[1]), d[2], d[3], tensor_from_wire(d[4]))


def view_to_wire(v: FrameView) -> dict[str, Any]:
    return {"pause": v.pause, "frames": [frame_to_wire(f) for f in v.frames], "frame": v.frame,
            "variables": [variable_to_wire(x) for x in v.variables],
            "watches": [watch_to_wire(w) for w in v.watches], "hidden": v.hidden}


def view_from_wire(d: dict[str, Any]) -> FrameView:
    return FrameView(int(d["pause"]), tuple(frame_from_wire(f) for f in d["frames"]),
                     int(d["frame"]), tuple(variable_from_wire(x) for x in d["variables"]),
                     tuple(watch_from_wire(w) for w in d.get("watches", ())),
                     int(d.get("hidden", 0)))
