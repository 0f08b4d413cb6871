"""``dyngraph export TRACE|SCRIPT -o DIR``: DOT/SVG of every iteration, and index.html.

Given a script (``*.py``), it is first recorded headless by ``dyngraph record`` in a child
process (its own interpreter, so a crash in the script cannot take the export down), into a
temporary trace that is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dyngraph.capture import backends
from dyngraph.errors import UserError
from dyngraph.textsafe import shown

from .batch import FORMATS, ExportResult, check_spec, export_iterations


def parse_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise UserError(f"unknown --format {bad[0] if bad else text!r}: use dot, svg or dot,svg")
    return formats


def record_command(script: str, script_args: Sequence[str], output: str,
                   backend: str = "auto", iteration: str = "backward") -> list[str]:
    """The command line that records ``script`` headless into ``output``."""
    return [sys.executable, "-m", "dyngraph", "record", "--stats", "full", "-o", output,
            "--backend", backend, "--iteration", iteration, script, *script_args]


@contextmanager
def recorded(script: Path, script_args: Sequence[str], backend: str = "auto",
             iteration: str = "backward") -> Iterator[Path]:
    """Record ``script`` to a temporary trace file; yields its path, deletes it after."""
    with tempfile.TemporaryDirectory(prefix="dyngraph-export-") as tmp:
        trace = Path(tmp) / "run.dgtrace"
        try:
            proc = subprocess.run(record_command(str(script), script_args, str(trace),
                                                 backend, iteration), check=False)
        except OSError as exc:
            raise UserError(f"could not start the recorder: {exc}") from None
        if not trace.exists() or trace.stat().st_size == 0:
            raise UserError(f"recording {script} failed (exit status {proc.returncode}); "
                            "nothing to export")
        if proc.returncode != 0:
            print(f"dyngraph export: {shown(script.name)} exited with status {proc.returncode}; "
                  "exporting what it recorded", file=sys.stderr)
        yield trace


def _progress() -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A rich progress bar on a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress("exporting", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task("export", total=None)
    bar.start()

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return update, bar.stop


def _check_source(source: Path) -> None:
    """One line for a source that is missing or not a regular file (a FIFO would block the
    reader; "no such file" would be wrong for a directory)."""
    from dyngraph.capture.tracereader import not_regular

    try:
        what = not_regular(source.stat().st_mode)
    except (FileNotFoundError, NotADirectoryError):
        raise UserError(f"no such file: {source}") from None
    except OSError as exc:
        raise UserError(f"{source}: cannot read ({exc.strerror or exc})") from None
    if what is not None:
        raise UserError(f"{source}: is {what}, not a trace file or a script")


def run_export(args: argparse.Namespace) -> int:
    """Entry point of ``dyngraph export`` (see dyngraph/cli.py for the options)."""
    source = Path(args.source)
    if source.suffix != ".py":
        from dyngraph.ranks.job import read_job

        job = read_job(str(source))  # the rank files of a torchrun job: every rank
        if job is not None:
            return _export_job(job, args)
    _check_source(source)
    formats = parse_formats(args.format)
    check_spec(args.iterations)  # (a typo is said before a script is recorded)
    if not args.output:  # before a script is recorded: '' would mean the current folder
        raise UserError("no output folder given: name one with -o DIR")
    script_args = list(getattr(args, "args", None) or [])
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    if source.suffix == ".py":
        backends.check(getattr(args, "backend", "auto"))  # one line now, not after a run
        with recorded(source, script_args, getattr(args, "backend", "auto"),
                      getattr(args, "iteration", "backward")) as trace_path:
            result = _export(trace_path, args, formats)
    else:
        if script_args:
            raise UserError("arguments after the trace file are only for scripts")
        result = _export(source, args, formats)
    _report(result, formats)
    return 0


def _export_job(job: Any, args: argparse.Namespace) -> int:
    """Each rank's trace into a folder of its own: ``DIR/rank0/``, ``DIR/rank1/`` ..."""
    formats = parse_formats(args.format)
    if not args.output:
        raise UserError("no output folder given: name one with -o DIR")
    if getattr(args, "args", None):
        raise UserError("arguments after the trace file are only for scripts")
    out = args.output
    for rank, path in job.present():
        print(f"rank {rank}: {shown(path)}")
        args.output = os.path.join(out, f"rank{rank}")
        try:
            _report(_export(Path(path), args, formats), formats)
        except UserError as exc:  # (a rank with nothing to export: say so, go on)
            print(f"rank {rank}: {shown(str(exc))}", file=sys.stderr)
    args.output = out
    missing = [r for r, p in enumerate(job.paths) if p is None]
    if missing:
        print(f"no trace of rank {', '.join(map(str, missing))}", file=sys.stderr)
    return 0


def _export(trace_path: Path, args: argparse.Namespace, formats: tuple[str, ...]
            ) -> ExportResult:
    from dyngraph.capture.traces import read_trace

    trace = read_trace(trace_path)
    update, stop = _progress()
    try:
        return export_iterations(
            trace, args.output, formats=formats, iterations=args.iterations,
            graph_kind=args.graph, depth=args.depth, diff=args.diff,
            # --shapes / --fold: used when dyngraph/cli.py offers them
            show_shapes=bool(getattr(args, "shapes", False)),
            fold_repeats=bool(getattr(args, "fold", False)),
            whole=bool(getattr(args, "whole", False)),
            dot=args.dot or None, progress=update,
        )
    finally:
        stop()


def _report(result: ExportResult, formats: tuple[str, ...]) -> None:
    its = result.iterations
    for note in result.notes:
        print(f"note: {shown(note)}", file=sys.stderr)
    if not its:
        raise UserError("nothing to export: no iteration recorded any op")
    for it in its:
        if it.modules:
            print(f"note: iteration {it.index} has {it.nodes:,} nodes: drawn by module, "
                  f"each folded module on a page of its own ({len(it.modules)} more, linked "
                  "from its box and from index.html); --whole or --depth N draws one picture "
                  "instead",
                  file=sys.stderr)
            break
        if it.collapsed:
            print(f"note: iteration {it.index} has {it.nodes} nodes; modules deeper than "
                  f"{it.depth} were collapsed to keep the layout fast", file=sys.stderr)
            break
    for it in its:
        if it.layout_note:
            # The layout program's own words, which may quote the user's names.
            print(f"note: iteration {it.index}: {shown(it.layout_note)}", file=sys.stderr)
            break
    layouts = f", {result.layouts} layout{'s' * (result.layouts != 1)}" if "svg" in formats \
        else ""
    where = os.path.join(str(result.out_dir), "index.html")
    print(f"exported {len(its)} iteration{'s' * (len(its) != 1)}{layouts}: {shown(where)}")
