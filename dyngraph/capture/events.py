"""The event schema: what the engine tells the world.

Every forward op, every backward step and every bookkeeping moment of a run becomes one
frozen, slotted dataclass below. Tensors are referred to by integer id, never by object,
so events can cross a process boundary or sit in a file. This module imports nothing of
dyngraph: it is the ground every other part stands on. The schema is described for users
in ``docs/events.md``; bump ``SCHEMA_VERSION`` on any incompatible change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import FrozenInstanceError, dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np

SCHEMA_VERSION = 4
# Schema 2 added ``Op.call`` and ``ModuleCall``; a schema-1 stream reads as calls all 0.
# Schema 3 added ``CompileEvent`` (torch.compile's lane; older streams simply have none)
# and ``BackwardStep.grad_node``, ``outputs``, ``grad_outputs`` and ``next_nodes`` (an
# older stream reads as one backward node per op output: (-1, (), (), ())).
# Schema 4 added the header's ``iteration_mode`` (an older header reads as "backward";
# iterations may start at 0, setup: see ``dyngraph.capture.tracing``), its ``rank``,
# ``world_size`` and ``run_id`` and the ``Collective`` event (many ranks); an older header
# reads as rank 0 of no job (world size 0).
RANKS_SCHEMA = 4


SUMMARY_FIELDS = ("shape", "dtype", "min", "max", "mean", "std", "norm", "nan", "inf",
                  "preview", "sampled")
_new = object.__new__


class Summary:
    """Statistics of one tensor (a value or a gradient); immutable.

    ``Summary(shape, dtype, min=None, max=None, mean=None, std=None, norm=None, nan=0,
    inf=0, preview=(), sampled=False)``. ``sampled`` is True when the statistics were
    computed on a sample of a large tensor; NaN/Inf counts are then counts in that sample
    (0 still means none seen).

    Behaves like a frozen dataclass with those fields, but a summary without min, max, mean,
    std and preview (what ``stats="cheap"`` records, on every op and gradient) is stored in
    six slots instead of eleven: it is the most numerous object of a recording.

    >>> s = Summary((2,), "float32", norm=5.0)
    >>> s.norm, s.min, s.finite
    (5.0, None, True)
    """

    __slots__ = ("shape", "dtype", "norm", "nan", "inf", "sampled")
    shape: tuple[int, ...]
    dtype: str
    norm: float | None
    nan: int
    inf: int
    sampled: bool
    # Read by cheap summaries from the class; full summaries have slots of these names.
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    preview: tuple[float, ...] = ()

    def __new__(cls, shape: tuple[int, ...], dtype: str, min: float | None = None,
                max: float | None = None, mean: float | None = None, std: float | None = None,
                norm: float | None = None, nan: int = 0, inf: int = 0,
                preview: tuple[float, ...] = (), sampled: bool = False) -> Summary:
        if min is None and max is None and mean is None and std is None and not preview:
            return _make_cheap(shape, dtype, norm, nan, inf, sampled)
        return _make_full(shape, dtype, min, max, mean, std, norm, nan, inf, preview, sampled)

    @staticmethod
    def cheap(shape: tuple[int, ...], dtype: str, norm: float | None, nan: int, inf: int,
              sampled: bool) -> Summary:
        """The fast constructor of a summary without min/max/mean/std/preview."""
        return _make_cheap(shape, dtype, norm, nan, inf, sampled)

    def astuple(self) -> tuple[Any, ...]:
        """The eleven fields, in ``SUMMARY_FIELDS`` order."""
        return (self.shape, self.dtype, self.min, self.max, self.mean, self.std, self.norm,
                self.nan, self.inf, self.preview, self.sampled)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Summary):
            return NotImplemented
        return self.astuple() == other.astuple()

    def __hash__(self) -> int:
        return hash(self.astuple())

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={v!r}" for n, v in zip(SUMMARY_FIELDS, self.astuple(),
                                                       strict=True))
        return f"Summary({body})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Summary, self.astuple())

    def replace(self, **changes: Any) -> Summary:
        values = dict(zip(SUMMARY_FIELDS, self.astuple(), strict=True))
        values.update(changes)
        return Summary(**values)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def finite(self) -> bool:
        return self.nan == 0 and self.inf == 0


class _FullSummary(Summary):
    """A Summary with min, max, mean, std and a preview (``stats="full"``)."""

    __slots__ = ("min", "max", "mean", "std", "preview")


@dataclass(frozen=True, slots=True)
class Event:
    """Base of all events. ``seq`` is global and strictly increasing within a run."""

    kind: ClassVar[str] = "event"
    seq: int
    iteration: int

    def replace(self, **changes: Any) -> Event:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Header(Event):
    """First event of every stream (trace file or live channel); marks the run's start.

    ``script`` and ``argv`` are those of the recorded program (whoever starts the recording
    sets them, see ``tracing.make_header``); ``stats`` and ``values`` the recording's modes;
    ``created`` the wall-clock start (seconds since the epoch); ``numpy_version`` the numpy
    the recording ran on (its engine's arithmetic is numpy's; "" in traces written before
    it was recorded); ``iteration_mode`` where iterations end: ``"backward"`` (after each
    ``backward()``) or ``"step"`` (after each optimizer step). A header has seq 0 and
    iteration 0: it precedes every numbered event
    of its stream.

    A rank of a ``torchrun`` job says which: ``rank`` of ``world_size`` in the job
    ``run_id`` (torchrun's ``TORCHELASTIC_RUN_ID``); a single process has world size 0.
    """

    kind: ClassVar[str] = "header"
    schema_version: int = SCHEMA_VERSION
    dyngraph_version: str = ""
    script: str = ""
    argv: tuple[str, ...] = ()
    stats: str = "cheap"
    values: str = "none"
    created: float = 0.0
    numpy_version: str = ""
    iteration_mode: str = "backward"
    rank: int = 0
    world_size: int = 0
    run_id: str = ""


@dataclass(frozen=True, slots=True)
class TensorCreated(Event):
    """A tensor entered the current iteration's graph from outside it.

    Emitted the first time in an iteration that an op uses a tensor the iteration did not
    produce: leaves (inputs, parameters: ``name`` is then the qualified
    ``encoder.0.weight``), and tensors computed earlier, such as an RNN hidden state carried
    over from the previous iteration or a value computed before recording started
    (``is_leaf=False``; ``grad_fn`` names the node that produced it).
    """

    kind: ClassVar[str] = "tensor"
    tensor: int = 0
    name: str = ""
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    requires_grad: bool = False
    is_param: bool = False
    summary: Summary | None = None
    is_leaf: bool = True
    grad_fn: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class TensorValues(Event):
    """The full values of a small tensor (recorded with ``values="small"``).

    Follows the Op or TensorCreated event of tensor ``tensor``. The array is a copy, so
    later in-place updates do not change it.
    """

    kind: ClassVar[str] = "values"
    tensor: int = 0
    array: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorValues):
            return NotImplemented
        return (self.seq, self.iteration, self.tensor) == (
            other.seq, other.iteration, other.tensor
        ) and self.array.dtype == other.array.dtype and np.array_equal(
            self.array, other.array, equal_nan=self.array.dtype.kind in "fc"
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class Op(Event):
    """One forward op: ``output = op(*inputs, **attrs)``.

    ``inputs`` holds tensor ids; constants (Python scalars, arrays that are not tensors)
    appear as -1. ``attrs`` holds plain data only (ints, floats, bools, strings, None and
    tuples of them; a slice reads ``"1:3"``). ``module`` is the qualified module path the op
    ran in ("" at top level). ``grad_enabled`` is False for ops run under ``no_grad``.
    ``call`` is the id of the module call it ran in (0 at top level): a ``ModuleCall``
    event introduced it, so two calls of one module, even back to back, stay apart.
    """

    kind: ClassVar[str] = "op"
    op: str = ""
    inputs: tuple[int, ...] = ()
    output: int = 0
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    requires_grad: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)
    module: str = ""
    file: str = ""
    line: int = 0
    function: str = ""
    grad_enabled: bool = True
    duration_ns: int = 0
    summary: Summary | None = None
    call: int = 0


@dataclass(frozen=True, slots=True)
class ModuleCall(Event):
    """A module call that ops ran in: call ``call`` of module ``module``, made inside call
    ``parent`` (0: at top level).

    Emitted just before the first op inside the call (or inside a call it makes), so a
    call that runs no op costs nothing; again at the start of an iteration for calls still
    running. Call ids are unique within a run, and every ``Op.call`` other than 0 was
    introduced by one of these earlier in the same iteration.
    """

    kind: ClassVar[str] = "module_call"
    call: int = 0
    parent: int = 0
    module: str = ""


@dataclass(frozen=True, slots=True)
class BackwardStart(Event):
    kind: ClassVar[str] = "backward_start"
    root: int = 0
    retain_graph: bool = False


@dataclass(frozen=True, slots=True)
class BackwardStep(Event):
    """One backward node ran (autograd's ``Node``: ``MulBackward0``).

    ``node`` is the id of the output tensor of the forward op the node belongs to (-1: no
    op dyngraph saw, such as a checkpoint's or a hook's node); ``grad_fn`` the node's
    PyTorch-style name. ``inputs`` has one entry per input slot of the node (autograd's
    ``next_functions``): the id of the tensor its gradient flows to (-1: none, or not a
    tensor of the graph), aligned with ``grad_inputs``, the summary of that gradient (None
    where none flows).

    ``grad_node`` is the node's own id (a node of the backward graph; the numpy engine's is
    ``node``), and ``next_nodes`` the ``grad_node`` each input slot's gradient goes to (a
    leaf's accumulation: the leaf's tensor id; -1: none). ``outputs`` has one entry per
    output slot of the node (autograd's ``output_nr``: ``split``'s node has one per
    piece): the forward tensor whose gradient arrives there (-1: none of the graph's),
    aligned with ``grad_outputs``, that gradient's summary (None: no gradient arrived, the
    output was not used). ``grad_output`` is ``grad_outputs[0]``, the gradient arriving at
    the node's first output slot. Empty ``outputs``/``grad_outputs`` mean ``(node,)`` and
    ``(grad_output,)``, and empty ``next_nodes`` means ``inputs`` (one node per op output,
    as the numpy engine has it).
    """

    kind: ClassVar[str] = "backward_step"
    node: int = 0
    op: str = ""
    grad_fn: str = ""
    inputs: tuple[int, ...] = ()
    grad_output: Summary | None = None
    grad_inputs: tuple[Summary | None, ...] = ()
    duration_ns: int = 0
    grad_node: int = -1
    outputs: tuple[int, ...] = ()
    grad_outputs: tuple[Summary | None, ...] = ()
    next_nodes: tuple[int, ...] = ()

    @property
    def slots(self) -> tuple[tuple[int, Summary | None], ...]:
        """(forward tensor id, gradient summary) of each output slot."""
        if not self.outputs:
            return ((self.node, self.grad_output),)
        return tuple(zip(self.outputs, self.grad_outputs, strict=False))

    @property
    def gid(self) -> int:
        """The backward node's id (``grad_node``, else ``node``)."""
        return self.node if self.grad_node < 0 else self.grad_node

    @property
    def next_ids(self) -> tuple[int, ...]:
        """The backward node each input slot's gradient goes to (-1: none)."""
        return self.next_nodes or self.inputs


