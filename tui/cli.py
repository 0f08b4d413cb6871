"""``dyngraph debug`` / ``view`` / ``demo``: open the debugger on a script, a trace or a demo.

Bad input (a missing script or trace, an unknown demo) raises UserError, which the CLI
prints as one line. The app runs in the main thread (Textual needs it); a live child is
ended on every way out, even when the app itself fails.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dyngraph.debug.breakpoints import Breakpoint
from dyngraph.debug.session import shell_status
from dyngraph.errors import UserError

from .afterwards import print_output


def _script_args(args: argparse.Namespace) -> list[str]:
    rest = list(getattr(args, "args", None) or [])
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return rest


def breakpoints_of(args: argparse.Namespace) -> list[Breakpoint]:
    """The ``--break SPEC`` options, read by the one breakpoint parser."""
    out = []
    for text in getattr(args, "breaks", None) or []:
        try:
            out.append(Breakpoint.parse(text))
        except ValueError as exc:
            raise UserError(f"--break {text!r}: {exc}") from None
    return out


def _check_script(script: str) -> Path:
    path = Path(script)
    if not path.exists():
        raise UserError(f"no such script: {script}")
    if path.is_dir():
        raise UserError(f"{script} is a directory, not a Python script")
    return path


def _run_live(script: Path, script_args: list[str], *, stats: str, export_dir: str | None,
              title: str, breakpoints: Sequence[Breakpoint] = (), backend: str = "auto",
              iteration: str = "backward",
               compile: str | None = None,  # noqa: A002 - the CLI's --compile
               unfinished_status: int = 0, **options: Any) -> int:
    """The debugger on ``script``; its exit status (``unfinished_status`` when the user
    quit before the script ended)."""
    from .app import DebuggerApp
    from .model import Model
    from .sources import LiveSource

    if export_dir:
        try:
            Path(export_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create export directory {export_dir}: {exc}") from None
    try:
        source = LiveSource.start(Model(), str(script), script_args, stats=stats,
                                  backend=backend, iteration=iteration, compile=compile,
                                  **options)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot start {script}: {exc}") from None
    held: Any = _NOT_HELD
    try:
        for bp in breakpoints:
            source.add_breakpoint(bp)
        app = DebuggerApp(source, export_dir=export_dir, title=title, files_near=str(script))
        # From here until the script's output is printed, SIGINT never raises: inside the
        # app ctrl+c is a key, and a SIGINT sent from outside asks the app to quit. Once
        # the app restores the terminal, ctrl+c is a signal again, and one more press
        # (users press it more than once to quit) would cut the script's output short;
        # holding it only after ``run()`` returned left that window open under load.
        held = _ctrl_c_held(app)
        status = app.run()
    finally:
        if held is _NOT_HELD:  # (the app never started)
            held = _ctrl_c_held(None)
        source.close()
        end_children()
    try:
        # As if it had run without the debugger: what the script printed, its traceback.
        print_output(source.model.output, source.model.exception, near=str(script))
        for bp, why in source.never_hit():  # a file, module or op waited for in vain
            print(f"dyngraph: breakpoint {bp} never hit: {why}", file=sys.stderr)
    finally:
        _ctrl_c_restored(held)
    if unfinished_status and not app.return_code and app.model.run_end is None:
        return unfinished_status
    return exit_status(app.return_code, status)


_NOT_HELD = object()


def _ctrl_c_held(app: Any) -> Any:
    """From now on SIGINT asks ``app`` to quit while it runs and is ignored otherwise
    (main thread only); the handler it replaced."""

    def pressed(signum: int, frame: Any) -> None:
        if app is not None and app.is_running:
            app.exit()

    try:
        return signal.signal(signal.SIGINT, pressed)
    except ValueError:  # not the main thread: nothing to hold
        return None


def _ctrl_c_restored(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def exit_status(app_code: int | None, script_status: int | None = None) -> int:
    """What ``debug``/``view`` exit with: 1 (or Textual's code) when the app itself ended
    by an exception, else the script's status as a shell reports it (128 + n after signal
    n: 139 for a segfault, where the raw -11 would reach the shell as 245)."""
    if app_code:
        return app_code
    if script_status is None:
        return 0
    return shell_status(script_status)


def run_debug(args: argparse.Namespace) -> int:
    """``dyngraph debug [--export-dir DIR] [--stats S] SCRIPT [ARGS...]``."""
    script = _check_script(args.script)
    bps = breakpoints_of(args)
    from dyngraph.ranks.job import from_env

    job = from_env()
    if job is None:
        return _run_live(script, _script_args(args), stats=args.stats,
                         export_dir=args.export_dir, title=str(script), breakpoints=bps,
                         backend=args.backend, iteration=getattr(args, "iteration", "backward"),
                         compile=args.compile)
    # A rank of a torchrun job: the one --rank names gets the debugger, every other one runs
    # headless; all of them wait for each other at every checkpoint (``ranks_strict``), so
    # while the debugged rank is paused the others wait in the job's store, not inside a
    # collective that would time out.
    chosen = getattr(args, "rank", 0)
    if not 0 <= chosen < job.world_size:
        raise UserError(f"--rank {chosen}: the job has ranks 0 to {job.world_size - 1}")
    compare = getattr(args, "ranks_compare", True)
    if job.rank != chosen:
        from dyngraph.debug.commands import run_headless_rank

        return run_headless_rank(args, job)
    # Not paused before the first line: the others would wait for it inside
    # init_process_group (or DDP's constructor), whose timeout is the job's. Paused at its
    # first checkpoint instead, before it says it is there: the others wait for it there.
    return _run_live(script, _script_args(args), stats=args.stats,
                     export_dir=args.export_dir, breakpoints=bps,
                     backend=args.backend, iteration=getattr(args, "iteration", "backward"),
                     compile=args.compile, pause_at_start=False,
                     title=f"{script} (rank {job.rank} of {job.world_size})",
                     ranks_strict=True, ranks_compare=compare, ranks_hold=True,
                     # quitting before the script ended fails the rank, so that torchrun
                     # stops the others: they would wait for it at their next checkpoint
                     # (or, at a divergence, stay paused) as long as the job lives
                     unfinished_status=1)


def run_view(args: argparse.Namespace) -> int:
    """``dyngraph view TRACE``: replay a recorded trace, forwards and backwards."""
    import dyngraph

    from .app import DebuggerApp
    from .model import Model
    from .sources import ReplaySource

    bps = breakpoints_of(args)
    from dyngraph.ranks import jobtrace

    job = jobtrace.read(args.trace)  # the rank files of a torchrun job: the grid first
    if job is not None:
        return _view_job(job, bps)
    path = Path(args.trace)
    if not path.exists():
        raise UserError(f"no such trace file: {args.trace}")
    if path.is_dir():
        raise UserError(f"{args.trace} is a directory, not a trace file")
    read_trace = getattr(dyngraph, "read_trace", None)
    if read_trace is None:
        raise UserError("this dyngraph cannot read trace files (dyngraph.read_trace missing)")
    # A file cut short loads up to its last whole frame with a warning: the full screen
    # would hide a printed one, so it is shown in the app instead.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = read_trace(path)  # raises TraceFileError (a UserError) on a damaged file
    source = ReplaySource(Model(), trace)
    for bp in bps:
        source.add_breakpoint(bp)
    app = DebuggerApp(source, title=str(path), notices=[str(w.message) for w in caught],
                      files_near=str(path))
    try:
        app.run()
    finally:
        end_children()
    return exit_status(app.return_code)


def _view_job(job, bps: Sequence[Breakpoint]) -> int:  # type: ignore[no-untyped-def]
    """The rank x iteration grid; a cell chosen opens that rank's trace at that iteration,
    and quitting it comes back to the grid."""
    import dyngraph

    from .app import DebuggerApp
    from .model import Model
    from .rank_grid import RankGridApp
    from .sources import ReplaySource

    class RankDebugger(DebuggerApp):
        """The debugger on one rank's trace, opened at the iteration chosen in the grid."""

        def __init__(self, *args, iteration: int, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            self._start_at = iteration
            self._tries = 0

        def on_mount(self) -> None:  # (Textual calls DebuggerApp's own on_mount as well)
            self._go_to_start()

        def _go_to_start(self) -> None:
            # The replay decodes the trace in the background: wait for the iteration.
            if self.source.goto_iteration(self._start_at):
                self.refresh_view()
            elif self._tries < 100:
                self._tries += 1
                self.set_timer(0.05, self._go_to_start)

    status = 0
    try:
        while True:
            grid = RankGridApp(job, title=f"{job.files.paths[0] or ''}")
            chosen = grid.run()
            if chosen is None:
                return exit_status(grid.return_code)
            rank, iteration = chosen
            path = job.files.paths[rank]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                trace = dyngraph.read_trace(path)
            source = ReplaySource(Model(), trace)
            for bp in bps:
                source.add_breakpoint(bp)
            app = RankDebugger(source, title=f"{path} (rank {rank} of {job.world_size})",
                               notices=[str(w.message) for w in caught], iteration=iteration)
            app.run()
            status = exit_status(app.return_code)
            if status:
                return status
    finally:
        end_children()


def run_demo(args: argparse.Namespace) -> int:
    """``dyngraph demo --list`` lists the demos; ``dyngraph demo [NAME]`` debugs one live."""
    from dyngraph import demos

    if args.list:
        width = max(map(len, demos.DEMOS))
        for name, description in demos.DEMOS.items():
            needs = " (needs PyTorch)" if name in demos.NEEDS_TORCH else ""
            print(f"{name:<{width}}  {description}{needs}")
        return 0
    bps = breakpoints_of(args)
    script = demos.path(args.name)  # UserError naming the demos for an unknown name
    if args.name in demos.NEEDS_TORCH and not _torch_installed():
        raise UserError(f"demo {args.name} needs PyTorch, which is not installed here "
                        "(pip install 'dyngraph[torch]')")
    if not script.exists():
        raise UserError(f"demo {args.name!r} is not installed ({script} is missing)")
    return _run_live(script, _script_args(args), stats="full", export_dir=None,
                     title=f"demo {args.name}", breakpoints=bps)


def _torch_installed() -> bool:
    import importlib.util
    import sys

    if sys.modules.get("torch") is not None:
        return True
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def end_children(grace: float = 1.0) -> list[int]:
    """End the processes this process started that are still running (Linux ``/proc``).

    Layout runs (``dot``) happen on daemon threads; quitting mid-layout would leave the
    binary running on its own, for minutes on a big graph. Returns the pids it ended.
    """
    me = os.getpid()
    children = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            children.append(int(entry))
    for pid in children:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    alive = list(children)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if _reap(pid)]
        time.sleep(0.02)
    for pid in alive:
        _signal(pid, signal.SIGKILL)
        _reap(pid)
    return children


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _reap(pid: int) -> bool:
    """Collect ``pid`` if it exited; True while it still runs."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0
