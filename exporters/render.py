"""Running Graphviz: DOT text -> SVG bytes, or -> layout coordinates.

The binary is, in order: the ``dot=`` argument, the ``DYNGRAPH_DOT`` environment variable,
or the ``graphviz-pure`` executable that ``pip install dyngraph`` put next to the Python
interpreter (or on PATH). No system Graphviz is needed; a system ``dot`` is used only when
asked for. Every failure (missing binary, a layout that fails or runs past its time
budget) raises one ``GraphvizError`` with a one-line message.

>>> lay = layout('digraph { a -> b }')     # doctest: +SKIP
>>> lay.nodes["a"].y > lay.nodes["b"].y     # doctest: +SKIP
True
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyngraph.errors import UserError

BINARY = "graphviz-pure"
ENV_VAR = "DYNGRAPH_DOT"
DEFAULT_TIMEOUT = 30.0
# NOTES.md: these cut dot's network-simplex and crossing-minimisation work on big graphs
# (5k nodes: 1.25 s -> 0.85 s) at the price of a somewhat less tidy drawing.
FAST_ARGS = ("-Gnslimit=1", "-Gmclimit=0.1")
POINTS_PER_INCH = 72.0


class GraphvizError(UserError):
    """Graphviz is missing, failed, or took longer than its time budget."""


class LayoutTimeout(GraphvizError):
    """The layout ran past its time budget (the process was killed)."""


@dataclass(frozen=True, slots=True)
class NodeBox:
    """A laid-out node: centre ``x, y`` and size, in points, y growing upwards."""

    name: str
    x: float
    y: float
    width: float
    height: float
    label: str = ""


@dataclass(frozen=True, slots=True)
class EdgePath:
    """An edge's spline control points (points, y up), tail first."""

    tail: str
    head: str
    points: list[tuple[float, float]]
    label: str = ""
    label_pos: tuple[float, float] | None = None


@dataclass(slots=True)
class Layout:
    """Coordinates from ``dot -Tplain``, in points, origin bottom-left, y growing upwards."""

    width: float
    height: float
    nodes: dict[str, NodeBox] = field(default_factory=dict)
    edges: list[EdgePath] = field(default_factory=list)
    # Cluster frames (x0, y0, x1, y1) by cluster name: only from ``layered_layout``
    # (``-Tplain`` has none).
    clusters: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)


def _resolve(candidate: str, source: str) -> str:
    path = Path(candidate).expanduser()
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    found = shutil.which(candidate)
    if found:
        return found
    raise GraphvizError(f"Graphviz binary {candidate!r} (from {source}) not found or not "
                        "executable")


def find_dot(dot: str | os.PathLike[str] | None = None) -> str:
    """The path of the Graphviz binary to run (see the module docstring for the order)."""
    if dot:
        return _resolve(os.fspath(dot), "the dot argument")
    env = os.environ.get(ENV_VAR)
    if env:
        return _resolve(env, f"${ENV_VAR}")
    for name in (BINARY, BINARY + ".exe"):
        beside = Path(sys.executable).parent / name
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    found = shutil.which(BINARY)
    if found:
        return found
    raise GraphvizError(
        f"the {BINARY} binary was not found next to {sys.executable} or on PATH; "
        f"install it with `pip install {BINARY}==0.2.2`, or point --dot / ${ENV_VAR} at a dot"
    )


def run_dot(dot_text: str, args: Sequence[str], *, dot: str | os.PathLike[str] | None = None,
            timeout: float | None = DEFAULT_TIMEOUT) -> bytes:
    """Run Graphviz on ``dot_text`` with ``args``; its stdout, or a GraphvizError.

    The child never outlives this call's failure or the interpreter: on a timeout, an
    exception (Ctrl-C) or interpreter exit its whole process group is killed and reaped.
    """
    binary = find_dot(dot)
    try:
        proc = _start([binary, *args])
    except OSError as exc:
        raise GraphvizError(f"could not run Graphviz ({binary}): {exc}") from None
    try:
        out, err = proc.communicate(dot_text.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise LayoutTimeout(f"Graphviz layout took longer than {timeout:g} s and was "
                            "stopped") from None
    except BaseException:
        _kill(proc)
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    if proc.returncode != 0 or not out:
        message = _first_error(err) or f"exit status {proc.returncode}"
        raise GraphvizError(f"Graphviz ({Path(binary).name}) failed: {message}")
    return out


# -- child processes ---------------------------------------------------------------------
# Layouts run in daemon threads (the canvas worker) as well as the main thread, so the
# process can end while dot still runs. Each child is bounded three ways:
# - its own process group (a wrapper script's children too), tracked until reaped; an
#   atexit hook kills whatever still runs at a normal exit;
# - PR_SET_PDEATHSIG (Linux): the kernel SIGKILLs it when the thread that started it ends,
#   which covers dyngraph dying by SIGTERM or SIGKILL. That thread is always the one
#   waiting for the child (``run_dot`` starts and reaps in one call), so the signal never
#   fires early;
# - RLIMIT_AS: a layout that would eat the machine's memory (graphviz-pure once reached
#   12.5 GB) fails instead, and dyngraph's own layout takes over.
# The preexec hook runs in the child between fork and exec, where little is safe: it only
# makes two system calls, through function pointers resolved here in the parent.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_GROUPS = os.name == "posix"
MEMORY_LIMIT = 768 << 20  # bytes of address space a layout child may map
PR_SET_PDEATHSIG = 1


def _libc_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl: Callable[..., int] = libc.prctl
        return prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def _preexec(memory: int | None) -> Callable[[], None] | None:
    """The hook that bounds a child (None where there is nothing to bound)."""
    if os.name != "posix":
        return None
    import resource

    prctl, parent = _PRCTL, os.getpid()
    setrlimit, limit_as = resource.setrlimit, resource.RLIMIT_AS

    def bound() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # the parent died before the line above: go now
                os._exit(1)
        if memory:
            try:
                setrlimit(limit_as, (memory, memory))
            except (ValueError, OSError):  # a lower hard limit already: keep that one
                pass

    return bound


def _start(argv: list[str], memory: int | None = MEMORY_LIMIT) -> subprocess.Popen[bytes]:
    extra: dict[str, Any] = {"process_group": 0} if _GROUPS else {}
    hook = _preexec(memory)
    if hook is not None:
        extra["preexec_fn"] = hook
    with _LIVE_LOCK:  # registered before anyone can look: no window for atexit to miss it
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **extra)
        _LIVE.add(proc)
    return proc


