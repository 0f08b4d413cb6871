"""``dyngraph record``, ``dyngraph check`` and ``dyngraph summary`` (see docs/cli.md).

Each takes the parsed argparse namespace from ``dyngraph.cli`` and returns the exit
status. ``record`` and ``check`` drive the script through the same ``Session`` the debugger
uses, headless: the script's output passes through to this terminal as it arrives.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .. import iterspec
from ..capture import events as ev
from ..capture.summaries import scalar_of
from ..errors import UserError
from ..textsafe import literal, shown
from .breakpoints import Breakpoint
from .describe import iteration_name
from .session import Session, shell_status

if TYPE_CHECKING:
    from ..capture.tracefile import TraceWriter
    from ..ranks.job import Job

# Seconds a rank that found the ranks diverged stays paused before it is stopped. The
# others heard of it (the finder waits for that: ranks/exchange.py), and each is stopped by
# its own dyngraph at its next look; one that is inside a collective meanwhile saw it fail
# with the transport's error ("Connection closed by peer") when the finder, stopped first,
# closed its connections: an exception in its script that dyngraph had caused (2 of 8
# two-rank runs of the demo at a load of 2-3).
STOP_GRACE = 1.0
CHECK_FAILED = 1  # exit status of `dyngraph check` when a NaN/Inf or a large gradient is found


# -- shared ------------------------------------------------------------------------------
def _console(**kwargs: Any) -> Console:
    """A console that prints strings as they are: names, messages and paths are the
    user's (``[/]`` is not markup, ``:fire:`` not an emoji); our own colours go in Text."""
    return Console(highlight=False, markup=False, emoji=False, **kwargs)


def _stderr() -> Console:
    return _console(stderr=True, soft_wrap=True)


class _PassThrough:
    """The script's output back to our stdout/stderr, one write and flush per run of text
    on the same stream (a flood of prints must not cost a syscall per line)."""

    def __init__(self) -> None:
        self.stream = ""
        self.parts: list[str] = []

    def add(self, e: ev.ScriptOutput) -> None:
        if e.stream != self.stream:
            self.flush()
            self.stream = e.stream
        self.parts.append(e.text)

    def flush(self) -> None:
        if self.parts:
            target: TextIO = sys.stderr if self.stream == "stderr" else sys.stdout
            text = "".join(self.parts)
            self.parts = []
            try:
                target.write(text)
                target.flush()
            except BrokenPipeError:
                _stop_showing(target)


def _stop_showing(stream: TextIO) -> None:
    """The reader of ``stream`` went away (``dyngraph record ... | head -1``): show nothing
    more there, quietly, and let the run go on to its end so the trace stays whole. The
    Python docs' recipe: point the file descriptor at /dev/null, so neither later writes
    nor the flush at exit raise BrokenPipeError again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def _drive(session: Session, on_events: Callable[[list[ev.Event]], bool],
           status: Callable[[], None] | None = None) -> None:
    """Poll until the run ends or ``on_events`` returns True (inside
    ``_ctrl_c_forwarded``, so Ctrl-C reaches the script, not this loop). When the ranks of
    a job diverged (this rank paused there, or another rank said so), the script is
    stopped, and its last events drained."""
    found_at = None  # when this rank paused at a divergence it found
    while True:
        events = session.poll(0.1)
        if events and on_events(events):
            return
        if status is not None:
            status()
        found = session.state.paused and session.state.reason == "divergence"
        if found and found_at is None:
            found_at = time.monotonic()
        if session.divergence or (found and time.monotonic() - found_at >= STOP_GRACE):
            session.abort()  # (the run would hang at its next collective) then drain it
        elif session.state.paused and session.state.reason not in ("nan", "grad_norm",
                                                                 "divergence"):
            session.continue_()  # headless: nobody else would ever resume it
        if session.state.finished:
            rest = session.poll()
            if rest:
                on_events(rest)
            return


@contextmanager
def _ctrl_c_forwarded(session: Session) -> Iterator[None]:
    """While a headless run is driven, Ctrl-C goes to the script, not to dyngraph: the first
    press interrupts it, a second kills it. dyngraph itself never sees a KeyboardInterrupt,
    which could land between receiving events and writing them (a frame of the trace lost,
    or written twice)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals only reach the main thread's handlers
        return
    presses = 0

    def pressed(signum: int, frame: object) -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            session.interrupt()
        else:
            session.abort()

    before = signal.signal(signal.SIGINT, pressed)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _print_notes(command: str, session: Session, console: Console, ops: int) -> None:
    """What the capture said about the run, and a word when it captured no op at all."""
    for note in session.notes:
        console.print(f"dyngraph {command}: note: {shown(note)}")
    if ops == 0 and session.state.exit_status == 0:
        console.print(f"dyngraph {command}: note: no op was captured (the script ran no "
                      "dyngraph or PyTorch op on its main thread; see --backend)")


