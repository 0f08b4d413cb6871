"""Instrumentation: who is listening, where an op happened, and which iteration it is in.

The engine calls into the single ``tracer`` below. When nobody subscribes,
``tracer.listening`` is False and the engine's dispatch does nothing else: that one
attribute check is the whole cost of instrumentation when it is off.

This module knows no Tensor. The engine hands it duck-typed objects with ``_id``,
``data``, ``requires_grad``, ``grad_fn``, ``_grad`` and ``_name``.

Numbering: ``seq`` and ``iteration`` restart (at 1) whenever listening starts from nobody,
so every recording is numbered from its own beginning; a second subscriber joining later
shares the running numbers.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import events as ev
from .structure import structure_key
from .summaries import STATS_MODES, SUMMARIZERS, summarize

Subscriber = Callable[[ev.Event], None]

VALUES_MODES = ("none", "small")
VALUES_LIMIT = 4_096
"""With ``values="small"``, tensors of at most this many elements have their values recorded."""

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Demos ship inside the package but are user code: their lines are the interesting ones.
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep
_STATS_RANK = {mode: i for i, mode in enumerate(STATS_MODES)}
_PLAIN_TYPES = frozenset((int, float, bool, str, type(None)))
_NO_ATTRS: dict[str, Any] = {}  # shared by every attr-less op event: treat as read-only
_getframe = sys._getframe
_make_op = ev.fast_constructor(ev.Op)
_make_tensor = ev.fast_constructor(ev.TensorCreated)
_make_grad = ev.fast_constructor(ev.GradAccumulated)
_make_step = ev.fast_constructor(ev.BackwardStep)


class Handle:
    """Returned by every subscribe/register: ``remove()`` undoes it; also a context manager."""

    __slots__ = ("_remove",)

    def __init__(self, remove: Callable[[], None]) -> None:
        self._remove: Callable[[], None] | None = remove

    def remove(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def plain(value: Any) -> Any:
    """``value`` as plain data an event can carry and a trace file can store.

    >>> plain((slice(1, 3), np.int64(2), Ellipsis))
    ('1:3', 2, '...')
    """
    t = type(value)
    if t in _PLAIN_TYPES:
        return value
    if t is tuple or t is list:
        return tuple(plain(v) for v in value)
    if t is slice:
        parts = ["" if p is None else str(plain(p)) for p in (value.start, value.stop)]
        if value.step is not None:
            parts.append(str(plain(value.step)))
        return ":".join(parts)
    if value is Ellipsis:
        return "..."
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        # Never the values: an index array's contents are data, not structure.
        return f"array{tuple(value.shape)}:{value.dtype}"
    for base in (bool, int, float, str):  # subclasses (IntEnum, ...) become the base type
        if isinstance(value, base):
            return base(value)
    return str(value)[:80]


def plain_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    for v in attrs.values():
        if type(v) not in _PLAIN_TYPES:
            return {k: plain(v) for k, v in attrs.items()}
    return attrs


class Tracer:
    """The one emitter of events. The engine talks to it through a few hooks."""

    def __init__(self) -> None:
        self.listening = False
        self.stats = "none"
        self.values = "none"
        self._subscribers: list[tuple[Subscriber, str, str]] = []
        self._callbacks: tuple[Subscriber, ...] = ()
        self.seq = 0
        self.iteration = 1
        self.module_stack: list[str] = [""]
        self.run_info: tuple[str, tuple[str, ...]] | None = None
        self._pending_end = False
        # This iteration's Op and TensorCreated events (for its structure key), and the ids
        # of every tensor it produced or announced.
        self._iteration_events: list[ev.Event] = []
        self._known: set[int] = set()
        self._internal_code: dict[Any, bool] = {}
        # The debug agent's view of raw arrays (kept values, exact NaN checks), called just
        # before the event describing them; None unless a script runs under dyngraph.debug.
        self.array_hook: Callable[[str, int, Any], None] | None = None
        self._dtype_names: dict[Any, str] = {}
        self._shared_attrs: dict[tuple[Any, ...], dict[str, Any]] = {}
        # output id -> its Op event's inputs, this iteration (BackwardStep shares the tuple)
        self._op_inputs: dict[int, tuple[int, ...]] = {}
        self._shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._summarize: Callable[[np.ndarray], ev.Summary | None] = SUMMARIZERS["none"]
        # Gradient summaries of the backward pass in progress, by array identity: the array
        # a backward step hands to an input is usually the very array that input's own step
        # (or its leaf's accumulation) sees next, so each is summarised once.
        self._grad_summaries: dict[int, tuple[np.ndarray, ev.Summary | None]] = {}

    # -- subscribers -------------------------------------------------------------------
    def subscribe(self, callback: Subscriber, stats: str = "cheap",
                  values: str = "none") -> Handle:
        """Send every event to ``callback`` until the returned handle is removed."""
        if stats not in _STATS_RANK:
            raise ValueError(f"stats must be one of {STATS_MODES}, got {stats!r}")
        if values not in VALUES_MODES:
            raise ValueError(f"values must be one of {VALUES_MODES}, got {values!r}")
        if not self._subscribers:
            self.restart()
        entry = (callback, stats, values)
        self._subscribers.append(entry)
        self._refresh()

        def remove() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)
                self._refresh()

        return Handle(remove)

    def _refresh(self) -> None:
        subs = self._subscribers
        self.listening = bool(subs)
        self._callbacks = tuple(cb for cb, _, _ in subs)
        self.stats = max((s for _, s, _ in subs), key=_STATS_RANK.__getitem__, default="none")
        self._summarize = SUMMARIZERS[self.stats]
        self.values = "small" if any(v == "small" for _, _, v in subs) else "none"

    def restart(self) -> None:
        """Number seq and iterations afresh (a new recording in the same process)."""
        self.seq = 0
        self.iteration = 1
        self._pending_end = False
        self._iteration_events = []
        self._known = set()
        self._op_inputs = {}

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def emit(self, event: ev.Event) -> None:
        for callback in self._callbacks:
            callback(event)

    def summary(self, array: np.ndarray) -> ev.Summary | None:
        return summarize(array, self.stats)

    # -- where and when ----------------------------------------------------------------
    def source(self, depth: int = 2) -> tuple[str, int, str]:
        """The first frame outside the dyngraph package: (file, line, function).

        Whether a code object is internal is cached per code object, so the walk costs a
        dict lookup per frame.
        """
        frame = _getframe(depth)
        internal = self._internal_code
        while frame is not None:
            code = frame.f_code
            inside = internal.get(code)
            if inside is None:
                name = code.co_filename
                inside = internal[code] = name.startswith(_PACKAGE_DIR) and not name.startswith(
                    _DEMOS_DIR
                )
            if not inside:
                return code.co_filename, frame.f_lineno, code.co_name
            frame = frame.f_back  # type: ignore[assignment]
        return "", 0, ""

    @property
    def module(self) -> str:
        return self.module_stack[-1]

    def end_iteration(self) -> None:
        """Close the current iteration: emit IterationEnd and move to the next."""
        self._pending_end = False
        self.emit(
            ev.IterationEnd(
                seq=self.next_seq(),
                iteration=self.iteration,
                node_count=len(self._known),
                structure_key=structure_key(self._iteration_events),
            )
        )
        self.iteration += 1
        self._iteration_events = []
        self._known = set()
        self._op_inputs = {}

    def flush_iteration(self) -> None:
        """End a pending iteration now (used at the end of a run or a trace)."""
        if self._pending_end:
            self.end_iteration()

    def reset(self) -> None:
        """End any pending iteration, then number afresh."""
        self.flush_iteration()
        self.restart()

    # -- engine hooks ------------------------------------------------------------------
    def on_op(
        self,
        name: str,
        inputs: tuple[Any, ...],
        out: Any,
        attrs: dict[str, Any],
        grad_enabled: bool,
        duration_ns: int,
    ) -> None:
        """Called by ``apply()`` after an op ran. ``inputs`` mixes tensors and constants."""
        if self._pending_end:
            self.end_iteration()
        known = self._known
        ids = []
        for x in inputs:
            tid = getattr(x, "_id", None)
            if tid is None:
                ids.append(-1)
                continue
            ids.append(tid)
            if tid not in known:
                self.announce(x)
        file, line, function = self.source(2)
        data = out._array
        dtype = self._dtype_names.get(data.dtype) or self._dtype_name(data.dtype)
        shape = data.shape
        shape = self._shapes.setdefault(shape, shape)
        seq = self.seq = self.seq + 1
        out_id = out._id
        # Positional, in field order: this is the hottest line of a recording.
        event = _make_op(
            seq, self.iteration, name, tuple(ids), out_id, shape, dtype, out.requires_grad,
            self._attrs(attrs) if attrs else _NO_ATTRS, self.module_stack[-1], file, line,
            function, grad_enabled, duration_ns, self._summarize(data),
        )
        known.add(out_id)
        self._iteration_events.append(event)
        self._op_inputs[out_id] = event.inputs
        if self.array_hook is not None:
            self.array_hook("op", out_id, (data, inputs))
        for callback in self._callbacks:
            callback(event)
        if self.values == "small" and data.size <= VALUES_LIMIT:
            self._emit_values(out_id, data)

    def _emit_values(self, tensor_id: int, data: np.ndarray) -> None:
        if data.dtype.kind not in "biuf":
            return  # complex or object arrays: a trace stores numbers only
        self.emit(ev.TensorValues(seq=self.next_seq(), iteration=self.iteration,
                                  tensor=tensor_id, array=np.array(data, copy=True)))

    def announce(self, tensor: Any) -> None:
        """Emit TensorCreated for a tensor entering this iteration's graph (once per iteration).

        That is any input the iteration did not produce: a leaf, a parameter, or a non-leaf
        computed earlier (a hidden state carried across iterations, a value computed before
        recording began). Its values are summarised with ``stats="full"`` only: parameters
        enter every iteration and are the largest tensors, and a NaN among them shows in the
        first op that uses them anyway.
        """
        tid = tensor._id
        self._known.add(tid)
        data = tensor._array
        grad_fn = tensor.grad_fn
        self.seq += 1
        # seq, iteration, tensor, name, shape, dtype, requires_grad, is_param, summary,
        # is_leaf, grad_fn
        event = _make_tensor(
            self.seq, self.iteration, tid, getattr(tensor, "_name", "") or "",
            self._shapes.setdefault(data.shape, data.shape), self._dtype_name(data.dtype),
            tensor.requires_grad, getattr(tensor, "_is_param", False),
            None if self.stats != "full" else self._summarize(data), grad_fn is None,
            "" if grad_fn is None else grad_fn.name(),
        )
        self._iteration_events.append(event)
        if self.array_hook is not None:
            self.array_hook("value", tid, data)
        self.emit(event)
        if self.values == "small" and data.size <= VALUES_LIMIT:
            self._emit_values(tid, data)

    def _attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """``attrs`` as plain data, one shared dict per distinct value (they repeat a lot)."""
        attrs = plain_attrs(attrs)
        try:
            key = tuple(attrs.items())
            shared = self._shared_attrs.get(key)
        except TypeError:  # unhashable after all
            return attrs
        if shared is None:
            if len(self._shared_attrs) > 10_000:
                self._shared_attrs.clear()
            shared = self._shared_attrs[key] = attrs
        return shared

    def _dtype_name(self, dt: Any) -> str:
        name = self._dtype_names.get(dt)
        if name is None:
            name = self._dtype_names[dt] = str(dt)
        return name

    def _grad_summary(self, g: np.ndarray) -> ev.Summary | None:
        cache = self._grad_summaries
        hit = cache.get(id(g))
        if hit is not None and hit[0] is g:
            return hit[1]
        summary = self._summarize(g)
        cache[id(g)] = (g, summary)  # holding g keeps its id from being reused meanwhile
        return summary

    def on_backward_start(self, root: Any, retain_graph: bool) -> None:
        self._grad_summaries = {}
        self.emit(ev.BackwardStart(seq=self.next_seq(), iteration=self.iteration,
                                   root=root._id, retain_graph=retain_graph))

    def on_backward_step(
        self,
        node_id: int,
        op: str,
        grad_fn: str,
        input_ids: tuple[int, ...],
        grad_output: np.ndarray,
        grad_inputs: tuple[np.ndarray | None, ...],
        duration_ns: int,
    ) -> None:
        summ = self._grad_summary
        self.seq += 1
        same = self._op_inputs.get(node_id)
        if same is not None and same == input_ids:
            input_ids = same  # share the Op event's tuple: one less object per step
        event = _make_step(
            self.seq, self.iteration, node_id, op, grad_fn, input_ids, summ(grad_output),
            tuple([None if g is None else summ(g) for g in grad_inputs]), duration_ns,
        )
        if self.array_hook is not None:
            self.array_hook("grads", node_id, (grad_output, grad_inputs))
        for callback in self._callbacks:
            callback(event)

    def on_grad_accumulated(self, tensor: Any) -> None:
        grad = getattr(tensor, "_grad", None)
        if grad is None:
            grad = tensor.grad
        if self.array_hook is not None:
            self.array_hook("grad", tensor._id, grad._array)
        self.seq += 1
        event = _make_grad(self.seq, self.iteration, tensor._id,
                           getattr(tensor, "_name", "") or "", self._grad_summary(grad._array))
        for callback in self._callbacks:
            callback(event)

    def on_backward_end(self, root: Any, duration_ns: int) -> None:
        self._grad_summaries = {}
        self.emit(ev.BackwardEnd(seq=self.next_seq(), iteration=self.iteration,
                                 root=root._id, duration_ns=duration_ns))
        # The optimizer step that follows still belongs to this iteration, so the
        # iteration closes lazily, when the next op (or the end of the run) arrives.
        self._pending_end = True

    def on_optimizer_step(self, optimizer: str, lr: float,
                          updates: tuple[tuple[int, float], ...]) -> None:
        self.emit(ev.OptimizerStep(seq=self.next_seq(), iteration=self.iteration,
                                   optimizer=optimizer, lr=float(lr),
                                   updates=tuple((int(t), float(n)) for t, n in updates)))

    def make_header(self, stats: str | None = None, values: str | None = None,
                    script: str | None = None, argv: Iterable[str] | None = None) -> ev.Header:
        """The header that opens a recording's stream.

        ``script``/``argv`` default to ``run_info`` (set by whoever starts the recorded
        program, e.g. the debug runtime, with ``set_run_info``), else ``sys.argv``.
        """
        from .. import __version__

        if script is None or argv is None:
            if self.run_info is not None:
                default_script, default_argv = self.run_info
            else:
                default_script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
                default_argv = tuple(sys.argv[1:])
            script = default_script if script is None else script
            argv = default_argv if argv is None else argv
        # seq 0 and iteration 0: the header precedes every numbered event of its stream.
        return ev.Header(
            seq=0, iteration=0, dyngraph_version=__version__,
            script=str(script), argv=tuple(str(a) for a in argv),
            stats=stats or self.stats, values=values or self.values, created=time.time(),
        )


tracer = Tracer()


def subscribe(callback: Subscriber, stats: str = "cheap", values: str = "none") -> Handle:
    """Receive every event the engine emits from now on.

    >>> seen = []
    >>> with subscribe(seen.append):
    ...     pass
    """
    return tracer.subscribe(callback, stats, values)


def set_run_info(script: str, argv: Iterable[str]) -> None:
    """Name the program being recorded (its path and arguments) for stream headers."""
    tracer.run_info = (str(script), tuple(str(a) for a in argv))


def make_header(stats: str | None = None, values: str | None = None, script: str | None = None,
                argv: Iterable[str] | None = None) -> ev.Header:
    """The Header event that opens a stream; see ``Tracer.make_header``."""
    return tracer.make_header(stats, values, script, argv)


@contextmanager
def module_scope(path: str) -> Iterator[None]:
    """Ops inside run with module path ``path`` (used by ``nn.Module.__call__``)."""
    stack = tracer.module_stack
    stack.append(path)
    try:
        yield
    finally:
        stack.pop()


@contextmanager
def iteration() -> Iterator[None]:
    """Mark one iteration explicitly, for scripts that never call ``backward()``.

    >>> import dyngraph
    >>> with dyngraph.iteration():
    ...     pass
    """
    if tracer.listening:
        tracer.flush_iteration()
    try:
        yield
    finally:
        if tracer.listening:
            tracer.end_iteration()


now_ns = time.perf_counter_ns  # the engine's clock for durations (a C function: no wrapper)
