"""``nn.utils``: gradient clipping and flattening parameters to one vector."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..engine import creation
from ..engine.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]


def _grads(parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Tensor:
    """Scale all gradients together so their joint norm is at most ``max_norm``; returns
    the norm before clipping (as PyTorch, the scale is ``max_norm / (norm + 1e-6)``).

    >>> import dyngraph as torch
    >>> w = torch.nn.Parameter(torch.ones(4))
    >>> (w * 10).sum().backward()
    >>> round(torch.nn.utils.clip_grad_norm_([w], 1.0).item(), 3)
    20.0
    """
    grads = _grads(parameters)
    if not grads:
        return creation.tensor(0.0)
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        total = max(float(np.abs(g._array).max()) if g._array.size else 0.0 for g in grads)
    else:
        total = sum(float(np.sum(np.abs(g._array.astype(np.float64)) ** norm_type))
                    for g in grads) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        for g in grads:
            g._array *= np.asarray(coef, dtype=g._array.dtype)  # in place, as PyTorch's mul_
    return creation.tensor(total, dtype=grads[0].dtype)


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach: Any = None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place."""
    for g in _grads(parameters):
        np.clip(g._array, -clip_value, clip_value, out=g._array)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated (a copy, outside autograd)."""
    arrays = [p._array.reshape(-1) for p in parameters]
    return creation.from_numpy(np.concatenate(arrays) if arrays else np.zeros(0, np.float32))


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in place."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected dyngraph.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for p in parameters:
        n = p._array.size
        p._array[...] = vec._array[offset:offset + n].reshape(p._array.shape)
        offset += n