def _exception_paragraph(command: str, session: Session) -> str | None:
    exc = session.exception
    if exc is None:
        return None
    text = session.exception_description or f"{exc.type}: {exc.message}"
    return f"dyngraph {command}: the script raised {shown(text)}."


def _job() -> Job | None:
    """The torchrun job this command runs in, if any (see dyngraph.ranks)."""
    from ..ranks.job import from_env

    return from_env()


def _who(command: str, job: Job | None) -> str:
    """``record``, or ``record (rank 1 of 2)`` in a job: how this rank's lines begin."""
    return command if job is None else f"{command} ({job.describe()})"


def _diverged(session: Session, found: list[ev.BreakpointHit]) -> str:
    """The divergence of the ranks this run stopped at, if it did."""
    for hit in found:
        if hit.reason == "divergence":
            return hit.description
    return session.divergence


# -- record ------------------------------------------------------------------------------
class _Recording:
    """The trace file of one ``dyngraph record`` run, opened when the child's header
    arrives. A write that fails (a full disk) stops the run: ``failure`` says why."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.writer: TraceWriter | None = None
        self.failure = ""

    def write(self, events: list[ev.Event]) -> bool:
        """Write ``events``; True when the run must stop (the trace cannot be written)."""
        from ..capture.tracefile import TraceWriter

        if self.writer is None and type(events[0]) is ev.Header:
            try:
                self.writer = TraceWriter(self.output, events[0])  # type: ignore[arg-type]
            except UserError as exc:
                self.failure = str(exc)
                return True
            events = events[1:]
        if self.writer is None or not events:
            return False
        try:
            self.writer.write(events)
        except OSError as exc:
            self.failure = (f"cannot write {self.output}: {exc.strerror or exc}; the script "
                            f"was stopped, the {self.writer.events_written:,} events written "
                            "before are kept")
            return True
        return False

    def close(self, session: Session) -> None:
        """Finish the trace. A run that failed before recording anything (its import
        failed) leaves a trace that was already there untouched: its own would hold
        nothing but the failure, which was printed anyway (see TraceWriter)."""
        if self.writer is None:
            return
        failed = session.state.exit_status != 0 or bool(self.failure)
        self.writer.close(keep_existing=failed)
        error = self.writer.error  # (the last frames are written at close: a full disk)
        if error is not None and not self.failure:
            self.failure = (f"cannot write {self.output}: {error.strerror or error}; the "
                            f"{self.writer.events_written:,} events written before are kept")


@contextmanager
def _terminate_on_signals(session: Session) -> Iterator[list[int]]:
    """SIGTERM/SIGHUP end ``record`` the way a second Ctrl-C does: the script is killed (in
    its own process group, it would run on unseen) and the run is driven to its end, so the
    trace gets its last frames and the run's end. Yields the list the signal lands in."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        session.abort()

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield received
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def run_record(args: argparse.Namespace) -> int:
    """Run the script headless and write its trace; exit status is the script's."""
    from ..capture.tracefile import TraceWriter
    from ..ranks.job import rank_path

    job = _job()
    output = args.output if job is None else rank_path(args.output, job.rank)
    # Before the script runs: a bad -o costs nothing and never touches an unrelated file.
    TraceWriter.check_target(output, script=args.script)
    session = Session.start(args.script, args.args, stats=args.stats, values=args.values,
                            pause_at_start=False, post_mortem=False, keep_values=False,
                            script_breakpoints=False, backend=args.backend,
                             iteration=getattr(args, "iteration", "backward"),
                             relative_paths=not getattr(args, "absolute_paths", False),
                             compile=args.compile, watchdog=args.watchdog,
                             ranks_compare=getattr(args, "ranks_compare", True))
    out, err = sys.stdout, sys.stderr
    # (the ranks of a job share one terminal: a status line each would overwrite the others)
    live_wanted = out.isatty() and err.isatty() and job is None
    recording = _Recording(output)
    counts = {"ops": 0, "compile": 0}
    found: list[ev.BreakpointHit] = []
    started = time.monotonic()
    name = os.path.basename(session.script)

    def on_events(events: list[ev.Event]) -> bool:
        ops = 0
        passthrough = _PassThrough()
        for e in events:
            t = type(e)
            if t is ev.Op:
                ops += 1
            elif t is ev.ScriptOutput:
                passthrough.add(e)  # type: ignore[arg-type]
            elif t is ev.BreakpointHit and e.reason == "divergence":  # type: ignore[attr-defined]
                found.append(e)  # type: ignore[arg-type]
            elif t is ev.CompileEvent:
                counts["compile"] += 1
        passthrough.flush()
        counts["ops"] += ops
        if recording.write(events):
            session.abort()
            return True
        return False

    def line() -> Text:
        return Text.assemble(("recording ", "dim"), (shown(name), "bold"),
                             f"  iteration {session.iteration}  ·  {counts['ops']:,} ops  ·  "
                             f"{time.monotonic() - started:.1f} s  ·  ",
                             (shown(output), "cyan"))

    with _ctrl_c_forwarded(session), _terminate_on_signals(session) as terminated:
        try:
            if live_wanted:
                console = _console(file=out)
                with Live(line(), console=console, refresh_per_second=8, transient=True,
                          redirect_stdout=True, redirect_stderr=True) as live:
                    _drive(session, on_events, lambda: live.update(line()))
            else:
                _drive(session, on_events)
        finally:
            try:
                session.close()  # first: the run is over whatever happens to the file
            finally:
                recording.close(session)
    if terminated:
        return 128 + terminated[0]  # as a shell reports a tool ended by that signal
    who = _who("record", job)
    divergence = _diverged(session, found)
    if divergence and not recording.failure:
        _stderr().print(f"dyngraph {who}: {shown(divergence)}. The run was stopped there "
                        f"(it would hang at the next collective); {shown(output)} keeps "
                        "what was recorded.")
        return CHECK_FAILED
    # (compile events are what a fully compiled script records: it did capture something)
    return _report_record(session, recording, counts["ops"] or counts["compile"], live_wanted,
                          who)


