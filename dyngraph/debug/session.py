"""The parent side of the debug runtime: start a script in a child process and drive it.

>>> from dyngraph.debug import Breakpoint, Session
>>> with Session.start("train.py", ["--epochs", "1"],
...                    breakpoints=[Breakpoint.op("matmul")]) as s:   # doctest: +SKIP
...     s.continue_()                       # leave the initial pause
...     events = s.poll(timeout=1.0)        # events so far; s.state says we are paused
...     s.fetch_values(events[-2].output)   # the matmul's full output
...     s.step_op()

A reader thread decodes the channel's frames into a queue (``poll``) and keeps ``state``
current; commands return at once and their effect shows up as events and state. The child
runs in its own session (process group), so a crash, a segfault, a busy loop or Ctrl-C in
the script never reaches this process, and ``abort``/``close`` kill the whole group.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..capture import backends, tracefile
from ..capture import events as ev
from ..errors import TraceFileError, UserError
from .breakpoints import Breakpoint
from .channel import ChannelClosed, socket_pair
from .inspection import (
    EvalResult,
    Frame,
    FrameView,
    InspectError,
    Variable,
    WatchValue,
    result_from_wire,
    view_from_wire,
)
from .watchdog import DEFAULT_LIMIT, Watchdog, stack_dump, watchdog_limit

# After the child closed the channel it is about to exit; past this, it is killed.
EXIT_GRACE = 5.0
# The events the reader thread looks at (the rest only pass through to ``poll``).
_NOTABLE = frozenset({ev.BreakpointHit, ev.Header, ev.ExceptionRaised, ev.RunEnd})

# How the child starts: see launch.py (why not ``python -m``).
_LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")

@dataclass(frozen=True, slots=True)
class SessionState:
    """``status`` is "running", "paused" or "finished".

    Paused: ``reason`` is the breakpoint kind ("op", "nan", ...), "step", "start",
    "exception", "breakpoint" (``dyngraph.breakpoint()`` or ``breakpoint()``), "held" (a
    rank of a job at its first checkpoint) or "divergence", ``at_seq``
    the seq of the event it stopped at, ``pause`` the seq of the BreakpointHit itself (it
    names this pause: answers about variables carry it). Finished: ``exit_status`` is the
    child's as ``subprocess`` reports it (negative signal number when killed by one: -11 for
    a segfault).
    """

    status: str
    reason: str = ""
    description: str = ""
    at_seq: int = 0
    exit_status: int | None = None
    pause: int = 0

    @property
    def paused(self) -> bool:
        return self.status == "paused"

    @property
    def finished(self) -> bool:
        return self.status == "finished"


def check_script(script: str | os.PathLike[str]) -> str:
    """The script's absolute path, or UserError naming what is wrong with it."""
    path = os.fspath(script)
    if not os.path.exists(path):
        raise UserError(f"no such script: {path}")
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory, not a Python script")
    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block, /dev/zero never end
        raise UserError(f"{path} is not a regular file: give a Python script")
    try:
        with tokenize.open(path) as f:
            source = f.read()
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "?"
        raise UserError(f"{path}, {where}: {type(exc).__name__}: {exc.msg}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path} is not a Python script ({exc})") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    return os.path.abspath(path)