@dataclass(frozen=True, slots=True)
class GradAccumulated(Event):
    """A gradient was accumulated into a leaf's ``.grad``; ``summary`` is of the new ``.grad``."""

    kind: ClassVar[str] = "grad"
    tensor: int = 0
    name: str = ""
    summary: Summary | None = None


@dataclass(frozen=True, slots=True)
class BackwardEnd(Event):
    kind: ClassVar[str] = "backward_end"
    root: int = 0
    duration_ns: int = 0


@dataclass(frozen=True, slots=True)
class OptimizerStep(Event):
    """``updates`` pairs each parameter's tensor id with the L2 norm of its update."""

    kind: ClassVar[str] = "optimizer_step"
    optimizer: str = ""
    lr: float = 0.0
    updates: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True, slots=True)
class IterationEnd(Event):
    kind: ClassVar[str] = "iteration_end"
    node_count: int = 0
    structure_key: str = ""


@dataclass(frozen=True, slots=True)
class Collective(Event):
    """A ``torch.distributed`` collective on this rank (schema 4).

    ``op`` is PyTorch's name (``all_reduce``, ``broadcast``, ``all_gather``,
    ``reduce_scatter``, ``barrier`` ...); ``group`` the process group's name and
    ``group_seq`` the group's own count of its collectives, the same on every member for
    the same collective; ``rank`` this process's global rank. ``inputs`` are the ids of the
    tensors that went in (none when PyTorch made the call itself: DDP's bucketed all-reduce
    in backward, ``attrs["by"]`` says who); ``shape`` and ``dtype`` are the first tensor's,
    ``attrs["shapes"]`` lists them all when there are several (with the reduce op, ``src``
    or ``dst``, ``async``). ``file``/``line``/``function`` is the call in the script,
    ``time`` the wall-clock start (seconds since the epoch), ``summary`` and ``result``
    what went in and what came out (the statistics of the first tensor, in the recording's
    stats mode; None when not captured).
    """

    kind: ClassVar[str] = "collective"
    op: str = ""
    group: str = ""
    group_seq: int = 0
    rank: int = 0
    inputs: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()
    dtype: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    file: str = ""
    line: int = 0
    function: str = ""
    time: float = 0.0
    duration_ns: int = 0
    summary: Summary | None = None
    result: Summary | None = None


