"""Random programs run on dyngraph and on PyTorch side by side (see test_differential.py).

A program is a list of Python lines written against the PyTorch API with ``L`` standing for
the library (``v2 = L.amax(v0, dim=0)``, ``v1[0].mul_(3)``), over input arrays ``A0, A1 ...``.
The same lines run with ``L = torch`` and ``L = dyngraph``, so a failing program prints as
code that reproduces it and pastes into a regression test.

``Generator`` draws the lines one at a time with hypothesis, looking at PyTorch's results so
far (shapes, dtypes, which tensors require grad) to make mostly valid calls, plus a few
invalid ones (dims out of range, shapes that do not broadcast, bad indices) whose exception
types must match. Each op family is one small function returning one line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

FLOATS = ("float32", "float64", "float16")
INTS = ("int64", "int32", "uint8")
DTYPES = FLOATS + INTS + ("bool",)
# float16 and uint8 mostly meet the others (dtype mixes: float16 with int32 was float32).
_DTYPE_WEIGHTS = {"float32": 8, "float64": 2, "float16": 2, "int64": 2, "int32": 1, "uint8": 1,
                  "bool": 1}


@dataclass
class Program:
    """Input arrays and lines; ``source()`` is runnable with ``L`` bound to a library."""

    arrays: list[np.ndarray] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def source(self) -> str:
        # An empty array's shape is not in its list ([] may be (0, 3)): say it.
        head = [f"A{i} = np.array({a.tolist()!r}, dtype=np.{a.dtype})"
                + (f".reshape({a.shape})" if a.size == 0 and a.ndim != 1 else "")
                for i, a in enumerate(self.arrays)]
        return "\n".join(head + self.lines)


class Runner:
    """Executes a program's lines, one at a time, on one library."""

    def __init__(self, lib: Any, functional: Any) -> None:
        self.env: dict[str, Any] = {"L": lib, "F": functional, "np": np}

    def add_array(self, name: str, array: np.ndarray) -> None:
        self.env[name] = array.copy()  # each library gets its own copy

    def run(self, line: str) -> BaseException | None:
        try:
            exec(compile(line, "<program>", "exec"), self.env)  # noqa: S102
        except Exception as e:  # noqa: BLE001  (any exception is an outcome to compare)
            return e
        return None

    def __getitem__(self, name: str) -> Any:
        return self.env[name]


