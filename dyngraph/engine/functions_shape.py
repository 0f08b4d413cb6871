"""Shape, indexing and joining functions (``dyngraph.cat``, ``tensor.view`` ...).

Each is argument handling over ``apply`` of an op in ``ops_shape.py``; the view ops go
through ``views.view_op``, so what they return shares memory with their input as in
PyTorch (``y[:2].mul_(3)`` changes ``y``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import check_dim, check_size
from .ops import OPS
from .tensor import Tensor, _wrap, apply
from .views import view_op

_GETITEM, _RESHAPE = OPS["getitem"], OPS["reshape"]
VIEW_MESSAGE = (
    "view size is not compatible with input tensor's size and stride (at least one "
    "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
)


def _shape_args(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``view(2, 3)`` and ``view((2, 3))`` both mean shape (2, 3)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return check_size(shape, "size")


def _index(index: Any) -> Any:
    """Turn tensors inside an index into what numpy understands (a 0-d integer tensor
    indexes like an int, as in PyTorch: ``x[torch.tensor(1)]`` is a view)."""
    if isinstance(index, Tensor):
        array = index._array
        if array.ndim == 0 and array.dtype.kind in "iu":
            return int(array)
        return array
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    if isinstance(index, list) and any(isinstance(i, Tensor) for i in index):
        return [_index(i) for i in index]
    return index


def getitem(input: Tensor, index: Any) -> Tensor:
    """``tensor[index]``: ints, slices, None, ``...`` give a view; integer arrays and
    boolean masks a copy."""
    return view_op(_GETITEM, input, index=_index(index))


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """A view when the memory allows one, else a copy (as PyTorch's)."""
    return view_op(_RESHAPE, input, shape=_shape_args(shape))


def view(input: Tensor, *shape: Any) -> Tensor:
    """A view with another shape; PyTorch's error where that needs a copy."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list)):
        raise NotImplementedError("view(dtype) is not supported by dyngraph; use .to(dtype)")
    size = _shape_args(shape)
    array = input._array
    if not array.flags.c_contiguous and _fits(array, size):
        try:
            np.reshape(array, size, copy=False)
        except ValueError:
            raise RuntimeError(VIEW_MESSAGE) from None
    return view_op(_RESHAPE, input, shape=size)


def _fits(array: np.ndarray, size: tuple[int, ...]) -> bool:
    """Could ``array`` take shape ``size`` at all (else reshape's own error is the one)?"""
    known = 1
    for d in size:
        if d != -1:
            known *= d
    return known == array.size or (-1 in size and known > 0 and array.size % known == 0)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other._array.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other._array.shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    shape = input._array.shape
    n = len(shape)
    s, e = check_dim(start_dim, n), check_dim(end_dim, n)
    if not shape:
        return reshape(input, (1,))
    if s == e:
        return input  # nothing to flatten: PyTorch returns the input itself
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    middle = 1
    for d in shape[s:e + 1]:
        middle *= d
    return reshape(input, shape[:s] + (middle,) + shape[e + 1:])


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    shape = input._array.shape
    d = dim % len(shape)
    return reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return view_op(OPS["transpose"], input, dim0=int(dim0), dim1=int(dim1))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    # Below 2-D a view of the input itself, as in PyTorch (not the input: it has a grad_fn).
    return transpose(input, 0, 1) if input.ndim == 2 else transpose(input, 0, 0)


def permute(input: Tensor, *dims: Any) -> Tensor:
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    return view_op(OPS["permute"], input, dims=_shape_args(dims))


def movedim(input: Tensor, source: int, destination: int) -> Tensor:
    order = list(range(input.ndim))
    src = check_dim(source, input.ndim)
    if not order:  # a 0-d tensor: dims 0 and -1 name the tensor itself
        check_dim(destination, 0)
        return transpose(input, 0, 0)
    order.remove(src)
    order.insert(check_dim(destination, input.ndim), src)
    return permute(input, order)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    if isinstance(dim, list):
        dim = tuple(dim)
    return view_op(OPS["squeeze"], input, dim=dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return view_op(OPS["unsqueeze"], input, dim=int(dim))


def expand(input: Tensor, *size: Any) -> Tensor:
    return view_op(OPS["expand"], input, size=_shape_args(size))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._array.shape)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return expand(input, tuple(size))


def repeat(input: Tensor, *repeats: Any) -> Tensor:
    return apply(OPS["repeat"], input, repeats=_shape_args(repeats))


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    if index._array.dtype.kind not in "iu":
        raise RuntimeError("gather(): Expected dtype int64 for index")
    return apply(OPS["gather"], input, int(dim), index)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    if index._array.dtype.kind not in "iu":
        raise RuntimeError("index_select(): Expected dtype int32/int64 for index")
    return apply(OPS["index_select"], input, int(dim), index)


def _tensors(tensors: Any, name: str) -> list[Any]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if type(t) in _NUMBERS:  # (numpy arrays are taken, as before)
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return [t if isinstance(t, Tensor) else _wrap(np.asarray(t)) for t in tensors]


_NUMBERS = (bool, int, float, complex)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension."""
    return apply(OPS["cat"], *_tensors(tensors, "cat"), dim=int(dim))


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along a new dimension."""
    return apply(OPS["stack"], *_tensors(tensors, "stack"), dim=int(dim))


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    ts = _tensors(tensors, "hstack")
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat([t if t.ndim > 1 else unsqueeze(t, 0) for t in _tensors(tensors, "vstack")], 0)


def _pieces(input: Tensor, dim: int, sizes: Sequence[int], name: str | None
            ) -> tuple[Tensor, ...]:
    """Views of consecutive pieces. With a ``name`` (split, chunk), like PyTorch's outputs of
    one op returning several views, they refuse in-place changes in a graph, and use after
    their base changed; tensor_split's are plain slices."""
    op = OPS["split"]
    out, start = [], 0
    for i, size in enumerate(sizes):
        multi = None if name is None else (name, i)
        out.append(view_op(op, input, multi, dim=dim, start=start, length=size))
        start += size
    return tuple(out)


def _piece_dim(input: Tensor, dim: Any, name: str) -> int:
    """The dim ``split``/``chunk`` cut along: PyTorch's refusals of a 0-d tensor and of a
    dim out of range (never wrapped around)."""
    if input.ndim == 0:
        raise RuntimeError(f"{name} expects at least a 1-dimensional tensor")
    return check_dim(dim, input.ndim)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    dim = _piece_dim(tensor, dim, "split")
    n = tensor._array.shape[dim]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got {step}")
        sizes = [min(step, n - s) for s in range(0, n, step)] or [0]
        name = "Split"
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {dim}), but got split_sizes={sizes}"
            )
        name = "SplitWithSizes"
    return _pieces(tensor, dim, sizes, name)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    dim = check_dim(dim, input.ndim)
    n = input._array.shape[dim]
    if n == 0:  # PyTorch: as many empty pieces as asked for (split_with_sizes)
        return _pieces(input, dim, [0] * int(chunks), "SplitWithSizes")
    return split(input, -(-n // chunks), dim)


def tensor_split(input: Tensor, sections: int, dim: int = 0) -> tuple[Tensor, ...]:
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    dim = check_dim(dim, input.ndim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    n = input._array.shape[dim]
    base, extra = divmod(n, sections)
    sizes = [base + (1 if i < extra else 0) for i in range(sections)]
    return _pieces(input, dim, sizes, None)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    dim = check_dim(dim, input.ndim)
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    op = OPS["select"]
    return tuple(view_op(op, input, ("Unbind", i), dim=dim, index=i)
                 for i in range(input._array.shape[dim]))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    return view_op(OPS["select"], input, dim=int(dim), index=int(index))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = check_dim(dim, input.ndim)
    size = input._array.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start out of range (expected to be in range of "
                         f"[{-size}, {size}], but got {start})")
    start = int(start) % size if start < 0 else int(start)
    if length < 0 or start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({size}).")
    return view_op(OPS["split"], input, dim=dim, start=start, length=int(length))


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal as a view: writing it writes the input."""
    return view_op(OPS["diagonal"], input, offset=int(offset), dim1=int(dim1), dim2=int(dim2))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return apply(OPS["tril"], input, diagonal=int(diagonal))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return apply(OPS["triu"], input, diagonal=int(diagonal))


def flip(input: Tensor, dims: Any) -> Tensor:
    return apply(OPS["flip"], input, dims=_shape_args((dims,) if isinstance(dims, int) else dims))


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Constant padding, last dimension first (``F.pad``'s convention)."""
    if mode != "constant":
        raise NotImplementedError(f"pad(mode={mode!r}) is not supported by dyngraph")
    from .functions import _nn_op

    return apply(_nn_op("pad"), input, pad=tuple(int(p) for p in pad),
                 value=0.0 if value is None else value)
