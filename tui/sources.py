"""Where the debugger's events come from: a recorded trace or a live script.

Both sources feed one ``Model`` and take the same commands. A command first walks the
history the model already holds (stopping at the target or at a breakpoint on the way), so
replay and "looking back" in a live run behave the same; only when the cursor reaches the
frontier of a live run does the command go down to the child process.

>>> source = ReplaySource(Model(), dyngraph.read_trace("run.dgtrace"))   # doctest: +SKIP
>>> source.step_op(); source.model.current_event                         # doctest: +SKIP
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dyngraph.capture import events as ev
from dyngraph.debug.breakpoints import same_file
from dyngraph.debug.inspection import EvalResult, FrameView, InspectError
from dyngraph.debug.reach import Seen, check, engine_ops

from . import collector
from .breakpoints import Breakpoint, history_hit
from .model import STEP_KINDS, Model

Predicate = Callable[[ev.Event], bool]
# A live run keeps the full history of this many events (~0.5 KB each), then lets the
# oldest complete iterations go; a recorded trace keeps everything.
LIVE_MAX_EVENTS = 1_000_000
LIVE_ONLY = ("variables, watches and the console are available in live runs only "
             "(dyngraph debug SCRIPT): a recorded trace holds no Python objects")


@dataclass(frozen=True, slots=True)
class SourceState:
    """Same fields as ``dyngraph.debug.SessionState``; ``status`` running|paused|finished."""

    status: str = "paused"
    reason: str = "start"
    description: str = ""
    at_seq: int = 0
    exit_status: int | None = None


def _is_step(e: ev.Event) -> bool:
    return e.kind in STEP_KINDS


class Source:
    """What the app talks to. Subclasses add how events arrive and what the frontier does."""

    live = False

    def __init__(self, model: Model) -> None:
        self.model = model
        self.breakpoints: dict[int, Breakpoint] = {}
        self._next_bp = 1
        self._reason = ("start", "before the first op")
        self._last_run: tuple[Predicate, bool] = (_is_step, False)
        # Breakpoints that cannot hit as things stand, and why ("did you mean ...?").
        self.bp_warnings: dict[Breakpoint, str] = {}
        self._seen = Seen()
        self._seen_upto = 0

    @property
    def notes(self) -> list[str]:
        """What the capture said about the run ("torch.compile runs eagerly while
        captured")."""
        return []

    def breakpoint_notes(self) -> list[str]:
        return [f"breakpoint {bp}: {why}" for bp, why in self.bp_warnings.items()
                if bp in self.breakpoints.values()]

    def check_reach(self, spec: Breakpoint, ended: bool = False) -> str:
        """Why ``spec`` cannot hit as things stand ("" if it can; ``debug.reach``),
        from what the run has shown so far; remembered for the status line and ``B``.
        ``ended``: the run is over, so what never ran could not have hit either."""
        seen = self._seen_so_far()
        header = self.model.header
        script = header.script if header is not None else ""
        try:
            why = check(spec, seen, script, torch=not seen.ops <= engine_ops(), ended=ended)
        except Exception:  # a check must never stop a breakpoint being set
            why = ""
        if why:
            self.bp_warnings[spec] = why
        else:
            self.bp_warnings.pop(spec, None)
        return why

    def never_hit(self) -> list[tuple[Breakpoint, str]]:
        """The breakpoints that could not hit in this run, and why (said at exit): a file
        that never loaded, a module path or an op that never ran."""
        ended = self.model.run_end is not None  # (a run quit early may still get there)
        out = []
        for bp in self.breakpoints.values():
            why = self.check_reach(bp, ended=ended)
            if why:
                out.append((bp, why))
        return out

    def _seen_so_far(self, arrived: Sequence[ev.Event] = ()) -> Seen:
        """What the run has shown, history and ``arrived`` (events about to go into the
        model, which may let the oldest go) included."""
        events = self.model.events
        seen = self._seen
        for event in (*events[self._seen_upto:], *arrived):
            seen.add_event(event)
        self._seen_upto = len(events)
        return seen

    @property
    def last_move(self) -> tuple[str, str]:
        """Why the cursor is where it is: (reason, description) of the last move."""
        return self._reason

    # -- to override ---------------------------------------------------------------------
    def pump(self) -> list[ev.Event]:
        """Move newly arrived events into the model; returns them."""
        return []

    @property
    def state(self) -> SourceState:
        raise NotImplementedError

    def _at_frontier(self, command: str, **kwargs: Any) -> None:
        """The cursor reached the end of the history while running ``command``."""

    def fetch_values(self, tensor_id: int, grad: bool = False) -> np.ndarray | None:
        """Full values of a tensor (its gradient with ``grad``), or None."""
        return None

    def no_values_reason(self, grad: bool) -> str:
        """Why ``fetch_values`` gave None."""
        return "no values available"

    # -- Python at the pause (live runs only) ----------------------------------------------
    @property
    def pause_id(self) -> int:
        """The current pause (the seq of its BreakpointHit), 0 unless a live run is paused."""
        return 0

    def break_in(self) -> bool:
        """Pause a running script at its next op (ctrl+c); False if there is none."""
        return False

    def inspect(self, frame: int = 0) -> FrameView:
        """The paused frame's stack, variables and watches (blocks: call off the UI thread)."""
        raise InspectError(LIVE_ONLY)

    def evaluate(self, source: str, frame: int = 0) -> EvalResult:
        """Run console input in the paused frame (blocks: call off the UI thread)."""
        raise InspectError(LIVE_ONLY)

    def interrupt_evaluation(self) -> None:
        """Stop the evaluation running in the script, if any."""

    def add_watch(self, expression: str) -> int:
        raise InspectError(LIVE_ONLY)

    def remove_watch(self, watch_id: int) -> None:
        """Forget a watch expression."""

    def frontier_index(self) -> int:
        """History index of where the script is (replay: the end of the trace)."""
        return self.model.frontier

    def close(self) -> None:
        """Release everything (a live child included); safe to call twice."""

    def app_ended(self) -> None:
        """The app on this source is gone, however it ended: stop what only served it
        (a replayed trace still loading). A live child is ended by whoever started it:
        what it printed is read after the app."""

    # -- breakpoints ---------------------------------------------------------------------
    def add_breakpoint(self, spec: Breakpoint) -> int:
        bp_id = self._next_bp
        self._next_bp += 1
        self.breakpoints[bp_id] = spec
        self.check_reach(spec)
        return bp_id

    def remove_breakpoint(self, bp_id: int) -> None:
        self.breakpoints.pop(bp_id, None)

    def toggle_breakpoint(self, spec: Breakpoint) -> bool:
        """Remove ``spec`` if set, else add it; returns True when it is now set."""
        for bp_id, existing in list(self.breakpoints.items()):
            if existing == spec:
                self.remove_breakpoint(bp_id)
                return False
        self.add_breakpoint(spec)
        return True

    # -- commands ------------------------------------------------------------------------
    def step_op(self) -> None:
        self._run("step_op", _is_step, stop_at_breakpoints=False)

    def next_iteration(self) -> None:
        info = self.model.cursor_iteration()
        current = info.index if info is not None else 0
        self._run("next_iteration", lambda e: _is_step(e) and e.iteration > current)

    def finish_forward(self) -> None:
        self._run("finish_forward", lambda e: e.kind == "backward_start")

    def finish_backward(self) -> None:
        self._run("finish_backward", lambda e: e.kind == "backward_end")

    def continue_(self) -> None:
        self._run("continue_", lambda e: False)

    def run_to_line(self, file: str, line: int) -> None:
        self._run("run_to_line", lambda e: isinstance(e, ev.Op) and e.line == line
                  and same_file(file, e.file), file=file, line=line)

    def step_back(self) -> bool:
        i = self.model.prev_step()
        if i is None:
            return False
        self._history_move(i, "history", "stepped back")
        return True

    def step_forward(self) -> bool:
        """One step forward; through history first, at the frontier like ``step_op``."""
        i = self.model.next_step()
        if i is None:
            self.step_op()
            return self.live
        self._history_move(i, "history", "stepped forward")
        return True

    def rewind(self) -> None:
        """Back to the first op (a replay's restart)."""
        first = self.model.next_step(0)
        self._history_move(first if first is not None else -1, "start", "the first op")

    def run_to_iteration(self, index: int) -> None:
        """Run until iteration ``index`` begins (live: beyond what already ran)."""
        self._run("next_iteration", lambda e: e.kind in STEP_KINDS and e.iteration >= index)

    def goto_iteration(self, index: int) -> bool:
        """Put the cursor on the last event of iteration ``index`` (its whole graph)."""
        info = self.model.iteration(index)
        if info is None:
            return False
        end = info.end if info.end is not None else (info.rows[-1] if info.rows else info.start)
        self._history_move(end, "history", f"end of iteration {index}")
        return True

    def _history_move(self, index: int, reason: str, description: str) -> None:
        self.model.move_to(index)
        self._reason = (reason, description)

    def _run(self, command: str, target: Predicate, stop_at_breakpoints: bool = True,
             start: int | None = None, **kwargs: Any) -> None:
        """Move to the first event from ``start`` (default: past the cursor) that
        ``target`` accepts or a breakpoint stops at; past what is known, as the source
        does at its frontier."""
        model = self.model
        specs = list(self.breakpoints.values()) if stop_at_breakpoints else []
        events = model.events
        for i in range(model.cursor + 1 if start is None else start, len(events)):
            event = events[i]
            if target(event):
                self._history_move(i, _REASONS.get(command, "step"), "")
                return
            for spec in specs:
                hit = history_hit(spec, events, i)
                if hit is not None:
                    self._history_move(i, spec.kind, hit)
                    return
        if self._wait_for_more(len(events), target, stop_at_breakpoints):
            return
        model.move_to(model.frontier)
        self._last_run = (target, stop_at_breakpoints)
        self._at_frontier(command, **kwargs)

    def _wait_for_more(self, scanned: int, target: Predicate, stop: bool) -> bool:
        """Should a run that found nowhere to stop in the first ``scanned`` events wait,
        the cursor where it is, for more (a replay still loading)? Then it says so."""
        return False


_REASONS = {"step_op": "step", "next_iteration": "step", "finish_forward": "step",
            "finish_backward": "step", "continue_": "step", "run_to_line": "line"}


class ReplaySource(Source):
    """A recorded trace: every event is known; commands only move the cursor.

    A trace file decodes lazily and a big one takes seconds to decode in full, so a daemon
    thread decodes it in chunks while the app is already usable on the first iteration; a
    command that runs past what is loaded so far waits for more (like a live run would).
    """

    CHUNK = 4096
    # Chunks decoded ahead of the app at most: enough for the thread to go on while the
    # app starts (the first tick comes a third of a second after the first chunk).
    AHEAD = 16
    TAKEN = 2  # chunks the app takes in per tick at most (keys wait for a tick)

    def __init__(self, model: Model, trace: Any) -> None:
        super().__init__(model)
        self.trace = trace
        self._finished = False
        # A run past what is loaded so far: (its target, stop at breakpoints?, how far
        # it looked). It goes on from there as events arrive; the cursor stays put.
        self._waiting: tuple[Predicate, bool, int] | None = None
        # Bounded: the decoding thread stays at most AHEAD chunks ahead of the app.
        self._queue: queue.Queue[list[ev.Event] | BaseException | None] = \
            queue.Queue(maxsize=self.AHEAD)
        self._go = threading.Event()  # cleared: the decoding thread waits (``hold``)
        self._go.set()
        self.total = len(trace.events)
        self.error: BaseException | None = None
        # Called from the decoding thread when it has put the event a waiting command
        # looks for (the app: take it in now rather than at the next tick).
        self.wake: Callable[[], None] | None = None
        events = trace.events
        self._iterator = None
        self._hold: collector.Hold | None = None
        self._closed = False
        if isinstance(events, list):  # already in memory: no need for a thread
            self._queue.put(events)
            self._queue.put(None)
        else:
            self._iterator = iter(events)
        self.loading = True

    def _start(self) -> None:
        """Read the first iteration here (the first screen needs it), the rest on a thread."""
        iterator, self._iterator = self._iterator, None
        self._hold = collector.Hold()  # (released by the thread once the trace is read)
        head: list[ev.Event] = []
        try:
            for event in iterator:  # type: ignore[union-attr]
                head.append(event)
                if event.kind == "iteration_end" or len(head) >= self.CHUNK:
                    break
            else:
                iterator = iter(())
        except BaseException as exc:
            self._queue.put(exc)
            iterator = iter(())
        self._queue.put(head)
        threading.Thread(target=self._decode, args=(iterator,), name="dyngraph-trace",
                         daemon=True).start()

    def _decode(self, iterator) -> None:
        read = 0
        try:
            chunk: list[ev.Event] = []
            for event in iterator:
                chunk.append(event)
                waiting = self._waiting  # (set and cleared by the app's thread)
                try:
                    found = waiting is not None and waiting[0](event)
                except Exception:  # (the app's own look at the event says why)
                    found = False
                if found or len(chunk) >= self.CHUNK:
                    read += len(chunk)
                    self._queue.put(chunk)
                    chunk = []
                    if found:
                        # What a key waits for (``f`` at once): the rest can wait until
                        # its picture is made (the app's next look lets go or holds on).
                        self._go.clear()
                        if self.wake is not None:
                            self.wake()
                    time.sleep(0.002)  # hand the GIL to the UI between chunks
                    self._go.wait()
                    if self._closed:  # (quit while loading: the rest is nobody's)
                        return
            read += len(chunk)
            self._queue.put(chunk)
            self._queue.put(None)
        except BaseException as exc:  # shown by the app; what was read stays usable
            self._queue.put(exc)
            self._queue.put(None)
        finally:
            if self._hold is not None:
                self._hold.release(read)

    def pump(self) -> list[ev.Event]:
        if self._iterator is not None:
            self._start()
        got: list[ev.Event] = []
        # At most a few chunks per tick: the UI stays responsive while a big trace loads.
        # A command waiting for the trace: the app has nothing else to do, take all.
        limit = (self.AHEAD if self._waiting is not None else self.TAKEN) * self.CHUNK
        while self.loading and len(got) < limit:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self.loading = False
            elif isinstance(item, BaseException):
                self.error = item
            else:
                got.extend(item)
        if not got and self.loading:
            return got
        model = self.model
        was_empty = model.cursor < 0
        with collector.paused():
            model.ingest(got)
        if was_empty:
            first = model.next_step(0)
            model.move_to(first if first is not None else -1)
        elif self._waiting is not None:
            target, stop, scanned = self._waiting
            self._waiting = None
            self._run("resume", target, stop, start=scanned)
            if self._waiting is None:  # there: its picture comes first (the app lets go)
                self.hold(True)
        return got

    @property
    def waiting(self) -> bool:
        """Does a command wait for the trace to load further?"""
        return self._waiting is not None

    @property
    def progress(self) -> float:
        return len(self.model.events) / self.total if self.total else 1.0

    @property
    def state(self) -> SourceState:
        reason, description = self._reason
        if self._waiting is not None:
            return SourceState("running", "loading",
                               f"reading the trace… {self.progress:.0%}")
        if self._finished and self.model.cursor >= self.model.frontier:
            return SourceState("finished", "end", _ending(self.model),
                               exit_status=_status(self.model))
        if self.loading:
            description = f"{description} · reading the trace… {self.progress:.0%}".lstrip(" ·")
        return SourceState("paused", reason, description)

    def _history_move(self, index: int, reason: str, description: str) -> None:
        super()._history_move(index, reason, description)
        self._finished = False
        self._waiting = None

    def hold(self, on: bool) -> None:
        """Stop decoding the trace (after the chunk in hand) while ``on``: the app holds
        it while it lays out the picture the user moved to, which wants the interpreter
        the decoding thread would take (a thread of Python code gets no core of its own)."""
        if on:
            self._go.clear()
        else:
            self._go.set()

    def app_ended(self) -> None:
        self.close()

    def close(self) -> None:
        # Quit while the trace was still loading: the decoding thread stops at its next
        # chunk. It went on decoding the whole file while the process exited, and `q` on
        # a 50,000-node trace took 0.9-1.1 s to give the prompt back (0.37 s once loaded).
        self._closed = True
        self._go.set()
        while True:  # (a chunk it is handing over, into a full queue, goes in)
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._hold is not None:
            self._hold.release()

    def _wait_for_more(self, scanned: int, target: Predicate, stop: bool) -> bool:
        # The cursor does not follow the loading trace: drawing each chunk's frontier
        # (a bigger graph every tick) cost more than loading it, and the picture the
        # user asked for (``f`` on a 50,000-node iteration) came seconds later.
        if not self.loading:
            return False
        self._waiting = (target, stop, scanned)
        # What the user waits for now is further on in the trace, not the picture the
        # app may be laying out (which held the decoding: ``hold``): go on at once.
        self.hold(False)
        return True

    def _at_frontier(self, command: str, **kwargs: Any) -> None:
        self._finished = True

    def fetch_values(self, tensor_id: int, grad: bool = False) -> np.ndarray | None:
        values = getattr(self.trace, "values", None)
        return values(tensor_id) if callable(values) and not grad else None

    def no_values_reason(self, grad: bool) -> str:
        if grad:
            return ("a trace holds gradient statistics, not gradient values: run the script "
                    "with dyngraph debug and press G while paused")
        return ("the trace holds no values for this tensor: record with --values small "
                "(tensors of up to 4,096 elements)")


class LiveSource(Source):
    """A script running in a child process under ``dyngraph.debug.Session``.

    The session's reader thread fills a thread-safe queue; ``pump`` (on the UI's timer)
    drains it without blocking, so the UI's work is independent of the script's pace.
    """

    live = True

    @property
    def notes(self) -> list[str]:
        return list(getattr(self.session, "notes", ()))

    def __init__(self, model: Model, session: Any) -> None:
        super().__init__(model)
        if model.max_events is None:
            model.max_events = LIVE_MAX_EVENTS
        self.session = session
        self.following = True
        self._runtime_ids: dict[int, int] = {}
        self.error: BaseException | None = None
        self.pause_index: int | None = None
        self._closed = False
        self._start_args: tuple[str, tuple[str, ...], str, str | None, str, str,
                                str | None] | None = None
        # (runtime id, iteration) of the one-off breakpoints that jumps set in the child
        self._temporary: list[tuple[int, int]] = []

    @classmethod
    def start(cls, model: Model, script: str, args: Sequence[str] = (), *, stats: str = "full",
              cwd: str | None = None, backend: str = "auto",
               iteration: str = "backward",
               compile: str | None = None,  # noqa: A002 - the CLI's --compile
               pause_at_start: bool = True, **options: Any) -> LiveSource:
        """``options`` go to ``Session.start`` (a rank of a job: ``ranks_strict``, ...)."""
        from dyngraph.debug import Session

        session = Session.start(script, tuple(args), stats=stats, pause_at_start=pause_at_start,
                                cwd=cwd, backend=backend, iteration=iteration, compile=compile,
                                **options)
        source = cls(model, session)
        source._start_args = (script, tuple(args), stats, cwd, backend, iteration, compile)
        return source

    def restarted(self) -> LiveSource:
        """A new run of the same script with the same arguments and breakpoints, paused
        before its first line (this one is left as it is: close it)."""
        if self._start_args is None:
            raise RuntimeError("this session was not started by LiveSource.start")
        script, args, stats, cwd, backend, iteration, compile = self._start_args
        new = LiveSource.start(Model(max_events=self.model.max_events), script, args,
                               stats=stats, cwd=cwd, backend=backend, iteration=iteration,
                               compile=compile)
        for spec in self.breakpoints.values():
            new.add_breakpoint(spec)
        return new

    def run_to_iteration(self, index: int) -> None:
        """Through history first; past the frontier, a one-off iteration breakpoint in the
        child takes the script there (removed once the script got there; breakpoints on the
        way stop it, as ``c`` would, and ``c`` goes on to the iteration)."""
        runtime_id = self.session.add_breakpoint(Breakpoint.at_iteration(index))
        self._temporary.append((runtime_id, index))
        self._run("continue_", lambda e: e.kind in STEP_KINDS and e.iteration >= index)

    def pump(self) -> list[ev.Event]:
        if self._closed:
            return []
        got = self.session.poll(0.0)
        if not got:
            return got
        model = self.model
        self._seen_so_far(got)  # (before a long run's oldest events are let go)
        model.ingest(got)
        self._seen_upto = len(model.events)
        pause = next((e for e in reversed(got) if isinstance(e, ev.BreakpointHit)), None)
        if pause is not None and self._temporary:
            # A jump stopped on the way (at a breakpoint) still goes on with the next `c`.
            reached = [(i, n) for i, n in self._temporary if pause.iteration >= n]
            for runtime_id, n in reached:
                self.session.remove_breakpoint(runtime_id)
                self._temporary.remove((runtime_id, n))
        if pause is not None:
            if pause.reason == "exception":
                # at_seq is the last op before the raise; backward steps may follow it, and
                # post-mortem is about the state at the raise: the newest step.
                self.pause_index = model.last_step()
            elif pause.at_seq > 0:
                self.pause_index = model.index_of_seq(pause.at_seq)
            else:
                self.pause_index = model.index_of_seq(pause.seq)
        if self.following:
            model.move_to(self.pause_index if pause is not None else model.last_step())
        return got

    def frontier_index(self) -> int:
        """Where the script is: the pause point while paused, else the newest step."""
        if self.pause_index is not None and self.session.state.status == "paused":
            return self.pause_index
        return self.model.last_step()

    @property
    def state(self) -> SourceState:
        s = self.session.state
        return SourceState(s.status, s.reason, s.description, s.at_seq, s.exit_status)

    def _history_move(self, index: int, reason: str, description: str) -> None:
        super()._history_move(index, reason, description)
        self.following = False

    def _at_frontier(self, command: str, **kwargs: Any) -> None:
        self.following = True
        if self.session.state.status == "finished":
            return
        self.model.move_to(self.model.last_step())
        self.pause_index = None
        getattr(self.session, command)(**kwargs)

    # -- breakpoints go to the child too -------------------------------------------------
    def add_breakpoint(self, spec: Breakpoint) -> int:
        runtime_id = self.session.add_breakpoint(spec)
        bp_id = super().add_breakpoint(spec)
        self._runtime_ids[bp_id] = runtime_id
        return bp_id

    def remove_breakpoint(self, bp_id: int) -> None:
        super().remove_breakpoint(bp_id)
        runtime_id = self._runtime_ids.pop(bp_id, None)
        if runtime_id is not None:
            self.session.remove_breakpoint(runtime_id)

    def fetch_values(self, tensor_id: int, grad: bool = False) -> np.ndarray | None:
        if self.session.state.status != "paused":
            return None
        return self.session.fetch_values(tensor_id, timeout=5.0, grad=grad)

    def no_values_reason(self, grad: bool) -> str:
        if self.session.state.status != "paused":
            return "the script is not paused: values can be fetched only while it waits"
        return (f"the script no longer keeps this tensor's {'gradient' if grad else 'values'}"
                " (it keeps the current iteration's and the two before)")

    @property
    def pause_id(self) -> int:
        state = self.session.state
        return state.pause if state.status == "paused" else 0

    def break_in(self) -> bool:
        if self.session.state.status != "running":
            return False
        self.session.pause()
        return True

    def inspect(self, frame: int = 0) -> FrameView:
        return self.session.inspect(frame)  # type: ignore[no-any-return]

    def evaluate(self, source: str, frame: int = 0) -> EvalResult:
        return self.session.eval(source, frame)  # type: ignore[no-any-return]

    def interrupt_evaluation(self) -> None:
        self.session.interrupt_eval()

    def add_watch(self, expression: str) -> int:
        return self.session.watch(expression)  # type: ignore[no-any-return]

    def remove_watch(self, watch_id: int) -> None:
        self.session.unwatch(watch_id)

    def close(self) -> None:
        self._closed = True
        self.session.close()


def _status(model: Model) -> int | None:
    return model.run_end.status if model.run_end is not None else None


def _ending(model: Model) -> str:
    """How the run ended, in a few words."""
    exc = model.exception
    if exc is not None:
        where = f" at {os.path.basename(exc.file)}:{exc.line}" if exc.file else ""
        return f"raised {exc.type}: {exc.message}{where}"
    end = model.run_end
    if end is not None:
        why = f" ({end.reason})" if end.reason else ""
        return f"script exited with status {end.status}{why}"
    return "the trace ends here"


def describe_ending(model: Model) -> str:
    return _ending(model)
