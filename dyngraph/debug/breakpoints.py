"""Breakpoints: what to stop at, and the matcher the child checks every event against.

A ``Breakpoint`` is plain data (it crosses the channel as a dict). The ``Matcher`` lives in
the child next to the engine and answers "does this event hit?" with a few dict lookups,
so a run whose breakpoints never hit pays no round trip and little time.

>>> Breakpoint.parse("train.py:42")
Breakpoint(kind='line', file='train.py', line=42)
>>> Breakpoint.parse("op:matmul if max > 1e3").condition
'max > 1e3'
"""

from __future__ import annotations

import fnmatch
import math
import operator
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..capture.arrays import to_numpy

KINDS = ("op", "module", "line", "iteration", "nan", "grad_norm", "compile")
COMPILE_EVENTS = ("recompile", "break")  # what a ``compile`` breakpoint stops at
SCOPES = ("node", "global")


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """Where to stop. Build one with the class methods, or ``Breakpoint.parse(text)``.

    - ``op``: every op named ``name`` (a glob: ``"mat*"``, ``"*"`` is any op).
    - ``module``: entering a module whose path (or an ancestor's) matches the glob ``name``.
    - ``line``: the first op of each visit to ``file:line`` (``file`` may be a bare name).
    - ``iteration``: the first op of iteration ``iteration`` (numbered from 1).
    - ``nan``: the op (or backward step) that first produces a NaN/Inf, checked exactly.
    - ``grad_norm``: a gradient whose L2 norm exceeds ``threshold``; ``scope="node"`` checks
      the gradients arriving at each backward step (one per output of the op) and each
      leaf's ``.grad``, ``scope="global"`` the norm over all leaves' gradients at the end of
      backward (as ``clip_grad_norm_`` computes it). The seed a backward pass starts from
      (1 for a scalar loss, or ``gradient=``) is not a computed gradient: not counted.
    - ``compile``: torch.compile recompiled (``name="recompile"``) or broke a graph
      (``name="break"``); the pause comes when the compiled call returns to the script.

    ``condition`` (``"max > 1e3"``, ``"nan > 0 or norm >= 10"``) restricts op, module and
    line breakpoints to ops whose output satisfies it. ``id`` is given by the session.
    """

    kind: str
    name: str = ""
    file: str = ""
    line: int = 0
    iteration: int = 0
    threshold: float = 0.0
    scope: str = "node"
    condition: str = ""
    id: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"breakpoint kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind in ("op", "module") and not self.name:
            raise ValueError(f"a {self.kind} breakpoint needs a name")
        if self.kind == "line" and (not self.file or self.line <= 0):
            raise ValueError("a line breakpoint needs a file and a line >= 1")
        if self.kind == "iteration" and self.iteration <= 0:
            raise ValueError("an iteration breakpoint needs an iteration >= 1")
        if self.kind == "grad_norm" and not (self.threshold > 0 and self.scope in SCOPES):
            raise ValueError(f"a grad_norm breakpoint needs a threshold > 0 and scope in {SCOPES}")
        if self.kind == "compile" and self.name not in COMPILE_EVENTS:
            raise ValueError(f"a compile breakpoint stops at {' or '.join(COMPILE_EVENTS)}, "
                             f"not {self.name!r}")
        if self.condition:
            parse_condition(self.condition)  # raises ValueError on a bad condition

    # -- constructors ----------------------------------------------------------------
    @classmethod
    def op(cls, name: str, condition: str = "") -> Breakpoint:
        return cls("op", name=name, condition=condition)

    @classmethod
    def module(cls, pattern: str, condition: str = "") -> Breakpoint:
        return cls("module", name=pattern, condition=condition)

    @classmethod
    def at_line(cls, file: str, line: int, condition: str = "") -> Breakpoint:
        return cls("line", file=file, line=line, condition=condition)

    @classmethod
    def at_iteration(cls, n: int) -> Breakpoint:
        return cls("iteration", iteration=n)

    @classmethod
    def nan(cls) -> Breakpoint:
        return cls("nan")

    @classmethod
    def grad_norm(cls, threshold: float, scope: str = "node") -> Breakpoint:
        return cls("grad_norm", threshold=threshold, scope=scope)

    @classmethod
    def compile(cls, what: str) -> Breakpoint:  # noqa: A003 - the kind's name
        return cls("compile", name=what)

    @classmethod
    def parse(cls, text: str, kind: str | None = None, file: str = "") -> Breakpoint:
        """Read a breakpoint as a user types it: the one parser of the CLI, the dialog and
        the list (``str(bp)`` reads back as ``bp``).

        Text forms: ``op:matmul``; ``module:encoder.*.attn``; ``train.py:42``; ``iter:3``;
        ``nan``; ``grad>10`` / ``grad_norm:10`` / ``global_grad>10``;
        ``compile:recompile`` / ``compile:break``; the first three
        followed by ``if <condition>``. A text form means what it says whatever ``kind``
        is. A bare value (``matmul``, ``encoder``, ``42``, ``3``, ``100``) is read as
        ``kind`` says (an op name when ``kind`` is None); a bare line number needs ``file``.
        Anything else raises ValueError with a message a user can act on.
        """
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown breakpoint kind {kind!r}; choose one of "
                             f"{', '.join(KINDS)}")
        body, _, condition = text.strip().partition(" if ")
        body, condition = body.strip(), condition.strip()
        if not body:
            if kind == "nan":
                return cls.nan()
            raise ValueError(f"empty breakpoint: {_HINT.get(kind or 'op', _FORMS)}")
        explicit = _parse_form(cls, body, condition)
        if explicit is not None:
            return explicit
        return _parse_bare(cls, body, condition, kind or "op", file)

    # -- wire and display ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v != _DEFAULTS.get(k)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Breakpoint:
        return cls(**{k: v for k, v in data.items() if k in _FIELDS})

    def with_id(self, bp_id: int) -> Breakpoint:
        return replace(self, id=bp_id)

    def __str__(self) -> str:
        text = {
            "op": f"op:{self.name}",
            "module": f"module:{self.name}",
            "line": f"{self.file}:{self.line}",
            "iteration": f"iter:{self.iteration}",
            "nan": "nan",
            "grad_norm": (f"{'global_' if self.scope == 'global' else ''}grad>"
                          f"{_threshold_text(self.threshold)}"),
            "compile": f"compile:{self.name}",
        }[self.kind]
        return f"{text} if {self.condition}" if self.condition else text

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "kind")
        return f"Breakpoint(kind={self.kind!r}{', ' if shown else ''}{shown})"