def _report_record(session: Session, recording: _Recording, ops: int, live: bool,
                   who: str = "record") -> int:
    state = session.state
    writer, output = recording.writer, recording.output
    if recording.failure:
        raise UserError(recording.failure)
    console = _stderr()
    _print_notes(who, session, console, ops)
    paragraph = _exception_paragraph(who, session)
    if paragraph:
        console.print(paragraph)
    if writer is None:
        raise UserError(f"the script ended before recording began: {state.description}")
    if writer.kept_existing:
        console.print(Text.assemble(
            "dyngraph record: the script failed before recording anything; ",
            (shown(output), "cyan"), " still holds the trace recorded before"))
    elif live:
        console.print(Text.assemble(
            ("dyngraph record:", "dim"), f" {writer.events_written:,} events, "
            f"{session.iteration} iteration(s) -> ", (shown(output), "cyan"),
            f" ({shown(state.description)})"))
    elif state.exit_status is not None and state.exit_status < 0:
        console.print(f"dyngraph {who}: the script was {shown(state.description)}.")
    return shell_status(state.exit_status)


# -- check -------------------------------------------------------------------------------
def run_check(args: argparse.Namespace) -> int:
    """Exit 0 when the run is clean; ``CHECK_FAILED`` at the first NaN/Inf, a gradient
    norm above ``--max-grad-norm`` or a compiled function's recompile past
    ``--max-recompiles``; the script's own status if it fails by itself."""
    from ..compile_lane.report import RecompileCounter

    bps: list[Breakpoint] = []
    if args.nan:
        bps.append(Breakpoint.nan())
    if args.max_grad_norm is not None:
        if not args.max_grad_norm > 0:
            raise UserError(f"--max-grad-norm must be a positive number, not {args.max_grad_norm}")
        bps.append(Breakpoint.grad_norm(args.max_grad_norm))
    max_recompiles = getattr(args, "max_recompiles", None)
    if max_recompiles is not None and max_recompiles < 0:
        raise UserError(f"--max-recompiles must be 0 or more, not {max_recompiles}")
    recompiles = RecompileCounter(max_recompiles if max_recompiles is not None else -1)
    # Cheap statistics, judged once per iteration when they are read (no host read per op:
    # see dyngraph.debug.readchecks); the first op that made a NaN is still the one named.
    job = _job()
    who = _who("check", job)
    session = Session.start(args.script, args.args, stats="cheap", breakpoints=bps,
                            pause_at_start=False, post_mortem=False, keep_values=False,
                            script_breakpoints=False, backend=args.backend,
                            iteration=getattr(args, "iteration", "backward"),
                            compile=args.compile, watchdog=args.watchdog,
                            ranks_compare=getattr(args, "ranks_compare", True),
                            judge_at_read=True)
    found: list[ev.BreakpointHit] = []
    counts = {"ops": 0, "compile": 0}

    def on_events(events: list[ev.Event]) -> bool:
        output = _PassThrough()
        try:
            for e in events:
                t = type(e)
                if t is ev.Op:
                    counts["ops"] += 1
                elif t is ev.ScriptOutput:
                    output.add(e)  # type: ignore[arg-type]
                elif t is ev.BreakpointHit:
                    found.append(e)  # type: ignore[arg-type]
                    return True
                elif t is ev.CompileEvent:
                    counts["compile"] += 1
                    if max_recompiles is not None and recompiles.add(e):
                        return True  # a recompile storm: stop the run here
            return False
        finally:
            output.flush()

    with _ctrl_c_forwarded(session), _terminate_on_signals(session) as terminated:
        try:
            _drive(session, on_events)
        finally:
            session.close()
    if terminated:
        return 128 + terminated[0]
    console = _stderr()
    _print_notes(who, session, console, counts["ops"] or counts["compile"] or len(found))
    divergence = _diverged(session, found)
    if divergence:
        console.print(f"dyngraph {who}: FAILED, {shown(divergence)}. The run was stopped "
                      "there.")
        return CHECK_FAILED
    if recompiles.over is not None:
        console.print(f"dyngraph {who}: FAILED, recompile storm: {shown(recompiles.failure())}. "
                      "The run was stopped there.")
        return CHECK_FAILED
    if found:
        hit = found[0]
        what = "NaN/Inf found" if hit.reason == "nan" else "gradient norm too large"
        console.print(f"dyngraph {who}: FAILED, {what} in {iteration_name(hit.iteration)}: "
                      f"{shown(hit.description)}. The run was stopped there.")
        return CHECK_FAILED
    state = session.state
    paragraph = _exception_paragraph(who, session)
    if paragraph:
        console.print(paragraph)
    elif state.exit_status:
        verb = "was " if state.exit_status is not None and state.exit_status < 0 else ""
        console.print(f"dyngraph {who}: the script {verb}{shown(state.description)}.")
    if state.exit_status == 0:
        checked = " and ".join(
            (["no NaN/Inf"] if args.nan else [])
            + ([f"every gradient norm <= {args.max_grad_norm:g}"] if args.max_grad_norm else [])
            + ([f"at most {max_recompiles} recompile(s) per compiled function "
                f"({recompiles.total} in all)"] if max_recompiles is not None else [])
        ) or "the script ran"
        if job is not None and getattr(args, "ranks_compare", True):
            checked += ", and every rank in step with the others"
        console.print(f"dyngraph {who}: ok, {checked} ({counts['ops']:,} ops, "
                      f"{session.iteration} iteration(s))")
    return shell_status(state.exit_status)


