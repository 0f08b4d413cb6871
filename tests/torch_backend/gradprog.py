"""Random programs for the differential test against autograd (test_autograd_differential.py).

A program is a list of Python lines written against the PyTorch API with ``L`` standing
for the library (``v3, v4 = v1.split(2, dim=0)``, ``v2[:1].mul_(3.0)``,
``g5, = L.autograd.grad(v4.sum(), [x0], create_graph=True)``) over input arrays ``A0,
A1 ...``, so a failing one prints as code that reproduces it. ``Generator`` draws lines one
at a time with hypothesis, running each on a scratch copy of the program as it goes: it
knows every value's shape, and a line that raises there (an in-place op on a leaf, a
second backward through freed buffers, an op the numpy engine does not have) is dropped,
so every program runs to its end.

Families (each a list of line makers; ``FAMILIES``):

- ``multi``: ops with several outputs (split, chunk, unbind, tensor_split, max/min with a
  dim, sort, topk, var_mean, std_mean, aminmax, linalg.qr/slogdet/eigh, unique with
  counts, a custom ``autograd.Function`` with two outputs) among elementwise ops,
  broadcasting, reductions and matmul;
- ``views``: views, in-place ops on them and on their bases, setitem, a custom Function
  that changes its input in place (``ctx.mark_dirty``), ``no_grad`` islands;
- ``passes``: several backward passes: ``retain_graph``, ``torch.autograd.grad`` (with
  ``create_graph=True``, its gradients used again), hooks the user sets on tensors;
- ``modules``: ``nn.LSTM``, ``nn.GRU``, ``nn.MultiheadAttention``, ``nn.Linear`` and
  ``torch.utils.checkpoint`` among the ops above;
- ``engine``: the ``multi``, ``views`` and ``passes`` lines on dyngraph's numpy engine
  (``L = dyngraph``; the lines it does not support are dropped).

Every program ends with a loss over a random subset of its values (some outputs stay
unused) and its ``backward()``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

FAMILIES = ("multi", "views", "passes", "modules", "engine")


class Two(torch.autograd.Function):
    """A custom Function with two outputs (``x * 2``, ``x * x``)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(x)
        return x * 2, x * x

    @staticmethod
    def backward(ctx: Any, ga: torch.Tensor, gb: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return ga * 2 + gb * 2 * x


class Dirty(torch.autograd.Function):
    """A custom Function that doubles its input in place (``ctx.mark_dirty``)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return g * 2


@dataclass
class Program:
    """Input arrays and lines; ``source()`` is runnable with ``L`` bound to a library.

    ``kinds[i]`` says what line ``i`` is: ``"input"``, ``"op"``, ``"backward"`` (then
    ``roots[i]`` names the tensors it starts from), ``"hook"``, ``"module"``."""

    family: str
    arrays: list[np.ndarray] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    roots: dict[int, list[str]] = field(default_factory=dict)

    def source(self) -> str:
        head = [f"A{i} = np.array({a.tolist()!r}, dtype=np.{a.dtype})"
                + (f".reshape({a.shape})" if a.size == 0 and a.ndim != 1 else "")
                for i, a in enumerate(self.arrays)]
        return "\n".join(head + self.lines)

    @property
    def library(self) -> str:
        return "dyngraph" if self.family == "engine" else "torch"


def environment(program: Program, lib: Any) -> dict[str, Any]:
    """The names a program's lines see (``L``, ``F``, the arrays, the custom Functions)."""
    env: dict[str, Any] = {"L": lib, "F": lib.nn.functional, "np": np, "Two": Two,
                           "Dirty": Dirty, "math": math}
    if lib is torch:
        from torch.utils.checkpoint import checkpoint

        env["checkpoint"] = checkpoint
    for i, a in enumerate(program.arrays):
        env[f"A{i}"] = a.copy()
    lib.manual_seed(0)
    return env


def run_line(line: str, env: dict[str, Any]) -> BaseException | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(line, "<program>", "exec"), env)  # noqa: S102
    except Exception as e:  # noqa: BLE001 (an outcome to compare)
        return e
    return None


def tensors(env: dict[str, Any]) -> dict[str, Any]:
    """The program's tensor values by name (``x``: leaves, ``v``: results, ``g``: grads)."""
    return {k: v for k, v in env.items() if k[:1] in "xvcg" and k[1:].isdigit()
            and hasattr(v, "requires_grad")}