_DEFAULTS = {"name": "", "file": "", "line": 0, "iteration": 0, "threshold": 0.0,
             "scope": "node", "condition": "", "id": 0}
_FIELDS = ("kind", *_DEFAULTS)


_FORMS = ("try op:NAME, module:GLOB, FILE:LINE, iter:N, nan, grad>X, compile:recompile or "
          "compile:break")
_HINT = {
    "op": "give an op name or glob, e.g. matmul",
    "module": "give a module path glob, e.g. encoder.*",
    "line": "give FILE:LINE, e.g. train.py:42",
    "iteration": "give an iteration number, e.g. 3",
    "nan": "nan needs no value",
    "grad_norm": "give a gradient-norm threshold > 0, e.g. 100",
    "compile": "give recompile or break",
}
_NAME = re.compile(r"[\w.*?\[\]!-]+")  # op names and module paths, globs allowed


def _name(kind: str, text: str) -> str:
    if not _NAME.fullmatch(text):
        raise ValueError(f"not {'an op name' if kind == 'op' else 'a module path'}: "
                         f"{text!r} ({_HINT[kind]})")
    return text


def _no_condition(kind: str, condition: str) -> None:
    if condition:
        raise ValueError(f"a {kind} breakpoint takes no condition (only op, module and "
                         "line breakpoints do)")


