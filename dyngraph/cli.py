"""The ``dyngraph`` command line.

Each command's work lives elsewhere and is imported only when that command runs, so
``dyngraph record`` never pays for Textual and the engine never depends on the UI.
Everything after SCRIPT belongs to the script: ``dyngraph record -o x.dgtrace train.py --epochs 3``.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import warnings
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

from .errors import UserError
from .version import __version__

# command -> (module, function) that runs it; the function takes the parsed args and
# returns the exit status.
COMMANDS = {
    "debug": ("dyngraph.tui.cli", "run_debug"),
    "view": ("dyngraph.tui.cli", "run_view"),
    "demo": ("dyngraph.tui.cli", "run_demo"),
    "record": ("dyngraph.debug.commands", "run_record"),
    "check": ("dyngraph.debug.commands", "run_check"),
    "summary": ("dyngraph.debug.commands", "run_summary"),
    "export": ("dyngraph.exporters.cli", "run_export"),
}


class _RichParser(argparse.ArgumentParser):
    """argparse, printed through rich: on a terminal, headings, options and errors in colour;
    piped, the same plain text argparse writes. Subcommand parsers inherit the class."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message:
            return
        from rich.console import Console
        from rich.text import Text

        from .textsafe import shown

        text = Text(shown(message, multiline=True))  # it may quote what the user typed
        text.highlight_regex(r"(?m)^[a-z][a-z ]*:$", "bold")  # section headings
        text.highlight_regex(r"(?<![\w-])--?[a-zA-Z][\w-]*", "cyan")  # options
        text.highlight_regex(r"(?m)^usage:", "bold")
        text.highlight_regex(r"error: .*$", "bold red")
        out = cast("IO[str]", file or sys.stderr)  # argparse passes real text files
        Console(file=out, highlight=False, soft_wrap=True).print(text, end="")


def _script_arguments(
    p: argparse.ArgumentParser, help: str = "arguments passed to the script"
) -> None:
    """Everything after the script is the script's; none at all is fine too (argparse would
    otherwise list ``args`` among the missing arguments)."""
    p.add_argument("args", nargs=argparse.REMAINDER, help=help).required = False


def _error(command: str, message: str) -> None:
    from rich.console import Console
    from rich.text import Text

    from .textsafe import shown

    # The message names the user's files and values: shown as written, never as markup.
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text.assemble(
        f"dyngraph {command}: ", ("error:", "bold red"), f" {shown(message)}"))


def _warn_in_one_line(command: str) -> None:
    """Print a trace file's warnings ("cut short ...; kept N events") as one line of ours:
    the default form would show a source line of dyngraph's, not anything of the user's."""
    from .errors import TraceFileWarning

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        if issubclass(category, TraceFileWarning):
            print(f"dyngraph {command}: warning: {message}", file=file or sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def _break_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--break", dest="breaks", action="append", default=[], metavar="SPEC",
        help="stop there (repeatable): op:NAME, module:GLOB, FILE:LINE, iter:N, nan, grad>X",
    )


def _backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend", choices=("auto", "torch", "dyngraph"), default="auto",
        help="whose ops to capture: auto (dyngraph's engine, and PyTorch once the script "
             "imports it), torch, or dyngraph (default: auto)",
    )
    p.add_argument(
        "--iteration", choices=("backward", "step"), default="backward",
        help="where an iteration ends: at each backward() (default), or at each "
             "optimizer.step() (gradient accumulation, LBFGS, per-step RL updates)",
    )


def _ranks_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nproc", type=int, metavar="N", default=None,
        help="run the script as N ranks of a torchrun job on this machine (through "
             "torch.distributed.run); under torchrun already, each rank is detected itself",
    )
    p.add_argument(
        "--ranks-may-differ", dest="ranks_compare", action="store_false",
        help="in a job, compare nothing across ranks (their graphs differ by design, as "
             "pipeline stages do); traces and collectives are still recorded per rank",
    )


def _watchdog_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--watchdog", type=float, metavar="SECONDS", default=None,
        help="end the script, with a dump of its threads' stacks, once it has not answered "
             "for this long (default: $DYNGRAPH_WATCHDOG or 60; 0: never). A script that "
             "sleeps or waits still answers",
    )


