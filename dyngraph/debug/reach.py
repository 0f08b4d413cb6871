"""Breakpoints that cannot hit, said when they are set: "did you mean ...?".

A breakpoint on a line without code, in a file nothing has run yet, on a module path no
module has, or on an op dyngraph never emits, would wait silently for ever. ``check``
names the reason in one line, with the nearest match where there is one, from what the
run has shown so far (``Seen``) and the source files on disk.

>>> seen = Seen(files={"/w/train.py"}, modules={"encoder", "encoder.0"}, ops={"linear"})
>>> check(Breakpoint.module("encodr"), seen, script="/w/train.py")
'no module encodr has run (did you mean module:encoder?)'

Once the run has ended (``ended``), what did not run cannot hit any more either: a module
breakpoint when no module ran at all, an op breakpoint on an op the run never emitted.

>>> check(Breakpoint.op("linears"), seen, ended=True)
'no op linears ran (did you mean op:linear?)'
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import os
from dataclasses import dataclass, field

from .breakpoints import Breakpoint, same_file


@dataclass
class Seen:
    """What a run has shown so far: source files its ops ran in, module paths, op names."""

    files: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    ops: set[str] = field(default_factory=set)

    def add_event(self, event: object) -> None:
        file = getattr(event, "file", "")
        if file:
            self.files.add(file)
        module = getattr(event, "module", "")
        if module:
            self.modules.add(module)
        op = getattr(event, "op", "")
        if op and getattr(event, "kind", "") == "op":
            self.ops.add(op)


def engine_ops() -> set[str]:
    """Every op name dyngraph's own engine can emit."""
    # (lazily: the engine is big and only this needs it.) Every module that registers ops
    # (nn's on first use), as a script's first engine name loads them.
    from .. import _everything  # noqa: F401
    from ..engine.ops import OPS

    return set(OPS)


def check(bp: Breakpoint, seen: Seen, script: str = "", torch: bool = False,
          ended: bool = False) -> str:
    """Why ``bp`` cannot hit as things stand ("" if it can). ``torch``: the run captures
    PyTorch, whose op names are not all known in advance. ``ended``: the run is over, so
    only what it showed could have hit."""
    if bp.kind == "line":
        return _line(bp, seen, script)
    if bp.kind == "module":
        return _module(bp, seen, ended)
    if bp.kind == "op":
        return _op(bp, seen, torch, ended)
    return ""


def _module(bp: Breakpoint, seen: Seen, ended: bool) -> str:
    if not seen.modules:  # no model has run: nothing to check against, until the end
        return "no module has run" if ended else ""
    if any(_module_matches(bp.name, m) for m in seen.modules):
        return ""
    near = difflib.get_close_matches(bp.name, sorted(seen.modules), n=1, cutoff=0.5)
    hint = f" (did you mean module:{near[0]}?)" if near else ""
    return f"no module {bp.name} has run{hint}"


def _op(bp: Breakpoint, seen: Seen, torch: bool, ended: bool) -> str:
    if any(fnmatch.fnmatchcase(op, bp.name) for op in seen.ops):
        return ""
    known = seen.ops | (set() if torch else engine_ops())
    exists = any(fnmatch.fnmatchcase(op, bp.name) for op in known)
    if exists and not ended:
        return ""
    # an op that exists but did not run: the nearest that ran; a typo: the nearest known
    pool = seen.ops if exists else known
    near = difflib.get_close_matches(bp.name, sorted(pool), n=1, cutoff=0.5)
    hint = f" (did you mean op:{near[0]}?)" if near else ""
    if ended:
        return f"no op {bp.name} ran{hint}"
    if torch:
        return f"no op {bp.name} has run yet{hint}"
    return f"dyngraph emits no op named {bp.name}{hint}"


def _module_matches(pattern: str, module: str) -> bool:  # (breakpoints.module_matches)
    parts = module.split(".")
    return any(fnmatch.fnmatchcase(".".join(parts[:k]), pattern)
               for k in range(1, len(parts) + 1))


def _line(bp: Breakpoint, seen: Seen, script: str) -> str:
    path = _resolve(bp.file, seen, script)
    if path is None:
        names = sorted({os.path.basename(f) for f in seen.files | ({script} if script else set())})
        near = difflib.get_close_matches(os.path.basename(bp.file), names, n=1, cutoff=0.5)
        hint = f" (did you mean {near[0]}:{bp.line}?)" if near else ""
        return f"no file {bp.file}{hint}"
    code = code_lines(path)
    if code is not None and bp.line not in code:
        nearest = min(code, key=lambda n: (abs(n - bp.line), n)) if code else None
        hint = f" (did you mean {os.path.basename(path)}:{nearest}?)" if nearest else ""
        return f"line {bp.line} of {os.path.basename(path)} holds no code{hint}"
    if not (script and same_file(path, script)) and not any(
            same_file(path, f) for f in seen.files):
        return (f"{os.path.basename(path)} is not the script and nothing has run in it yet: "
                "it hits once the file is imported and runs that line")
    return ""


def _resolve(file: str, seen: Seen, script: str) -> str | None:
    """The file on disk a breakpoint names (a bare name matches a file seen or the
    script's folder)."""
    candidates = [file]
    if script:
        candidates.append(os.path.join(os.path.dirname(script), file))
    candidates += [f for f in seen.files if same_file(file, f)]
    for c in candidates:
        if os.path.isfile(c):
            return c
    return None


_CODE: dict[tuple[str, float], set[int] | None] = {}


def code_lines(path: str) -> set[int] | None:
    """The lines of ``path`` that hold code a breakpoint can stop on (None: unreadable)."""
    try:
        key = (path, os.path.getmtime(path))
    except OSError:
        return None
    if key in _CODE:
        return _CODE[key]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        _CODE[key] = None
        return None
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring or a bare constant: nothing runs there
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1)
                         if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign,
                                              ast.Expr, ast.Return)) else (node.lineno,))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.add(node.lineno)
    _CODE[key] = lines
    return lines
