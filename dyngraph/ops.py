"""The op registry: every differentiable op's numpy forward and backward, side by side.

An op is a function ``forward(*arrays, **attrs) -> (out, backward)`` where ``backward(g)``
returns one gradient per positional input (None where none flows). The backward is a
closure, so whatever it captured *is* the op's saved state; the engine drops it after
backward unless ``retain_graph=True``. Ops registered with ``saves=False`` capture no
tensors, so their graphs can be walked twice (as in PyTorch: ``(a + 1).sum()``).

Gradients may come back broadcast to the output's shape: the engine sums them down to
each input's shape. This module knows no Tensor; ``tensor.apply`` is the only caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Backward = Callable[[np.ndarray], tuple[Any, ...]]
Forward = Callable[..., tuple[Any, Backward | None]]


class OpDef:
    __slots__ = ("name", "forward", "saves", "grad_fn_name")

    def __init__(self, name: str, forward: Forward, saves: bool, grad_fn_name: str) -> None:
        self.name = name
        self.forward = forward
        self.saves = saves
        self.grad_fn_name = grad_fn_name

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"


OPS: dict[str, OpDef] = {}


def register(name: str, saves: bool = True, grad_fn: str | None = None) -> Callable[[Forward], Forward]:
    """Add an op to the registry under ``name`` (its event and graph-node name)."""

    def decorate(forward: Forward) -> Forward:
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        camel = "".join(part.capitalize() for part in name.split("_"))
        OPS[name] = OpDef(name, forward, saves, grad_fn or f"{camel}Backward0")
        return forward

    return decorate


def _shape_of(x: Any) -> tuple[int, ...]:
    return np.shape(x)


# -- elementwise arithmetic ---------------------------------------------------------------
@register("add", saves=False)
def add(a, b):
    return a + b, lambda g: (g, g)


@register("sub", saves=False)
def sub(a, b):
    return a - b, lambda g: (g, -g)


@register("mul")
def mul(a, b):
    return a * b, lambda g: (g * b, g * a)


@register("div")
def div(a, b):
    out = a / b
    return out, lambda g: (g / b, -g * out / b)


@register("neg", saves=False)
def neg(a):
    return -a, lambda g: (-g,)


@register("pow")
def pow_(a, b):
    out = a**b

    def backward(g):
        ga = g * b * a ** (b - 1) if np.ndim(b) or b != 0 else np.zeros_like(g)
        if np.isscalar(b):
            return ga, None
        with np.errstate(divide="ignore", invalid="ignore"):
            gb = g * out * np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0)
        return ga, gb

    return out, backward


# -- unary --------------------------------------------------------------------------------
@register("exp")
def exp(a):
    out = np.exp(a)
    return out, lambda g: (g * out,)


@register("log")
def log(a):
    return np.log(a), lambda g: (g / a,)


@register("tanh")
def tanh(a):
    out = np.tanh(a)
    return out, lambda g: (g * (1 - out * out),)


@register("sigmoid")
def sigmoid(a):
    # Split by sign so exp never overflows.
    e = np.exp(-np.abs(a))
    out = np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)
    return out, lambda g: (g * out * (1 - out),)


@register("relu")
def relu(a):
    mask = a > 0
    return a * mask, lambda g: (g * mask,)


# -- reductions ---------------------------------------------------------------------------
def _expand_reduced(g: np.ndarray, shape: tuple[int, ...], dim: Any, keepdim: bool) -> np.ndarray:
    """Reshape a reduced gradient so it broadcasts back over the input's shape."""
    if dim is None:
        return np.broadcast_to(g, shape)
    if not keepdim:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(d % len(shape) for d in dims)
        g = np.expand_dims(g, dims)
    return np.broadcast_to(g, shape)


@register("sum", saves=False)
def sum_(a, dim=None, keepdim=False):
    shape = a.shape
    axis = tuple(dim) if isinstance(dim, list) else dim
    return a.sum(axis=axis, keepdims=keepdim), lambda g: (
        _expand_reduced(g, shape, axis, keepdim),
    )


@register("mean", saves=False)
def mean(a, dim=None, keepdim=False):
    shape = a.shape
    axis = tuple(dim) if isinstance(dim, list) else dim
    out = a.mean(axis=axis, keepdims=keepdim)
    count = a.size // max(np.size(out), 1) if a.size else 1
    return out, lambda g: (_expand_reduced(g, shape, axis, keepdim) / count,)


# -- linear algebra -----------------------------------------------------------------------
@register("matmul", grad_fn="MmBackward0")
def matmul(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    try:
        out = a @ b
    except ValueError:
        raise RuntimeError(f"matmul: shapes {a.shape} and {b.shape} do not align") from None

    def backward(g):
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = np.expand_dims(g2, -2)
        if b.ndim == 1:
            g2 = np.expand_dims(g2, -1)
        ga = g2 @ np.swapaxes(b2, -1, -2)
        gb = np.swapaxes(a2, -1, -2) @ g2
        if a.ndim == 1:
            ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
        if b.ndim == 1:
            gb = gb.reshape(gb.shape[:-1])
        return ga, gb

    return out, backward


# -- shape --------------------------------------------------------------------------------
@register("reshape", saves=False, grad_fn="ViewBackward0")
def reshape(a, shape):
    in_shape = a.shape
    try:
        out = a.reshape(shape)
    except ValueError:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {a.size}"
        ) from None
    return out, lambda g: (g.reshape(in_shape),)


@register("transpose", saves=False)
def transpose(a, dim0, dim1):
    return np.swapaxes(a, dim0, dim1), lambda g: (np.swapaxes(g, dim0, dim1),)


@register("getitem", saves=False, grad_fn="IndexBackward0")
def getitem(a, index):
    shape, dtype = a.shape, a.dtype

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        np.add.at(full, index, g)
        return (full,)

    return a[index], backward
