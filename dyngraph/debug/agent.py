"""The agent: the half of the debug runtime that lives in the script's process.

It subscribes to the tracer, batches events up the channel (flushing on a pause, every
``BATCH`` events and every ``FLUSH_INTERVAL`` seconds from its pump thread), checks every
event against the breakpoints and the current stepping command, and when one hits it
emits ``BreakpointHit`` and blocks the script until the session says how to go on. It
also keeps recent tensor values (``values.ValueStore``) to answer value requests.

Threads: the script's own thread runs ``on_event`` (the hot path: no locks, no syscalls
unless a batch is full); a command thread reads the channel; a pump thread drains the
captured C-level output and flushes batches on the timer.
"""

from __future__ import annotations

import gc
import math
import operator
import os
import sys
import threading
import time
import traceback
from collections import deque
from types import TracebackType
from typing import Any

import numpy as np

from ..capture import backends, tracefile
from ..capture import events as ev
from ..capture.arrays import to_numpy
from ..capture.pending import resolved
from ..capture.rows import Row, event_of, row_of, summary_of
from ..capture.tracing import set_run_info, tracer
from ..compile_lane import set_mode as set_compile_mode
from .breakpoints import (
    Breakpoint,
    Matcher,
    all_finite,
    nonfinite_counts,
    reads_per_op,
    same_file,
)
from .channel import Channel, ChannelClosed, readable
from .describe import ModuleStack, counts, describe_op, first_line, locate_exception, where
from .evaluation import FrameEvaluator
from .inspection import InspectError, result_to_wire, view_to_wire
from .nonfinite import ForwardChecks
from .readchecks import ReadChecks
from .settled import all_settled, gradient_norm, settled
from .values import ValueStore
from .watchdog import Busy, pong

BATCH = 512
ABORTED = 137  # exit status after {"cmd": "abort"}: what a SIGKILL'd process shows a shell
MAX_OPS = 200_000  # forward ops remembered (to describe backward steps) within an iteration
FLUSH_INTERVAL = 0.05
FLUSH_ROUNDS = 8  # what a flush queued for itself (a finalizer's print) goes in these
OUTPUT_JOIN = 4096  # print()'s pieces are joined into one event up to this many characters
RESUME_COMMANDS = ("step_op", "next_iteration", "finish_forward", "finish_backward",
                   "continue", "run_to_line", "pause")
INSPECT_COMMANDS = ("inspect", "eval")  # served on the paused thread, one at a time

_hard_exit = os._exit  # the real one: the child wraps os._exit for the script
# Rows (``dyngraph.capture.rows``) are what the agent sees: the places of the fields it
# reads. An op row: its op, inputs, output, module, file, line, summary.
_OP, _INPUTS, _OUTPUT, _MODULE, _FILE, _LINE, _SUMMARY = 3, 4, 5, 10, 11, 12, 16
_SEQ = operator.itemgetter(1)


