"""Differentiable functions on tensors (``dyngraph.add``, ``dyngraph.matmul`` ...).

Each is one line of sugar over ``apply``; ``methods.py`` binds the same functions to
Tensor as methods and operators.
"""

from __future__ import annotations

from typing import Any

from .ops import OPS
from .tensor import Tensor, apply


def _dims(dim: Any) -> Any:
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    return apply(OPS["add"], input, other if alpha == 1 else other * alpha)


def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    return apply(OPS["sub"], input, other if alpha == 1 else other * alpha)


def mul(input: Any, other: Any) -> Tensor:
    return apply(OPS["mul"], input, other)


def div(input: Any, other: Any) -> Tensor:
    return apply(OPS["div"], input, other)


def neg(input: Tensor) -> Tensor:
    return apply(OPS["neg"], input)


def pow(input: Any, exponent: Any) -> Tensor:
    return apply(OPS["pow"], input, exponent)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return apply(OPS["matmul"], input, other)


def exp(input: Tensor) -> Tensor:
    return apply(OPS["exp"], input)


def log(input: Tensor) -> Tensor:
    return apply(OPS["log"], input)


def tanh(input: Tensor) -> Tensor:
    return apply(OPS["tanh"], input)


def sigmoid(input: Tensor) -> Tensor:
    return apply(OPS["sigmoid"], input)


def relu(input: Tensor) -> Tensor:
    return apply(OPS["relu"], input)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return apply(OPS["sum"], input, dim=_dims(dim), keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return apply(OPS["mean"], input, dim=_dims(dim), keepdim=keepdim)


def reshape(input: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return apply(OPS["reshape"], input, shape=tuple(int(s) for s in shape))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return apply(OPS["transpose"], input, dim0=dim0, dim1=dim1)
