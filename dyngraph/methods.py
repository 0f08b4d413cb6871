"""Binds the functions of ``functions.py`` to Tensor as methods and operators."""

from __future__ import annotations

from typing import Any

from . import functions as fn
from .ops import OPS
from .tensor import Tensor, apply


def _index(index: Any) -> Any:
    """Turn tensors inside an index into arrays numpy understands."""
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in index)
    return index


def _getitem(self: Tensor, index: Any) -> Tensor:
    return apply(OPS["getitem"], self, index=_index(index))


def _view(self: Tensor, *shape: Any) -> Tensor:
    return fn.reshape(self, *shape)


_METHODS: dict[str, Any] = {
    "__add__": fn.add,
    "__radd__": lambda self, other: fn.add(other, self),
    "__sub__": fn.sub,
    "__rsub__": lambda self, other: fn.sub(other, self),
    "__mul__": fn.mul,
    "__rmul__": lambda self, other: fn.mul(other, self),
    "__truediv__": fn.div,
    "__rtruediv__": lambda self, other: fn.div(other, self),
    "__neg__": fn.neg,
    "__pow__": fn.pow,
    "__rpow__": lambda self, other: fn.pow(other, self),
    "__matmul__": fn.matmul,
    "__rmatmul__": lambda self, other: fn.matmul(other, self),
    "__getitem__": _getitem,
    "add": fn.add,
    "sub": fn.sub,
    "mul": fn.mul,
    "div": fn.div,
    "neg": fn.neg,
    "pow": fn.pow,
    "matmul": fn.matmul,
    "exp": fn.exp,
    "log": fn.log,
    "tanh": fn.tanh,
    "sigmoid": fn.sigmoid,
    "relu": fn.relu,
    "sum": fn.sum,
    "mean": fn.mean,
    "reshape": fn.reshape,
    "view": _view,
    "transpose": fn.transpose,
    "T": property(lambda self: fn.transpose(self, 0, 1) if self.ndim == 2 else self),
}

for _name, _method in _METHODS.items():
    setattr(Tensor, _name, _method)