@dataclass(frozen=True, slots=True)
class BreakpointHit(Event):
    """The debug runtime stopped; ``reason`` is the breakpoint kind (``op``, ``nan``, ``step``)."""

    kind: ClassVar[str] = "breakpoint"
    reason: str = ""
    description: str = ""
    at_seq: int = 0


@dataclass(frozen=True, slots=True)
class ScriptOutput(Event):
    kind: ClassVar[str] = "output"
    stream: str = "stdout"
    text: str = ""


@dataclass(frozen=True, slots=True)
class ExceptionRaised(Event):
    """The script raised. ``at_seq`` is the seq of the last op event before the raise."""

    kind: ClassVar[str] = "exception"
    type: str = ""
    message: str = ""
    traceback: str = ""
    at_seq: int = 0
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class RunEnd(Event):
    """Last event of a run. ``status`` is the exit status Python would give."""

    kind: ClassVar[str] = "run_end"
    status: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CompileEvent(Event):
    """What torch.compile did, as it happened (the compile lane; ``dyngraph.compile_lane``).

    ``what`` is one of ``COMPILE_WHATS``: ``start``/``end`` of a compile (``end`` carries
    ``duration_ns`` and, if it failed, ``type``/``reason``), ``break`` (a graph break:
    ``reason``, its ``type`` and ``detail`` = explanation and hints, at the user's
    ``file:line`` with ``stack``), ``recompile`` (``reason`` = the guard that failed,
    ``input`` = the input it names), ``guards`` (``detail``: the compiled entry's guards),
    ``limit`` (the recompile limit was hit: the function runs eagerly from then on),
    ``fallback`` (a compile failed and the frame runs eagerly) and ``unavailable`` (this
    torch gives no compile events: ``reason`` says why). ``compile_id`` is torch's
    ``"frame/attempt"`` (``"0/2"``: the third compile of the first frame); ``frame``,
    ``file`` and ``line`` name the compiled function, or for a break the line that broke.
    """

    kind: ClassVar[str] = "compile"
    what: str = ""
    compile_id: str = ""
    frame: str = ""
    file: str = ""
    line: int = 0
    reason: str = ""
    type: str = ""
    detail: str = ""
    stack: str = ""
    input: str = ""
    duration_ns: int = 0