# -- debug, on the ranks the debugger is not on ----------------------------------------------
def run_headless_rank(args: argparse.Namespace, job: Job) -> int:
    """``dyngraph debug --rank N`` on every other rank of the job: the script runs without
    a screen (its output is not shown: the terminal is the debugger's) and waits for the
    other ranks at every checkpoint, so a pause of the debugged rank holds it there. A
    divergence stops it where it is, until the job ends."""
    session = Session.start(args.script, _script_arguments(args), stats="none",
                            breakpoints=(), pause_at_start=False, post_mortem=False,
                            keep_values=False, script_breakpoints=False, backend=args.backend,
                            ranks_strict=True, ranks_compare=getattr(args, "ranks_compare", True))
    with _terminate_on_signals(session) as terminated:
        try:
            while not session.state.finished:
                session.poll(0.2)  # (events and output: dropped)
                state = session.state
                if state.paused and state.reason != "divergence":
                    session.continue_()
        finally:
            session.close()
    if terminated:
        return 128 + terminated[0]
    return shell_status(session.state.exit_status)


def _script_arguments(args: argparse.Namespace) -> list[str]:
    rest = list(getattr(args, "args", None) or [])
    return rest[1:] if rest[:1] == ["--"] else rest


# -- summary -----------------------------------------------------------------------------
MAX_ROWS = 40  # iterations shown in full; longer traces show the first and last halves