def tensors_and_parameters(env: dict[str, Any]) -> dict[str, Any]:
    """``tensors(env)`` and the parameters of the program's modules (``m3.weight_ih_l0``)."""
    found = tensors(env)
    for k, m in env.items():
        if k[:1] == "m" and k[1:].isdigit() and hasattr(m, "named_parameters"):
            for name, p in m.named_parameters():
                found[f"{k}.{name}"] = p
    return found


# -- the generator -----------------------------------------------------------------------------
class Generator:
    """Draws a program of ``family``; the scratch environment runs it as it grows."""

    def __init__(self, data: Any, family: str) -> None:
        self.data = data
        self.program = Program(family)
        self.lib: Any = torch
        if family == "engine":
            import dyngraph

            self.lib = dyngraph
        self.env = environment(self.program, self.lib)
        self.count = 0
        self.backwards = 0

    # drawing
    def draw(self, strategy: Any, label: str | None = None) -> Any:
        return self.data.draw(strategy, label=label)

    def chance(self, p: float) -> bool:
        return self.draw(st.floats(0, 1)) < p

    def choice(self, options: Any) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def name(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def values(self, pred: Callable[[Any], bool] = lambda t: True) -> list[str]:
        """The names of the values so far that ``pred`` accepts (never an empty one)."""
        return [n for n, t in tensors(self.env).items() if t.numel() and pred(t)]

    def pick(self, pred: Callable[[Any], bool] = lambda t: True) -> str | None:
        names = self.values(pred)
        return self.choice(names) if names else None

    def array(self, shape: tuple[int, ...], dtype: str = "float32", scale: float = 1.0) -> str:
        seed = self.draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        a = (rng.standard_normal(shape) * scale).astype(dtype)
        self.program.arrays.append(a)
        i = len(self.program.arrays) - 1
        self.env[f"A{i}"] = a.copy()
        return f"A{i}"

    def shape(self, min_ndim: int = 1, max_ndim: int = 3) -> tuple[int, ...]:
        ndim = self.draw(st.integers(min_ndim, max_ndim))
        return tuple(self.draw(st.integers(1, 4)) for _ in range(ndim))

    # lines
    def add(self, line: str, kind: str = "op", roots: list[str] | None = None) -> bool:
        """Run ``line`` on the scratch copy; keep it if it ran."""
        if run_line(line, self.env) is not None:
            return False
        self.program.lines.append(line)
        self.program.kinds.append(kind)
        if roots:
            self.program.roots[len(self.program.lines) - 1] = roots
        return True

    def multi(self, expr: str) -> str | None:
        """``v1, v2 = expr`` for an expression with a tuple of results (their count taken
        from the scratch copy)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = eval(expr, self.env)  # noqa: S307 (our own line)
        except Exception:  # noqa: BLE001
            return None
        if not isinstance(out, tuple) or not 1 <= len(out) <= 5:
            return None
        names = [self.name() for _ in out]
        return f"{', '.join(names)}, = {expr}" if len(names) == 1 else \
            f"{', '.join(names)} = {expr}"


def _float(t: Any) -> bool:
    return t.dtype.is_floating_point if hasattr(t.dtype, "is_floating_point") else \
        "float" in str(t.dtype)


def _dtname(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


def _grad(t: Any) -> bool:
    return bool(t.requires_grad) and _float(t)


def is_leaf(t: Any) -> bool:
    """``t.is_leaf``; False where reading it raises (a view of ``split`` whose base was
    changed in place: PyTorch refuses to rebuild its node)."""
    try:
        return bool(t.is_leaf)
    except RuntimeError:
        return False


def _nonleaf(t: Any) -> bool:
    return _grad(t) and not is_leaf(t)


# -- line makers: each draws one line (or None), given the generator ----------------------
def new_input(g: Generator) -> str | None:
    name = g.name("x")
    dtype = "float64" if g.chance(0.15) else "float32"
    arr = g.array(g.shape(1, 3), dtype)
    return f"{name} = L.tensor({arr}, requires_grad=True)"


UNARY = ("L.tanh({})", "{}.exp()", "L.sigmoid({})", "{} * 2.0", "{}.abs()", "L.relu({})",
         "{}.sin()", "{}.pow(2)", "-{}", "{}.clamp(min=-0.5)", "F.softmax({}, dim=-1)",
         "{} / ({}.abs() + 1.0)")


def unary(g: Generator) -> str | None:
    a = g.pick(_float)
    if a is None:
        return None
    form = g.choice(UNARY)
    return f"{g.name()} = {form.format(a, a)}"


def binary(g: Generator) -> str | None:
    a = g.pick(_float)
    if a is None:
        return None
    shape = tuple(g.env[a].shape)
    same = g.values(lambda t: _float(t) and _broadcasts(tuple(t.shape), shape))
    if same and g.chance(0.7):
        b = g.choice(same)
    else:  # a constant that broadcasts (a trailing part of the shape, some dims 1)
        keep = g.draw(st.integers(0, len(shape)))
        sub = tuple(1 if g.chance(0.3) else d for d in shape[len(shape) - keep:])
        b = f"L.tensor({g.array(sub, _dtname(g.env[a]))})"
    op = g.choice(["+", "*", "-"])
    return f"{g.name()} = {a} {op} {b}"


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y and 1 not in (x, y):
            return False
    return True


def reduction(g: Generator) -> str | None:
    a = g.pick(lambda t: _float(t) and t.dim() >= 1)
    if a is None:
        return None
    d = g.draw(st.integers(0, g.env[a].dim() - 1))
    form = g.choice(["{}.sum(dim={})", "{}.mean(dim={})", "{}.amax(dim={})",
                     "{}.sum()", "L.cumsum({}, dim={})"])
    return f"{g.name()} = {form.format(a, d)}"


def matmul(g: Generator) -> str | None:
    a = g.pick(lambda t: _float(t) and t.dim() == 2)
    if a is None:
        return None
    n = g.env[a].shape[1]
    others = g.values(lambda t: _float(t) and t.dim() == 2 and t.shape[0] == n
                      and t.dtype == g.env[a].dtype)
    if others and g.chance(0.6):
        b = g.choice(others)
    else:
        b = f"L.tensor({g.array((n, g.draw(st.integers(1, 3))), _dtname(g.env[a]))})"
    return f"{g.name()} = {a} @ {b}"


def join(g: Generator) -> str | None:
    a = g.pick(_float)
    if a is None:
        return None
    shape, dtype = tuple(g.env[a].shape), g.env[a].dtype
    same = g.values(lambda t: tuple(t.shape) == shape and t.dtype == dtype)
    picked = [g.choice(same) for _ in range(g.draw(st.integers(1, 3)))]
    fn = g.choice(["L.cat", "L.stack"])
    return f"{g.name()} = {fn}([{', '.join(picked)}], dim=0)"


def split_like(g: Generator) -> str | None:
    a = g.pick(lambda t: _float(t) and t.dim() >= 1)
    if a is None:
        return None
    t = g.env[a]
    d = g.draw(st.integers(0, t.dim() - 1))
    n = t.shape[d]
    form = g.choice(["{a}.split({k}, dim={d})", "{a}.chunk({k}, dim={d})",
                     "{a}.unbind({d})", "L.tensor_split({a}, {k}, dim={d})",
                     "L.split({a}, [{first}, {rest}], dim={d})"])
    k = g.draw(st.integers(1, max(1, n)))
    first = g.draw(st.integers(0, n))
    return g.multi(form.format(a=a, k=k, d=d, first=first, rest=n - first))


def indexed_reduction(g: Generator) -> str | None:
    a = g.pick(lambda t: _float(t) and t.dim() >= 1)
    if a is None:
        return None
    t = g.env[a]
    d = g.draw(st.integers(0, t.dim() - 1))
    k = g.draw(st.integers(1, t.shape[d]))
    form = g.choice(["{a}.max(dim={d})", "L.min({a}, {d})", "L.sort({a}, dim={d})",
                     "L.sort({a}, dim={d}, descending=True)", "L.topk({a}, {k}, dim={d})",
                     "L.var_mean({a}, dim={d})", "L.std_mean({a}, dim={d})",
                     "L.aminmax({a}, dim={d})", "L.cummax({a}, dim={d})"])
    # (not median: on a tensor expanded from one element, PyTorch 2.13's median(dim) reads
    # memory it never wrote, a different value from run to run)
    return g.multi(form.format(a=a, d=d, k=k))


def linalg(g: Generator) -> str | None:
    a = g.pick(lambda t: _float(t) and t.dim() == 2)
    if a is None:
        return None
    m, n = g.env[a].shape
    if m >= n and g.chance(0.4):
        return g.multi(f"L.linalg.qr({a})")
    if m == n and g.chance(0.5):
        return g.multi(f"L.linalg.slogdet({a} + 3.0 * L.eye({n}, dtype={a}.dtype))")
    return g.multi(f"L.linalg.eigh({a} @ {a}.mT + L.eye({m}, dtype={a}.dtype))")


def custom(g: Generator) -> str | None:
    a = g.pick(_float)
    if a is None:
        return None
    if g.chance(0.2):
        return g.multi(f"L.unique({a}.detach().round(), return_counts=True)")
    return g.multi(f"Two.apply({a})")


# views, in-place ops, no_grad islands
def view(g: Generator) -> str | None:
    a = g.pick(lambda t: t.dim() >= 1)
    if a is None:
        return None
    t = g.env[a]
    d = g.draw(st.integers(0, t.dim() - 1))
    n = t.shape[d]
    i = g.draw(st.integers(0, n - 1))
    forms = ["{a}[{i}:]", "{a}[:{j}]", "{a}.narrow({d}, {i}, 1)", "{a}.select({d}, {i})",
             "{a}.unsqueeze(0)", "{a}.reshape(-1)", "{a}.flatten()", "{a}[..., {i}:]"]
    if t.dim() >= 2:
        forms += ["{a}.transpose(0, 1)", "{a}.T", "{a}.diagonal()", "{a}[:, {i2}]"]
    if t.shape[0] == 1 or t.dim() == 1:
        forms += ["{a}.expand(2, *{a}.shape)"]
    form = g.choice(forms)
    j = g.draw(st.integers(1, n))
    i2 = g.draw(st.integers(0, t.shape[1] - 1)) if t.dim() >= 2 else 0
    return f"{g.name()} = {form.format(a=a, i=i, j=j, d=d, i2=i2)}"


def inplace(g: Generator) -> str | None:
    a = g.pick(lambda t: _float(t) and not (is_leaf(t) and t.requires_grad))
    if a is None:
        return None
    t = g.env[a]
    forms = ["{a}.mul_(3.0)", "{a}.add_(1.5)", "{a}.clamp_(min=-1.0)", "{a}.relu_()",
             "{a}.sigmoid_()", "{a} *= 0.5", "Dirty.apply({a})"]
    if t.dim() >= 1:
        n = t.shape[0]
        k = g.draw(st.integers(1, n))
        forms += ["{a}[:{k}].mul_(3.0)", "{a}[{i}] = 2.0", "{a}[:{k}] = {b}",
                  "{a}[{i}:].add_({c})", "{a}.narrow(0, {i}, 1).mul_(-1.0)"]
        i = g.draw(st.integers(0, n - 1))
    else:
        k = i = 0
    src = g.pick(lambda s: _float(s) and s.dtype == t.dtype and tuple(s.shape)[-1:] ==
                 tuple(t.shape)[-1:]) if t.dim() >= 1 else None
    form = g.choice(forms)
    if ("{b}" in form or "{c}" in form) and src is None:
        return None
    return form.format(a=a, k=k, i=i, b=src, c=src)


def no_grad_island(g: Generator) -> str | None:
    a = g.pick(_float)
    if a is None:
        return None
    if g.chance(0.6):
        return f"with L.no_grad(): {g.name()} = {a} * 2.0 + 1.0"
    target = g.pick(lambda t: _float(t) and not is_leaf(t))
    if target is None:
        return None
    return f"with L.no_grad(): {target}.add_(0.25)"


# several backward passes
def _scalar_of(g: Generator) -> str | None:
    a = g.pick(_nonleaf)
    if a is None:
        a = g.pick(_grad)
    if a is None:
        return None
    return f"({a}.sin().sum() * {g.choice(['1.0', '0.5', '2.0'])})"


def backward_pass(g: Generator) -> tuple[str, list[str]] | None:
    s = _scalar_of(g)
    if s is None:
        return None
    name = g.name()
    g.add(f"{name} = {s}")
    roots = [name]
    leaves = g.values(lambda t: _grad(t))
    kind = g.choice(["backward", "backward", "grad", "create_graph"])
    if kind == "backward":
        return f"{name}.backward(retain_graph=True)", roots
    k = g.draw(st.integers(1, min(3, len(leaves))))
    wrt = [g.choice(leaves) for _ in range(k)]
    wrt = list(dict.fromkeys(wrt))
    outs = [g.name("g") for _ in wrt]
    lhs = ", ".join(outs) + ("," if len(outs) == 1 else "")
    create = ", create_graph=True" if kind == "create_graph" else ""
    return (f"{lhs} = L.autograd.grad({name}, [{', '.join(wrt)}], retain_graph=True, "
            f"allow_unused=True{create})"), roots


def hook(g: Generator) -> str | None:
    a = g.pick(_nonleaf)
    if a is None:
        return None
    return f"{a}.register_hook(lambda grad: grad * {g.choice(['2.0', '-1.0', '0.5'])})"


# modules
def module(g: Generator) -> str | None:
    kind = g.choice(["lstm", "gru", "mha", "linear", "checkpoint"])
    if kind == "checkpoint":
        a = g.pick(_grad)
        if a is None:
            return None
        reentrant = g.choice(["False", "True"])
        return (f"{g.name()} = checkpoint(lambda t: L.tanh(t * 2.0) * t, {a}, "
                f"use_reentrant={reentrant})")
    if kind == "linear":
        a = g.pick(lambda t: _grad(t) and t.dim() >= 1 and t.dtype == torch.float32)
        if a is None:
            return None
        m = g.name("m")
        g.add(f"{m} = L.nn.Linear({g.env[a].shape[-1]}, {g.draw(st.integers(1, 4))})",
              "module")
        return f"{g.name()} = {m}({a})"
    steps, batch, width = (g.draw(st.integers(1, 3)) for _ in range(3))
    if kind == "mha":
        width *= 2
    x = g.name("x")
    g.add(f"{x} = L.tensor({g.array((steps, batch, width))}, requires_grad=True)", "input")
    a = g.name()
    src = g.pick(lambda t: _grad(t) and t.dtype == torch.float32)
    g.add(f"{a} = {x} * 1.0" + (f" + {src}.sum() * 0.0" if src and g.chance(0.5) else ""))
    m = g.name("m")
    hidden = g.draw(st.integers(1, 3))
    if kind == "lstm":
        layers = g.draw(st.integers(1, 2))
        g.add(f"{m} = L.nn.LSTM({width}, {hidden}, num_layers={layers})", "module")
        o, h, c = g.name(), g.name(), g.name()
        return f"{o}, ({h}, {c}) = {m}({a})"
    if kind == "gru":
        g.add(f"{m} = L.nn.GRU({width}, {hidden})", "module")
        o, h = g.name(), g.name()
        return f"{o}, {h} = {m}({a})"
    g.add(f"{m} = L.nn.MultiheadAttention({width}, 2)", "module")
    o, w = g.name(), g.name()
    return f"{o}, {w} = {m}({a}, {a}, {a})"


BASIC = (unary, binary, reduction, matmul, join)
MAKERS: dict[str, tuple[Callable[[Generator], Any], ...]] = {
    "multi": BASIC + (split_like, indexed_reduction, linalg, custom) * 2,
    "views": BASIC + (view, view, inplace, inplace, no_grad_island, split_like),
    "passes": BASIC + (split_like, indexed_reduction, hook, view, inplace),
    "modules": BASIC + (module, module, split_like),
    "engine": BASIC + (split_like, indexed_reduction, view, view, inplace, inplace,
                       no_grad_island, hook),
}


def draw_program(data: Any, family: str) -> Program:
    """A program of ``family``: inputs, ops (and, for ``passes``/``engine``, backward
    passes among them), then a loss over some of its values and ``backward()``."""
    g = Generator(data, family)
    for _ in range(g.draw(st.integers(1, 2), label="inputs")):
        line = new_input(g)
        if line is not None:
            g.add(line, "input")
    makers = MAKERS[family]
    passes = family in ("passes", "engine")
    for _ in range(g.draw(st.integers(2, 9), label="ops")):
        if passes and g.chance(0.2):
            drawn = backward_pass(g)
            if drawn is not None:
                g.add(drawn[0], "backward", drawn[1])
            continue
        maker = g.choice(makers)
        line = maker(g)
        if line is not None:
            g.add(line, "hook" if maker is hook else "op")
    final_loss(g)
    return g.program


def final_loss(g: Generator) -> None:
    terms = []
    for n in g.values(_grad):
        if n.startswith("g") and not g.env[n].requires_grad:
            continue
        if g.chance(0.75):
            terms.append(f"{n}.float().sin().sum() * {len(terms) + 1}.0")
    if not terms:
        return
    g.add(f"loss = {' + '.join(terms)}")
    g.add("loss.backward()", "backward", ["loss"])
