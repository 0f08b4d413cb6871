"""Diagonal ops: ``diagonal``, ``diag``, ``diag_embed`` and ``trace``, forward and backward
side by side (registered into the one ``OPS`` registry, like ``ops.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops import register


def _diagonal_index(shape: tuple[int, ...], offset: int, dim1: int, dim2: int
                    ) -> tuple[Any, ...]:
    """An index that selects the ``offset`` diagonal of dims ``dim1``, ``dim2`` of an array
    of ``shape``, with the diagonal as the last axis (numpy's and PyTorch's layout)."""
    rows, cols = shape[dim1], shape[dim2]
    start_r, start_c = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(rows - start_r, cols - start_c))
    steps = np.arange(length)
    index: list[Any] = []
    others = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    for d in range(len(shape)):
        if d == dim1:
            index.append(start_r + steps)
        elif d == dim2:
            index.append(start_c + steps)
        else:
            # broadcast the other dims against the diagonal, which numpy puts last
            position = others.index(d)
            view = [1] * (len(others) + 1)
            view[position] = shape[d]
            index.append(np.arange(shape[d]).reshape(view))
    return tuple(index)


@register("diag", saves=False, grad_fn="DiagBackward0")
def diag(a, offset=0, dim1=0, dim2=1):
    """``diag`` of a matrix: its diagonal as a new tensor (``diagonal`` is the view)."""
    shape = a.shape
    dim1, dim2 = dim1 % a.ndim, dim2 % a.ndim
    index = _diagonal_index(shape, offset, dim1, dim2)
    dtype = a.dtype

    def backward(g):
        out = np.zeros(shape, dtype)
        out[index] = g
        return (out,)

    return a[index], backward


@register("diag_embed", saves=False)
def diag_embed(a, offset=0, dim1=-2, dim2=-1):
    size = a.shape[-1] + abs(offset)
    ndim = a.ndim + 1
    dim1, dim2 = dim1 % ndim, dim2 % ndim
    if dim1 == dim2:
        raise RuntimeError(f"diag_embed: dim1 and dim2 cannot be the same dimension, got "
                           f"{dim1} and {dim2}")
    batch = list(a.shape[:-1])
    shape = [0] * ndim
    for d in (dim1, dim2):
        shape[d] = size
    rest = iter(batch)
    for d in range(ndim):
        if d not in (dim1, dim2):
            shape[d] = next(rest)
    index = _diagonal_index(tuple(shape), offset, dim1, dim2)
    out = np.zeros(shape, a.dtype)
    out[index] = a

    def backward(g):
        return (g[index],)

    return out, backward


@register("trace", saves=False)
def trace(a):
    if a.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {a.ndim}")
    shape, dtype = a.shape, a.dtype

    def backward(g):
        out = np.zeros(shape, dtype)
        n = min(shape)
        out[np.arange(n), np.arange(n)] = g
        return (out,)

    return np.asarray(np.trace(a), dtype=a.dtype), backward
