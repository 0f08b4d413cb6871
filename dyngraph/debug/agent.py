"""The agent: the half of the debug runtime that lives in the script's process.

It subscribes to the tracer, batches events up the channel (flushing on a pause, every
``BATCH`` events and every ``FLUSH_INTERVAL`` seconds from its pump thread), checks every
event against the breakpoints and the current stepping command, and when one hits it
emits ``BreakpointHit`` and blocks the script until the session says how to go on. It
also keeps recent tensor values (``values.ValueStore``) to answer value requests.

Threads: the script's own thread runs ``on_event`` (the hot path: no locks, no syscalls
unless a batch is full); a command thread reads the channel; a pump thread drains the
captured C-level output and flushes batches on the timer.

The agent is its hot path, lifecycle and checks (here and in the ``nonfinite`` and
``readchecks`` mixins); pausing and the session's commands are ``pausing.Pausing``; the
batching, the script's output and the sending are ``outbox.Outbox``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from typing import Any

import numpy as np

from ..capture import backends, tracefile
from ..capture import events as ev
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
from .channel import Channel
from .describe import ModuleStack, counts, describe_op, where
from .evaluation import FrameEvaluator
from .nonfinite import ForwardChecks
from .outbox import BATCH, Outbox
from .pausing import Pausing
from .readchecks import ReadChecks
from .settled import all_settled, gradient_norm, settled
from .values import ValueStore
from .watchdog import Busy

MAX_OPS = 200_000  # forward ops remembered (to describe backward steps) within an iteration

# Rows (``dyngraph.capture.rows``) are what the agent sees: the places of the fields it
# reads. An op row: its op, inputs, output, module, file, line, summary.
_OP, _INPUTS, _OUTPUT, _MODULE, _FILE, _LINE, _SUMMARY = 3, 4, 5, 10, 11, 12, 16


class Agent(ForwardChecks, ReadChecks, Pausing, Outbox):
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

# -- helpers ---------------------------------------------------------------------------------
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
