"""Python at the paused op, in the child: the frame's variables, watch expressions, a console.

The agent makes one ``FrameEvaluator``. At every pause it captures the user's frames
(``frames.paused_stack``, or the traceback's frames post-mortem) and lets them go when the
script resumes: nothing is paid while the script runs. Every request is served on the
paused thread itself, so user code runs where it would have run.

Namespaces: code typed at the console sees the frame's globals and locals, plus the names
earlier console input assigned. Assignments never write back into the frame (CPython 3.11
cannot reliably write a function's locals), they go to the console's own namespace, which
lasts across pauses. A frame's variable hides an older console name of the same name; a
name assigned at this pause, in this frame, wins over the frame's.

Interrupting: ``interrupt()`` (from the agent's command thread) raises KeyboardInterrupt in
the evaluation. On the main thread that is a real SIGINT, so a ``time.sleep`` or blocking
read wakes up; our handler is installed for the pause and only raises inside an evaluation,
so a late signal never reaches the script. On another thread it is an asynchronous
exception (delivered between bytecodes: a long call into C finishes first).
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import io
import itertools
import linecache
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import FrameType, TracebackType
from typing import Any

from ..capture.tracing import tracer
from .frames import is_user_file, paused_stack, traceback_frames
from .inspection import EvalResult, Frame, FrameView, InspectError, Variable, WatchValue
from .variables import MAX_VARIABLES, describe, long_repr, shown, tensor_info

OUTPUT_LIMIT = 64 * 1024
"""Characters of printed output (and, separately, of the value's text) one evaluation keeps."""

CONSOLE_FILE = "<console:{}>"
_interrupted = object()


class _CappedBuffer:
    """Text written during one evaluation, up to ``limit`` characters; the rest is counted."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def write(self, text: str) -> int:
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> tuple[str, bool]:
        text = "".join(self.parts)
        if self.dropped:
            text += cut_notice(self.dropped)
        return text, bool(self.dropped)


def cut_notice(dropped: int) -> str:
    return (f"\n… {dropped:,} more characters not shown (output is capped at "
            f"{OUTPUT_LIMIT:,} characters per evaluation)\n")


def capped(text: str) -> tuple[str, bool]:
    if len(text) <= OUTPUT_LIMIT:
        return text, False
    return text[:OUTPUT_LIMIT] + cut_notice(len(text) - OUTPUT_LIMIT), True


class _ThreadRedirect(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` during an evaluation: the evaluating thread's writes go
    to the evaluation's buffer, other threads' to the script's stream as before."""

    def __init__(self, original: Any, buffer: _CappedBuffer, ident: int) -> None:
        super().__init__()
        self._original = original
        self._buffer = buffer
        self._ident = ident

    def write(self, text: str) -> int:  # type: ignore[override]
        if threading.get_ident() == self._ident:
            return self._buffer.write(str(text))
        return int(self._original.write(text))

    def flush(self) -> None:
        if threading.get_ident() != self._ident:
            self._original.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


class FrameEvaluator:
    """Serves the paused frame's variables, watches and console input (on the paused thread)."""

    def __init__(self, main_ident: int | None = None) -> None:
        self.main_ident: int = (threading.main_thread().ident or 0) if main_ident is None \
            else main_ident
        self.namespace: dict[str, Any] = {}  # what console input assigned, across pauses
        self.pause = 0
        self._fresh: set[str] = set()  # names assigned at this pause, in ``_fresh_frame``
        self._fresh_frame = 0
        self._frames: list[tuple[FrameType, int]] = []
        self._thread = 0
        self._outer: BaseException | None = None
        self._inputs = itertools.count(1)
        self._lock = threading.Lock()
        self._evaluating = 0  # the generation being evaluated, 0 when none
        self._generation = itertools.count(1)
        self._signalled = 0  # the generation a SIGINT of ours was sent for
        self._old_handler: Any = None
        self._handler_installed = False

    # -- pauses ----------------------------------------------------------------------------
    def begin_pause(self, pause: int, tb: TracebackType | None = None) -> None:
        """Capture the user's frames: the current stack, or ``tb``'s frames post-mortem."""
        self.pause = pause
        self._thread = threading.get_ident()
        self._frames = traceback_frames(tb) if tb is not None else paused_stack(self.main_ident)
        self._outer = sys.exc_info()[1]
        self._fresh = set()
        self._fresh_frame = 0
        self._install_handler()

    def end_pause(self) -> None:
        """Let the frames go (they hold the script's locals) and give SIGINT back."""
        self._frames = []
        self._outer = None
        self._restore_handler()

    def frames(self) -> list[Frame]:
        return [Frame(i, f.f_code.co_filename, line, f.f_code.co_name)
                for i, (f, line) in enumerate(self._frames)]

    def _frame(self, index: int) -> FrameType:
        if not self._frames:
            raise InspectError("no frame of the script's own code is on the stack here "
                               "(paused before the script started, or inside a library)")
        if not 0 <= index < len(self._frames):
            raise InspectError(f"no frame {index}: the stack has {len(self._frames)} "
                               f"frame(s), 0 (innermost) to {len(self._frames) - 1}")
        return self._frames[index][0]

    # -- what the variables pane asks for ---------------------------------------------------
    def view(self, index: int, watches: Sequence[tuple[int, str]] = ()) -> FrameView:
        """Frame ``index``'s variables and every watch evaluated in that frame."""
        frames = tuple(self.frames())
        if not frames:
            return FrameView(self.pause, (), 0, ())
        frame = self._frame(index)
        rows: list[Variable] = []
        counts = [0]

        def build() -> None:
            f_locals = frame.f_locals
            module_level = f_locals is frame.f_globals
            items = list(f_locals.items())
            for name, value in items:
                if not shown(name, value, module_level):
                    continue
                if len(rows) >= MAX_VARIABLES:
                    counts[0] += 1
                    continue
                rows.append(describe(name, value))

        outcome = self._run(build, _CappedBuffer(0))
        if outcome is _interrupted:
            rows.append(Variable("…", "", "interrupted: the other variables were not described"))
        values = tuple(self.watch(frame, wid, expr) for wid, expr in watches)
        return FrameView(self.pause, frames, index, tuple(rows), values, counts[0])

    def watch(self, frame: FrameType, watch_id: int, expression: str) -> WatchValue:
        ns = self._namespace(frame, fresh=index_of(self._frames, frame) == self._fresh_frame)
        result: list[WatchValue] = []

        def run() -> None:
            try:
                value = eval(compile(expression, "<watch>", "eval", dont_inherit=True), ns)
                info = tensor_info(value)
                text = describe("", value).text
                result.append(WatchValue(watch_id, expression, text, None, info))
            except Exception as exc:  # noqa: BLE001 - shown inline, as the issue asks
                result.append(WatchValue(watch_id, expression, None, _one_line(exc)))

        if self._run(run, _CappedBuffer(0)) is _interrupted or not result:
            return WatchValue(watch_id, expression, None, "KeyboardInterrupt: interrupted")
        return result[0]

    # -- the console ----------------------------------------------------------------------
    def evaluate(self, source: str, index: int = 0) -> EvalResult:
        """Run ``source`` (an expression or statements, possibly several lines) in frame
        ``index``: the value of a trailing expression is shown, as a REPL shows it."""
        frame = self._frame(index)
        filename = CONSOLE_FILE.format(next(self._inputs))
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        if index != self._fresh_frame:
            self._fresh, self._fresh_frame = set(), index
        ns = self._namespace(frame, fresh=True)
        before = dict(ns)
        buffer = _CappedBuffer()
        answer: dict[str, Any] = {}

        def run() -> None:
            try:
                answer.update(_execute(source, filename, ns))
            except KeyboardInterrupt:
                raise  # interrupted: ``_run`` says so
            except BaseException as exc:  # noqa: BLE001 - the user's error (even SystemExit)
                answer["error"] = _one_line(exc)
                answer["traceback"] = _console_traceback(exc, self._outer)

        outcome = self._run(run, buffer)
        self._keep_assignments(before, ns)
        output, truncated = buffer.text()
        if outcome is _interrupted:
            return EvalResult(output=output, error="KeyboardInterrupt: evaluation interrupted",
                              truncated=truncated, interrupted=True)
        value, cut = capped(answer["value"]) if answer.get("value") is not None else (None, False)
        return EvalResult(value, output, answer.get("error"), answer.get("traceback", ""),
                          answer.get("tensor"), truncated or cut)

    def _namespace(self, frame: FrameType, fresh: bool) -> dict[str, Any]:
        ns = dict(frame.f_globals)
        ns.update(self.namespace)
        f_locals = frame.f_locals
        if f_locals is not frame.f_globals:
            ns.update(f_locals)
        else:
            ns.update(frame.f_globals)
        if fresh:
            for name in self._fresh:
                if name in self.namespace:
                    ns[name] = self.namespace[name]
        ns.setdefault("__builtins__", builtins)
        return ns

    def _keep_assignments(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        for name, value in after.items():
            if name == "__builtins__":
                continue
            if name not in before or before[name] is not value:
                self.namespace[name] = value
                self._fresh.add(name)
        for name in before:
            if name not in after:  # ``del name`` at the prompt
                self.namespace.pop(name, None)
                self._fresh.discard(name)

    # -- running user code, interruptibly --------------------------------------------------
    def _run(self, body: Callable[[], None], buffer: _CappedBuffer) -> Any:
        """Run ``body`` with print output in ``buffer``; ``_interrupted`` if interrupted.

        Tracing is off meanwhile (both backends check ``tracer.listening``): ops the
        console or a watch runs are not the script's, so they emit no events, join no graph
        and hit no breakpoint (one would pause again inside the evaluation and wait forever).
        """
        out, err = sys.stdout, sys.stderr
        ident = threading.get_ident()
        sys.stdout = _ThreadRedirect(out, buffer, ident)
        sys.stderr = _ThreadRedirect(err, buffer, ident)
        listening, tracer.listening = tracer.listening, False
        try:
            try:
                self._evaluating = next(self._generation)
                body()
            finally:
                self._end_evaluation()
        except KeyboardInterrupt:
            return _interrupted
        finally:
            sys.stdout, sys.stderr = out, err
            tracer.listening = listening
        return None

    def _end_evaluation(self) -> None:
        with self._lock:
            self._evaluating = 0
            if self._thread != self.main_ident:
                # Cancel an asynchronous exception that was sent but not yet delivered.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), None)

    def interrupt(self) -> bool:
        """Stop the running evaluation (any thread); False if none is running."""
        with self._lock:
            generation = self._evaluating
            if not generation:
                return False
            if self._thread == self.main_ident and self._handler_installed:
                self._signalled = generation
                signal.pthread_kill(self.main_ident, signal.SIGINT)
            else:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._thread), ctypes.py_object(KeyboardInterrupt))
        return True

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self._signalled:
            ours, self._signalled = self._signalled, 0
            if ours == self._evaluating:
                raise KeyboardInterrupt
            return  # ours, but the evaluation it was meant for had already ended
        previous = self._old_handler
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    def _install_handler(self) -> None:
        if threading.get_ident() != self.main_ident or self._handler_installed:
            return
        try:
            previous = signal.getsignal(signal.SIGINT)
            if previous is None:  # installed from C: we could not put it back
                return
            signal.signal(signal.SIGINT, self._on_sigint)
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            return
        self._old_handler = previous
        self._handler_installed = True

    def _restore_handler(self) -> None:
        if not self._handler_installed or threading.get_ident() != self.main_ident:
            return
        if self._signalled:
            # A SIGINT of ours may still be on its way: let our handler eat it first.
            import time

            time.sleep(0.05)
        signal.signal(signal.SIGINT, self._old_handler)
        self._handler_installed = False
        self._old_handler = None