class Session:
    """A script running in a child process under the debug runtime. Use ``Session.start``."""

    def __init__(self, proc: subprocess.Popen[bytes], channel: Any, script: str,
                 args: Sequence[str], breakpoints: dict[int, Breakpoint],
                 stderr_file: Any, watchdog: float = DEFAULT_LIMIT) -> None:
        self.script = script
        self.args = tuple(args)
        self._proc = proc
        self._channel = channel
        self._bps = breakpoints
        self._bp_ids = itertools.count(max(breakpoints, default=0) + 1)
        self._stderr = stderr_file
        self._queue: queue.SimpleQueue[list[ev.Event]] = queue.SimpleQueue()
        self._state = SessionState("running")
        self._replies: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._request_ids = itertools.count(1)
        self._watches: dict[int, str] = {}
        self._watch_ids = itertools.count(1)
        self._aborted = False
        self.header: ev.Header | None = None
        self.exception: ev.ExceptionRaised | None = None
        # "ZeroDivisionError: ... in op div (module fc), iteration 2, train.py:14"
        self.exception_description = ""
        # What the capture said about the run ("torch.compile runs eagerly while captured")
        self.notes: list[str] = []
        self.run_end: ev.RunEnd | None = None
        # Set when another rank of the job found that the ranks diverged (dyngraph.ranks)
        self.divergence = ""
        # Why the child was ended as stuck (watchdog.py), and the stacks of its threads then
        self.stuck = ""
        self.stacks = ""
        self._dog = Watchdog(watchdog, proc.pid, self._send)
        self.last_seq = 0
        self.iteration = 1
        self.events_received = 0
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, name="dyngraph-session", daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, script: str | os.PathLike[str], args: Iterable[str] = (), *,
              stats: str = "full", breakpoints: Iterable[Breakpoint] = (),
              pause_at_start: bool = True, cwd: str | os.PathLike[str] | None = None,
              values: str = "none", post_mortem: bool = True, keep_values: bool = True,
              keep_iterations: int = 2, max_bytes: int = 256 * 1024 * 1024,
              script_breakpoints: bool = True, python: str | None = None,
              env: dict[str, str] | None = None, backend: str = "auto",
              iteration: str = "backward", relative_paths: bool = False,
              compile: str | None = None,  # noqa: A002 - the CLI's --compile
              watchdog: float | None = None, ranks_strict: bool = False,
              ranks_compare: bool = True, ranks_hold: bool = False,
              judge_at_read: bool = False) -> Session:
        """Start ``script`` with ``args`` in a child process.

        ``pause_at_start`` stops before the script's first line; ``post_mortem`` pauses at
        an uncaught exception (reason "exception") instead of ending at once;
        ``script_breakpoints=False`` makes ``dyngraph.breakpoint()`` calls in the script do
        nothing (headless runs that nobody would resume).
        ``keep_values``/``keep_iterations``/``max_bytes`` bound the values the child keeps
        for ``fetch_values`` (see ``dyngraph.debug.values``). ``backend`` is ``"auto"``
        (the numpy engine, and PyTorch once the script imports it), ``"torch"`` or
        ``"dyngraph"`` (see ``dyngraph.capture.backends``); ``compile`` is ``"observe"``
        (the default) or ``"eager"`` (see ``dyngraph.compile_lane``). A child that stops
        answering for ``watchdog`` seconds (``dyngraph.debug.watchdog``; 0: never; default:
        ``$DYNGRAPH_WATCHDOG`` or 60) is ended, its threads' stacks in ``stacks``. In a rank
        of a torchrun job, ``ranks_strict`` makes every checkpoint wait for every rank (a
        debugger's pause holds the others), ``ranks_hold`` pauses at the first checkpoint
        (where the others wait for it) and ``ranks_compare=False`` compares nothing across
        ranks (see ``dyngraph.ranks``). Raises UserError for a missing script, a directory,
        a syntax error, a negative watchdog, or ``backend="torch"`` without PyTorch.
        ``iteration``: where iterations end, ``"backward"`` or ``"step"`` (an optimizer
        step; see ``dyngraph.capture.tracing``). ``relative_paths``: events name files
        relative to the script's folder (a trace to share; ``dyngraph.capture.paths``).
        ``judge_at_read``: NaN and gradient-norm breakpoints judge each iteration when its
        statistics are read, not each op as it runs (``dyngraph check``: see
        ``dyngraph.debug.readchecks``).
        """
        watchdog = watchdog_limit(watchdog)
        backends.check(backend)
        if stats not in ("full", "cheap", "none"):
            raise UserError(f"stats must be full, cheap or none, not {stats!r}")
        if iteration not in ("backward", "step"):
            raise UserError(f"--iteration must be backward or step, not {iteration!r}")
        if values not in ("none", "small"):
            raise UserError(f"values must be none or small, not {values!r}")
        path = check_script(script)
        args = [str(a) for a in args]
        bps: dict[int, Breakpoint] = {}
        for i, bp in enumerate(breakpoints, start=1):
            bps[i] = bp.with_id(i)
        channel, child_sock = socket_pair()
        stderr_file = tempfile.TemporaryFile()
        env = _child_env(env)
        command = [python or sys.executable, "-P", _LAUNCHER,
                   "--connect", f"fd:{child_sock.fileno()}", path, *args]
        try:
            proc = subprocess.Popen(
                command, pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=stderr_file, cwd=cwd, env=env,
                start_new_session=True,
            )
        except OSError as exc:
            channel.close()
            stderr_file.close()
            raise UserError(f"cannot start {command[0]}: {exc.strerror or exc}") from None
        finally:
            child_sock.close()
        session = cls(proc, channel, path, args, bps, stderr_file, watchdog)
        session._send({
            "cmd": "start", "stats": stats, "values": values,
            "breakpoints": [bp.to_dict() for bp in bps.values()],
            "pause_at_start": pause_at_start, "post_mortem": post_mortem,
            "keep_values": keep_values, "keep_iterations": keep_iterations,
            "judge_at_read": judge_at_read,
            "max_bytes": max_bytes, "script_breakpoints": script_breakpoints,
            "backend": backend, "iteration": iteration, "relative_paths": relative_paths,
            "compile": compile, "ranks_strict": ranks_strict,
            "ranks_compare": ranks_compare, "ranks_hold": ranks_hold,
        })
        return session

    # -- what happened -------------------------------------------------------------------
    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def pid(self) -> int:
        return self._proc.pid

    def poll(self, timeout: float = 0.0) -> list[ev.Event]:
        """Events received since the last poll; waits up to ``timeout`` for the first ones."""
        out: list[ev.Event] = []
        try:
            out.extend(self._queue.get(timeout=timeout) if timeout > 0
                       else self._queue.get_nowait())
        except queue.Empty:
            return out
        while True:
            try:
                out.extend(self._queue.get_nowait())
            except queue.Empty:
                return out

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the child has exited; its exit status (None on timeout)."""
        self._done.wait(timeout)
        return self._state.exit_status if self._done.is_set() else None

    # -- commands --------------------------------------------------------------------------
    def step_op(self) -> None:
        """Run to the next forward op or backward step (or pause a running script there)."""
        self._resume({"cmd": "step_op"} if self._state.paused else {"cmd": "pause"})

    def pause(self) -> None:
        """Stop a running script at its next op; nothing if it is already paused."""
        self._send({"cmd": "pause"})

    def next_iteration(self) -> None:
        """Run to the first op of the next iteration."""
        self._resume({"cmd": "next_iteration"})

    def finish_forward(self) -> None:
        """Run to the end of the forward pass (stops as backward starts)."""
        self._resume({"cmd": "finish_forward"})

    def finish_backward(self) -> None:
        """Run to the end of the backward pass."""
        self._resume({"cmd": "finish_backward"})

    def continue_(self) -> None:
        """Run until a breakpoint hits or the script ends."""
        self._resume({"cmd": "continue"})

    def run_to_line(self, file: str, line: int) -> None:
        """Run to the next op at ``file:line`` (``file`` may be a bare file name)."""
        self._resume({"cmd": "run_to_line", "file": str(file), "line": int(line)})

    def add_breakpoint(self, bp: Breakpoint) -> int:
        """Add a breakpoint (takes effect in the child at once); returns its id."""
        bp_id = next(self._bp_ids)
        bp = bp.with_id(bp_id)
        self._bps[bp_id] = bp
        self._send({"cmd": "add_breakpoint", "breakpoint": bp.to_dict()})
        return bp_id

    def remove_breakpoint(self, bp_id: int) -> None:
        if self._bps.pop(bp_id, None) is not None:
            self._send({"cmd": "remove_breakpoint", "id": bp_id})

    def breakpoints(self) -> list[Breakpoint]:
        return list(self._bps.values())

    def fetch_values(self, tensor_id: int, timeout: float = 5.0,
                     grad: bool = False) -> np.ndarray | None:
        """Full values (or, with ``grad=True``, the gradient) of a tensor the child still
        keeps: the current iteration's and a few before it. None if not kept or no answer."""
        if self._state.finished:
            return None
        reply = self._ask({"cmd": "values", "tensor": int(tensor_id), "grad": grad}, timeout)
        encoded = reply.get("array") if reply is not None else None
        return None if encoded is None else tracefile.decode_array(encoded)

    # -- Python at the pause: frames, variables, watches, evaluation --------------------------
    def stack(self) -> list[Frame]:
        """The user's call stack at this pause, innermost (index 0) first.

        Frames of dyngraph and of libraries (PyTorch, the standard library) are left out:
        frame 0 is the user's line that made the op (or called ``breakpoint()``, or raised).
        Raises ``InspectError`` unless paused.
        """
        return list(self.inspect(0, watches=False).frames)

    def locals(self, frame: int = 0) -> list[Variable]:
        """The variables of user frame ``frame`` (0: innermost), one summary row each.

        >>> [(v.name, v.text) for v in session.locals()]     # doctest: +SKIP
        [('self', 'Net, 41 parameters'), ('x', '(3, 4) float32  min ...'), ...]
        """
        return list(self.inspect(frame, watches=False).variables)

    def eval(self, source: str, frame: int = 0, timeout: float | None = None) -> EvalResult:
        """Run ``source`` (an expression, or statements, several lines allowed) in user frame
        ``frame`` of the paused script, in the script's process; its print output and the
        value of a trailing expression come back in an ``EvalResult``. Names it assigns stay
        in the console's namespace across pauses; the frame's variables are not written
        back. ``interrupt_eval()`` (another thread) stops a long evaluation.

        >>> session.eval("h.shape").value                    # doctest: +SKIP
        '(16, 8)'
        """
        reply = self._ask_paused({"cmd": "eval", "source": str(source), "frame": int(frame)},
                                 timeout)
        return result_from_wire(reply["result"])

    def interrupt_eval(self) -> None:
        """Stop the evaluation running in the child (KeyboardInterrupt there); the script
        stays paused. Does nothing when none runs."""
        self._send({"cmd": "interrupt_eval"})

    def watch(self, expression: str) -> int:
        """Add a watch expression; ``watches()`` and ``inspect()`` evaluate it at each pause.
        Returns its id (for ``unwatch``). A syntax error shows as that watch's error."""
        watch_id = next(self._watch_ids)
        self._watches[watch_id] = str(expression)
        return watch_id

    def unwatch(self, watch_id: int) -> None:
        self._watches.pop(watch_id, None)

    @property
    def watch_expressions(self) -> dict[int, str]:
        return dict(self._watches)

    def watches(self, frame: int = 0, timeout: float | None = None) -> list[WatchValue]:
        """Every watch evaluated now, in user frame ``frame``; errors inline."""
        return list(self.inspect(frame, timeout=timeout).watches)

    def inspect(self, frame: int = 0, watches: bool = True,
                timeout: float | None = None) -> FrameView:
        """Frames, frame ``frame``'s variables and (``watches``) the watches, in one round
        trip: what the debugger's variables pane shows at a pause."""
        msg: dict[str, Any] = {"cmd": "inspect", "frame": int(frame)}
        if watches:
            msg["watches"] = [[k, v] for k, v in self._watches.items()]
        return view_from_wire(self._ask_paused(msg, timeout)["view"])

    def _ask_paused(self, msg: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        state = self._state
        if not state.paused:
            raise InspectError(f"the script is {'running' if state.status == 'running' else 'over'}"
                               f": its variables can be read only while it is paused")
        reply = self._ask(msg, timeout)
        if reply is None:
            raise InspectError("no answer from the script" + (
                f" within {timeout:g} s" if timeout is not None and not self._state.finished
                else ": it has ended"))
        if "error" in reply:
            raise InspectError(str(reply["error"]))
        return reply

    def _ask(self, msg: dict[str, Any], timeout: float | None) -> dict[str, Any] | None:
        """Send a request and wait for its reply (None on timeout or when the run ends)."""
        request = next(self._request_ids)
        slot: tuple[threading.Event, list[Any]] = (threading.Event(), [])
        self._replies[request] = slot
        try:
            if self._done.is_set():
                return None
            self._send({**msg, "request": request})
            if not slot[0].wait(timeout) or not slot[1]:
                return None
            return slot[1][0]  # type: ignore[no-any-return]
        finally:
            self._replies.pop(request, None)

    def interrupt(self) -> None:
        """Send SIGINT to the script (a KeyboardInterrupt, as Ctrl-C would)."""
        self._signal(signal.SIGINT)

    def abort(self) -> None:
        """Kill the script (and anything it started) now; the session finishes as aborted."""
        if not self._done.is_set():
            self._aborted = True
            self._signal(signal.SIGKILL)

    def close(self, timeout: float = 5.0) -> None:
        """End the child (killing it if still running), leaving no process behind."""
        self.abort()
        self._done.wait(timeout)
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout)
        self._channel.close()
        self._stderr.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _signal(self, sig: int) -> None:
        if self._proc.poll() is not None:
            return
        try:
            os.killpg(self._proc.pid, sig)  # the child leads its own process group
        except (ProcessLookupError, PermissionError):
            try:
                self._proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def _resume(self, msg: dict[str, Any]) -> None:
        if self._state.paused:
            self._state = SessionState("running")
        self._send(msg)

    def _send(self, msg: dict[str, Any]) -> None:
        if self._channel.closed:
            return
        try:
            self._channel.send(tracefile.encode_message(msg))
        except ChannelClosed:
            pass

    # -- the reader thread -------------------------------------------------------------------
    def _read(self) -> None:
        decoder = tracefile.FrameDecoder()
        problem = ""
        try:
            while True:
                data = self._channel.recv(0.2)
                if not self.stuck:
                    reason = self._dog.tick()
                    if reason:
                        self._end_stuck(reason)
                if data is None:
                    if self._proc.poll() is not None:
                        break  # exited, yet something it forked still holds the channel
                    continue
                if not data:
                    break
                for item in decoder.feed(data):
                    if isinstance(item, dict):
                        self._on_message(item)
                    else:
                        self._on_events(item)
        except TraceFileError as exc:
            problem = f"the child sent garbage: {exc}"
            self._signal(signal.SIGKILL)
        except OSError as exc:  # the channel was closed under us (close())
            problem = str(exc)
        self._finish(problem)

    def _on_events(self, events: list[ev.Event]) -> None:
        notable = _NOTABLE
        for e in events:
            t = type(e)
            if t not in notable:  # ops and backward steps, nearly every event: one lookup
                continue
            if t is ev.BreakpointHit:
                hit: ev.BreakpointHit = e  # type: ignore[assignment]
                self._state = SessionState("paused", hit.reason, hit.description, hit.at_seq,
                                           pause=hit.seq)
            elif t is ev.Header:
                self.header = e  # type: ignore[assignment]
                self._dog.armed = True  # (the child's command thread runs from now on)
            elif t is ev.ExceptionRaised:
                self.exception = e  # type: ignore[assignment]
            elif t is ev.RunEnd:
                self.run_end = e  # type: ignore[assignment]
        if events:
            self.last_seq = events[-1].seq
            self.iteration = events[-1].iteration
            self.events_received += len(events)
            self._queue.put(events)

    def _on_message(self, msg: dict[str, Any]) -> None:
        if msg.get("note") == "exception":
            self.exception_description = str(msg.get("description", ""))
        elif msg.get("note") == "divergence":
            self.divergence = str(msg.get("description", ""))
        elif msg.get("note") == "backend":
            text = str(msg.get("text", ""))
            if text and text not in self.notes:
                self.notes.append(text)
        elif msg.get("reply") == "ping":
            reason = self._dog.answered(msg)
            if reason and not self.stuck:
                self._end_stuck(reason)
        elif "reply" in msg:
            slot = self._replies.get(msg.get("request", -1))
            if slot is not None:
                slot[1].append(msg)
                slot[0].set()

    def _stuck_text(self) -> str:
        stacks = self.stacks or "(no stack dump came: faulthandler could not answer)"
        ours = (" This is a bug in dyngraph: please report it with these stacks."
                if self._dog.blamed_us else "")
        return (f"\ndyngraph: the script stopped answering: {self.stuck}. It was ended.{ours} "
                f"Its threads, innermost call first:\n{stacks}\n")

    def _end_stuck(self, reason: str) -> None:
        """The child stopped answering: take its threads' stacks, then kill it."""
        self.stuck = reason
        self.stacks = stack_dump(self._proc.pid, self._stderr)
        self._signal(signal.SIGKILL)

    def _finish(self, problem: str) -> None:
        try:
            status = self._proc.wait(EXIT_GRACE)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            status = self._proc.wait()
        if self.stuck:
            reason = "not answering"
        elif self._aborted:
            reason = "aborted"
        elif self.run_end is not None:
            reason = self.run_end.reason
        elif status < 0:
            reason = f"killed by {_signal_name(-status)}"
        else:
            reason = "exited"
        description = _describe_exit(status, reason)
        if self.stuck:
            description = f"ended: it stopped answering ({self.stuck})"
        elif self.header is None and not self._aborted:
            tail = self._stderr_tail()
            description = f"the child failed to start ({tail or description})"
        if problem:
            description += f"; {problem}"
        if self.run_end is None:
            if self.stuck:  # said where the script's own output is read: pane, terminal, trace
                self.last_seq += 1
                self._queue.put([ev.ScriptOutput(self.last_seq, self.iteration, "stderr",
                                                 self._stuck_text())])
            # Nobody else will say the run ended: a signal, an abort, a failed start.
            end = ev.RunEnd(self.last_seq + 1, self.iteration, status, reason)
            self.run_end = end
            self.last_seq += 1
            self._queue.put([end])
        self._state = SessionState("finished", reason, description, self.last_seq, status)
        self._done.set()  # before waking the askers: one asking now sees it and won't wait
        for event, _ in list(self._replies.values()):
            event.set()

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _describe_exit(status: int, reason: str) -> str:
    if reason == "aborted":
        return "aborted"
    if reason == "not answering":
        return "ended: it stopped answering"
    if status < 0:
        return f"killed by {_signal_name(-status)}"  # the number depends on who reports it
    return f"exited with status {status}" + (f" ({reason})" if reason not in ("exit",
                                                                                "finished") else "")


def shell_status(status: int | None) -> int:
    """A session's exit status as a shell reports it: a signal n becomes 128 + n."""
    if status is None:
        return 1
    return 128 - status if status < 0 else status


def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    """The child's environment: the given one (or ours), unchanged.

    Thread settings above all stay the user's: with ``OMP_NUM_THREADS=1`` set for it, the
    recorded PyTorch run reduced and multiplied on one thread where ``python SCRIPT`` used
    every core, and its numbers were no longer bitwise those of the plain run. (A machine
    oversubscribed by the script's threads beside the debugger is the user's to tune, as it
    is beside any other program.)
    """
    return dict(os.environ if env is None else env)