def run_summary(args: argparse.Namespace) -> int:
    """Print a table of a trace's iterations."""
    from ..capture.traces import read_trace

    path = args.trace
    spec = getattr(args, "iterations", "all") or "all"
    parts = iterspec.parse(spec) if spec not in ("all", "changed") else ()
    from ..ranks import jobtrace

    job = jobtrace.read(path)  # the rank files of a torchrun job: all of them
    if job is not None:
        from ..ranks.summary import print_job

        print_job(job, _console())
        return 0
    if not os.path.exists(path):
        raise UserError(f"no such trace file: {path}")
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory, not a trace file")
    trace = read_trace(path)
    rows, totals = summarize_trace(trace.events)
    if spec == "changed":
        # (the first iteration, and the first after setup: setup is nobody's baseline)
        rows = [r for i, r in enumerate(rows)
                if i == 0 or r["changed"] or rows[i - 1]["iteration"] == 0]
    elif parts:
        wanted, notes = iterspec.resolve(parts, [r["iteration"] for r in rows])
        for note in notes:
            _stderr().print(f"dyngraph summary: note: {shown(note)}")
        chosen = set(wanted)
        rows = [r for r in rows if r["iteration"] in chosen]
    table = _table(rows)
    width = getattr(args, "width", None)
    if width is None and not sys.stdout.isatty():
        # Piped or in CI: as wide as the table needs, never a parameter name cut short.
        width = max(_table_width(table), 80)
    console = _console(width=width) if width else _console()
    header = trace.header
    if header is not None:
        argv = " ".join(header.argv)
        console.print(Text.assemble(
            (shown(os.path.basename(header.script) or path), "bold"), f" {shown(argv)}  ",
            (shown(f"stats={header.stats} values={header.values} "
                   f"dyngraph {header.dyngraph_version}"), "dim")))
        console.print(Text(_MODES.get(header.iteration_mode, header.iteration_mode), "dim"))
    console.print(table)
    console.print(_totals_text(totals))
    from ..compile_lane.report import compile_table, render

    for part in render(compile_table(trace.events)):
        console.print()
        console.print(part)
    return 0


