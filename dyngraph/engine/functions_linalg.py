"""``diagonal``, ``diag``, ``diag_embed`` and ``trace`` (functions and Tensor methods)."""

from __future__ import annotations

from . import ops_linalg  # noqa: F401  (registers the ops)
from .functions_shape import diagonal
from .ops import OPS
from .tensor import Tensor, apply


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector becomes a matrix with it on the ``diagonal``; a matrix gives its diagonal.

    >>> import dyngraph as torch
    >>> torch.diag(torch.tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    if input.ndim == 1:
        return apply(OPS["diag_embed"], input, offset=int(diagonal), dim1=0, dim2=1)
    if input.ndim == 2:
        return apply(OPS["diag"], input, offset=int(diagonal), dim1=0, dim2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Each vector along the last dim becomes a diagonal matrix in dims ``dim1``, ``dim2``."""
    return apply(OPS["diag_embed"], input, offset=int(offset), dim1=int(dim1), dim2=int(dim2))


def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal."""
    return apply(OPS["trace"], input)


for _name, _fn in (("diagonal", diagonal), ("diag", diag), ("diag_embed", diag_embed),
                   ("trace", trace)):
    setattr(Tensor, _name, _fn)