def _signal_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (the child alone where there are no groups)."""
    if proc.returncode is not None:  # reaped: its pid may belong to someone else by now
        return
    try:
        if _GROUPS:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:  # gone already
        pass


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill and reap ``proc``, closing its pipes."""
    _signal_group(proc)
    try:
        proc.communicate(timeout=5.0)
    except (subprocess.TimeoutExpired, ValueError, OSError):  # pipes held elsewhere
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait(timeout=5.0)


@atexit.register
def kill_running() -> None:
    """Kill every Graphviz child still running (called at interpreter exit)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _signal_group(proc)


def _first_error(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or [""])[0][:300]


def render(dot_text: str, fmt: str = "svg", *, dot: str | os.PathLike[str] | None = None,
           timeout: float | None = DEFAULT_TIMEOUT, fast: bool = False) -> bytes:
    """Lay out and render ``dot_text`` in format ``fmt`` (``svg``, ``plain``, ``json``, ...).

    >>> svg = render(to_dot(graph))   # doctest: +SKIP
    """
    if not re.fullmatch(r"[a-z0-9_:]+", fmt):
        raise GraphvizError(f"unknown output format {fmt!r}")
    return run_dot(dot_text, [f"-T{fmt}", *(FAST_ARGS if fast else ())], dot=dot,
                   timeout=timeout)


def layout(dot_text: str, *, dot: str | os.PathLike[str] | None = None,
           timeout: float | None = DEFAULT_TIMEOUT, fast: bool = False) -> Layout:
    """Node boxes and edge splines of ``dot_text``'s layout (``dot -Tplain``), in points."""
    return parse_plain(render(dot_text, "plain", dot=dot, timeout=timeout, fast=fast))


# -- -Tplain ---------------------------------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\S+')
_ESCAPE = re.compile(r"\\(.)")
_LINE_BREAKS = {"n": "\n", "l": "\n", "r": "\n"}


def _tokens(line: str) -> list[str]:
    if "<" not in line:
        return _TOKEN.findall(line)
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch.isspace():
            i += 1
        elif ch == "<":  # an HTML-like label: balanced angle brackets
            level, j = 0, i
            while j < n:
                level += {"<": 1, ">": -1}.get(line[j], 0)
                j += 1
                if level == 0:
                    break
            out.append(line[i:j])
            i = j
        else:
            m = _TOKEN.match(line, i)
            assert m is not None
            out.append(m.group())
            i = m.end()
    return out


def unquote(token: str) -> str:
    """The text of a plain-output string: quotes removed, ``\\n`` as a line break."""
    if token.startswith('"') and token.endswith('"') and len(token) >= 2:
        token = token[1:-1]
        return _ESCAPE.sub(lambda m: _LINE_BREAKS.get(m.group(1), m.group(1)), token)
    if token.startswith("<") and token.endswith(">"):
        return token[1:-1]
    return token


def parse_plain(data: bytes) -> Layout:
    """Parse ``dot -Tplain`` output into a Layout (inches converted to points)."""
    k = POINTS_PER_INCH
    result = Layout(0.0, 0.0)
    try:
        for raw in data.decode("utf-8", "replace").splitlines():
            if not raw:
                continue
            head = raw[:5]
            if head == "node ":
                t = _tokens(raw)
                name = unquote(t[1])
                result.nodes[name] = NodeBox(name, float(t[2]) * k, float(t[3]) * k,
                                             float(t[4]) * k, float(t[5]) * k, unquote(t[6]))
            elif head == "edge ":
                t = _tokens(raw)
                count = int(t[3])
                pts = [(float(t[4 + 2 * i]) * k, float(t[5 + 2 * i]) * k) for i in range(count)]
                rest = t[4 + 2 * count:]
                label, pos = "", None
                if len(rest) >= 5:
                    label, pos = unquote(rest[0]), (float(rest[1]) * k, float(rest[2]) * k)
                result.edges.append(EdgePath(unquote(t[1]), unquote(t[2]), pts, label, pos))
            elif head == "graph":
                t = raw.split()
                result.width, result.height = float(t[2]) * k, float(t[3]) * k
            elif raw.startswith("stop"):
                break
    except (IndexError, ValueError) as exc:
        raise GraphvizError(f"could not parse Graphviz layout output: {exc}") from None
    return result