# -- helpers ------------------------------------------------------------------------------
def index_of(frames: list[tuple[FrameType, int]], frame: FrameType) -> int:
    for i, (f, _) in enumerate(frames):
        if f is frame:
            return i
    return -1


def _execute(source: str, filename: str, ns: dict[str, Any]) -> dict[str, Any]:
    """Run statements, then evaluate a trailing expression (whose value is the answer)."""
    tree = ast.parse(source, filename, "exec")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
    if tree.body:
        exec(compile(tree, filename, "exec", dont_inherit=True), ns)
    if not isinstance(last, ast.Expr):
        return {}
    value = eval(compile(ast.Expression(last.value), filename, "eval", dont_inherit=True), ns)
    if value is None:
        return {}
    ns["_"] = value
    return {"value": long_repr(value), "tensor": tensor_info(value)}


def _one_line(exc: BaseException) -> str:
    try:
        message = exc.msg if isinstance(exc, SyntaxError) else " ".join(str(exc).split())
    except Exception:  # noqa: BLE001 - a broken __str__ on the user's exception
        message = "<str() of the exception failed>"
    if len(message) > 300:
        message = message[:299] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _console_traceback(exc: BaseException, outer: BaseException | None) -> str:
    """The traceback of the console input's frames and of the user's code they called.

    Frames of dyngraph (the agent, the evaluator, the engine) and of libraries are left out,
    as the variables pane leaves them out; so is the script's own exception that a
    post-mortem console runs inside of (it would show as "During handling of ...").
    """
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if link.__context__ is not None and link.__context__ is outer:
            link.__context__ = None
        if link.__cause__ is not None and link.__cause__ is outer:
            link.__cause__ = None
        link = link.__cause__ or link.__context__
    shown = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    hidden = 0
    pending: list[traceback.TracebackException | None] = [shown]
    while pending:
        te = pending.pop()
        if te is None:
            continue
        frames = list(te.stack)
        first = next((i for i, f in enumerate(frames) if f.filename.startswith("<console:")),
                     len(frames) if te is shown else 0)
        below = frames[first:]  # what the input called; above it is the evaluator's own
        kept = [f for f in below if f.filename.startswith("<console:")
                or is_user_file(f.filename)]
        hidden += len(below) - len(kept)
        te.stack = traceback.StackSummary.from_list(kept)
        pending += [te.__cause__, te.__context__]
    text = "".join(shown.format())
    if hidden:
        text += f"({hidden} frame(s) in dyngraph or in libraries not shown)\n"
    return capped(text)[0]