def _compile_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--compile", choices=("observe", "eager"), default=None,
        help="torch.compile'd code: observe (run it compiled, record its compiles, graph "
             "breaks and recompiles) or eager (run it uncompiled, every op seen) "
             "(default: observe)",
    )


def _script_args(p: argparse.ArgumentParser) -> None:
    _ranks_options(p)
    _backend_option(p)
    _compile_option(p)
    p.add_argument("script", help="the Python script to run")
    _script_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    parser = _RichParser(
        prog="dyngraph",
        description="See and debug define-by-run computational graphs.",
    )
    # numpy does the engine's arithmetic: its version belongs in a bug report (numpy
    # 2.4's in-place negative was wrong on strided views).
    parser.add_argument("--version", action="version",
                        version=f"dyngraph {__version__} (numpy {np.__version__}, Python "
                                f"{platform.python_version()})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("debug", help="step through a script's graph in the terminal debugger")
    p.add_argument("--export-dir", metavar="DIR", help="export every iteration's graph to DIR")
    p.add_argument("--stats", choices=("full", "cheap", "none"), default="full")
    p.add_argument("--rank", type=int, metavar="N", default=0,
                   help="in a torchrun job, the rank that gets the debugger; the others run "
                        "headless and wait for it (default: 0)")
    _break_option(p)
    _script_args(p)

    p = sub.add_parser("view", help="replay a recorded trace in the terminal debugger, or "
                                    "in a browser with --web")
    _break_option(p)
    p.add_argument("--web", action="store_true",
                   help="serve the trace's viewer page on loopback, behind a random token in "
                        "the printed URL, instead of the terminal debugger")
    p.add_argument("--host", metavar="HOST", default=None,
                   help="with --web: listen on HOST instead of 127.0.0.1 (e.g. 0.0.0.0: anyone "
                        "who can reach the machine and has the URL can read the trace)")
    p.add_argument("--port", metavar="PORT", type=int, default=0,
                   help="with --web: the port (default: a free one)")
    p.add_argument("trace", help="a .dgtrace file")

    p = sub.add_parser("demo", help="open the debugger on a bundled demo")
    p.add_argument("name", nargs="?", default="rnn_varlen", help="demo name (see --list)")
    p.add_argument("--list", action="store_true", help="list the bundled demos")
    _break_option(p)
    _script_arguments(p, "arguments passed to the demo")

    p = sub.add_parser("record", help="run a script headless and write its trace")
    p.add_argument("-o", "--output", default="run.dgtrace", help="trace file to write")
    p.add_argument("--stats", choices=("full", "cheap", "none"), default="cheap")
    p.add_argument("--values", choices=("none", "small"), default="none")
    p.add_argument("--absolute-paths", action="store_true",
                   help="name source files by their absolute paths (default: relative to "
                        "the script's folder, <site-packages>/..., so a trace can be shared)")
    _watchdog_option(p)
    _script_args(p)

    p = sub.add_parser("check", help="run a script headless; fail on NaN/Inf, large gradients "
                                     "or a recompile storm")
    p.add_argument(
        "--max-grad-norm", type=float, metavar="X", default=None,
        help="fail at the first gradient whose L2 norm exceeds X: one flowing into an op's "
             "output during backward, or a parameter's accumulated .grad. The seed backward() "
             "starts from (1 for a scalar loss, or its gradient= argument) is no gradient "
             "anyone computed and is not counted (default: no limit)")
    p.add_argument("--max-recompiles", type=int, metavar="N", default=None,
                   help="fail when a torch.compile'd function recompiles more than N times")
    p.add_argument(
        "--nan",
        dest="nan",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fail on the first NaN/Inf (default: on)",
    )
    _watchdog_option(p)
    _script_args(p)

    p = sub.add_parser("summary", help="summarise a recorded trace")
    p.add_argument("--width", type=int, default=None, metavar="N",
                   help="print N columns wide (default: the terminal's; piped, as wide as "
                        "the table needs)")
    p.add_argument("--iterations", default="all", metavar="SPEC",
                   help="which iterations to list: e.g. 1-10,15 | 5- | -10 | last | changed "
                        "(default: all; past 40, the first and last 20)")
    p.add_argument("trace", help="a .dgtrace file")

    p = sub.add_parser("export", help="write DOT/SVG of every iteration's graph")
    p.add_argument("-o", "--output", metavar="DIR", help="folder to write (required)")
    p.add_argument("--format", default="dot,svg")
    p.add_argument("--iterations", default="all", metavar="SPEC",
                   help="e.g. 1-10,15 | 5- | -10 | last | all | changed (a range past the "
                        "end is cut to it)")
    p.add_argument("--graph", choices=("forward", "backward", "both"), default="forward")
    p.add_argument("--depth", type=int, default=None, help="collapse modules deeper than N")
    p.add_argument("--diff", action="store_true", help="mark changes since the previous iteration")
    p.add_argument("--dot", metavar="PATH", default=None, help="use this dot binary for layout")
    p.add_argument("--shapes", action="store_true", help="label edges with tensor shapes")
    p.add_argument("--fold", action="store_true", help="fold repeated identical blocks")
    p.add_argument("--whole", action="store_true",
                   help="one picture of every op, even past 1,000 nodes (drawn by module "
                        "otherwise: a module-level page and one page per module)")
    _backend_option(p)
    # Both `export SOURCE -o DIR ...` (options after SOURCE, a script's own arguments after
    # `--`) and record's `export -o DIR train.py --epochs 3`: see _fix_export_args.
    p.add_argument("source", help="a .dgtrace file or a script to record first")
    _script_arguments(p)
    parser.set_defaults(_export_parser=p)
    return parser


def _fix_export_args(args: argparse.Namespace, after_dashes: list[str] | None) -> None:
    """Sort what follows SOURCE into export options and the script's own arguments.

    With ``--``, what follows it belongs to the script and what precedes it (after SOURCE)
    are export options: ``export train.py -o DIR -- --epochs 3``. Without, tokens after
    SOURCE are export options when the first of them is one (``export run.dgtrace -o DIR``),
    and otherwise, as for ``record``, the script's (``export -o DIR train.py --epochs 3``).
    """
    parser: argparse.ArgumentParser = args._export_parser
    rest = list(args.args)
    starts_with_option = bool(rest) and rest[0].split("=")[0] in parser._option_string_actions
    if after_dashes is None and not starts_with_option:
        options, script_args = [], rest
    else:
        options, script_args = rest, after_dashes or []
    if options:
        parser.parse_args([*options, args.source], namespace=args)
    args.args = script_args
    if args.output is None:
        parser.error("the following arguments are required: -o/--output")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    after_dashes = None
    if argv[:1] == ["export"] and "--" in argv:  # argparse would drop the `--` itself
        cut = argv.index("--")
        argv, after_dashes = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    if args.command == "export":
        _fix_export_args(args, after_dashes)
    if args.command is None:
        parser.print_help()
        return 2
    module_name, function = COMMANDS[args.command]
    if args.command == "view" and (args.web or args.host or args.port):
        if args.breaks:
            parser.error("--break is for the terminal debugger, not --web")
        module_name, function = "dyngraph.viewer.server", "run_web"
    if getattr(args, "nproc", None) is not None:
        module_name, function = "dyngraph.cli", "_run_ranks"
        args._argv = argv
    try:
        run = getattr(importlib.import_module(module_name), function)
        with warnings.catch_warnings():  # (restores showwarning after)
            _warn_in_one_line(args.command)
            return int(run(args) or 0)
    except UserError as exc:
        _error(args.command, str(exc))
        return 2
    except OSError as exc:
        if exc.filename is None:  # not about a file the user named: a bug, show it all
            raise
        # A path the file system refused (a name too long, a loop of symlinks ...) that no
        # check before caught: still one line, not a traceback.
        _error(args.command, f"{str(exc.filename)[:120]}: {exc.strerror or exc}")
        return 2
    except KeyboardInterrupt:
        print(f"dyngraph {args.command}: interrupted", file=sys.stderr)
        return 130


def _run_ranks(args: argparse.Namespace) -> int:
    """``--nproc N``: the same command on N ranks, through torchrun."""
    from .debug.session import check_script
    from .ranks.job import from_env
    from .ranks.launch import run_torchrun, strip_nproc

    if from_env() is not None:
        raise UserError("--nproc: this is a rank of a torchrun job already (RANK and "
                        "WORLD_SIZE are set); leave --nproc out")
    check_script(args.script)  # (once here, not once per rank)
    return run_torchrun(args.nproc, strip_nproc(args._argv, args.script))


if __name__ == "__main__":
    sys.exit(main())