# -- drawing helpers -----------------------------------------------------------------------
class Generator:
    """Draws one program line at a time; ``slots`` are PyTorch's values of ``v0, v1 ...``."""

    def __init__(self, data: Any, program: Program, slots: dict[str, Any],
                 inplace: bool) -> None:
        self.data = data
        self.program = program
        self.slots = slots
        self.inplace = inplace

    def draw(self, strategy: Any) -> Any:
        return self.data.draw(strategy)

    def chance(self, p: float) -> bool:
        return self.draw(st.floats(0, 1)) < p

    def choice(self, options: Any) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def slot(self, pred: Callable[[Any], bool] = lambda t: True) -> str | None:
        names = [n for n, t in self.slots.items() if pred(t)]
        return self.choice(names) if names else None

    # arrays the program gets as inputs
    def shape(self, max_ndim: int = 3, empty: bool = True) -> tuple[int, ...]:
        ndim = self.draw(st.integers(0, max_ndim))
        low = 0 if empty and self.chance(0.12) else 1  # empty dims: chunk, split, softmax
        return tuple(self.draw(st.integers(low, 4)) for _ in range(ndim))

    def dtype(self, kinds: tuple[str, ...] = DTYPES) -> str:
        weighted = [d for d in kinds for _ in range(_DTYPE_WEIGHTS[d])]
        return self.choice(weighted)

    def array(self, shape: tuple[int, ...], dtype: str, low: int = -3, high: int = 5) -> str:
        """A new input array; returns its name."""
        seed = self.draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        if dtype in FLOATS:
            a = (rng.standard_normal(shape) * 2).astype(dtype)
        elif dtype == "bool":
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(max(low, 0) if dtype == "uint8" else low, high + 1,
                             shape).astype(dtype)
        name = f"A{len(self.program.arrays)}"
        self.program.arrays.append(np.asarray(a))
        return name

    def const(self, shape: tuple[int, ...], dtype: str, **kw: Any) -> str:
        """Code for a constant tensor (no grad) of this shape and dtype."""
        return f"L.tensor({self.array(shape, dtype, **kw)})"

    def dim(self, ndim: int, none: bool = False, tuples: bool = False, bad: bool = True,
            empty: bool = True) -> Any:
        """A dim argument: an int in range (sometimes negative), None, a tuple, or rarely
        out of range."""
        n = max(ndim, 1)
        options = ["int"] + (["none"] if none else []) + (["tuple"] if tuples else [])
        kind = self.choice(options)
        if bad and self.chance(0.04):
            return self.choice([n, -n - 1])
        if kind == "none":
            return None
        if kind == "tuple":
            k = self.draw(st.integers(0 if ndim and empty else 1, min(n, 3)))
            picked = self.draw(st.permutations(range(n)))[:k]
            return tuple(d - n if self.chance(0.3) else d for d in picked)
        d = self.draw(st.integers(0, n - 1))
        return d - n if self.chance(0.4) else d

    def scalar(self, dtype: str) -> str:
        """A Python scalar of the kind that fits (or sometimes not) a tensor of ``dtype``."""
        kind = self.choice(["float", "int", "int", "bool"] if self.chance(0.3) else
                           ["float"] if dtype in FLOATS else ["int"])
        if kind == "float":
            return repr(self.choice([0.5, -1.5, 2.0, 3.25, -0.75]))
        if kind == "int":
            return repr(self.choice([0, 1, 2, -2, 3]))
        return repr(self.choice([True, False]))


def _is_float(t: Any) -> bool:
    return t.is_floating_point()


def _dtype(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


def _broadcastable_to(shape: tuple[int, ...], g: Generator) -> tuple[int, ...]:
    """A shape that broadcasts against ``shape`` (trailing dims kept or set to 1)."""
    keep = g.draw(st.integers(0, len(shape)))
    tail = tuple(1 if g.chance(0.3) else d for d in shape[len(shape) - keep:])
    lead = tuple(g.draw(st.integers(1, 3)) for _ in range(g.draw(st.integers(0, 1))))
    out = lead + tail
    if g.chance(0.04) and out:  # rarely: a size that does not broadcast
        i = g.draw(st.integers(0, len(out) - 1))
        out = out[:i] + (out[i] + 2,) + out[i + 1:]
    return out


# -- op families: each returns one line of code (or None when nothing applies) --------------
def new_input(g: Generator) -> str:
    dtype = g.dtype()
    name = g.array(g.shape(), dtype)
    grad = dtype in FLOATS and g.chance(0.8)
    return f"L.tensor({name}, requires_grad=True)" if grad else f"L.tensor({name})"


UNARY = ("exp", "log", "sqrt", "abs", "neg", "tanh", "sigmoid", "relu", "sin", "cos", "floor",
         "ceil", "round", "sign", "log1p", "expm1", "rsqrt", "square", "trunc", "isnan",
         "logical_not", "log2")


def unary(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    op = g.choice(UNARY)
    if op in ("log", "sqrt", "rsqrt", "log2", "log1p") and g.chance(0.7):
        return f"L.{op}({v}.abs() + 0.5)" if _is_float(g.slots[v]) else f"{v}.{op}()"
    return g.choice([f"{v}.{op}()", f"L.{op}({v})"])


BINARY = ("+", "-", "*", "/", "**", "//", "%", "maximum", "minimum", "==", "<", ">=", "&",
          "|", "^")


def _other_operand(g: Generator, t: Any) -> str:
    """The second operand of a binary op: a slot that broadcasts, a constant tensor (maybe
    0-d, maybe another dtype), or a Python scalar."""
    kind = g.choice(["slot", "const", "const", "zerodim", "scalar"])
    if kind == "slot":
        shape = tuple(t.shape)
        v = g.slot(lambda u: _broadcasts(tuple(u.shape), shape))
        if v is not None:
            return v
    if kind == "scalar":
        return g.scalar(_dtype(t))
    dtype = _dtype(t) if g.chance(0.6) else g.dtype()
    shape = () if kind == "zerodim" else _broadcastable_to(tuple(t.shape), g)
    if g.chance(0.3) and dtype in FLOATS:
        return f"L.tensor({g.array(shape, dtype)}, requires_grad=True)"
    return g.const(shape, dtype, low=1 if g.chance(0.5) else -3)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1], strict=False))


