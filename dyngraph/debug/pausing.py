"""The agent's pauses and the session's commands: what stops the script and what makes
it go on.

A mixin of ``agent.Agent`` (its state is set up there). ``_pause`` emits BreakpointHit and
blocks the script's thread; the command thread (``_read_commands``) hands it a resume
command, or questions about its frames (``inspect``, ``eval``), which it answers on its own
thread, where the user's code ran.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..capture import events as ev
from ..capture import tracefile
from ..capture.arrays import to_numpy
from ..capture.rows import Row, row_of
from ..capture.tracing import tracer
from .breakpoints import Breakpoint, Matcher
from .channel import Channel
from .describe import ModuleStack, first_line, locate_exception, where
from .evaluation import FrameEvaluator
from .inspection import InspectError, result_to_wire, view_to_wire
from .outbox import hard_exit
from .values import ValueStore
from .watchdog import Busy, pong

ABORTED = 137  # exit status after {"cmd": "abort"}: what a SIGKILL'd process shows a shell
RESUME_COMMANDS = ("step_op", "next_iteration", "finish_forward", "finish_backward",
                   "continue", "run_to_line", "pause")
INSPECT_COMMANDS = ("inspect", "eval")  # served on the paused thread, one at a time


class Pausing:
    """A mixin of the agent: pausing the script and serving the session's commands."""

    channel: Channel
    busy: Busy
    evaluator: FrameEvaluator
    modules: ModuleStack
    store: ValueStore | None
    post_mortem: bool
    pause_listeners: list[Any]
    exception_description: str
    _handle: Any
    _queue: deque[Row]
    _cond: threading.Condition
    _paused: bool
    _resume: dict[str, Any] | None
    _requests: deque[dict[str, Any]]
    _stop: tuple[Any, ...] | None
    _seen_iteration: int
    _last_op: Row | None
    _last_step: Row | None
    _closing: threading.Event
    _decoder: tracefile.FrameDecoder
    _bps: dict[int, Breakpoint]
    _matcher: Matcher

    # (the agent's, and the outbox's)
    last_op: Any
    last_step: Any

    if TYPE_CHECKING:  # (only declared: the methods are the agent's and the outbox's)
        def flush(self) -> None: ...
        def send_message(self, message: dict[str, Any]) -> None: ...
        def _number_parked(self, force: bool = False) -> None: ...
        def _install_hook(self) -> None: ...
        def _describe_node(self, node: int, op: str) -> str: ...

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
                        hard_exit(1)  # the session is gone: nobody will ever resume us
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
                    hard_exit(1)  # the session closed the channel: end the run now
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
            hard_exit(ABORTED)

    def _answer_values(self, msg: dict[str, Any]) -> None:
        array = None
        if self.store is not None:
            array = self.store.get(int(msg["tensor"]), grad=bool(msg.get("grad", False)))
        self.send_message({
            "reply": "values", "request": msg.get("request"), "tensor": msg["tensor"],
            "array": None if array is None else tracefile.encode_array(to_numpy(array)),
        })


def _module_text(path: str | None, cls: str) -> str:
    """`` (module encoder.0, a Linear)``: which module was running when it raised."""
    if path:
        return f" (module {path}{f', a {cls}' if cls else ''})"
    if cls:  # the outermost module has no path of its own
        return f" (in the top-level {cls})"
    return ""