def _parse_form(cls: type[Breakpoint], body: str, condition: str) -> Breakpoint | None:
    """The breakpoint a text form spells, or None when ``body`` is no text form."""
    low = body.lower()
    if low in ("nan", "inf", "nan/inf"):
        _no_condition("nan", condition)
        return cls.nan()
    m = re.fullmatch(r"(global_?)?grad(?:_?norm)?\s*(?:>|:)\s*(\S+)", low)
    if m:
        _no_condition("grad_norm", condition)
        threshold = _number(m.group(2))
        if not threshold > 0:
            raise ValueError(f"the gradient-norm threshold must be > 0, not {m.group(2)}")
        return cls.grad_norm(threshold, "global" if m.group(1) else "node")
    m = re.fullmatch(r"(?:iter|iteration)\s*[: ]\s*(\S+)", low)
    if m:
        _no_condition("iteration", condition)
        return cls.at_iteration(_iteration(m.group(1)))
    prefix, sep, rest = body.partition(":")
    if sep and prefix.lower() == "compile":
        _no_condition("compile", condition)
        what = rest.strip().lower()
        if what not in COMPILE_EVENTS:
            raise ValueError(f"compile:{rest.strip()} is not a breakpoint ({_HINT['compile']})")
        return cls.compile(what)
    if sep and prefix.lower() in ("op", "module"):
        kind = prefix.lower()
        if not rest.strip():
            raise ValueError(f"{prefix}: needs a value ({_HINT[kind]})")
        return cls(kind, name=_name(kind, rest.strip()), condition=condition)
    m = re.fullmatch(r"(.+):(\d+)", body)
    if m:
        return cls.at_line(m.group(1), _line(m.group(2)), condition)
    return None


def _parse_bare(cls: type[Breakpoint], body: str, condition: str, kind: str, file: str
                ) -> Breakpoint:
    """A value without a text form, read as ``kind`` says."""
    if kind in ("op", "module"):
        return cls(kind, name=_name(kind, body), condition=condition)
    if kind == "line":
        if body.isdigit() and file:
            return cls.at_line(file, _line(body), condition)
        raise ValueError(f"not a line: {body!r} ({_HINT['line']})")
    _no_condition(kind, condition)
    if kind == "compile":
        if body.lower() not in COMPILE_EVENTS:
            raise ValueError(f"not a compile event: {body!r} ({_HINT['compile']})")
        return cls.compile(body.lower())
    if kind == "iteration":
        return cls.at_iteration(_iteration(body))
    if kind == "grad_norm":
        try:
            threshold = float(body)
        except ValueError:
            threshold = 0.0
        if not threshold > 0:
            raise ValueError(f"not a threshold: {body!r} ({_HINT['grad_norm']})")
        return cls.grad_norm(threshold)
    raise ValueError(f"{body!r} is not a breakpoint ({_FORMS})")


def _iteration(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"not an iteration: {text!r} (iterations are numbered 1, 2, ...)")
    return int(text)


def _line(text: str) -> int:
    if int(text) < 1:
        raise ValueError(f"not a line: {text} (lines are numbered from 1)")
    return int(text)


def _threshold_text(x: float) -> str:
    """``100`` for 100.0, and digits enough to read back the same float."""
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


# -- conditions on an op's output ----------------------------------------------------------
_COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
            "==": operator.eq, "!=": operator.ne}
_STATS: dict[str, Callable[[np.ndarray], float]] = {
    "min": lambda a: float(np.min(a)),
    "max": lambda a: float(np.max(a)),
    "absmax": lambda a: float(np.max(np.abs(a))),
    "mean": lambda a: float(np.mean(a, dtype=np.float64)),
    "std": lambda a: float(np.std(a, dtype=np.float64)),
    "norm": lambda a: _norm(a),
    "nan": lambda a: float(np.count_nonzero(np.isnan(a))) if a.dtype.kind in "fc" else 0.0,
    "inf": lambda a: float(np.count_nonzero(np.isinf(a))) if a.dtype.kind in "fc" else 0.0,
    "numel": lambda a: float(a.size),
}
_TERM = re.compile(r"\s*(\w+)\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*")

Condition = Callable[[np.ndarray], bool]