_MODES = {
    "backward": "iterations end at each backward() (--iteration step: at each "
                "optimizer.step())",
    "step": "iterations end at each optimizer.step() (--iteration step)",
}


def _table_width(table: Table) -> int:
    """The width ``table`` takes with nothing cut."""
    return _console(width=10_000).measure(table).maximum


def summarize_trace(events: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-iteration rows and run totals from an event stream (one pass)."""
    rows: dict[int, dict[str, Any]] = {}
    totals: dict[str, Any] = {"events": 0, "ops": 0, "nan": 0, "inf": 0, "grads": [],
                              "status": None, "reason": "", "exception": None}
    scalars: dict[int, float | None] = {}  # one-element op outputs of the iteration: losses
    for e in events:
        totals["events"] += 1
        t = type(e)
        if t is ev.Header:
            continue
        row = rows.get(e.iteration)
        if row is None:
            row = rows[e.iteration] = {"iteration": e.iteration, "ops": 0, "nodes": 0,
                                       "key": "", "ns": 0, "nan": 0, "inf": 0,
                                       "grad": None, "complete": False, "loss": None,
                                       "seen": 0}
            scalars.clear()
        if t is ev.Op:
            row["ops"] += 1
            row["seen"] += 1
            row["ns"] += e.duration_ns
            _count_nonfinite(row, (e.summary,))
            if e.summary is not None and math.prod(e.shape) == 1:
                scalars[e.output] = scalar_of(e.shape, e.summary)
        elif t is ev.BackwardStart:
            if row["loss"] is None:  # the scalar the first backward() was called on
                row["loss"] = scalars.get(e.root)
        elif t is ev.BackwardStep:
            row["ns"] += e.duration_ns
            _count_nonfinite(row, e.grad_inputs)
        elif t is ev.GradAccumulated and e.summary is not None and e.summary.norm is not None:
            norm = e.summary.norm
            if row["grad"] is None or norm > row["grad"][0]:
                row["grad"] = (norm, e.name or f"#{e.tensor}")
            totals["grads"].append((norm, e.name or f"#{e.tensor}", e.iteration))
        elif t is ev.TensorCreated:
            row["seen"] += 1
            _count_nonfinite(row, (e.summary,))
        elif t is ev.IterationEnd:
            row["nodes"] = e.node_count
            row["key"] = e.structure_key
            row["complete"] = True
        elif t is ev.RunEnd:
            totals["status"], totals["reason"] = e.status, e.reason
        elif t is ev.ExceptionRaised:
            totals["exception"] = e
    out = [r for r in sorted(rows.values(), key=lambda r: r["iteration"])
           if r["ops"] or r["complete"]]
    previous = None
    for r in out:
        if not r["complete"]:  # an iteration the run ended in (an evaluation under
            r["nodes"] = r["seen"]  # no_grad): its nodes, as its graph and export have
        # Setup (iteration 0) is no baseline: iteration 1 is not "changed" against it.
        r["changed"] = previous is not None and bool(r["key"]) and r["key"] != previous
        if r["key"] and r["iteration"] > 0:
            previous = r["key"]
        totals["ops"] += r["ops"]
        totals["nan"] += r["nan"]
        totals["inf"] += r["inf"]
    totals["grads"].sort(reverse=True)
    totals["iterations"] = len(out)
    totals["structures"] = len({r["key"] for r in out if r["key"]})
    return out, totals




def _count_nonfinite(row: dict[str, Any], summaries: Any) -> None:
    """One event counts once under NaN and once under Inf if any of its summaries has one."""
    nan = inf = False
    for s in summaries:
        if s is not None:
            nan = nan or s.nan > 0
            inf = inf or s.inf > 0
    row["nan"] += nan
    row["inf"] += inf


_COLUMNS = (("iter", "right"), ("loss", "right"), ("ops", "right"), ("nodes", "right"),
            ("structure", "left"), ("time", "right"), ("NaN / Inf", "right"),
            ("max grad norm", "left"))


def _table(rows: list[dict[str, Any]]) -> Table:
    """One row per iteration. No vertical rules, every column as wide as its widest cell
    and the gradient's name cut with an ellipsis: 80 columns hold it."""
    shown: list[dict[str, Any] | None] = list(rows)
    if len(rows) > MAX_ROWS:
        shown = [*rows[: MAX_ROWS // 2], None, *rows[-MAX_ROWS // 2:]]
    cells = [_cells(r) if r is not None else [Text("…"), *[Text("")] * 7] for r in shown]
    table = Table(title="iterations", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    for i, (name, justify) in enumerate(_COLUMNS):
        last = i == len(_COLUMNS) - 1
        width = max([len(name), *(c[i].cell_len for c in cells)])
        table.add_column(name, justify=justify, no_wrap=True,  # type: ignore[arg-type]
                         overflow="ellipsis", min_width=None if last else width)
    for row in cells:
        table.add_row(*row)
    return table


def _cells(r: dict[str, Any]) -> list[Text]:
    structure = Text(shown(r["key"][:8]) if r["key"] else "(unfinished)")
    if r["changed"]:
        structure.append(" ◆").stylize("yellow")
    nonfinite = Text.assemble((str(r["nan"]), "red" if r["nan"] else ""), " / ",
                              (str(r["inf"]), "yellow" if r["inf"] else ""))
    grad = Text(f"{r['grad'][0]:.4g} {shown(r['grad'][1])}" if r["grad"] else "-")
    iteration = Text(str(r["iteration"]) if r["iteration"] else "0 setup")
    return [iteration, _loss(r["loss"]), Text(f"{r['ops']:,}"),
            Text(f"{r['nodes']:,}"), structure, Text(_ms(r["ns"])), nonfinite, grad]


def _loss(value: float | None) -> Text:
    if value is None:
        return Text("-")
    if not math.isfinite(value):
        return Text(str(value), "red")
    return Text(f"{value:.5g}")


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.2f} ms" if ns < 10**10 else f"{ns / 1e9:.1f} s"


def _totals_text(t: dict[str, Any]) -> Text:
    lines: list[str | Text] = [
        f"{t['iterations']} iteration(s), {t['ops']:,} ops, {t['structures']} distinct "
        f"graph structure(s), {t['events']:,} events; ◆: the graph's structure changed "
        f"from the previous iteration; loss: the value backward() was called on; time: "
        f"the engine's time in ops and backward steps"]
    if t["nan"] or t["inf"]:
        lines.append(f"events with NaN: {t['nan']}, with Inf: {t['inf']} (an Inf may be meant: "
                     f"-inf attention masks)")
    if t["grads"]:
        top = ", ".join(f"{n:.4g} ({shown(name)}, iter {i})" for n, name, i in t["grads"][:5])
        lines.append(f"largest gradient norms: {top}")
    exc = t["exception"]
    if exc is not None:
        lines.append(literal(f"the script raised {exc.type}: {exc.message}", "red"))
    if t["status"] is not None:
        lines.append(f"exit status {t['status']} ({shown(t['reason'])})")
    else:
        lines.append(Text("the trace has no end: the recording was cut short", "yellow"))
    return Text("\n").join(Text(line) if isinstance(line, str) else line for line in lines)
