"""``python -m dyngraph.debug.child --connect ADDRESS SCRIPT [ARGS...]``: run a script under
the debug runtime.

The process connects to its session (``fd:N`` for an inherited socket, ``HOST:PORT`` for
TCP), reads one ``{"cmd": "start", ...}`` control frame with its settings, captures its own
stdout/stderr down to the fds, and runs SCRIPT as ``__main__`` with ``sys.argv = [SCRIPT,
*ARGS]``, the script's directory first on ``sys.path`` and the working directory unchanged.
It exits with the status Python would give: 0, the ``sys.exit`` code, 1 after an uncaught
exception, or by SIGINT after an uncaught KeyboardInterrupt.
"""

from __future__ import annotations

import argparse
import atexit
import builtins
import faulthandler
import importlib
import io
import os
import signal
import sys
import threading
import tokenize
import traceback
import types
from typing import Any, NoReturn

from ..capture import tracefile
from ..capture.tracing import tracer
from . import hooks
from .agent import Agent
from .capture import OutputCapture
from .channel import Channel, connect

_hard_exit = os._exit


def main(argv: list[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(prog="python -m dyngraph.debug.child")
    parser.add_argument("--connect", required=True, metavar="ADDRESS", help="fd:N or HOST:PORT")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    channel = connect(ns.connect)
    config, decoder, early = _receive_config(channel)
    agent = Agent(
        channel,
        stats=config.get("stats", "full"),
        values=config.get("values", "none"),
        breakpoints=config.get("breakpoints", []),
        keep_values=config.get("keep_values", True),
        post_mortem=config.get("post_mortem", True),
        keep_iterations=config.get("keep_iterations", 2),
        max_bytes=config.get("max_bytes", 256 * 1024 * 1024),
        decoder=decoder,
        early_commands=early,
        backend=config.get("backend", "auto"),
        iteration=config.get("iteration", "backward"),
        relative_paths=config.get("relative_paths", False),
        compile=config.get("compile"),
        judge_at_read=config.get("judge_at_read", False),
    )
    path = os.path.abspath(ns.script)
    _start_ranks(agent, config)
    # `kill -USR1 <pid>` dumps every thread's stack to the child's original stderr (which
    # the session keeps): the way to see where a stuck run is.
    faulthandler.register(signal.SIGUSR1, file=os.fdopen(os.dup(2), "w"), all_threads=True)
    capture = OutputCapture(agent.output, agent.output_written, agent.busy)
    capture.start()
    if config.get("script_breakpoints", True):
        hooks.agent = agent
    else:
        hooks.headless = True
    hooks.route_builtin_breakpoint(os.environ)
    _patch_exit(agent, capture)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        # SIGTERM ends the script as Ctrl-C does: through its finally blocks and ours, so
        # what it recorded (and the statistics still on the device) is delivered first.
        signal.signal(signal.SIGTERM, _terminated)
    os.register_at_fork(after_in_child=lambda: _detach_after_fork(agent, capture))
    if config.get("pause_at_start", False):
        # The debugger pauses before the first line: load the numpy engine while the user
        # reads the screen, as `import dyngraph` once did. Loaded at the script's first
        # `torch.tensor(...)`, the first `n` took half a second and a second `n` pressed
        # in it was lost. Headless runs skip it: a PyTorch script never needs the engine.
        importlib.import_module("dyngraph._everything")
    agent.start(path, list(ns.args), bool(config.get("pause_at_start", False)), capture)
    status, reason = run_script(path, list(ns.args), agent)
    _end(agent, capture, status, reason)


_ranks: Any = None  # the rank logic, in a rank of a torchrun job (dyngraph.ranks)


def _start_ranks(agent: Agent, config: dict[str, Any]) -> None:
    """A rank of a torchrun job takes part in the job's checkpoints (before the header is
    made: it names the rank)."""
    global _ranks
    from ..errors import UserError
    from ..ranks.job import from_env

    try:
        job = from_env()
    except UserError:
        return  # (the command that started us said so already)
    if job is None:
        return
    from ..ranks.runtime import RankRuntime

    _ranks = RankRuntime(job, strict=bool(config.get("ranks_strict", False)),
                         compare=bool(config.get("ranks_compare", True)),
                         on_divergence=agent.divergence, on_remote=agent.remote_divergence,
                         hold=agent.hold if config.get("ranks_hold") else None)
    agent.pause_listeners.append(_ranks.paused)
    _ranks.start()


def _finish_ranks() -> None:
    if _ranks is not None and not _ranks._finished:
        try:
            _ranks.finish()
        except Exception:  # noqa: BLE001 - the run's end must be reported whatever happens
            traceback.print_exc()


def _receive_config(channel: Channel) -> tuple[dict[str, Any], tracefile.FrameDecoder,
                                               list[dict[str, Any]]]:
    """The first control frame; commands that arrived right behind it are kept for later."""
    decoder = tracefile.FrameDecoder()
    items: list[Any] = []
    while not items:
        data = channel.recv(None)
        if not data:
            _hard_exit(1)
        items = [i for i in decoder.feed(data) if isinstance(i, dict)]
    config = items.pop(0)
    if config.get("cmd") != "start":
        raise SystemExit(f"dyngraph child: expected a start message, got {config!r}")
    return config, decoder, items


def run_script(path: str, args: list[str], agent: Agent) -> tuple[int, str]:
    """Run the script as ``__main__``; returns (exit status, reason)."""
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(path)
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(__file__=path, __builtins__=builtins, __cached__=None,
                                __loader__=None, __spec__=None)
    sys.modules["__main__"] = main_module
    try:
        with tokenize.open(path) as f:
            source = f.read()
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, main_module.__dict__)
    except SystemExit as exc:
        return _exit_status(exc.code), "exit"
    except KeyboardInterrupt as exc:
        traceback.print_exception(type(exc), exc, _user_traceback(exc))
        return -signal.SIGINT, "KeyboardInterrupt"
    except Terminated:
        return -signal.SIGTERM, "SIGTERM"
    except BaseException as exc:  # noqa: BLE001 - everything the script raises is reported
        tb = _user_traceback(exc)
        agent.exception(exc, tb)
        traceback.print_exception(type(exc), exc, tb)
        agent.post_mortem_pause(tb)
        return 1, "exception"
    return 0, "finished"


class Terminated(BaseException):
    """Raised in the script's thread by SIGTERM (see ``main``)."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated


def _user_traceback(exc: BaseException) -> Any:
    """The traceback without this module's frame, as ``python script.py`` would print it."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is run_script.__code__:
        tb = tb.tb_next
    return tb


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _end(agent: Agent, capture: OutputCapture, status: int, reason: str) -> NoReturn:
    """Finish as the interpreter would (threads, atexit), report, and exit with ``status``."""
    try:
        me = threading.current_thread()
        for t in threading.enumerate():
            if t is not me and not t.daemon and t is not threading.main_thread():
                t.join()
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - nothing may stop the report below
        traceback.print_exc()
    # The script and its exit handlers are over: a Ctrl-C from here on could only lose the
    # report of how it ended (the child died of SIGINT before sending it, and the trace
    # said "killed by SIGINT" after the script's last line). Python runs handlers on this
    # thread whichever thread the signal reaches, so it is ignored, not masked.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout.flush()
    _flush_c_stdio()
    _finish_ranks()
    agent.finish(status, reason)
    capture.stop()
    if status in (-signal.SIGINT, -signal.SIGTERM):  # (ended by the signal, as it would be)
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    _hard_exit(status & 0xFF)


def _flush_c_stdio() -> None:
    """C code's printf output sits in libc's buffers until exit(); we leave by _exit()."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _patch_exit(agent: Agent, capture: OutputCapture) -> None:
    """``os._exit`` in the script still delivers the events and output written before it."""

    def _exit(status: int) -> NoReturn:
        if agent.detached:  # a forked worker: nothing of ours to deliver
            _hard_exit(status)
        try:
            _flush_c_stdio()
            capture.drain()
            _finish_ranks()
            agent.finish(int(status) & 0xFF, "os._exit")
        finally:
            _hard_exit(status)

    os._exit = _exit  # type: ignore[assignment]


def _detach_after_fork(agent: Agent, capture: OutputCapture) -> None:
    """A forked worker must not write frames into its parent's channel: its Python output
    goes to the (captured) fds instead and its ops are not traced."""
    capture.detach()
    tracer.array_hook = None
    hooks.agent = None
    if agent._handle is not None:
        agent._handle.remove()
        agent._handle = None
    agent.detached = True
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)


if __name__ == "__main__":
    main()
