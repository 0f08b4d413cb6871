"""OpInfo-lite: every engine op with sample inputs, shared by the gradient checks and the
PyTorch oracle tests.

A sample is a function ``fn(L, *tensors)`` written once against the PyTorch API, so the same
code runs with ``L = dyngraph`` and ``L = torch``, and a list of input specs. Float inputs
require grad (unless marked constant); integer and boolean inputs are indices and masks.
Samples cover 0-d tensors, broadcasting, size-1 dimensions and non-contiguous (transposed)
inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Spec:
    """How to make one input: ``kind`` in normal, positive, unit, transposed, zero_one, index,
    mask, nan, const."""

    kind: str
    shape: tuple[int, ...]
    high: int = 0

    def make(self, rng: np.random.Generator, dtype: Any) -> np.ndarray:
        shape = self.shape
        if self.kind in ("normal", "const"):
            return rng.standard_normal(shape).astype(dtype)
        if self.kind == "positive":
            return rng.uniform(0.5, 2.0, shape).astype(dtype)
        if self.kind == "unit":  # away from 0 and from each other: smooth for max/abs/clamp
            n = int(np.prod(shape))
            values = rng.permutation(np.linspace(-0.9, 0.9, n + 1)[np.arange(n + 1) != n // 2])
            return values[:n].reshape(shape).astype(dtype)
        if self.kind == "transposed":  # a non-contiguous view: the transpose of a C array
            base = rng.standard_normal(shape[::-1]).astype(dtype)
            return base.T
        if self.kind == "zero_one":  # contains an exact zero (prod's special case)
            a = rng.uniform(0.5, 1.5, shape).astype(dtype)
            a.reshape(-1)[1] = 0.0
            return a
        if self.kind == "index":
            return rng.integers(0, self.high, shape).astype(np.int64)
        if self.kind == "mask":
            return rng.random(shape) < 0.5
        if self.kind == "nan":
            a = rng.standard_normal(shape).astype(dtype)
            a.reshape(-1)[0] = np.nan
            a.reshape(-1)[-1] = np.inf
            return a
        raise ValueError(self.kind)

    @property
    def differentiable(self) -> bool:
        return self.kind in ("normal", "positive", "unit", "transposed", "zero_one")


def R(*shape: int) -> Spec:
    return Spec("normal", shape)


def P(*shape: int) -> Spec:
    return Spec("positive", shape)


def U(*shape: int) -> Spec:
    return Spec("unit", shape)


def T(*shape: int) -> Spec:
    return Spec("transposed", shape)


def Z(*shape: int) -> Spec:
    return Spec("zero_one", shape)


def C(*shape: int) -> Spec:
    return Spec("const", shape)


def I(high: int, *shape: int) -> Spec:  # noqa: E743
    return Spec("index", shape, high)


def M(*shape: int) -> Spec:
    return Spec("mask", shape)


def N(*shape: int) -> Spec:
    return Spec("nan", shape)


@dataclass
class Sample:
    op: str
    fn: Callable[..., Any]
    specs: tuple[Spec, ...]
    grad: bool = True
    torch_fn: Callable[..., Any] | None = None  # where PyTorch spells it differently
    note: str = ""
    id: str = field(default="")


def _pad(L: Any, x: Any) -> Any:
    if L.__name__ == "torch":
        return L.nn.functional.pad(x, (1, 2, 0, 1), value=0.5)
    from dyngraph.engine.functions_shape import pad

    return pad(x, (1, 2, 0, 1), value=0.5)


def _gelu(approximate: str) -> Callable[..., Any]:
    def fn(L: Any, x: Any) -> Any:
        if L.__name__ == "torch":
            return L.nn.functional.gelu(x, approximate=approximate)
        return L.gelu(x, approximate=approximate)

    return fn


def _leaky(L: Any, x: Any) -> Any:
    if L.__name__ == "torch":
        return L.nn.functional.leaky_relu(x, 0.2)
    return L.leaky_relu(x, 0.2)


def _inplace_view(change: Callable[..., Any]) -> Callable[..., Any]:
    """A program changing ``y = a * 1`` in place through a view of it, then using ``y``."""

    def fn(L: Any, a: Any, b: Any) -> Any:
        y = a * 1
        change(y, b)
        return y

    return fn


def _view_after_base_changed(L: Any, a: Any, b: Any) -> Any:
    y = a * 1
    v = y[:1].expand(3, 3)  # a view taken before the change, read after it
    w = y.t()[1]
    y.mul_(b)
    return v * 2 + w.unsqueeze(0)


def _add_at_index(L: Any, a: Any) -> Any:
    y = a * 1
    y[L.tensor([3, 0])] += 1.0  # (repeated indices would leave which write wins undefined)
    return y * y


S = Sample
SAMPLES: list[Sample] = [
    # arithmetic, with broadcasting, size-1 dims, 0-d and transposed inputs
    S("add", lambda L, a, b: a + b, (R(2, 3), R(2, 3))),
    S("add", lambda L, a, b: a + b, (R(2, 3), R(3)), note="broadcast"),
    S("add", lambda L, a, b: L.add(a, b, alpha=2), (R(2, 1), R(1, 3)), note="size-1"),
    S("add", lambda L, a, b: a + b, (R(), R(2)), note="0-d"),
    S("add", lambda L, a, b: a + b, (T(3, 2), R(3, 2)), note="transposed"),
    S("add", lambda L, a: 2.5 + a, (R(2, 2),), note="scalar"),
    S("sub", lambda L, a, b: a - b, (R(2, 3), R(3))),
    S("sub", lambda L, a: 1 - a, (T(2, 3),), note="rsub"),
    S("mul", lambda L, a, b: a * b, (R(4, 1), R(1, 3))),
    S("mul", lambda L, a, b: a * b, (R(), T(2, 3)), note="0-d"),
    S("mul", lambda L, a, b: a * b, (R(2, 3), C(2, 3)), note="constant"),
    S("div", lambda L, a, b: a / b, (R(2, 3), P(3))),
    S("div", lambda L, a: 2.0 / a, (P(2, 3),), note="rdiv"),
    S("neg", lambda L, a: -a, (T(2, 3),)),
    S("pow", lambda L, a: a**2, (R(2, 3),)),
    S("pow", lambda L, a: a**-1.5, (P(3),), note="negative float"),
    S("pow", lambda L, a, b: a**b, (P(2, 3), R(3)), note="tensor exponent"),
    S("pow", lambda L, a: 2.0**a, (R(2, 2),), note="rpow"),
    S("pow", lambda L, a: L.pow(a, 0.0), (R(2),), note="zero exponent"),
    # unary
    S("exp", lambda L, a: a.exp(), (R(2, 3),)),
    S("exp", lambda L, a: L.exp(a), (R(),), note="0-d"),
    S("log", lambda L, a: a.log(), (P(2, 3),)),
    S("sqrt", lambda L, a: a.sqrt(), (P(3, 2),)),
    S("log1p", lambda L, a: a.log1p(), (P(2, 3),)),
    S("expm1", lambda L, a: L.expm1(a), (R(2, 3),)),
    S("log2", lambda L, a: a.log2(), (P(3),)),
    S("log10", lambda L, a: L.log10(a), (P(2, 3),)),
    S("rsqrt", lambda L, a: L.rsqrt(a), (P(4),)),
    S("abs", lambda L, a: a.abs(), (U(2, 3),)),
    S("sin", lambda L, a: a.sin(), (T(2, 3),)),
    S("cos", lambda L, a: L.cos(a), (R(3),)),
    S("tanh", lambda L, a: a.tanh(), (R(2, 3),)),
    S("sigmoid", lambda L, a: a.sigmoid(), (R(2, 3),)),
    S("relu", lambda L, a: a.relu(), (U(2, 3),)),
    S("relu", lambda L, a: L.relu(a), (T(3, 2),), note="transposed"),
    S("gelu", _gelu("none"), (R(2, 3),)),
    S("gelu", _gelu("tanh"), (R(3),), note="tanh"),
    S("leaky_relu", _leaky, (U(2, 3),)),
    S("clamp", lambda L, a: a.clamp(-0.45, 0.55), (U(3, 3),)),
    S("clamp", lambda L, a: L.clamp(a, min=0.1), (U(2, 3),), note="min only"),
    S("clamp", lambda L, a: a.clamp(max=-0.2), (U(2, 3),), note="max only"),
    S("clamp", lambda L, a, lo, hi: L.clamp(a, lo, hi), (U(2, 3), R(3), R(2, 1)),
      note="tensor bounds"),
    S("clamp", lambda L, a, lo: a.clamp(min=lo), (U(3), R(2, 3)), note="tensor min"),
    S("maximum", lambda L, a, b: L.maximum(a, b), (U(2, 3), U(3))),
    S("minimum", lambda L, a, b: L.minimum(a, b), (U(2, 1), U(1, 3))),
    S("where", lambda L, m, a, b: L.where(m, a, b), (M(2, 3), R(2, 3), R(3))),
    S("where", lambda L, m, a: a.where(m, 0.0), (M(3,), R(2, 3)), note="scalar other"),
    S("square", lambda L, a: L.square(a), (R(3),)),
    S("sign", lambda L, a: a.sign() * a, (U(2, 3),), note="zero grad"),
    S("floor", lambda L, a: a.floor() + a, (U(2, 3),), note="zero grad"),
    S("round", lambda L, a: a.round() * a, (U(5),), note="zero grad"),
    S("clone", lambda L, a: a.clone(), (T(2, 3),)),
    S("to", lambda L, a: a.to(L.float64) * 2, (R(2, 3),)),
    # linear algebra
    S("matmul", lambda L, a, b: a @ b, (R(2, 3), R(3, 4))),
    S("matmul", lambda L, a, b: a @ b, (R(3), R(3, 4)), note="vector-matrix"),
    S("matmul", lambda L, a, b: L.matmul(a, b), (R(2, 3), R(3)), note="matrix-vector"),
    S("matmul", lambda L, a, b: a @ b, (R(3), R(3)), note="dot"),
    S("matmul", lambda L, a, b: a @ b, (R(2, 2, 3), R(3, 4)), note="batched"),
    S("matmul", lambda L, a, b: a @ b, (R(2, 1, 2, 3), R(3, 3, 2)), note="broadcast batch"),
    S("matmul", lambda L, a, b: a @ b, (T(2, 3), T(3, 2)), note="transposed"),
    S("matmul", lambda L, a, b: L.mm(a, b), (R(2, 3), R(3, 2)), note="mm"),
    S("matmul", lambda L, a, b: L.bmm(a, b), (R(2, 2, 3), R(2, 3, 2)), note="bmm"),
    S("matmul", lambda L, a, b: L.outer(a, b), (R(3), R(2)), note="outer"),
    S("einsum", lambda L, a, b: L.einsum("bij,bjk->bik", a, b), (R(2, 2, 3), R(2, 3, 2))),
    S("einsum", lambda L, a, b: L.einsum("ij,kj", a, b), (R(2, 3), T(4, 3)), note="implicit"),
    S("einsum", lambda L, a: L.einsum("ijk->j", a), (R(2, 3, 2),), note="sum out"),
    S("einsum", lambda L, a, b: L.einsum("i,j->ij", [a, b]), (R(3), R(2)), note="list"),
    S("einsum", lambda L, a, b: L.einsum("ij,jk->i", a, b), (R(2, 3), R(3, 4)),
      note="summed in both"),
    # reductions
    S("sum", lambda L, a: a.sum(), (R(2, 3),)),
    S("sum", lambda L, a: a.sum(1), (T(3, 2),), note="dim"),
    S("sum", lambda L, a: a.sum((0, 2), keepdim=True), (R(2, 3, 2),), note="dims keepdim"),
    S("sum", lambda L, a: a.sum(-1), (R(),), note="0-d"),
    S("mean", lambda L, a: a.mean(), (R(2, 3),)),
    S("mean", lambda L, a: L.mean(a, dim=[0, 1]), (R(2, 3, 2),), note="dims"),
    S("mean", lambda L, a: a.mean(0, keepdim=True), (T(2, 3),), note="keepdim"),
    S("max", lambda L, a: a.max(), (U(2, 3),)),
    S("max", lambda L, a: a.max(1)[0], (U(2, 3),), note="dim"),
    S("max", lambda L, a: a.max(0, keepdim=True).values, (U(3, 2),), note="keepdim"),
    S("max", lambda L, a, b: L.max(a, b), (U(2, 3), U(2, 3)), note="binary"),
    S("min", lambda L, a: a.min(), (U(2, 3),)),
    S("min", lambda L, a: L.min(a, -1).values, (U(2, 3),), note="dim"),
    S("amax", lambda L, a: a.amax((0, 1)), (U(2, 3, 2),)),
    S("amin", lambda L, a: L.amin(a, 1, keepdim=True), (U(2, 3),)),
    S("var", lambda L, a: a.var(), (R(2, 3),)),
    S("var", lambda L, a: a.var(1), (R(2, 3),), note="dim"),
    S("var", lambda L, a: a.var(0, keepdim=True, correction=0), (T(2, 3),), note="biased"),
    S("var", lambda L, a: L.var(a, 1, False), (R(2, 3),), note="unbiased=False"),
    S("std", lambda L, a: a.std(), (R(2, 3),)),
    S("std", lambda L, a: a.std(-1, keepdim=True), (R(2, 3),), note="dim"),
    S("prod", lambda L, a: a.prod(), (P(2, 3),)),
    S("prod", lambda L, a: a.prod(1), (Z(2, 3),), note="with a zero"),
    S("prod", lambda L, a: a.prod(0, keepdim=True), (Z(3, 2),), note="keepdim zero"),
    S("logsumexp", lambda L, a: a.logsumexp(1), (R(2, 3),)),
    S("logsumexp", lambda L, a: L.logsumexp(a, (0, 1)), (R(2, 3),), note="dims"),
    S("softmax", lambda L, a: a.softmax(1), (R(2, 3),)),
    S("softmax", lambda L, a: L.softmax(a, 0), (T(3, 2),), note="dim 0"),
    S("log_softmax", lambda L, a: a.log_softmax(-1), (R(2, 3),)),
    S("norm", lambda L, a: a.norm(), (R(2, 3),)),
    S("norm", lambda L, a: a.norm(dim=1), (R(2, 3),), note="dim"),
    S("norm", lambda L, a: L.norm(a, p=1), (U(2, 3),), note="p=1"),
    S("cumsum", lambda L, a: a.cumsum(1), (R(2, 3),)),
    # shape
    S("reshape", lambda L, a: a.reshape(3, 2), (R(2, 3),)),
    S("reshape", lambda L, a: a.view(-1), (R(2, 3),), note="view -1"),
    S("reshape", lambda L, a: a.reshape(-1, 2), (T(2, 3),), note="transposed"),
    S("reshape", lambda L, a: a.reshape(()), (R(1, 1),), note="to 0-d"),
    S("reshape", lambda L, a: a.flatten(), (R(2, 3, 2),), note="flatten"),
    S("reshape", lambda L, a: L.flatten(a, 1), (R(2, 3, 2),), note="flatten 1"),
    S("transpose", lambda L, a: a.transpose(0, 1), (R(2, 3),)),
    S("transpose", lambda L, a: a.T, (T(2, 3),), note="T"),
    S("transpose", lambda L, a: a.t(), (R(3, 2),), note="t"),
    S("permute", lambda L, a: a.permute(2, 0, 1), (R(2, 3, 2),)),
    S("permute", lambda L, a: L.permute(a, (1, 0)), (T(2, 3),), note="function"),
    S("squeeze", lambda L, a: a.squeeze(1), (R(2, 1, 3),)),
    S("squeeze", lambda L, a: a.squeeze(), (R(1, 3, 1),), note="all"),
    S("unsqueeze", lambda L, a: a.unsqueeze(0), (R(2, 3),)),
    S("unsqueeze", lambda L, a: a.unsqueeze(-1), (R(),), note="0-d"),
    S("expand", lambda L, a: a.expand(2, 3), (R(1, 3),)),
    S("expand", lambda L, a: a.expand(2, -1, 4), (R(3, 1),), note="new dim"),
    S("expand", lambda L, a, b: a.expand_as(b), (R(3),C(2, 3)), note="expand_as"),
    S("repeat", lambda L, a: a.repeat(2, 1), (R(2, 3),)),
    S("repeat", lambda L, a: a.repeat(2, 2), (R(3),), note="new dim"),
    S("getitem", lambda L, a: a[0], (R(2, 3),)),
    S("getitem", lambda L, a: a[:, 1:], (T(3, 3),), note="slice"),
    S("getitem", lambda L, a: a[None, ..., 0], (R(2, 3),), note="None ellipsis"),
    S("getitem", lambda L, a: a[[0, 2, 0]], (R(3, 2),), note="repeated ints"),
    S("getitem", lambda L, a, i: a[i], (R(4, 2), I(4, 5)), note="index tensor"),
    S("getitem", lambda L, a, m: a[m], (R(2, 3), M(2, 3)), note="bool mask"),
    S("getitem", lambda L, a: a[::2, -1], (R(4, 3),), note="step"),
    S("getitem", lambda L, a: a[1:3, [0, 2]], (R(4, 3),), note="mixed"),
    S("masked_fill", lambda L, a, m: a.masked_fill(m, 0.5), (R(2, 3), M(2, 3))),
    S("masked_fill", lambda L, a, m: L.masked_fill(a, m, -1.0), (R(2, 3), M(3)), note="bcast"),
    S("gather", lambda L, a, i: a.gather(1, i), (R(2, 3), I(3, 2, 4))),
    S("gather", lambda L, a, i: L.gather(a, 0, i), (R(3, 4), I(3, 2, 2)), note="smaller index"),
    S("index_select", lambda L, a, i: a.index_select(0, i), (R(3, 2), I(3, 5))),
    S("index_select", lambda L, a, i: L.index_select(a, 1, i), (T(2, 3), I(3, 2)), note="dim1"),
    S("cat", lambda L, a, b: L.cat([a, b], 1), (R(2, 3), R(2, 1))),
    S("cat", lambda L, a, b, c: L.cat((a, b, c)), (R(1, 2), T(2, 2), R(3, 2)), note="three"),
    S("stack", lambda L, a, b: L.stack([a, b]), (R(2, 3), R(2, 3))),
    S("stack", lambda L, a, b: L.stack([a, b], 2), (R(2, 3), T(2, 3)), note="last"),
    S("split", lambda L, a: a.split(2, 1), (R(2, 5),)),
    S("split", lambda L, a: L.split(a, [1, 2], 0), (R(3, 2),), note="sizes"),
    S("split", lambda L, a: a.chunk(2, 0), (R(3, 2),), note="chunk"),
    S("split", lambda L, a: a.narrow(1, 1, 2), (R(2, 4),), note="narrow"),
    S("select", lambda L, a: a.unbind(1), (R(2, 3),), note="unbind"),
    S("select", lambda L, a: a.select(0, -1), (R(3, 2),)),
    S("diagonal", lambda L, a: a.diagonal(), (R(3, 4),)),
    S("diagonal", lambda L, a: L.diagonal(a, 1, 0, 2), (T(2, 3, 3),), note="offset dims"),
    # in-place changes through views: the base's CopySlices history, the views' AsStrided
    S("copy_slices", _inplace_view(lambda y, b: y[1:].mul_(b)), (R(3, 2), R(2, 2))),
    S("copy_slices", _inplace_view(lambda y, b: y.__setitem__((slice(None), 0), b)),
      (R(2, 3), R(2)), note="setitem"),
    S("copy_slices", _inplace_view(lambda y, b: y.t()[0].unsqueeze(0).add_(b)),
      (T(2, 3), R(1, 2)), note="transposed unsqueezed"),
    S("copy_slices", _inplace_view(lambda y, b: y.diagonal().mul_(b)), (R(3, 3), R(3)),
      note="diagonal"),
    S("copy_slices", _inplace_view(lambda y, b: y.view(6)[::2].copy_(b)), (R(2, 3), R(3)),
      note="copy_ through view"),
    S("as_strided", _view_after_base_changed, (R(3, 3), R(3, 3))),
    S("index_put", _inplace_view(lambda y, b: y.__setitem__(y.detach() > 0, b)),
      (R(2, 3), R()), note="mask"),
    S("index_put", _add_at_index, (R(4, 2),), note="y[i] += 1"),
    S("tril", lambda L, a: a.tril(), (R(3, 3),)),
    S("tril", lambda L, a: L.tril(a, -1), (R(2, 3, 3),), note="batched"),
    S("triu", lambda L, a: a.triu(1), (T(3, 4),)),
    S("flip", lambda L, a: a.flip(0), (R(3, 2),)),
    S("scatter_add", lambda L, a, i, b: a.scatter_add(1, i, b), (R(2, 4), I(4, 2, 3), R(2, 3))),
    S("scatter_add", lambda L, a, i, b: L.scatter_add(a, 0, i, b), (R(3, 2), I(3, 4, 2), R(4, 2)),
      note="more rows"),
    S("sort", lambda L, a: a.sort(1)[0], (U(2, 4),)),
    S("sort", lambda L, a: L.sort(a, 0, descending=True).values, (U(3, 2),), note="descending"),
    S("topk", lambda L, a: a.topk(2)[0], (U(2, 4),)),
    S("topk", lambda L, a: L.topk(a, 2, dim=0, largest=False).values, (U(3, 2),), note="smallest"),
    S("flip", lambda L, a: L.flip(a, (0, 1)), (R(3, 2),), note="two dims"),
    S("pad", _pad, (R(2, 3),)),
    # not differentiable: forward only
    S("eq", lambda L, a, b: a == b, (I(3, 2, 3), I(3, 3)), grad=False),
    S("ne", lambda L, a, b: a != b, (I(3, 2, 3), I(3, 3)), grad=False),
    S("lt", lambda L, a, b: a < b, (R(2, 3), R(3)), grad=False),
    S("le", lambda L, a: a <= 0.0, (R(2, 3),), grad=False),
    S("gt", lambda L, a, b: L.gt(a, b), (R(2, 3), R(2, 3)), grad=False),
    S("ge", lambda L, a: a >= 0.1, (R(2, 3),), grad=False),
    S("logical_and", lambda L, a, b: L.logical_and(a, b), (M(2, 3), M(3)), grad=False),
    S("bitwise_and", lambda L, a, b: a & b, (M(2, 3), M(3)), grad=False, note="bools"),
    S("bitwise_and", lambda L, a, b: a & b, (I(7, 2, 3), I(7, 3)), grad=False, note="ints"),
    S("bitwise_or", lambda L, a, b: a | b, (I(7, 2, 3), I(7, 3)), grad=False),
    S("bitwise_xor", lambda L, a, b: a ^ b, (I(7, 2, 3), M(2, 3)), grad=False),
    S("logical_or", lambda L, a, b: L.logical_or(a, b), (M(2, 3), M(2, 3)), grad=False),
    S("logical_not", lambda L, a: ~a, (M(2, 3),), grad=False),
    S("logical_xor", lambda L, a, b: L.logical_xor(a, b), (M(2, 3), M(2, 3)), grad=False),
    S("isnan", lambda L, a: a.isnan(), (N(2, 3),), grad=False),
    S("isinf", lambda L, a: L.isinf(a), (N(2, 3),), grad=False),
    S("argmax", lambda L, a: a.argmax(), (U(2, 3),), grad=False),
    S("argmax", lambda L, a: a.argmax(1), (U(2, 3),), grad=False, note="dim"),
    S("argmin", lambda L, a: L.argmin(a, 0, keepdim=True), (U(2, 3),), grad=False),
    S("max", lambda L, a: a.max(1).indices, (U(2, 3),), grad=False, note="indices"),
    S("any", lambda L, a: a.any(1), (M(2, 3),), grad=False),
    S("argsort", lambda L, a: a.argsort(), (U(2, 4),), grad=False),
    S("argsort", lambda L, a: L.argsort(a, 0, descending=True), (U(3, 2),), grad=False,
      note="descending"),
    S("topk", lambda L, a: a.topk(3, 1).indices, (U(2, 4),), grad=False, note="indices"),
    S("all", lambda L, a: L.all(a), (M(2, 3),), grad=False),
]

for _i, _s in enumerate(SAMPLES):
    _s.id = f"{_s.op}-{_s.note or 'basic'}".replace(" ", "_") + f"-{_i}"


def make_inputs(sample: Sample, dtype: Any, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [spec.make(rng, dtype) for spec in sample.specs]


def as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]