class Agent(ForwardChecks, ReadChecks):
    """Runs in the child. ``start()`` before the script, ``finish()`` after it."""

    def __init__(self, channel: Channel, *, stats: str = "full", values: str = "none",
                 breakpoints: list[dict[str, Any]] | tuple[()] = (), keep_values: bool = True,
                 post_mortem: bool = True, keep_iterations: int = 2,
                 max_bytes: int = 256 * 1024 * 1024, batch: int = BATCH,
                 decoder: tracefile.FrameDecoder | None = None,
                 early_commands: list[dict[str, Any]] | tuple[()] = (),
                 backend: str = "auto", iteration: str = "backward",
                 relative_paths: bool = False,
                 compile: str | None = None,  # noqa: A002
                 judge_at_read: bool = False) -> None:
        self.channel = channel
        # A recording to share names files relative to the script's folder, not by
        # this machine's absolute paths (``capture.paths``); the live debugger keeps them.
        self.relative_paths = relative_paths
        # NaN / gradient-norm breakpoints judged when statistics are read (``check``),
        # not per op: see ``readchecks``
        self.judge_at_read = judge_at_read
        self._unjudged: list[Row] = []
        self._const_inf: set[int] = set()
        self._judged_handed: set[int] = set()
        self._judged_sq: dict[int, float] = {}
        self.backend = backend
        self.iteration_mode = iteration  # where iterations end (tracing.Tracer.mode)
        self.compile = compile
        self._backends: Any = None
        self.notes: list[str] = []
        self.detached = False  # set in a forked worker: it must not write to the channel
        self._main_ident = threading.get_ident()
        self._out_window = 0.0
        self._out_flushes = 0
        self._decoder = decoder or tracefile.FrameDecoder()
        self._early = list(early_commands)
        self.stats = stats
        self.values = values
        self.post_mortem = post_mortem
        self.store = ValueStore(keep_iterations, max_bytes) if keep_values else None
        self._bps: dict[int, Breakpoint] = {}
        for d in breakpoints:
            bp = Breakpoint.from_dict(d)
            self._bps[bp.id] = bp
        self._matcher = Matcher.build(self._bps.values())
        self._batch = batch
        self._queue: deque[Row] = deque()
        self._flush_lock = threading.Lock()
        self._flusher = 0  # the thread inside flush (0: none)
        self._parked: deque[tuple[str, str]] = deque()  # output without its seq yet
        self._taken = 0  # the newest seq a flush took from the queue
        self._taken_iteration = 0  # and its iteration
        self._numbering = threading.RLock()  # (see _number_parked)
        self._outputs = False  # output queued since the last flush (to sort and join)
        self.busy = Busy()  # the runtime's critical sections now running (the watchdog's)
        self._last_flush = time.monotonic()
        self._closing = threading.Event()
        self._handle: Any = None
        self._capture: Any = None
        # stepping: None (run until a breakpoint) or a tuple naming where to stop next
        self._stop: tuple[Any, ...] | None = None
        self._cond = threading.Condition()
        self._paused = False
        # told True when the script is paused, False when it goes on (a rank of a job
        # tells the others: see dyngraph.ranks)
        self.pause_listeners: list[Any] = []
        self._resume: dict[str, Any] | None = None
        self._requests: deque[dict[str, Any]] = deque()
        self.evaluator = FrameEvaluator(self._main_ident)
        # per-iteration state, touched only by the script's thread
        self._value_id = -1
        self._value: np.ndarray | None = None
        self._args: tuple[Any, ...] = ()
        # (node id, incoming gradient, outgoing ones, (tensor id, incoming gradient) of
        # each output slot of a backend's node with several (PyTorch's) or None)
        self._grads: tuple[Any, ...] | None = None
        # The backward nodes a gradient was handed to so far in this backward pass: a
        # node that runs without being one of them is a root, its incoming gradient the
        # seed ``backward()`` started from (ones, or ``gradient=``), which no one computed.
        self._handed: set[int] = set()
        self._leaf_grad: tuple[int, np.ndarray] | None = None
        self._ops: dict[int, Row] = {}  # op rows by output id
        # tensors of this iteration holding NaN / holding Inf (already accounted for)
        self._nan: set[int] = set()
        self._inf: set[int] = set()
        self._bad_leaves: dict[int, str] = {}
        self._unwritten: set[int] = set()  # see ``nonfinite.ForwardChecks``
        self._needs_grad: set[int] = set()
        self._leaf_sq: dict[int, float] = {}
        self._leaf_names: dict[int, str] = {}
        self._seen_iteration = 0
        self._prev_module: str | None = None
        self._prev_line = 0
        self._prev_file = ""
        self._last_op: Row | None = None
        self.modules = ModuleStack()
        self._last_step: Row | None = None  # the newest op or backward step
        self._handlers: dict[str, Any] = {
            "tensor": self._on_tensor,
            "backward_start": self._on_backward_start,
            "grad": self._on_grad,
            "backward_end": self._on_backward_end,
            "iteration_end": self._on_iteration_end,
            "compile": self._on_compile,
        }
        # A compile breakpoint's hit, held until the script is back in its own code
        # (``backends.safe_point``) or its next op: torch.compile is mid-compile when it
        # tells, and Python evaluated at a pause there would run inside the compiler.
        self._compile_hit: tuple[str, str, int] | None = None

    @property
    def last_op(self) -> ev.Op | None:
        """The newest op event."""
        return None if self._last_op is None else event_of(self._last_op)  # type: ignore[return-value]

    @property
    def last_step(self) -> ev.Op | ev.BackwardStep | None:
        """The newest op or backward step event."""
        return None if self._last_step is None else event_of(self._last_step)  # type: ignore[return-value]

    # -- lifecycle ----------------------------------------------------------------------
    def start(self, script: str, argv: list[str], pause_at_start: bool,
              capture: Any = None) -> None:
        self._capture = capture
        set_run_info(script, argv)
        self._handle = tracer.attach(hook=self.on_row, stats=self.stats, values=self.values)
        if self.judge_at_read:
            tracer.after_read.append(self._judge_ready)
        tracer.mode = self.iteration_mode
        tracer.show_paths_relative(os.path.dirname(os.path.abspath(script))
                                   if self.relative_paths else None)
        if self.relative_paths:
            script = os.path.relpath(script) if not os.path.relpath(script).startswith(
                "..") else tracer.shown_file(os.path.abspath(script))
        self._note_handle = backends.on_note(self._on_note)
        self._safe_handle = backends.on_safe_point(self._at_safe_point)
        set_compile_mode(self.compile)
        self._backends = backends.activate(self.backend)
        self._install_hook()
        if type(tracer.module_stack) is list:
            self.modules = tracer.module_stack = ModuleStack(tracer.module_stack)
        self._queue.append(row_of(tracer.make_header(self.stats, self.values, script, argv)))
        self.flush()
        for target, name in ((self._read_commands, "dyngraph-commands"),
                             (self._pump, "dyngraph-pump")):
            threading.Thread(target=target, name=name, daemon=True).start()
        for msg in self._early:
            self._command(msg)
        if pause_at_start:
            self._pause("start", "paused before the script's first line", 0)

    def _install_hook(self) -> None:
        """Raw arrays cost a call per op: take them only when something needs them, through
        the hook that does no more than that (keeping values, or only the newest ones)."""
        m = self._matcher
        checks = reads_per_op(m.breakpoints)
        if self._handle is None:
            return
        if self.judge_at_read:
            # (leaves entering an iteration get statistics too: a NaN parameter is named)
            tracer.array_hook = self._note_arrays if checks else None
            tracer.leaf_stats = m.nan is not None
            return
        tracer.array_hook = (self.on_array if self.store is not None
                             else self._see_array if checks else None)
        # A value breakpoint judges each op as it runs: statistics are read per op then
        # (a host read per op on a GPU; the TUI's status line says "stats read per op",
        # from the same ``reads_per_op``).
        tracer.eager_stats = checks

    def finish(self, status: int, reason: str) -> None:
        """Close the last iteration, send RunEnd and everything still queued."""
        if self._handle is None:
            return
        if self._capture is not None:
            # All of the script's output goes before RunEnd: what the collector's finalizers
            # print from here on (this flush allocates) goes to the original fds instead.
            self._capture.stop()
        # The script is over: no row is being made (one Ctrl-C'd in the making never will).
        # In the last iteration, before its end: what comes after it belongs to none.
        self._number_parked(force=True)
        tracer.read_stats()  # (what an iteration cut short by a crash or an exit computed)
        tracer.flush_iteration()
        # After the last IterationEnd the tracer already counts the next iteration; the end
        # of the run belongs to the last one that had ops.
        # (Output printed after an iteration's end, with no op since, is in the next one:
        # the end is not before it.)
        iteration = tracer.iteration
        if self._seen_iteration < iteration:
            iteration = max(1, iteration - 1, self._newest_iteration())
        self._queue.append(("run_end", tracer.next_seq(), iteration, status, reason))
        tracer.array_hook = None
        tracer.eager_stats = tracer.leaf_stats = False
        if self._judge_ready in tracer.after_read:
            tracer.after_read.remove(self._judge_ready)
        self._handle.remove()
        self._handle = None
        self._note_handle.remove()
        self._safe_handle.remove()
        self._closing.set()
        self.flush()

    def _newest_iteration(self) -> int:
        """The iteration of the newest row queued (or sent)."""
        queue = self._queue
        return queue[-1][2] if queue else self._taken_iteration

    def _on_note(self, text: str) -> None:
        """A capture backend's word about the run ("torch.compile runs eagerly ...")."""
        if text not in self.notes:
            self.notes.append(text)
            self.flush()
            self.send_message({"note": "backend", "text": text})

    # -- the hot path --------------------------------------------------------------------
    def on_array(self, kind: str, tensor_id: int, payload: Any) -> None:
        """Tracer hook: raw arrays, called right before the event that describes them.
        Keeps each in the store (for value requests at a pause) and the newest ones for the
        breakpoint checks (``_see_array``)."""
        store: Any = self.store  # (ValueStore.put/put_grad, one call layer less)
        if kind == "op":  # an op's output, with the op's arguments (tensors and constants)
            self._value_id = tensor_id
            value, self._args = payload
            self._value = value
            store._add(store.current.values, tensor_id, value)
        elif kind == "value":  # a tensor entering the iteration (a leaf, a parameter)
            self._value_id = tensor_id
            self._value = payload
            store._add(store.current.values, tensor_id, payload)
        elif kind == "grads":
            slots = tuple(zip(*payload[2:], strict=True)) if len(payload) > 2 else None
            self._grads = (tensor_id, payload[0], payload[1], slots)
            if slots is None:
                store._add(store.current.grads, tensor_id, payload[0])
            else:  # each output slot's gradient is its own tensor's
                for tid, g in slots:
                    if tid >= 0 and g is not None:
                        store._add(store.current.grads, tid, g)
        elif kind == "grad":
            self._leaf_grad = (tensor_id, payload)
            store._add(store.current.grads, tensor_id, payload)

    def _see_array(self, kind: str, tensor_id: int, payload: Any) -> None:
        """``on_array`` without a store (``keep_values=False``): only what checks read."""
        if kind == "op":
            self._value_id = tensor_id
            self._value, self._args = payload
        elif kind == "value":
            self._value_id = tensor_id
            self._value = payload
        elif kind == "grads":
            slots = tuple(zip(*payload[2:], strict=True)) if len(payload) > 2 else None
            self._grads = (tensor_id, payload[0], payload[1], slots)
        elif kind == "grad":
            self._leaf_grad = (tensor_id, payload)

    def on_row(self, row: Row) -> None:
        """Tracer hook: every recorded row, as it is recorded (queued for the channel,
        and checked against the breakpoints and the stepping command)."""
        queue = self._queue
        queue.append(row)
        kind = row[0]
        if self.judge_at_read and self._queue_judging(row):
            # (judged when its statistics are read: the checks below see no value for it)
            self._value_id = -1
            self._grads = None
            self._leaf_grad = None
        if kind == "op":
            self._on_op(row)
        elif kind == "backward_step":
            self._on_backward_step(row)
        else:
            handler = self._handlers.get(kind)
            if handler is not None:
                handler(row)
        if len(queue) >= self._batch:
            self.flush()

    def on_event(self, event: ev.Event) -> None:
        """``on_row`` for an event object."""
        self.on_row(row_of(event))

    def _on_compile(self, r: Row) -> None:
        bp = self._matcher.compile.get(r[3])
        if bp is not None and self._compile_hit is None:
            from ..compile_lane.report import describe

            self._compile_hit = ("compile", f"breakpoint {bp}: {describe(event_of(r))}",  # type: ignore[arg-type]
                                 r[1])

    def _at_safe_point(self) -> None:
        hit = self._compile_hit
        if hit is not None and threading.get_ident() == self._main_ident:
            self._compile_hit = None
            self._pause(*hit)

    def _on_op(self, r: Row) -> None:
        if self._compile_hit is not None:
            self._at_safe_point()
        ops = self._ops
        ops[r[_OUTPUT]] = r
        if len(ops) > MAX_OPS:  # a run that never ends an iteration: keep the newest half
            self._ops = dict(list(ops.items())[MAX_OPS // 2:])
        self._last_op = self._last_step = r
        m = self._matcher
        hit: tuple[str, str] | None = None
        e: ev.Op | None = None  # the event object, built only if something reads it
        if m.nan is not None and self._value_id == r[_OUTPUT]:
            # An exact summary (not sampled) that saw no NaN/Inf settles it for free.
            if not settled(r[_SUMMARY]):
                e = event_of(r)  # type: ignore[assignment]
                hit = self._check_nan_op(e, self._value)  # type: ignore[arg-type]
        if m.checks_ops:
            hit = self._check_op_breakpoints(m, r) or hit
        iteration = r[2]
        if iteration != self._seen_iteration:
            self._seen_iteration = iteration
            if hit is None and iteration in m.iterations:
                hit = ("iteration", f"iteration {iteration} begins: {_describe(r)}")
        stop = self._stop
        if hit is None and stop is not None:
            hit = self._check_stop_op(stop, r)
        if hit is not None:
            self._pause(hit[0], hit[1], r[1])

    def _check_op_breakpoints(self, m: Matcher, r: Row) -> tuple[str, str] | None:
        """Op, module and line breakpoints. Dict lookups in the caches first: this runs for
        every op while any such breakpoint is set."""
        hit = None
        op = r[_OP]
        bps = m._op_cache.get(op)
        if bps is None:
            bps = m.for_op(op)
        for bp in bps:
            if m.condition_holds(bp, self._value_of(r[_OUTPUT])):
                hit = ("op", f"breakpoint {bp}: {_describe(r)}")
                break
        module = r[_MODULE]
        if m.modules and hit is None:
            bps = m._module_cache.get(module)
            if bps is None:
                bps = m.for_module(module)
            if bps:
                hit = self._check_module(m, event_of(r), bps)  # type: ignore[arg-type]
        self._prev_module = module
        if m.lines:
            file = r[_FILE]
            by_line = m._file_cache.get(file)
            if by_line is None:
                by_line = m.lines_of(file)
            line = r[_LINE]
            if by_line and hit is None and line in by_line:
                hit = self._check_line(m, event_of(r), by_line[line])  # type: ignore[arg-type]
            self._prev_line = line
            self._prev_file = file
        return hit

    def _check_module(self, m: Matcher, e: ev.Op, bps: list[Breakpoint]
                      ) -> tuple[str, str] | None:
        entering = e.module != self._prev_module
        for bp in bps:
            if bp.condition:
                if m.condition_holds(bp, self._value_of(e.output)):
                    return ("module", f"breakpoint {bp}: {describe_op(e)}")
            elif entering and bp not in m.for_module(self._prev_module or ""):
                return ("module", f"breakpoint {bp}: entering module {e.module or '(top)'} "
                                  f"at {describe_op(e)}")
        return None

    def _check_line(self, m: Matcher, e: ev.Op, bps: list[Breakpoint]) -> tuple[str, str] | None:
        again = e.line == self._prev_line and e.file == self._prev_file
        for bp in bps:
            if bp.condition:
                if not m.condition_holds(bp, self._value_of(e.output)):
                    continue
            elif again:
                continue
            # The file as the user reads it: relative to the working directory when below it.
            shown = where(bp.file, bp.line) + (f" if {bp.condition}" if bp.condition else "")
            return ("line", f"breakpoint {shown}: {describe_op(e)}")
        return None

    def _check_stop_op(self, stop: tuple[Any, ...], r: Row) -> tuple[str, str] | None:
        mode = stop[0]
        if mode == "op":
            return ("step", _describe(r))
        if mode == "iteration" and r[2] > stop[1]:
            return ("step", f"iteration {r[2]} begins: {_describe(r)}")
        if mode == "line" and r[_LINE] == stop[2] and same_file(stop[1], r[_FILE]):
            return ("step", f"reached {stop[1]}:{stop[2]}: {_describe(r)}")
        return None

    def _on_backward_step(self, r: Row) -> None:
        self._last_step = r
        m = self._matcher
        hit: tuple[str, str] | None = None
        node = r[3]
        gid = node if r[10] < 0 else r[10]
        seeded = gid not in self._handed  # a root: what arrives is the seed
        self._handed.update(r[13] or r[6])
        grads = self._grads if self._grads is not None and self._grads[0] == node else None
        incoming = _incoming(r, grads)
        if m.nan is not None and grads is not None:
            # the usual case, settled by exact summaries alone: everything finite
            if not (all(settled(s) for s in r[12] or (r[7],)) and all_settled(r[8])):
                hit = self._check_nan_grads(event_of(r), incoming, grads[2])  # type: ignore[arg-type]
        if hit is None and m.node_norm and grads is not None and not seeded:
            worst = max(((gradient_norm(g, s), tid) for tid, g, s in incoming
                         if g is not None), default=None, key=lambda x: x[0])
            if worst is not None and worst[0] > m.node_threshold:
                # (NaN norms are the nan breakpoint's business)
                norm, tid = worst
                into = self._describe_node(tid if tid >= 0 else node, r[4])
                hit = ("grad_norm", f"gradient norm {norm:.4g} > {m.node_threshold:g} flowing "
                                    f"into {into}")
        if hit is None and self._stop is not None and self._stop[0] == "op":
            hit = ("step", f"backward {r[5]}: {self._describe_node(node, r[4])}")
        if hit is not None:
            self._pause(hit[0], hit[1], r[1])

    def _check_nan_grads(self, e: ev.BackwardStep,
                         incoming: list[tuple[int, Any, Any]],
                         grad_inputs: tuple[np.ndarray | None, ...]) -> tuple[str, str] | None:
        """Report the backward step that produces a NaN (or an Inf) gradient from finite
        incoming gradients. Forward values with NaN were reported already; forward values
        with Inf (masks) may legitimately give Inf gradients, so only NaN counts there."""
        nans = self._nan
        if nans and (e.node in nans or any(i in nans for i in e.inputs)):
            return None
        for _, g, s in incoming:
            if g is not None and not all_finite(g, summary_of(s)):
                return None  # a non-finite gradient coming in was reported where it was made
        infs = self._inf
        inf_ok = e.node in infs or any(i in infs for i in e.inputs)
        summaries = e.grad_inputs
        for index, g in enumerate(grad_inputs):
            if g is None:
                continue
            summary = summaries[index] if index < len(summaries) else None
            a = g
            if all_finite(a, summary):
                continue
            nan, inf = nonfinite_counts(a)
            if nan or not inf_ok:
                return ("nan", f"first NaN/Inf in backward: {e.grad_fn} produced "
                               f"{counts(nan, inf)} in the gradient for input {index} of "
                               f"{self._describe_node(e.node, e.op)}")
        return None

    def _on_grad(self, r: Row) -> None:
        leaf = self._leaf_grad
        tensor, name = r[3], r[4]
        if leaf is None or leaf[0] != tensor:
            return
        m = self._matcher
        if not (m.node_norm or m.global_norm):
            return
        norm = gradient_norm(leaf[1], r[5])
        self._leaf_sq[tensor] = norm * norm
        self._leaf_names[tensor] = name
        if norm > m.node_threshold:
            shown = name or f"#{tensor}"
            self._pause("grad_norm", f"gradient norm {norm:.4g} > {m.node_threshold:g} in "
                                     f".grad of {shown}{self._used_by(tensor)}", r[1])

    def _on_backward_start(self, r: Row) -> None:
        self._leaf_sq = {}
        self._handed = set()
        if self._unwritten and r[3] in self._unwritten and self._matcher.nan is not None:
            self._pause("nan", self._unwritten_root(r[3]), r[1])
        if self._stop is not None and self._stop[0] == "forward":
            self._pause("step", f"end of forward: backward starts from "
                                f"{self._describe_node(r[3], 'tensor')}", r[1])

    def _on_backward_end(self, r: Row) -> None:
        m = self._matcher
        hit = None
        iteration = r[2]
        if m.global_norm and self._leaf_sq:
            total = math.sqrt(sum(self._leaf_sq.values()))
            if total > m.global_threshold:
                top = max(self._leaf_sq, key=self._leaf_sq.__getitem__)
                hit = ("grad_norm", f"global gradient norm {total:.4g} > {m.global_threshold:g} "
                                    f"at the end of backward (iteration {iteration}); largest: "
                                    f"{self._leaf_name(top)} ({math.sqrt(self._leaf_sq[top]):.4g})")
        if hit is None and self._stop is not None and self._stop[0] == "backward":
            hit = ("step", f"end of backward (iteration {iteration})")
        if hit is not None:
            self._pause(hit[0], hit[1], r[1])

    def _on_iteration_end(self, r: Row) -> None:
        self.modules.exception = None  # let a handled exception's frames go
        if self.store is not None:
            self.store.new_iteration(r[2] + 1)
        self._ops = {}
        self._nan = set()
        self._inf = set()
        self._bad_leaves = {}
        self._unwritten = set()
        self._needs_grad = set()
        self._leaf_names = {}
        self._const_inf = set()

    # -- descriptions ----------------------------------------------------------------------
    def _describe_node(self, node: int, op: str) -> str:
        forward = self._ops.get(node)
        return _describe(forward) if forward is not None else f"{op} #{node}"

    def _leaf_name(self, tensor: int) -> str:
        return self._leaf_names.get(tensor) or f"#{tensor}"

    def _used_by(self, tensor: int) -> str:
        for r in self._ops.values():
            if tensor in r[_INPUTS]:
                return f", used by {_describe(r)}"
        return ""

    # -- pausing -------------------------------------------------------------------------
    def _pause(self, reason: str, description: str, at_seq: int,
               tb: TracebackType | None = None) -> None:
        """Emit BreakpointHit, flush, and block the script until a resume command. Meanwhile
        answer questions about its frames (on this thread: user code runs where it was)."""
        self._stop = None
        tracer.read_stats()  # (the program is stopped anyway: the statistics go with it)
        self._number_parked()  # (what the script printed before it stopped goes first)
        seq = tracer.next_seq()
        self.evaluator.begin_pause(seq, tb)
        with self._cond:
            # Paused before the hit is queued, not only before this thread flushes it: the
            # pump (or a print on another thread) may send it the moment it is queued, and
            # a resume that came back before this was set was dropped (a hang).
            self._paused = True
        self._queue.append(("breakpoint", seq, tracer.iteration, reason, description, at_seq))
        self.flush()
        for listener in self.pause_listeners:
            listener(True)
        try:
            command = self._wait_for_resume()
        finally:
            self.evaluator.end_pause()
            for listener in self.pause_listeners:
                listener(False)
        self._apply_resume(command)

    def _wait_for_resume(self) -> dict[str, Any]:
        while True:
            with self._cond:
                while self._resume is None and not self._requests:
                    if self.channel.closed:
                        _hard_exit(1)  # the session is gone: nobody will ever resume us
                    self._cond.wait(0.2)
                if not self._requests:  # questions asked before the resume are answered first
                    command, self._resume = self._resume, None
                    self._paused = False
                    return command  # type: ignore[return-value]
                request = self._requests.popleft()
            self._serve(request)

    def _serve(self, msg: dict[str, Any]) -> None:
        """Answer an ``inspect`` or ``eval`` request at this pause."""
        reply: dict[str, Any] = {"reply": msg["cmd"], "request": msg.get("request"),
                                 "pause": self.evaluator.pause}
        try:
            frame = int(msg.get("frame", 0))
            if msg["cmd"] == "inspect":
                watches = [(int(w), str(e)) for w, e in msg.get("watches", ())]
                reply["view"] = view_to_wire(self.evaluator.view(frame, watches))
            else:
                reply["result"] = result_to_wire(
                    self.evaluator.evaluate(str(msg.get("source", "")), frame))
        except InspectError as exc:
            reply["error"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bug here must not end the user's run
            reply["error"] = f"internal error: {type(exc).__name__}: {exc}"
        self.send_message(reply)

    def _apply_resume(self, msg: dict[str, Any]) -> None:
        cmd = msg["cmd"]
        if cmd in ("step_op", "pause"):
            self._stop = ("op",)
        elif cmd == "next_iteration":
            # the first op of the next iteration to begin (from the start: iteration 1)
            self._stop = ("iteration", self._seen_iteration)
        elif cmd == "finish_forward":
            self._stop = ("forward",)
        elif cmd == "finish_backward":
            self._stop = ("backward",)
        elif cmd == "run_to_line":
            self._stop = ("line", str(msg["file"]), int(msg["line"]))
        else:
            self._stop = None

    def script_breakpoint(self, description: str = "", call: str = "dyngraph.breakpoint()"
                          ) -> None:
        """``dyngraph.breakpoint()`` (or the built-in ``breakpoint()``) in the script."""
        file, line, function = tracer.source(2)
        at = f"{where(file, line)} in {function}()" if file else "the script"
        text = f"{call} at {at}" + (f": {description}" if description else "")
        self._pause("breakpoint", text, self._last_op[1] if self._last_op is not None else 0)

    def divergence(self, description: str) -> None:
        """The ranks of the job went different ways (``dyngraph.ranks``): stop here."""
        last = self._last_step
        self._pause("divergence", description, last[1] if last is not None else 0)

    def hold(self, description: str) -> None:
        """Pause where the script is (a rank of a job held at its first checkpoint)."""
        last = self._last_step
        self._pause("held", description, last[1] if last is not None else 0)

    def remote_divergence(self, description: str) -> None:
        """Another rank found the ranks diverged while this one was busy (from a thread of
        the rank logic: the script's thread may be inside a collective)."""
        self.send_message({"note": "divergence", "description": description})

    def exception(self, exc: BaseException, tb: TracebackType | None = None
                  ) -> ev.ExceptionRaised:
        """Report an exception that ended the script; post-mortem pause if asked to."""
        raised = locate_exception(exc.__traceback__)
        file, line = raised.file, raised.line
        module = self.modules.module_of(exc)
        if isinstance(exc, SyntaxError) and exc.filename:
            file, line = exc.filename, exc.lineno or 0
        if tracer.display is not None and file:
            file = tracer.shown_file(file)
        last = self.last_op
        text = "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
        at_seq = last.seq if last is not None else 0
        event = ev.ExceptionRaised(tracer.next_seq(), tracer.iteration, type(exc).__name__,
                                   str(exc), text, at_seq, file, line)
        self._queue.append(row_of(event))
        step = self.last_step
        in_module = _module_text(module, raised.module_class)
        if raised.in_backward:
            where_ = " during backward" + (
                f", after {step.grad_fn} of {self._describe_node(step.node, step.op)}"
                if type(step) is ev.BackwardStep else "") + in_module
        elif raised.op:
            where_ = f" in op {raised.op}{in_module}"
        else:  # a check before any op ran (a shape check in F.linear), or the user's raise
            where_ = (f" in {raised.call}()" if raised.call else "") + in_module
            if last is not None:
                where_ += f"{',' if where_ else ''} after op {last.op}"
        message = first_line(str(exc))
        self.exception_description = (
            f"{type(exc).__name__}: {message}{where_}, iteration {tracer.iteration}, "
            f"{where(file, line)}"
        )
        self.flush()
        self.send_message({"note": "exception", "description": self.exception_description})
        return event

    def post_mortem_pause(self, tb: TracebackType | None = None) -> None:
        """Pause at an uncaught exception; the console sees the frames of ``tb``."""
        if self.post_mortem and self._handle is not None:
            # at the last forward op or backward step that completed before the raise
            last = self._last_step
            exc = sys.exc_info()[1]
            self._pause("exception", self.exception_description,
                        last[1] if last is not None else 0,
                        tb if tb is not None else getattr(exc, "__traceback__", None))

    # -- script output -------------------------------------------------------------------
    def output(self, stream: str, text: str) -> None:
        """The script wrote ``text`` (the capture calls this, any thread, capture lock held).

        Parked, then numbered (``_number_parked``): no lock, no send. The collector runs
        wherever Python allocates, inside a flush or inside the recording of an op, and a
        finalizer or a warning it runs may print: that print comes here, on whatever
        thread, and must neither wait for the flush nor take a seq while an op's is taken
        and its row not yet queued."""
        self._parked.append((stream, text))
        if threading.get_ident() == self._main_ident:
            self._number_parked()  # (now, unless inside an op: its place among the ops)

    def _number_parked(self, force: bool = False) -> None:
        """Queue the parked output as rows, with the next seqs, if no other row is being
        made: every seq taken so far is queued (or sent). Otherwise later (the next print
        of the script's thread, the next flush, the pump's tick); ``force`` at the end.

        One thread numbers at a time. The script's thread waits for its turn (its output
        must go before its next op); the others only try, and leave theirs to the thread
        numbering now, which looks again before it leaves. Other threads number only in
        ``flush``, where no frame goes out between their taking seqs and queueing the rows,
        and the flush sorts by seq the rows that the script's thread queued meanwhile with
        later seqs."""
        main = threading.get_ident() == self._main_ident
        while self._parked:
            if not self._numbering.acquire(blocking=main):
                return
            try:
                numbered = self._number_locked(force)
            finally:
                self._numbering.release()
            if not numbered:
                return

    def _number_locked(self, force: bool) -> bool:
        # No collection in here: the finalizers it runs could print and wait for the
        # capture lock, held by the script's thread waiting for this one.
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            parked = self._parked
            n = len(parked)  # (only this thread takes from it: the numbering lock)
            queue = self._queue
            # From the reading of tracer.seq to its update: no call, no loop. CPython
            # switches threads only at those, so the check and the taking of seqs are one
            # step for every other thread.
            seq = tracer.seq
            newest = queue[-1][1] if queue else self._taken
            if seq != newest and not force:
                return False  # a row is being made: its seq is taken, the row not queued
            tracer.seq = seq + n
            iteration = tracer.iteration
            self._outputs = True
            for i in range(1, n + 1):
                stream, text = parked.popleft()
                queue.append(("output", seq + i, iteration, stream, text))
            return True
        finally:
            if collecting:
                gc.enable()

    def output_written(self, text: str) -> None:
        """After the capture let go of its lock: lines go out at once (so output written
        just before a crash survives it), except in a flood: past a few flushes per 10 ms
        the batch and the timer take over, and a hundred thousand prints cost a few
        hundred sends, not 100,000."""
        if "\n" not in text:
            return
        now = time.monotonic()
        if now - self._out_window > 0.01:
            self._out_window = now
            self._out_flushes = 0
        if self._out_flushes < 4:
            self._out_flushes += 1
            self.flush()

    # -- the channel -----------------------------------------------------------------------
    def flush(self) -> None:
        """Send everything queued, in order.

        One thread sends at a time (the flush lock). What a thread queues while inside its
        own flush (a finalizer that prints, run by the collector while the batch is
        encoded) goes out with the next round of that same flush: a flush never waits for
        itself. Output never takes the flush lock (``output``): no lock is shared by the
        flush and the output path."""
        if self.detached:
            return
        me = threading.get_ident()
        if self._flusher == me:
            return
        token = self.busy.begin("a flush of events")
        try:
            with self._flush_lock:
                self._flusher = me
                try:
                    for _ in range(FLUSH_ROUNDS):
                        self._number_parked()
                        if not self._queue or not self._send_batch():
                            break
                finally:
                    self._flusher = 0
        finally:
            self.busy.end(token)

    def _send_batch(self) -> bool:
        """Send what is queued now, as one frame, up to the first row whose statistics
        are not read yet (``dyngraph.capture.pending``); False if nothing could go."""
        queue = self._queue
        n = len(queue)
        batch: list[Row] = []
        try:
            while len(batch) < n:
                row = resolved(queue[0])
                if row is None:
                    break  # (its statistics are not read yet: it waits, and so do later rows)
                queue.popleft()
                batch.append(row)
            if not batch:
                return False
            if self._outputs:
                self._outputs = len(batch) < n  # (output still queued: sort next time too)
                batch.sort(key=_SEQ)  # (rows queued by two threads: see _number_parked)
                self._taken = max(self._taken, batch[-1][1])  # (before joining: seqs go)
                batch = _joined(batch)
            else:
                self._taken = max(self._taken, batch[-1][1])
            self._taken_iteration = batch[-1][2]
            data = tracefile.encode_rows(batch)
        except BaseException:
            # Ctrl-C (or anything) before the frame went out: the rows go back, in order,
            # ahead of whatever was queued meanwhile.
            queue.extendleft(reversed(batch))
            raise
        self._last_flush = time.monotonic()
        try:
            self.channel.send(data)
        except ChannelClosed:
            _hard_exit(1)  # the session is gone; a run nobody watches must not go on
        return True

    def send_message(self, message: dict[str, Any]) -> None:
        try:
            self.channel.send(tracefile.encode_message(message))
        except ChannelClosed:
            pass

    def _pump(self) -> None:
        while not self._closing.is_set():
            fds = self._capture.fds if self._capture is not None else ()
            if fds:
                try:
                    ready = readable(fds, FLUSH_INTERVAL)
                except OSError:
                    ready = []
                if ready:
                    self._capture.drain()
            else:
                self._closing.wait(FLUSH_INTERVAL)
            if self._queue and time.monotonic() - self._last_flush >= FLUSH_INTERVAL:
                self.flush()

    def _read_commands(self) -> None:
        decoder = self._decoder
        while True:
            data = self.channel.recv(0.5)
            if data is None:
                continue
            if not data:
                with self._cond:
                    self._cond.notify_all()
                if not self._closing.is_set():
                    _hard_exit(1)  # the session closed the channel: end the run now
                return
            for item in decoder.feed(data):
                if isinstance(item, dict):
                    self._command(item)

    def _command(self, msg: dict[str, Any]) -> None:
        cmd = msg.get("cmd")
        if cmd in RESUME_COMMANDS:
            with self._cond:
                if self._paused:
                    if cmd != "pause":  # a pause request that crossed a hit is moot
                        self._resume = msg
                        self._cond.notify_all()
                    return
            if cmd != "continue":
                self._apply_resume(msg)
        elif cmd == "add_breakpoint":
            bp = Breakpoint.from_dict(msg["breakpoint"])
            self._bps[bp.id] = bp
            self._matcher = Matcher.build(self._bps.values())
            self._install_hook()
        elif cmd == "remove_breakpoint":
            self._bps.pop(int(msg["id"]), None)
            self._matcher = Matcher.build(self._bps.values())
            self._install_hook()
        elif cmd == "values":
            self._answer_values(msg)
        elif cmd in INSPECT_COMMANDS:
            with self._cond:
                if self._paused and self._resume is None:
                    self._requests.append(msg)
                    self._cond.notify_all()
                    return
            self.send_message({"reply": cmd, "request": msg.get("request"),
                               "error": "the script is running: its variables can be read "
                                        "only while it is paused"})
        elif cmd == "ping":  # the session's watchdog (see watchdog.py)
            self.send_message(pong(self.busy, msg))
        elif cmd == "interrupt_eval":
            self.evaluator.interrupt()
        elif cmd == "abort":  # a session that cannot signal us (another machine) ends us so
            _hard_exit(ABORTED)

    def _answer_values(self, msg: dict[str, Any]) -> None:
        array = None
        if self.store is not None:
            array = self.store.get(int(msg["tensor"]), grad=bool(msg.get("grad", False)))
        self.send_message({
            "reply": "values", "request": msg.get("request"), "tensor": msg["tensor"],
            "array": None if array is None else tracefile.encode_array(to_numpy(array)),
        })


# -- helpers ---------------------------------------------------------------------------------
def _module_text(path: str | None, cls: str) -> str:
    """`` (module encoder.0, a Linear)``: which module was running when it raised."""
    if path:
        return f" (module {path}{f', a {cls}' if cls else ''})"
    if cls:  # the outermost module has no path of its own
        return f" (in the top-level {cls})"
    return ""


def _joined(batch: list[Row]) -> list[Row]:
    """``print`` writes its pieces separately ("loss", " ", "0.5", "\\n"): consecutive output
    rows of one stream become one event (up to ``OUTPUT_JOIN`` characters), with the
    first piece's seq."""
    joined: list[Row] = []
    last: Row | None = None
    for r in batch:
        if (r[0] == "output" and last is not None and last[0] == "output"
                and last[3] == r[3] and len(last[4]) < OUTPUT_JOIN):
            last = joined[-1] = (*last[:4], last[4] + r[4])
            continue
        joined.append(r)
        last = r
    return joined


def _describe(r: Row) -> str:
    """``describe_op`` of an op row."""
    return describe_op(event_of(r))  # type: ignore[arg-type]


def _incoming(r: Row, grads: tuple[Any, ...] | None) -> list[tuple[int, Any, Any]]:
    """(tensor id, raw gradient, summary row) of each gradient arriving at the backward
    node of step row ``r``: one per output slot (``BackwardStep.outputs``)."""
    if grads is None:
        return []
    slots = grads[3]
    if slots is None:
        return [(r[3], grads[1], r[7])]
    summaries = r[12] or (r[7],)
    return [(tid, g, summaries[k] if k < len(summaries) else None)
            for k, (tid, g) in enumerate(slots)]