def parse_condition(text: str) -> Condition:
    """``"max > 1e3"``, ``"nan > 0 or absmax >= 1e4"`` -> predicate on an array.

    Terms are ``STAT OP NUMBER`` with STAT one of min, max, absmax, mean, std, norm, nan,
    inf, numel, joined by ``and`` / ``or`` (``and`` binds tighter). Empty arrays never match.
    """
    alternatives = []
    for alt in re.split(r"\bor\b", text):
        terms = []
        for term in re.split(r"\band\b", alt):
            m = _TERM.fullmatch(term)
            if not m or m.group(1) not in _STATS:
                raise ValueError(f"bad condition {text!r}: expected STAT OP NUMBER with STAT "
                                 f"in {', '.join(_STATS)}")
            terms.append((_STATS[m.group(1)], _COMPARE[m.group(2)], _number(m.group(3))))
        alternatives.append(terms)

    def predicate(a: Any) -> bool:
        a = to_numpy(a)
        if a.size == 0:
            return False
        with np.errstate(all="ignore"):
            return any(all(cmp(stat(a), x) for stat, cmp, x in terms) for terms in alternatives)

    return predicate


def _norm(a: np.ndarray) -> float:
    if a.dtype.kind not in "fc":
        a = a.astype(np.float64)
    flat = a.reshape(-1)
    with np.errstate(all="ignore"):
        sq = float(np.dot(flat, flat))  # in the array's own precision: no copy
        if flat.dtype != np.float64 and (not math.isfinite(sq) or sq > 1e30):
            # float32 squares overflow past ~1e19: redo large ones in float64
            f = flat.astype(np.float64)
            sq = float(np.dot(f, f))
        return math.sqrt(sq) if sq >= 0 else math.nan


def array_norm(a: Any) -> float:
    """Exact L2 norm of any array (or any backend's tensor), computed in float64."""
    return _norm(to_numpy(a))


def all_finite(a: Any, summary: Any = None) -> bool:
    """Exactly whether every element of ``a`` (an array, or any backend's tensor) is finite.

    A summary that was not sampled already counted NaN/Inf over the whole tensor. Otherwise
    a tiny tensor is checked element-wise, a small one by its sum of squares (any NaN/Inf
    makes it non-finite; only a float overflow sends it on to the element-wise check), and
    a large one element-wise again, which is as fast as a dot product there.
    """
    if summary is not None and not summary.sampled:
        return summary.nan == 0 and summary.inf == 0
    a = to_numpy(a)
    kind = a.dtype.kind
    if kind not in "fc":
        return True
    if kind == "f" and a.size <= 16_384:
        if a.size <= 2048:  # one isfinite pass costs less than a dot here
            return bool(np.isfinite(a).all())
        # The sum of squares is finite exactly when every element is (or on a float
        # overflow, which the element-wise check below then settles). np.vdot raises no
        # floating-point warning (BLAS), so no np.errstate is needed around it (it cost
        # more than the dot itself).
        if math.isfinite(np.vdot(a, a)):
            return True
    return bool(np.isfinite(a).all())


def nonfinite_counts(a: Any) -> tuple[int, int]:
    a = to_numpy(a)
    nan = int(np.count_nonzero(np.isnan(a)))
    return nan, int(np.count_nonzero(np.isinf(a)))


def reads_per_op(breakpoints: Iterable[Breakpoint]) -> bool:
    """Does one of ``breakpoints`` judge each op's values as it runs (NaN/Inf, a gradient
    norm, a condition)? While one is set, the debugger reads every op's statistics as the
    op runs (on a GPU, a host read per op) rather than once per iteration.

    >>> reads_per_op([Breakpoint.op("relu")]), reads_per_op([Breakpoint.nan()])
    (False, True)
    """
    return any(bp.kind in ("nan", "grad_norm") or bp.condition for bp in breakpoints)


# -- matching in the child ------------------------------------------------------------------
def same_file(pattern: str, path: str) -> bool:
    """``train.py`` matches ``/home/me/train.py``; an absolute pattern must match exactly."""
    if not path:
        return False
    if os.path.isabs(pattern):
        return os.path.normcase(os.path.abspath(pattern)) == os.path.normcase(path)
    pattern = pattern.replace("\\", "/").lstrip("./")
    path = path.replace("\\", "/")
    return path == pattern or path.endswith("/" + pattern)


