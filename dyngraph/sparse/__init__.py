"""``torch.sparse`` on dense storage: ``mm``, ``sum`` and the legacy ``FloatTensor``
constructors. Sparse tensors are dense arrays that remember their sparsity pattern
(``coo.py``): values and gradients are PyTorch's; memory is dense."""

from __future__ import annotations

from typing import Any

from ..engine import functions as fn
from ..engine.creation import from_numpy
from ..engine.tensor import Tensor
from ..missing import module_getattr
from .coo import layout, mask_of, sparse_coo, sparse_coo_tensor, strided

__all__ = ["FloatTensor", "DoubleTensor", "LongTensor", "layout", "mm", "sparse_coo",
           "sparse_coo_tensor", "spmm", "strided", "sum"]


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """``mat1 @ mat2`` where ``mat1`` may be sparse; as in PyTorch the gradient reaching a
    sparse ``mat1`` keeps to its sparsity pattern."""
    if reduce != "sum":
        raise NotImplementedError(f"dyngraph does not implement torch.sparse.mm(reduce="
                                  f"{reduce!r})")
    mask = mask_of(mat1)
    if mask is not None and mat1.requires_grad:
        mat1 = mat1 * from_numpy(mask)  # the same values; the gradient is masked
    return fn.mm(mat1, mat2)


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``torch.spmm``: ``torch.mm`` with a sparse first argument (dense gradient)."""
    return fn.mm(input, mat2)


def sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001
    return fn.sum(input, dim, dtype=dtype)


def _legacy(dtype_name: str) -> Any:
    def make(indices: Any, values: Any, size: Any = None) -> Tensor:
        from ..engine import dtypes

        return sparse_coo_tensor(indices, values, size, dtype=getattr(dtypes, dtype_name))

    make.__name__ = make.__qualname__ = dtype_name
    return make


FloatTensor = _legacy("float32")
DoubleTensor = _legacy("float64")
LongTensor = _legacy("int64")

__getattr__ = module_getattr(__name__)