COMPILE_WHATS = ("start", "end", "break", "recompile", "guards", "limit", "fallback",
                 "unavailable")


def builder(cls: type) -> type:
    """A subclass of the frozen slotted ``cls`` that adds no slots and the plain
    ``__setattr__``: an object is built as one of these, field by field, then its
    ``__class__`` is set to ``cls`` (the layouts are the same, so Python allows it).

    Each field is then one specialised slot store (a few ns), where the frozen class's own
    ``__init__`` calls ``object.__setattr__`` per field (a lookup and a call: about 0.2 µs
    each, 3.5 µs for an Op). Builder classes never leave the constructors made from them.
    """
    return type(f"_Building{cls.__name__}", (cls,), {
        "__slots__": (), "__setattr__": object.__setattr__,
        # Both must be plain: CPython uses the generic attribute store (which the
        # interpreter specialises) only when neither is overridden.
        "__delattr__": object.__delattr__,
    })


def fast_constructor(cls: type, names: Sequence[str] | None = None) -> Any:
    """A positional constructor for a frozen slotted class, about five times quicker than
    its ``__init__`` (see ``builder``).

    Used on the tracer's hot path and by decoders; arguments in field order (``names``,
    by default the dataclass's fields), all required, none checked.
    """
    if names is None:
        names = [f.name for f in fields(cls)]
    body = "".join(f"    o.{n} = {n}\n" for n in names)
    src = (f"def make({', '.join(names)}):\n    o = _new(B)\n{body}"
           "    o.__class__ = cls\n    return o\n")
    namespace: dict[str, Any] = {"_new": object.__new__, "B": builder(cls), "cls": cls}
    exec(src, namespace)  # generated from the class's own field names
    return namespace["make"]


_make_cheap = fast_constructor(Summary, ("shape", "dtype", "norm", "nan", "inf", "sampled"))
_make_full = fast_constructor(_FullSummary, SUMMARY_FIELDS)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        Header,
        TensorCreated,
        TensorValues,
        Op,
        ModuleCall,
        BackwardStart,
        BackwardStep,
        GradAccumulated,
        BackwardEnd,
        OptimizerStep,
        IterationEnd,
        BreakpointHit,
        ScriptOutput,
        ExceptionRaised,
        RunEnd,
        CompileEvent,  # (schema 3; a kind's code in a trace file is its place here)
        Collective,  # (schema 4)
    )
}

FIELD_NAMES: dict[str, tuple[str, ...]] = {
    kind: tuple(f.name for f in fields(cls)) for kind, cls in EVENT_TYPES.items()
}
