"""Sparse COO tensors, stored dense.

dyngraph keeps every tensor as one dense numpy array, so a "sparse" tensor here is a
dense tensor that remembers its sparsity pattern (the coalesced ``indices``). Values,
results and gradients are PyTorch's; memory is that of the dense array. The pattern is
what ``indices()``, ``values()``, ``_nnz()`` report and what ``torch.sparse.mm`` masks
its gradient with, as PyTorch does. Results of other ops on a sparse tensor are plain
dense tensors (in PyTorch some stay sparse).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine import functions as fn
from ..engine.creation import from_numpy, tensor, zeros
from ..engine.tensor import Tensor


class layout:  # noqa: N801  (PyTorch's name)
    """``torch.strided`` or ``torch.sparse_coo``: how a tensor's elements are stored."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"dyngraph.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _indices_array(indices: Any) -> np.ndarray:
    array = np.asarray(indices._array if isinstance(indices, Tensor) else indices)
    if array.dtype.kind not in "iu" or array.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be a 2-D int64 tensor "
                           f"(sparse_dim, nnz), got shape {tuple(array.shape)} of {array.dtype}")
    return array.astype(np.int64)


def _coalesced(indices: np.ndarray, sparse_shape: tuple[int, ...]) -> np.ndarray:
    """The distinct index columns in row-major order (PyTorch's coalesced order)."""
    if indices.shape[1] == 0:
        return indices
    flat = np.unique(np.ravel_multi_index(tuple(indices), sparse_shape))
    return np.stack(np.unravel_index(flat, sparse_shape)).astype(np.int64)


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> Tensor:
    """A tensor with ``values`` at ``indices`` (duplicates summed) and zeros elsewhere.

    Differentiable in ``values``. ``size`` defaults to the smallest shape that holds the
    indices.

    >>> import dyngraph as torch
    >>> torch.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3)).to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """
    index = _indices_array(indices)
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype)
    elif dtype is not None:
        values = values.to(dtype)
    sparse_dim, nnz = index.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        raise RuntimeError(f"sparse_coo_tensor: number of values ({values.shape[:1]}) does not "
                           f"match the number of indices ({nnz})")
    dense_dims = tuple(values.shape[1:])
    if size is None:
        size = tuple(int(m) + 1 for m in index.max(axis=1)) if nnz else (0,) * sparse_dim
        size += dense_dims
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(dense_dims) or tuple(size[sparse_dim:]) != dense_dims:
        raise RuntimeError(f"sparse_coo_tensor: size {size} does not fit {sparse_dim} sparse "
                           f"dims and values of shape {tuple(values.shape)}")
    sparse_shape = size[:sparse_dim]
    if nnz and ((index < 0).any() or (index >= np.array(sparse_shape)[:, None]).any()):
        raise RuntimeError(f"sparse_coo_tensor: indices out of bounds for size {size}")
    rows = int(np.prod(sparse_shape, dtype=np.int64))
    flat = np.ravel_multi_index(tuple(index), sparse_shape) if nnz else np.zeros(0, np.int64)
    target = np.broadcast_to(flat.reshape((nnz,) + (1,) * len(dense_dims)),
                             (nnz, *dense_dims)).copy()
    base = zeros((rows, *dense_dims), dtype=values.dtype, device=device)
    out = fn.scatter_add(base, 0, from_numpy(target), values).reshape(size)
    if requires_grad:
        out = out.detach().requires_grad_(True)
    return _mark(out, _coalesced(index, sparse_shape))


def _mark(t: Tensor, indices: np.ndarray) -> Tensor:
    t.__dict__["_sparse_indices"] = indices
    return t


def _pattern(t: Tensor) -> np.ndarray | None:
    return t.__dict__.get("_sparse_indices") if hasattr(t, "__dict__") else None


def _require_sparse(t: Tensor, what: str) -> np.ndarray:
    indices = _pattern(t)
    if indices is None:
        raise RuntimeError(f"{what} expected a sparse tensor, but got a dense one "
                           "(make one with to_sparse() or sparse_coo_tensor)")
    return indices


def to_sparse(self: Tensor, sparse_dim: int | None = None) -> Tensor:
    """A sparse copy whose pattern is the nonzero positions (differentiable)."""
    dims = self.ndim if sparse_dim is None else int(sparse_dim)
    array = self._array
    collapsed = array if dims == array.ndim else np.any(array != 0, axis=tuple(
        range(dims, array.ndim)))
    indices = np.stack(np.nonzero(collapsed)).astype(np.int64).reshape(dims, -1)
    return _mark(fn.clone(self), indices)


def to_dense(self: Tensor, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
    """The same values as an ordinary dense tensor. As in PyTorch (``masked_grad=True``)
    the gradient flowing back keeps to the sparsity pattern."""
    mask = mask_of(self)
    out = fn.clone(self) if mask is None or not masked_grad else self * from_numpy(mask)
    return out if dtype is None else out.to(dtype)


def coalesce(self: Tensor) -> Tensor:
    _require_sparse(self, "coalesce")
    return self  # kept coalesced from the start


def indices(self: Tensor) -> Tensor:
    return from_numpy(_require_sparse(self, "indices").copy())


def values(self: Tensor) -> Tensor:
    index = _require_sparse(self, "values")
    return self[tuple(from_numpy(row) for row in index)] if index.shape[1] else self.reshape(
        (0,) + tuple(self.shape[index.shape[0]:]))


def nnz(self: Tensor) -> int:
    return int(_require_sparse(self, "_nnz").shape[1])


def sparse_dim(self: Tensor) -> int:
    index = _pattern(self)
    return 0 if index is None else int(index.shape[0])


def dense_dim(self: Tensor) -> int:
    return self.ndim - sparse_dim(self) if _pattern(self) is not None else self.ndim


def is_sparse(self: Tensor) -> bool:
    return _pattern(self) is not None


def tensor_layout(self: Tensor) -> layout:
    return sparse_coo if _pattern(self) is not None else strided


def mask_of(t: Tensor) -> np.ndarray | None:
    """The sparsity pattern of ``t`` as a 0/1 array shaped like ``t`` (None if dense)."""
    index = _pattern(t)
    if index is None:
        return None
    sparse_shape = tuple(t.shape[:index.shape[0]])
    mask = np.zeros(sparse_shape, dtype=t._array.dtype)
    if index.shape[1]:
        mask[tuple(index)] = 1
    return mask.reshape(sparse_shape + (1,) * (t.ndim - len(sparse_shape)))


for _name, _method in (("to_sparse", to_sparse), ("to_sparse_coo", to_sparse),
                       ("to_dense", to_dense), ("coalesce", coalesce), ("indices", indices),
                       ("_indices", indices), ("values", values), ("_values", values),
                       ("_nnz", nnz), ("sparse_dim", sparse_dim), ("dense_dim", dense_dim),
                       ("is_coalesced", lambda self: _require_sparse(self, "is_coalesced")
                        is not None)):
    setattr(Tensor, _name, _method)
Tensor.is_sparse = property(is_sparse)  # type: ignore[attr-defined]
Tensor.layout = property(tensor_layout)  # type: ignore[attr-defined]
