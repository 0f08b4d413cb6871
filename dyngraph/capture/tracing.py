"""Instrumentation: who is listening, where an op happened, and which iteration it is in.

Every backend (the numpy engine, PyTorch) reports to the single ``tracer`` below. When
nobody subscribes, ``tracer.listening`` is False and a backend's dispatch does nothing
else: that one attribute check is the whole cost of instrumentation when it is off.

This module knows no Tensor class. A backend hands it tensor ids (from ``tensor_ids``,
one counter for the whole process), shapes, dtype names, summaries, and raw values that
are only passed on (see ``Tracer``).

Numbering: ``seq`` and ``iteration`` restart whenever listening starts from nobody, so
every recording is numbered from its own beginning; a second subscriber joining later
shares the running numbers. Iteration 0 is *setup*: the work before the first
differentiable op (loading and tokenising data, building inputs, an evaluation under
``no_grad``). It ends, with its own IterationEnd, where the first op whose output requires
gradients runs with gradients enabled (``end_setup``, which backends call before they
announce that op's inputs), or at the first ``compile`` event (``record``); a run with no
such work before it has no iteration 0, and a
run that never computes a gradient nor marks an iteration is all iteration 0.

Where an iteration ends (``mode``): ``"backward"`` (the default) when a ``backward()``
completes, the optimizer step that follows belonging to it; ``"step"`` when an optimizer
step completes (gradient accumulation, LBFGS' closure and REINFORCE's per-step backward
passes stay in one iteration). ``dyngraph.iteration()`` marks one explicitly in both.

Threads: a recording captures one thread, the one that started it (the first subscriber's;
under ``dyngraph record``/``check``/``debug`` the script's main thread). Ops, module calls,
backward passes and optimizer steps of other threads run normally but emit nothing: their
events would otherwise share, and scramble, one iteration numbering and module stack. The
first such op of a recording makes one note (``backends.note``) saying so.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..version import __version__
from . import events as ev
from . import summaries
from .arrays import to_numpy
from .keys import StructureKeys
from .listening import EventHook, Handle, Subscriber
from .modulecalls import ModuleCalls
from .pacing import CollectorPacing, keep
from .pending import Pending, resolved_prefix
from .plainvalues import PLAIN_TYPES, plain
from .rows import Row, summary_row
from .sites import SourceSites
from .summaries import ROW_SUMMARIZERS, STATS_MODES

Sink = Callable[[list[Row]], None]
RowHook = Callable[[Row], None]

VALUES_MODES = ("none", "small")
VALUES_LIMIT = 4_096
"""With ``values="small"``, tensors of at most this many elements have their values recorded."""

_STATS_RANK = {mode: i for i, mode in enumerate(STATS_MODES)}
_get_ident = threading.get_ident
BATCH_ROWS = 1024
"""Rows are handed to the batch sinks (trace files, in-memory traces) at every iteration's
end and at least every this many rows."""

tensor_ids = itertools.count(1)
"""Where every backend takes its tensor ids: one counter per process, so ids never collide
between backends or between two recordings (``next(tensor_ids)``)."""


class Tracer(SourceSites, ModuleCalls):
    """The one emitter of events. Backends report what happened through its recording API.

    The recording API, shared by every backend (the numpy engine, PyTorch), speaks in ids,
    shapes, dtype names and summaries; raw values (``value``, ``args``) are only handed on,
    untouched, to ``array_hook`` (the debugger's exact NaN checks and kept values) and,
    with ``values="small"``, to ``arrays.to_numpy``:

    - ``op(...)`` after a forward op ran; ``tensor(...)`` first, for each input the
      iteration does not know yet (``known``);
    - ``backward_start``, ``backward_step`` (per backward node), ``grad_accumulated`` (per
      leaf), ``backward_end``; ``optimizer_step``.

    The first ``op`` or ``tensor`` after a backward ended closes the iteration (the
    optimizer step in between still belongs to it); ``known`` is empty from the backward's
    end on, so the next iteration announces its inputs afresh.

    Every event is recorded as a row (``dyngraph.capture.rows``) and delivered with
    ``deliver``: at once to the row hooks (the debug agent) and to ``subscribe``'s
    callbacks (as an event object), and in batches (``flush_rows``: at every iteration's
    end and every ``BATCH_ROWS`` rows) to the sinks (trace files, in-memory traces).
    A backend with a hot path of its own (the numpy engine's ``recording``) builds rows
    itself and delivers them the same way.
    """

    def __init__(self) -> None:
        self.listening = False
        self.thread = 0  # the ident of the one thread a recording captures (see above)
        self._foreign_noted = False
        self.stats = "none"
        # Read each op's statistics as it runs, not once per iteration (``pending``): set
        # while a value breakpoint of the debugger must judge every op at once.
        self.eager_stats = False
        # Summarise tensors entering an iteration (leaves, parameters) at ``cheap`` too:
        # ``check`` names a parameter that holds NaN.
        self.leaf_stats = False
        self.values = "none"
        # (sink, row hook, stats, values) of each listener
        self._listeners: list[tuple[Sink | None, RowHook | None, str, str]] = []
        self._sinks: tuple[Sink, ...] = ()
        self.hooks: tuple[RowHook, ...] = ()
        self.rows: list[Row] = []  # the batch being gathered for the sinks
        self.seq = 0
        self.iteration = 0  # setup, until the first differentiable op (see end_setup)
        self.mode = "backward"  # where iterations end: "backward" or "step"
        ModuleCalls.__init__(self)  # (the module calls ops run in: ``modulecalls``)
        self.run_info: tuple[str, tuple[str, ...]] | None = None
        # (rank, world size, run id) of a rank of a torchrun job, for headers (see ranks/)
        self.job: tuple[int, int, str] = (0, 0, "")
        self._pending_end = False
        self._ended_count = 0  # the node count of an iteration whose backward ended
        # This iteration's op and tensor rows (for its structure key), and the ids of
        # every tensor it produced or announced. ``known`` is cleared in place at an
        # iteration's end, so a backend may hold on to it.
        self.iteration_ops: list[Row] = []
        self.iteration_tensors: list[Row] = []
        self.known: set[int] = set()
        SourceSites.__init__(self)  # (where ops happened: ``sites``)
        # The debug agent's view of raw values (kept values, exact NaN checks), called just
        # before the event describing them; None unless a script runs under dyngraph.debug.
        self.array_hook: Callable[[str, int, Any], None] | None = None
        # Called at an iteration's boundaries of the capturing thread, with the boundary
        # ("backward_start", before its event, with the root's id; "backward_end" and
        # "iteration_end", after theirs, with "" and the structure key): the rank logic of
        # a torchrun job compares ranks there (``dyngraph.ranks``). A few calls an iteration.
        self.boundary_hooks: tuple[Callable[[str, Any], None], ...] = ()
        self._shared_attrs: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._keys = StructureKeys()
        # The numpy summariser of the current stats mode, for backends that hold ndarrays:
        # it returns summary rows (``dyngraph.capture.rows``).
        self.summarize_array: Callable[[np.ndarray], Any] = ROW_SUMMARIZERS["none"]
        # The collector runs as often per object the program allocates as unrecorded.
        self._pacing = CollectorPacing()
        # Hand every tuple a row holds but the row alone refers to (its ids, summary ...)
        # to ``keep``: the collector then untracks row and items in one pass (``pacing``).
        self.keep = keep
        # A backend that keeps statistics on the device (PyTorch's) reads them all at once
        # through this (see ``read_stats``; True: it read something); ``after_read`` is
        # called after every such read (the debug agent judges NaN there in ``check``).
        self.read_pending: Callable[[], bool] | None = None
        self.after_read: list[Callable[[], None]] = []

    # -- listeners -----------------------------------------------------------------------
    def subscribe(self, callback: Subscriber, stats: str = "cheap",
                  values: str = "none") -> Handle:
        """Send every event to ``callback`` until the returned handle is removed."""
        hook = EventHook(callback)
        self.after_read.append(hook.drain)
        handle = self.attach(hook=hook, stats=stats, values=values)

        def remove() -> None:
            self.read_stats()  # (what it has not been given yet is its too)
            handle.remove()
            hook.drain()
            if hook.drain in self.after_read:
                self.after_read.remove(hook.drain)

        return Handle(remove)

    def attach(self, sink: Sink | None = None, hook: RowHook | None = None,
               stats: str = "cheap", values: str = "none") -> Handle:
        """Deliver rows until the returned handle is removed: ``hook(row)`` at once for
        every row, ``sink(rows)`` for every batch (a list the sink may keep, never change).
        How ``dyngraph.trace``, ``dyngraph.record`` and the debug agent listen."""
        if stats not in _STATS_RANK:
            raise ValueError(f"stats must be one of {STATS_MODES}, got {stats!r}")
        if values not in VALUES_MODES:
            raise ValueError(f"values must be one of {VALUES_MODES}, got {values!r}")
        if not self._listeners:
            self.restart()
            self.thread = _get_ident()
        else:
            self.flush_rows()  # a new sink starts with the rows that come after it
        entry = (sink, hook, stats, values)
        self._listeners.append(entry)
        self._refresh()

        def remove() -> None:
            if entry in self._listeners:
                self.flush_rows()  # what it has not been given yet is its too
                self._listeners.remove(entry)
                self._refresh()
                if not self._listeners:
                    # Where iterations end is the recording's choice, not the process's:
                    # a later ``subscribe`` (which does not choose) ends them at backward.
                    self.mode = "backward"

        return Handle(remove)

    @property
    def _subscribers(self) -> list[tuple[Any, ...]]:
        return self._listeners  # (the number of listeners is what callers ask)

    def _refresh(self) -> None:
        subs = self._listeners
        self.listening = bool(subs)
        self._sinks = tuple(s for s, _, _, _ in subs if s is not None)
        self.hooks = tuple(h for _, h, _, _ in subs if h is not None)
        self.stats = max((s for _, _, s, _ in subs), key=_STATS_RANK.__getitem__,
                         default="none")
        self.summarize_array = ROW_SUMMARIZERS[self.stats]
        self.values = "small" if any(v == "small" for _, _, _, v in subs) else "none"
        if subs:
            self._pacing.start(self.seq)
            summaries.keep = keep
        else:
            self._pacing.stop()
            summaries.keep = summaries._keep_nothing

    def restart(self) -> None:
        """Number seq and iterations afresh (a new recording in the same process)."""
        self.seq = 0
        self.iteration = 0
        self._pending_end = False
        self.iteration_ops = []
        self.iteration_tensors = []
        self.rows = []
        self.known.clear()
        self.at_top_level()
        self._foreign_noted = False

    def other_thread(self) -> bool:
        """Is the calling thread one the recording does not capture? (Noted once.)"""
        if _get_ident() == self.thread:
            return False
        if not self._foreign_noted:
            self._foreign_noted = True
            from . import backends  # (it imports this module)

            name = threading.current_thread().name
            backends.note(f"ops on thread {name!r} were not captured: a recording captures "
                          "only the thread that started it (the script's main thread)")
        return True

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def deliver(self, row: Row) -> None:
        """Record one row: to the hooks now, to the sinks with its batch."""
        rows = self.rows
        rows.append(row)
        for hook in self.hooks:
            hook(row)
        if len(rows) >= BATCH_ROWS:
            self.flush_rows(final=False)

    def read_stats(self) -> None:
        """Read the backend's pending statistics now (one host read, on a device: see
        ``dyngraph.capture.pending``): at an iteration's end, at a pause, when the run or
        a listener ends, or when the backend's buffer is full."""
        read = self.read_pending
        if read is not None and read():
            for after in tuple(self.after_read):
                after()

    def flush_rows(self, final: bool = True) -> None:
        """Hand the rows gathered so far to the sinks, as one batch. ``final``: every
        pending statistic is read first; otherwise the rows up to the first one still
        waiting for its statistics go, and the rest waits."""
        rows = self.rows
        if rows and self.read_pending is not None and self._sinks:
            if final:
                self.read_stats()
            rows = resolved_prefix(rows)
        if rows:
            self.rows = self.rows[len(rows):]
            self.keep(rows)  # (the sinks may keep the rows in a tuple made after them)
            for sink in self._sinks:
                sink(rows)
            self._pacing.rows_recorded(self.seq)

    def emit(self, event: ev.Event) -> None:
        """Record an event object (its row, that is)."""
        from .rows import row_of

        self.deliver(row_of(event))

    def end_iteration(self) -> None:
        """Close the current iteration: emit IterationEnd and move to the next."""
        self.read_stats()  # (the iteration's statistics, before its end is told)
        count = self._ended_count if self._pending_end else len(self.known)
        self._pending_end = False
        self.seq += 1
        key = self._keys.key(self.iteration_ops, self.iteration_tensors)
        self.deliver(("iteration_end", self.seq, self.iteration, count, key))
        for hook in self.boundary_hooks:
            hook("iteration_end", key)
        self.flush_rows()
        self.iteration += 1
        self.iteration_ops = []
        self.iteration_tensors = []
        self.known.clear()
        self._announced = 1  # calls still running are introduced again in the next one

    def end_setup(self) -> None:
        """The first differentiable op is about to be recorded: setup (iteration 0) ends
        here. Backends call it before announcing that op's inputs, so they enter
        iteration 1 (a tensor made during setup enters it as a carried input). Setup that
        recorded nothing leaves no trace: numbering simply goes on at 1."""
        if self.iteration != 0:
            return
        if self._pending_end:  # (a setup ending with an explicit iteration mark)
            self.end_iteration()
            return
        if self.iteration_ops or self.iteration_tensors:
            self.end_iteration()
        else:
            self.iteration = 1
            self.known.clear()

    def flush_iteration(self) -> None:
        """End a pending iteration now (used at the end of a run or a trace)."""
        if self._pending_end:
            self.end_iteration()

    def reset(self) -> None:
        """End any pending iteration, then number afresh."""
        self.flush_iteration()
        self.restart()

    # -- the recording API (every backend) ------------------------------------------------
    def op(self, name: str, inputs: tuple[int, ...], output: int, shape: tuple[int, ...],
           dtype: str, requires_grad: bool, attrs: dict[str, Any] | tuple[Any, ...],
           grad_enabled: bool, duration_ns: int, summary: Any, value: Any, args: Any,
           skip: int = 1) -> None:
        """A forward op ran: ``output = name(*inputs, **attrs)``.

        ``inputs`` are tensor ids (-1 for a constant), each already ``known`` (report new
        ones with ``tensor`` first); ``attrs`` a dict, or the row's items already
        (``shared_attrs``); ``summary`` a Summary, a summary row or None;
        ``value`` is the output's raw value and ``args`` the op's raw arguments, aligned
        with ``inputs`` (for ``array_hook``). The source line is looked up here: the first
        frame outside dyngraph and the backends' libraries, from ``skip`` frames up (a
        backend that knows its own first frames are library code says so: each frame
        walked over is a frame object Python builds for the walk).
        """
        if _get_ident() != self.thread and self.other_thread():
            return
        if self._pending_end:
            self.end_iteration()
        if self.iteration == 0 and requires_grad and grad_enabled:
            self.end_setup()  # (a backend that did not say so before its inputs)
        calls = self.call_stack
        if self._announced < len(calls):
            self.announce_calls()
        file, line, function = self.source(skip + 1)
        shape = self.shapes.setdefault(shape, shape)
        self.seq += 1
        keep = self.keep
        keep(inputs)
        if summary is not None:
            summary = summary_row(summary)
            keep(summary)
        row = ("op", self.seq, self.iteration, name, inputs, output, shape, dtype,
               requires_grad,
               attrs if isinstance(attrs, tuple) else self.attrs(attrs) if attrs else (),
               self.module_stack[-1], file, line, function, grad_enabled, duration_ns,
               summary, calls[-1])
        self.known.add(output)
        self.iteration_ops.append(row)
        if self.array_hook is not None:
            self.array_hook("op", output, (value, args))
        self.deliver(row)
        if self.values == "small":
            self.emit_values(output, shape, value)

    def tensor(self, tensor: int, name: str, shape: tuple[int, ...], dtype: str,
               requires_grad: bool, is_param: bool, summary: Any, is_leaf: bool,
               grad_fn: str, value: Any) -> None:
        """A tensor enters the current iteration's graph (once per iteration; see ``known``).

        That is any input the iteration did not produce: a leaf, a parameter, or a non-leaf
        computed earlier (a hidden state carried across iterations, a value computed before
        recording began). Backends summarise it with ``stats="full"`` only: parameters
        enter every iteration and are the largest tensors, and a NaN among them shows in the
        first op that uses them anyway.
        """
        if _get_ident() != self.thread and self.other_thread():
            return
        if self._pending_end:
            self.end_iteration()
        self.known.add(tensor)
        self.seq += 1
        shape = self.shapes.setdefault(shape, shape)
        summary = summary_row(summary)
        self.keep(summary)
        row = ("tensor", self.seq, self.iteration, tensor, name, shape, dtype, requires_grad,
               is_param, summary, is_leaf, grad_fn)
        self.iteration_tensors.append(row)
        if self.array_hook is not None:
            self.array_hook("value", tensor, value)
        self.deliver(row)
        if self.values == "small":
            self.emit_values(tensor, shape, value)

    def emit_values(self, tensor_id: int, shape: tuple[int, ...], value: Any) -> None:
        n = 1
        for d in shape:
            n *= d
        if n > VALUES_LIMIT:
            return
        data = to_numpy(value)
        if data.dtype.kind not in "biuf" or data.size != n:
            return  # complex or object arrays: a trace stores numbers only; no values at all
            # (a tensor whose values cannot be read, or unwritten memory)
        self.seq += 1
        self.deliver(("values", self.seq, self.iteration, tensor_id,
                      np.array(data, copy=True)))

    def attrs(self, attrs: dict[str, Any]) -> tuple[Any, ...]:
        """``attrs`` as a row holds them: its items as plain data, one shared tuple per
        distinct value (they repeat a lot)."""
        return self.shared_attrs(tuple([(k, v) if type(v) in PLAIN_TYPES else (k, plain(v))
                                        for k, v in attrs.items()]))

    def shared_attrs(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row's attrs ``key`` (plain ``(name, value)`` items), as the one shared tuple
        of its value."""
        try:
            shared = self._shared_attrs.get(key)
        except TypeError:  # unhashable after all
            return key
        if shared is None:
            if len(self._shared_attrs) > 10_000:
                self._shared_attrs.clear()
            shared = self._shared_attrs[key] = key
            for item in key:  # (the (name, value) pairs: see ``keep``)
                self.keep(item)
        return shared

    def backward_start(self, root: int, retain_graph: bool) -> None:
        if _get_ident() != self.thread and self.other_thread():
            return
        if self.iteration == 0:
            self.end_setup()
        for hook in self.boundary_hooks:
            hook("backward_start", root)
        self.seq += 1
        self.deliver(("backward_start", self.seq, self.iteration, root, retain_graph))

    def backward_step(self, node: int, op: str, grad_fn: str, inputs: tuple[int, ...],
                      grad_output: Any, grad_inputs: tuple[Any, ...], duration_ns: int,
                      grad_output_value: Any, grad_input_values: Any, grad_node: int = -1,
                      outputs: tuple[int, ...] = (), grad_outputs: tuple[Any, ...] = (),
                      next_nodes: tuple[int, ...] = (),
                      grad_output_values: tuple[Any, ...] = ()) -> None:
        """A backward node ran. ``node`` is the id of the forward op's output it belongs to
        (-1: none known); ``inputs`` the ids its gradients flow to, aligned with
        ``grad_inputs`` (summaries, summary rows or None where no gradient flows); the two
        values are the raw gradients, for ``array_hook``. A backend whose nodes are not one
        per op output (PyTorch's) names the node (``grad_node``), the forward tensor of each
        of its output slots with that slot's gradient (``outputs``, ``grad_outputs``, raw:
        ``grad_output_values``) and the node each input slot's gradient goes to
        (``next_nodes``): see ``events.BackwardStep``."""
        if _get_ident() != self.thread and self.other_thread():
            return
        self.seq += 1
        grad_output = summary_row(grad_output)
        grad_inputs = tuple([summary_row(s) for s in grad_inputs])
        keep = self.keep
        keep(inputs)
        keep(grad_output)
        for s in grad_inputs:
            keep(s)
        keep(grad_inputs)
        if grad_outputs:
            grad_outputs = tuple([grad_output if i == 0 else summary_row(s)
                                  for i, s in enumerate(grad_outputs)])
            for s in grad_outputs:
                keep(s)
            keep(grad_outputs)
            keep(outputs)
        if next_nodes:
            keep(next_nodes)
        row = ("backward_step", self.seq, self.iteration, node, op, grad_fn, inputs,
               grad_output, grad_inputs, duration_ns, grad_node, outputs, grad_outputs,
               next_nodes)
        if self.array_hook is not None:
            payload: tuple[Any, ...] = (grad_output_value, grad_input_values)
            if outputs:
                payload += (outputs, grad_output_values)
            self.array_hook("grads", node, payload)
        self.deliver(row)

    def grad_accumulated(self, tensor: int, name: str, summary: Any, value: Any) -> None:
        """A gradient was accumulated into leaf ``tensor``; ``value`` is its new ``.grad``."""
        if _get_ident() != self.thread and self.other_thread():
            return
        if self.array_hook is not None:
            self.array_hook("grad", tensor, value)
        self.seq += 1
        summary = summary_row(summary)
        self.keep(summary)
        self.deliver(("grad", self.seq, self.iteration, tensor, name, summary))

    def backward_end(self, root: int, duration_ns: int) -> None:
        if _get_ident() != self.thread and self.other_thread():
            return
        self.seq += 1
        self.deliver(("backward_end", self.seq, self.iteration, root, duration_ns))
        if self.mode == "backward":
            self._close_lazily()

    def _close_lazily(self) -> None:
        # What follows (the optimizer step after a backward) still belongs to this
        # iteration, so it closes when the next op (or the end of the run) arrives. Any op
        # from now on is the next iteration's: it knows no tensor yet.
        self._pending_end = True
        self._ended_count = len(self.known)
        self.known.clear()
        for hook in self.boundary_hooks:
            hook("backward_end", "")

    def optimizer_step(self, optimizer: str, lr: float,
                       updates: tuple[tuple[int, float], ...] | Pending) -> None:
        """``updates`` pairs each parameter's tensor id with the L2 norm of its update
        (or is a ``Pending`` that will)."""
        if _get_ident() != self.thread and self.other_thread():
            return
        self.seq += 1
        if type(updates) is Pending:  # (read later: ``dyngraph.capture.pending``)
            self.deliver(("optimizer_step", self.seq, self.iteration, optimizer, float(lr),
                          updates))
        else:
            pairs = [(int(t), float(n)) for t, n in updates]  # type: ignore[union-attr]
            self.keep(pairs)  # (a list, made before its pairs: they stay in order behind it)
            self.deliver(("optimizer_step", self.seq, self.iteration, optimizer, float(lr),
                          tuple(pairs)))
        # (a step whose norms are still on the device ends its iteration all the same)
        if self.mode == "step" and self.iteration > 0:
            self._close_lazily()

    def record(self, kind: str, *fields: Any) -> None:
        """Record a row of ``kind`` (one with no method of its own here: the compile lane's
        ``compile``) in the current iteration; like an op, it closes an iteration whose
        backward ended. It also ends setup: torch.compile compiles a call as it begins, so
        the first compile belongs with the ops of that call, the model's first iteration,
        not with the data loading before it."""
        if _get_ident() != self.thread and self.other_thread():
            return
        if self._pending_end:
            self.end_iteration()
        if self.iteration == 0:
            self.end_setup()
        self.seq += 1
        self.deliver((kind, self.seq, self.iteration, *fields))

    def make_header(self, stats: str | None = None, values: str | None = None,
                    script: str | None = None, argv: Iterable[str] | None = None) -> ev.Header:
        """The header that opens a recording's stream.

        ``script``/``argv`` default to ``run_info`` (set by whoever starts the recorded
        program, e.g. the debug runtime, with ``set_run_info``), else ``sys.argv``.
        """
        if script is None or argv is None:
            if self.run_info is not None:
                default_script, default_argv = self.run_info
            else:
                default_script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
                default_argv = tuple(sys.argv[1:])
            script = default_script if script is None else script
            argv = default_argv if argv is None else argv
        # seq 0 and iteration 0: the header precedes every numbered event of its stream.
        rank, world_size, run_id = self.job
        return ev.Header(
            seq=0, iteration=0, dyngraph_version=__version__,
            script=str(script), argv=tuple(str(a) for a in argv),
            stats=stats or self.stats, values=values or self.values, created=time.time(),
            numpy_version=np.__version__, iteration_mode=self.mode,
            rank=rank, world_size=world_size, run_id=run_id,
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
    """Ops inside run in one call of the module at ``path`` (see ``Tracer.enter_module``)."""
    tracer.enter_module(path)
    try:
        yield
    finally:
        tracer.exit_module()


@contextmanager
def iteration() -> Iterator[None]:
    """Mark one iteration explicitly, for scripts that never call ``backward()``.

    >>> import dyngraph
    >>> with dyngraph.iteration():
    ...     pass
    """
    mine = tracer.listening and not tracer.other_thread()  # another thread's: not captured
    if mine:
        tracer.flush_iteration()
        tracer.end_setup()  # what came before the first marked iteration was setup
    try:
        yield
    finally:
        if mine and tracer.listening:
            tracer.end_iteration()


now_ns = time.perf_counter_ns  # the engine's clock for durations (a C function: no wrapper)
