"""Instrumentation: who is listening, where an op happened, and which iteration it is in.

The engine calls into the single ``tracer`` below. When nobody subscribes,
``tracer.listening`` is False and the engine's dispatch does nothing else: that one
attribute check is the whole cost of instrumentation when it is off.

This module knows no Tensor. The engine hands it duck-typed objects with ``_id``,
``data``, ``requires_grad``, ``grad_fn`` and ``_name``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import events as ev
from .summaries import STATS_MODES, summarize

Subscriber = Callable[[ev.Event], None]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Demos ship inside the package but are user code: their lines are the interesting ones.
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep
_STATS_RANK = {mode: i for i, mode in enumerate(STATS_MODES)}


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


def structure_key(ops: Iterable[ev.Op]) -> str:
    """A canonical key of a graph's ops, connectivity and shapes.

    Tensor ids differ between iterations, so each input is named by where it came from:
    ``o3`` is the output of the iteration's fourth op, ``l1`` its second distinct leaf
    (leaves keep their names, so swapping two parameters changes the key).
    """
    local: dict[int, str] = {}
    leaves = 0
    parts: list[str] = []
    for i, op in enumerate(ops):
        refs = []
        for tid in op.inputs:
            if tid < 0:
                refs.append("c")
                continue
            ref = local.get(tid)
            if ref is None:
                ref = local[tid] = f"l{leaves}"
                leaves += 1
            refs.append(ref)
        local[op.output] = f"o{i}"
        parts.append(f"{op.op}({','.join(refs)}){op.shape}{op.dtype}@{op.module}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=8).hexdigest()


class Tracer:
    """The one emitter of events. The engine talks to it through a few hooks."""

    def __init__(self) -> None:
        self.listening = False
        self.stats = "none"
        self._subscribers: list[tuple[Subscriber, str]] = []
        self.seq = 0
        self.iteration = 1
        self.module_stack: list[str] = [""]
        self._pending_end = False
        self._iteration_ops: list[ev.Op] = []
        self._announced: set[int] = set()
        self._internal_code: dict[Any, bool] = {}

    # -- subscribers -------------------------------------------------------------------
    def subscribe(self, callback: Subscriber, stats: str = "cheap") -> Handle:
        """Send every event to ``callback`` until the returned handle is removed."""
        if stats not in _STATS_RANK:
            raise ValueError(f"stats must be one of {STATS_MODES}, got {stats!r}")
        entry = (callback, stats)
        self._subscribers.append(entry)
        self._refresh()

        def remove() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)
                self._refresh()

        return Handle(remove)

    def _refresh(self) -> None:
        self.listening = bool(self._subscribers)
        self.stats = max((s for _, s in self._subscribers), key=_STATS_RANK.__getitem__,
                         default="none")

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def emit(self, event: ev.Event) -> None:
        for callback, _ in tuple(self._subscribers):
            callback(event)

    def summary(self, array: np.ndarray) -> ev.Summary | None:
        return summarize(array, self.stats)

    # -- where and when ----------------------------------------------------------------
    def source(self) -> tuple[str, int, str]:
        """The first frame outside the dyngraph package: (file, line, function)."""
        frame = sys._getframe(2)
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

    def _begin_op(self) -> None:
        if self._pending_end:
            self.end_iteration()

    def end_iteration(self) -> None:
        """Close the current iteration: emit IterationEnd and move to the next."""
        self._pending_end = False
        ops = self._iteration_ops
        self.emit(
            ev.IterationEnd(
                seq=self.next_seq(),
                iteration=self.iteration,
                node_count=len(ops) + len(self._announced),
                structure_key=structure_key(ops),
            )
        )
        self.iteration += 1
        self._iteration_ops = []
        self._announced = set()

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
        self._begin_op()
        ids = []
        for x in inputs:
            tid = getattr(x, "_id", None)
            if tid is None:
                ids.append(-1)
                continue
            ids.append(tid)
            if x.grad_fn is None and tid not in self._announced:
                self.announce(x)
        file, line, function = self.source()
        data = out.data
        event = ev.Op(
            seq=self.next_seq(),
            iteration=self.iteration,
            op=name,
            inputs=tuple(ids),
            output=out._id,
            shape=data.shape,
            dtype=str(data.dtype),
            requires_grad=out.requires_grad,
            attrs=attrs,
            module=self.module_stack[-1],
            file=file,
            line=line,
            function=function,
            grad_enabled=grad_enabled,
            duration_ns=duration_ns,
            summary=summarize(data, self.stats),
        )
        self._iteration_ops.append(event)
        self.emit(event)

    def announce(self, tensor: Any) -> None:
        """Emit TensorCreated for a leaf (once per iteration), with its name if it has one."""
        self._announced.add(tensor._id)
        data = tensor.data
        self.emit(
            ev.TensorCreated(
                seq=self.next_seq(),
                iteration=self.iteration,
                tensor=tensor._id,
                name=tensor._name or "",
                shape=data.shape,
                dtype=str(data.dtype),
                requires_grad=tensor.requires_grad,
                is_param=getattr(tensor, "_is_param", False),
                summary=summarize(data, self.stats),
            )
        )

    def on_backward_start(self, root: Any, retain_graph: bool) -> None:
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
        stats = self.stats
        self.emit(
            ev.BackwardStep(
                seq=self.next_seq(),
                iteration=self.iteration,
                node=node_id,
                op=op,
                grad_fn=grad_fn,
                inputs=input_ids,
                grad_output=summarize(grad_output, stats),
                grad_inputs=tuple(None if g is None else summarize(g, stats) for g in grad_inputs),
                duration_ns=duration_ns,
            )
        )

    def on_grad_accumulated(self, tensor: Any) -> None:
        self.emit(ev.GradAccumulated(seq=self.next_seq(), iteration=self.iteration,
                                     tensor=tensor._id, name=tensor._name or "",
                                     summary=summarize(tensor.grad.data, self.stats)))

    def on_backward_end(self, root: Any, duration_ns: int) -> None:
        self.emit(ev.BackwardEnd(seq=self.next_seq(), iteration=self.iteration,
                                 root=root._id, duration_ns=duration_ns))
        # The optimizer step that follows still belongs to this iteration, so the
        # iteration closes lazily, when the next op (or the end of the run) arrives.
        self._pending_end = True

    def on_optimizer_step(self, optimizer: str, lr: float,
                          updates: tuple[tuple[int, float], ...]) -> None:
        self.emit(ev.OptimizerStep(seq=self.next_seq(), iteration=self.iteration,
                                   optimizer=optimizer, lr=lr, updates=updates))

    def flush_iteration(self) -> None:
        """End a pending iteration now (used at the end of a run or a trace)."""
        if self._pending_end:
            self.end_iteration()

    def reset(self) -> None:
        """Start numbering afresh (a new recording in the same process)."""
        self.flush_iteration()
        self.seq = 0
        self.iteration = 1
        self._iteration_ops = []
        self._announced = set()


tracer = Tracer()


def subscribe(callback: Subscriber, stats: str = "cheap") -> Handle:
    """Receive every event the engine emits from now on.

    >>> seen = []
    >>> with subscribe(seen.append):
    ...     pass
    """
    return tracer.subscribe(callback, stats)


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


def now_ns() -> int:
    return time.perf_counter_ns()
