"""Tensor creation: ``tensor``, ``zeros``, ``randn`` ... and the global random generator."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import to_numpy_dtype
from .tensor import DEFAULT_DTYPE, Tensor, _wrap

_rng = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed dyngraph's global random generator (creation functions, dropout, init)."""
    global _rng
    _rng = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    return _rng


def _shape(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _new(array: np.ndarray, dtype: Any, requires_grad: bool) -> Tensor:
    if dtype is not None:
        array = array.astype(to_numpy_dtype(dtype), copy=False)
    t = _wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Copy ``data`` into a new leaf tensor (float32 for Python floats, as in PyTorch)."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    return _wrap(array)


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _new(np.zeros(_shape(size), DEFAULT_DTYPE), dtype, requires_grad)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _new(np.ones(_shape(size), DEFAULT_DTYPE), dtype, requires_grad)


def randn(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _new(_rng.standard_normal(_shape(size), dtype=np.float32), dtype, requires_grad)


def rand(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _new(_rng.random(_shape(size), dtype=np.float32), dtype, requires_grad)