def module_matches(pattern: str, module: str) -> bool:
    """The glob matches the module path or one of its ancestors (``enc`` in ``enc.0.fc``)."""
    if not module:
        return pattern in ("", "*")
    parts = module.split(".")
    return any(fnmatch.fnmatchcase(".".join(parts[:i]), pattern) for i in range(1, len(parts) + 1))


@dataclass(slots=True)
class Matcher:
    """Breakpoints indexed for the per-event check. Immutable once built: to change the set,
    build a new one and swap the reference (the child's command thread does exactly that)."""

    breakpoints: tuple[Breakpoint, ...] = ()
    op_exact: dict[str, list[Breakpoint]] = field(default_factory=dict)
    op_globs: list[Breakpoint] = field(default_factory=list)
    modules: list[Breakpoint] = field(default_factory=list)
    lines: list[Breakpoint] = field(default_factory=list)
    iterations: dict[int, Breakpoint] = field(default_factory=dict)
    nan: Breakpoint | None = None
    node_norm: list[Breakpoint] = field(default_factory=list)
    global_norm: list[Breakpoint] = field(default_factory=list)
    conditions: dict[Breakpoint, Condition] = field(default_factory=dict)
    compile: dict[str, Breakpoint] = field(default_factory=dict)  # compile event -> bp
    checks_ops: bool = False  # any op, module or line breakpoint (read once per op)
    node_threshold: float = math.inf  # the lowest per-node gradient norm threshold
    global_threshold: float = math.inf
    # Per-string caches: a run has few distinct op names, module paths and files.
    _op_cache: dict[str, list[Breakpoint]] = field(default_factory=dict)
    _module_cache: dict[str, list[Breakpoint]] = field(default_factory=dict)
    _file_cache: dict[str, dict[int, list[Breakpoint]]] = field(default_factory=dict)

    @classmethod
    def build(cls, breakpoints: Iterable[Breakpoint]) -> Matcher:
        m = cls(tuple(breakpoints))
        for bp in m.breakpoints:
            if bp.condition:
                m.conditions[bp] = parse_condition(bp.condition)
            if bp.kind == "op":
                if any(c in bp.name for c in "*?["):
                    m.op_globs.append(bp)
                else:
                    m.op_exact.setdefault(bp.name, []).append(bp)
            elif bp.kind == "module":
                m.modules.append(bp)
            elif bp.kind == "line":
                m.lines.append(bp)
            elif bp.kind == "iteration":
                m.iterations.setdefault(bp.iteration, bp)
            elif bp.kind == "nan":
                m.nan = m.nan or bp
            elif bp.kind == "grad_norm":
                (m.global_norm if bp.scope == "global" else m.node_norm).append(bp)
            elif bp.kind == "compile":
                m.compile.setdefault(bp.name, bp)
        m.checks_ops = bool(m.op_exact or m.op_globs or m.modules or m.lines)
        m.node_threshold = min((bp.threshold for bp in m.node_norm), default=math.inf)
        m.global_threshold = min((bp.threshold for bp in m.global_norm), default=math.inf)
        return m

    def for_op(self, name: str) -> list[Breakpoint]:
        hit = self._op_cache.get(name)
        if hit is None:
            hit = list(self.op_exact.get(name, ()))
            hit += [bp for bp in self.op_globs if fnmatch.fnmatchcase(name, bp.name)]
            self._op_cache[name] = hit
        return hit

    def for_module(self, module: str) -> list[Breakpoint]:
        hit = self._module_cache.get(module)
        if hit is None:
            hit = self._module_cache[module] = [
                bp for bp in self.modules if module_matches(bp.name, module)
            ]
        return hit

    def lines_of(self, file: str) -> dict[int, list[Breakpoint]]:
        by_line = self._file_cache.get(file)
        if by_line is None:
            by_line = {}
            for bp in self.lines:
                if same_file(bp.file, file):
                    by_line.setdefault(bp.line, []).append(bp)
            self._file_cache[file] = by_line
        return by_line

    def for_line(self, file: str, line: int) -> list[Breakpoint]:
        return self.lines_of(file).get(line, [])

    def condition_holds(self, bp: Breakpoint, value: np.ndarray | None) -> bool:
        predicate = self.conditions.get(bp) if bp.condition else None
        if predicate is None:
            return True
        return value is not None and predicate(value)