def _operand_dtype(g: Generator, code: str) -> str:
    if code in g.slots:
        return _dtype(g.slots[code])
    if code.startswith("L.tensor(A"):
        return str(g.program.arrays[int(code[len("L.tensor(A"):].split(")")[0].split(",")[0])]
                   .dtype)
    return "bool" if code in ("True", "False") else "scalar"


def binary(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    op = g.choice(BINARY)
    other = _other_operand(g, g.slots[v])
    a, b = (other, v) if g.chance(0.25) and not other[0].isdigit() else (v, other)
    if op in ("maximum", "minimum"):
        if not (a.startswith("v") or a.startswith("L.")):
            a, b = b, a
        if not (b.startswith("v") or b.startswith("L.")):
            return None  # torch.maximum takes two tensors
        return f"L.{op}({a}, {b})"
    if op == "**" and "bool" in (_operand_dtype(g, a), _operand_dtype(g, b)):
        return None  # PyTorch's pow backward breaks on bools (a subtraction it refuses)
    if op == "**" and g.chance(0.5):
        return f"{a}.abs() ** {b}" if a.startswith("v") and _is_float(g.slots[a]) else \
            f"{a} ** {b}"
    return f"{a} {op} {b}"


def _reduce_args(g: Generator, ndim: int, tuples: bool, none: bool = True,
                 keepdim: bool = True, empty: bool = True) -> str:
    dim = g.dim(ndim, none=none, tuples=tuples, empty=empty)
    keep = keepdim and g.chance(0.4)
    parts = [] if dim is None and not keep and g.chance(0.5) else [f"dim={dim!r}"]
    if keep:
        parts.append("keepdim=True")
    return ", ".join(parts)


def reduction(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    t = g.slots[v]
    nd = t.ndim
    op = g.choice(["sum", "sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std",
                   "norm", "logsumexp", "argmax", "argmin", "any", "all", "cumsum",
                   "max_dim", "min_dim"])
    if op in ("sum", "mean", "amax", "amin", "var", "std", "norm"):
        # (PyTorch's var/std/norm backward takes dim=() as "no dim", unlike its forward)
        empty = op in ("sum", "mean", "amax", "amin")
        return f"{v}.{op}({_reduce_args(g, nd, tuples=True, empty=empty)})"
    if op == "logsumexp":
        return f"{v}.logsumexp({_reduce_args(g, nd, tuples=True, none=False)})"
    if op in ("any", "all", "prod", "argmax", "argmin"):
        return f"{v}.{op}({_reduce_args(g, nd, tuples=False, none=op.startswith('arg'))})"
    if op in ("max", "min"):
        return f"{v}.{op}()"
    if op == "cumsum":
        return f"{v}.cumsum({g.dim(nd)})"
    name = op[:3]
    field_ = g.choice(["values", "indices"])
    keep = ", keepdim=True" if g.chance(0.3) else ""
    return f"{v}.{name}({g.dim(nd)}{keep}).{field_}"


def _factor(n: int, g: Generator) -> tuple[int, ...]:
    """A random shape with ``n`` elements (one dim may be -1)."""
    dims: list[int] = []
    rest = n
    for _ in range(g.draw(st.integers(0, 2))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
        d = g.choice(divisors)
        dims.append(d)
        rest = rest // d if d else rest
    dims.append(rest if n else 0)
    dims = list(g.draw(st.permutations(dims)))
    if g.chance(0.3):
        dims[g.draw(st.integers(0, len(dims) - 1))] = -1
    if g.chance(0.03):
        dims[0] = dims[0] + 1  # rarely: the wrong number of elements
    return tuple(dims)


def shape_op(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    t = g.slots[v]
    nd, shape = t.ndim, tuple(t.shape)
    op = g.choice(["reshape", "view", "flatten", "unsqueeze", "squeeze", "transpose",
                   "permute", "t", "T", "mT", "expand", "repeat", "flip", "narrow", "select",
                   "split", "chunk", "unbind", "clone", "detach", "contiguous", "tril",
                   "movedim"])
    if op in ("reshape", "view"):
        return f"{v}.{op}({_factor(t.numel(), g)!r})"
    if op == "flatten":
        return f"{v}.flatten({g.dim(nd)}, -1)" if g.chance(0.5) else f"L.flatten({v})"
    if op == "unsqueeze":
        return f"{v}.unsqueeze({g.dim(nd + 1)})"
    if op == "squeeze":
        return f"{v}.squeeze({g.dim(nd)})" if g.chance(0.6) else f"{v}.squeeze()"
    if op == "transpose":
        return f"{v}.transpose({g.dim(nd)}, {g.dim(nd)})"
    if op == "permute":
        perm = g.draw(st.permutations(range(nd)))
        return f"{v}.permute{tuple(perm)!r}" if nd != 1 else f"{v}.permute(0)"
    if op in ("t", "T", "mT"):
        return f"{v}.t()" if op == "t" else f"{v}.{op}"
    if op == "expand":
        target = tuple(g.draw(st.integers(1, 3)) if d == 1 else d for d in shape)
        lead = (2,) if g.chance(0.3) else ()
        if g.chance(0.3):
            target = tuple(-1 if g.chance(0.5) else d for d in target)
        return f"{v}.expand{lead + target!r}" if lead + target else f"{v}.expand(())"
    if op == "repeat":
        reps = tuple(g.draw(st.integers(1, 2)) for _ in range(nd + g.draw(st.integers(0, 1))))
        return f"{v}.repeat{reps!r}" if reps else None
    if op == "flip":
        return f"{v}.flip({g.dim(nd)})"
    if op in ("narrow", "select", "split", "chunk", "unbind") and nd == 0:
        return None
    if op == "narrow":
        d = g.dim(nd, bad=False)
        size = shape[d]
        start = g.draw(st.integers(0, max(size - 1, 0)))
        return f"{v}.narrow({d}, {start}, {g.draw(st.integers(0, size - start))})"
    if op == "select":
        d = g.dim(nd, bad=False)
        size = shape[d]
        return f"{v}.select({d}, {g.draw(st.integers(-size, max(size - 1, -size)))})" \
            if size else None
    if op in ("split", "chunk", "unbind"):
        d = g.dim(nd, bad=False)
        size = shape[d]
        if op == "unbind":
            return f"{v}.unbind({d})[{g.draw(st.integers(0, size - 1))}]" if size else None
        k = g.draw(st.integers(1, 3))
        pieces = math.ceil(size / k) if op == "split" else min(k, size) if size else k
        if op == "chunk" and size:
            pieces = len(range(0, size, math.ceil(size / k)))
        return f"{v}.{op}({k}, {d})[{g.draw(st.integers(0, max(pieces - 1, 0)))}]"
    if op == "tril":
        return f"{v}.tril({g.draw(st.integers(-1, 1))})"
    if op == "movedim":
        return f"{v}.movedim({g.dim(nd)}, {g.dim(nd)})"
    return f"{v}.{op}()"


def getitem(g: Generator) -> str | None:
    v = g.slot(lambda t: t.ndim > 0)
    if v is None:
        return None
    t = g.slots[v]
    return f"{v}[{_index(g, tuple(t.shape), advanced=g.chance(0.4))}]"


def _index(g: Generator, shape: tuple[int, ...], advanced: bool) -> str:
    """An index expression for a tensor of ``shape``: basic (ints, slices, None, ...), or
    advanced (an index tensor, a bool mask)."""
    if advanced:
        kind = g.choice(["ints", "mask", "list"])
        if kind == "mask":
            return g.const(shape[:g.draw(st.integers(1, len(shape)))], "bool")
        size = shape[0]
        n = g.draw(st.integers(0, 4))
        idx = [g.draw(st.integers(-size, size - 1)) if size else 0 for _ in range(n)]
        if g.chance(0.04) and 0 not in shape:  # (PyTorch checks no index into nothing)
            idx.append(size)  # rarely out of range
        return f"L.tensor({idx!r}, dtype=L.int64)" if kind == "ints" or not idx else repr(idx)
    parts: list[str] = []
    for size in shape[:g.draw(st.integers(1, len(shape)))]:
        kind = g.choice(["int", "slice", "slice", "full", "none"])
        if kind == "int" and size:
            parts.append(str(g.draw(st.integers(-size, size - 1))))
        elif kind == "slice":
            start = g.draw(st.integers(-size - 1, size + 1))
            stop = g.choice([None, g.draw(st.integers(-size - 1, size + 1))])
            step = g.choice([None, 1, 2, 3])
            parts.append(f"{start}:{'' if stop is None else stop}"
                         + ("" if step is None else f":{step}"))
        elif kind == "none":
            parts.append("None")
        else:
            parts.append(":")
    if g.chance(0.15):
        parts.insert(g.draw(st.integers(0, len(parts))), "...")
    return ", ".join(parts)


def indexing(g: Generator) -> str | None:
    v = g.slot(lambda t: t.ndim > 0)
    if v is None:
        return None
    t = g.slots[v]
    nd, shape = t.ndim, tuple(t.shape)
    op = g.choice(["gather", "index_select", "masked_fill", "where", "sort", "argsort",
                   "take_along"])
    d = g.dim(nd, bad=False)
    size = shape[d]
    if op in ("gather", "take_along"):
        ishape = tuple(g.draw(st.integers(1, 3)) if i == d else g.draw(st.integers(1, s))
                       if s else 0 for i, s in enumerate(shape))
        idx = g.const(ishape, "int64", low=-1 if g.chance(0.1) else 0, high=max(size - 1, 0)
                      + (1 if g.chance(0.05) else 0))
        return f"{v}.gather({d}, {idx})" if op == "gather" else f"L.gather({v}, {d}, {idx})"
    if op == "index_select":
        idx = g.const((g.draw(st.integers(0, 4)),), "int64",
                      low=-1 if g.chance(0.1) else 0, high=max(size - 1, 0))
        return f"{v}.index_select({d}, {idx})"
    if op == "masked_fill":
        mask = g.const(_broadcastable_to(shape, g), "bool")
        return f"{v}.masked_fill({mask}, {g.scalar(_dtype(t))})"
    if op == "where":
        cond = g.const(_broadcastable_to(shape, g), "bool")
        return f"L.where({cond}, {v}, {_other_operand(g, t)})"
    if op == "sort":
        desc = ", descending=True" if g.chance(0.5) else ""
        return f"{v}.sort(dim={d}{desc}, stable=True).{g.choice(['values', 'indices'])}"
    return f"{v}.argsort(dim={d}, stable=True)"


def matmul(g: Generator) -> str | None:
    v = g.slot(lambda t: t.ndim >= 1 and t.dtype.is_floating_point)
    if v is None:
        return None
    t = g.slots[v]
    k = t.shape[-1]
    if g.chance(0.05):
        k += 1  # rarely: shapes that do not align
    shape = g.choice([(k,), (k, g.draw(st.integers(1, 3))),
                      (2, k, g.draw(st.integers(1, 3)))])
    other = g.slot(lambda u: tuple(u.shape) == shape and u.dtype == t.dtype)
    if other is None:
        grad = ", requires_grad=True" if g.chance(0.5) else ""
        other = f"L.tensor({g.array(shape, _dtype(t))}{grad})"
    return g.choice([f"{v} @ {other}", f"L.matmul({v}, {other})"])


def convert(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    return g.choice([f"{v}.float()", f"{v}.double()", f"{v}.long()", f"{v}.int()",
                     f"{v}.bool()", f"{v}.to(L.float64)", f"{v}.to(L.int32)", f"{v}.half()",
                     f"{v}.to(L.float16)"])


def join(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    t = g.slots[v]
    same = [n for n, u in g.slots.items() if tuple(u.shape) == tuple(t.shape)]
    others = [g.choice(same) for _ in range(g.draw(st.integers(1, 2)))]
    op = g.choice(["cat", "stack"])
    d = g.dim(t.ndim + (op == "stack"), bad=g.chance(0.5))
    return f"L.{op}([{', '.join([v] + others)}], {d})"


def functional(g: Generator) -> str | None:
    v = g.slot(lambda t: t.dtype.is_floating_point)
    if v is None:
        return None
    t = g.slots[v]
    nd, shape = t.ndim, tuple(t.shape)
    op = g.choice(["softmax", "log_softmax", "gelu", "silu", "leaky_relu", "elu", "softplus",
                   "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
                   "bce_logits", "layer_norm", "linear", "normalize", "dropout0", "clamp"])
    if op in ("softmax", "log_softmax"):
        return f"F.{op}({v}, dim={g.dim(nd)})"
    if op in ("gelu", "silu", "leaky_relu", "elu", "softplus"):
        return f"F.{op}({v})"
    if op in ("cross_entropy", "nll_loss"):
        if nd not in (1, 2) or not shape[-1]:
            return None
        classes = shape[-1]
        tshape = () if nd == 1 else (shape[0],)
        target = g.const(tshape, "int64", low=-1 if g.chance(0.05) else 0,
                         high=classes - 1 + (1 if g.chance(0.05) else 0))
        red = g.choice(["", ", reduction='sum'", ", reduction='none'"])
        return f"F.{op}({v}, {target}{red})"
    if op in ("mse_loss", "l1_loss", "smooth_l1_loss"):
        target = g.slot(lambda u: tuple(u.shape) == shape and u.dtype == t.dtype) or \
            f"L.tensor({g.array(shape, _dtype(t))})"
        return f"F.{op}({v}, {target})"
    if op == "bce_logits":
        target = g.const(shape, _dtype(t), low=0, high=1)
        return f"F.binary_cross_entropy_with_logits({v}, {target})"
    if op == "layer_norm":
        if nd == 0:
            return None
        return f"F.layer_norm({v}, {shape[-1:]!r})"
    if op == "linear":
        if nd == 0:
            return None
        w = g.array((g.draw(st.integers(1, 3)), shape[-1]), _dtype(t))
        w = f"L.tensor({w}, requires_grad=True)"
        return f"F.linear({v}, {w})"
    if op == "normalize":
        return f"F.normalize({v}, dim={g.dim(nd)})" if nd else None
    if op == "dropout0":
        return f"F.dropout({v}, p=0.0)"
    lo, hi = sorted(g.choice([-1.0, -0.5, 0.0, 0.5, 1.0]) for _ in range(2))
    return f"{v}.clamp({lo}, {hi})"


# -- in-place families (views and bases) -------------------------------------------------------
INPLACE = ("add_", "sub_", "mul_", "div_", "clamp_", "zero_", "fill_", "copy_", "neg_",
           "sqrt_", "pow_", "+=", "-=", "*=", "/=", "masked_fill_")


def inplace(g: Generator) -> str | None:
    v = g.slot()
    if v is None:
        return None
    t = g.slots[v]
    target = v if g.chance(0.4) or t.ndim == 0 else _view_target(g, v, tuple(t.shape))
    op = g.choice(INPLACE)
    if op in ("zero_", "neg_", "sqrt_"):
        return f"{target}.{op}()"
    if op == "fill_":
        return f"{target}.fill_({g.scalar(_dtype(t))})"
    if op == "clamp_":
        return f"{target}.clamp_(-1.0, 1.0)" if _is_float(t) else f"{target}.clamp_(0, 2)"
    if op == "masked_fill_":
        return f"{target}.masked_fill_({v} > 0, {g.scalar(_dtype(t))})"
    other = _other_operand(g, t)
    if op == "copy_":
        return f"{target}.copy_({other})"
    if op in ("+=", "-=", "*=", "/="):
        return f"{target} {op} {other}"
    return f"{target}.{op}({other})"


def _view_target(g: Generator, v: str, shape: tuple[int, ...]) -> str:
    """A strided view of ``v`` for an in-place op to write through: basic indexing, or a
    view op (narrow, a split/chunk/unbind piece, a transpose, the diagonal)."""
    kind = g.choice(["index", "index", "narrow", "split", "chunk", "unbind", "t", "diagonal"])
    nd = len(shape)
    d = g.dim(nd, bad=False)
    size = shape[d]
    if kind == "narrow":
        start = g.draw(st.integers(0, max(size - 1, 0)))
        return f"{v}.narrow({d}, {start}, {g.draw(st.integers(0, size - start))})"
    if kind in ("split", "chunk"):
        k = g.draw(st.integers(1, 3))
        pieces = len(range(0, size, math.ceil(size / k))) if size else (
            k if kind == "chunk" else 1)
        return f"{v}.{kind}({k}, {d})[{g.draw(st.integers(0, pieces - 1))}]"
    if kind == "unbind" and size:
        return f"{v}.unbind({d})[{g.draw(st.integers(0, size - 1))}]"
    if kind == "t" and nd <= 2:
        index = _index(g, shape[::-1], False) if g.chance(0.5) else ""
        return f"{v}.t()[{index}]" if index else f"{v}.t()"
    if kind == "diagonal" and nd >= 2:
        return f"{v}.diagonal()"
    return f"{v}[{_index(g, shape, False)}]"


def requires_grad(g: Generator) -> str | None:
    """``requires_grad_()`` in the middle of a program: on a float leaf that needs no
    gradient (its views taken before now require grad, with no history), or
    ``requires_grad_(False)`` on one that does."""
    v = g.slot(lambda t: t.is_leaf and t.dtype.is_floating_point)
    if v is None:
        return None
    off = g.slots[v].requires_grad and g.chance(0.5)
    return f"{v}.requires_grad_({'False' if off else ''})"


def setitem(g: Generator) -> str | None:
    v = g.slot(lambda t: t.ndim > 0)
    if v is None:
        return None
    t = g.slots[v]
    index = _index(g, tuple(t.shape), advanced=g.chance(0.4))
    kind = g.choice(["scalar", "tensor", "augmented"])
    if kind == "scalar":
        return f"{v}[{index}] = {g.scalar(_dtype(t))}"
    if kind == "augmented":
        return f"{v}[{index}] += {g.scalar(_dtype(t))}"
    value = g.slot(lambda u: u.ndim <= 1 and u.dtype == t.dtype)
    if value is None or g.chance(0.5):
        value = f"L.tensor({g.array((), _dtype(t))}" + (
            ", requires_grad=True)" if _is_float(t) and g.chance(0.5) else ")")
    return f"{v}[{index}] = {value}"


FUNCTIONAL_FAMILIES: dict[str, Callable[[Generator], str | None]] = {
    "input": new_input, "unary": unary, "binary": binary, "reduction": reduction,
    "shape": shape_op, "getitem": getitem, "indexing": indexing, "matmul": matmul,
    "convert": convert, "join": join, "functional": functional,
    "requires_grad": requires_grad,
}
INPLACE_FAMILIES: dict[str, Callable[[Generator], str | None]] = {
    "inplace": inplace, "setitem": setitem,
}
STATEMENT_FAMILIES = set(INPLACE_FAMILIES) | {"requires_grad"}
