"""Shape, indexing and joining ops: reshape, transpose, permute, squeeze, expand, getitem,
gather, cat, stack, split, tril/triu ..., and the two ops of in-place changes through views
(``as_strided``, ``copy_slices``).

Registered into ``ops.OPS`` (see ``ops.py`` for the op contract). Their backward needs
shapes and indices only, so most can be walked twice; those whose PyTorch node saves an
index tensor (advanced getitem, index_put, gather, scatter_add, index_select) are freed
after backward as PyTorch frees it, so a second backward raises there too.
The view ops (getitem with ints/slices/None/..., reshape where no copy is needed,
transpose, permute, squeeze, unsqueeze, expand, select, split, diagonal) return numpy
views of their input: ``views.py`` turns that into PyTorch's view semantics.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided as strided_view

from .dtypes import promote_types
from .errors import index_out_of_bounds
from .ops import OPS, OpDef, register


def _dim(d: int, ndim: int) -> int:
    if not -ndim <= d < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
            f"but got {d})"
        )
    return d % ndim


@register("reshape", saves=False, grad_fn="ViewBackward0")
def reshape(a, shape):
    in_shape = a.shape
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                               f"{list(shape)}")
    if list(shape).count(-1) > 1:
        raise RuntimeError(f"only one dimension can be inferred (shape {list(shape)})")
    try:
        out = a.reshape(shape)
    except ValueError:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {a.size}"
        ) from None
    return out, lambda g: (g.reshape(in_shape),)


@register("transpose", saves=False)
def transpose(a, dim0, dim1):
    n = max(a.ndim, 1)
    d0, d1 = _dim(dim0, n), _dim(dim1, n)
    if a.ndim == 0:
        return a.view(), lambda g: (g,)  # a view, as PyTorch's (it shares memory)
    return np.swapaxes(a, d0, d1), lambda g: (np.swapaxes(g, d0, d1),)


@register("permute", saves=False)
def permute(a, dims):
    if len(dims) != a.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match "
            f"the length of the desired ordering of dimensions i.e. input.dim() = {a.ndim} "
            f"is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(_dim(d, a.ndim) for d in dims)
    inverse = tuple(np.argsort(dims))
    return np.transpose(a, dims), lambda g: (np.transpose(g, inverse),)


@register("squeeze", saves=False)
def squeeze(a, dim=None):
    in_shape = a.shape
    if dim is None:
        out = a.reshape(tuple(d for d in in_shape if d != 1))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        n = max(a.ndim, 1)
        drop = {_dim(d, n) for d in dims}
        out = a.reshape(tuple(s for i, s in enumerate(in_shape) if not (i in drop and s == 1)))
    return out, lambda g: (g.reshape(in_shape),)


@register("unsqueeze", saves=False)
def unsqueeze(a, dim):
    in_shape = a.shape
    d = _dim(dim, a.ndim + 1)
    out = a[(*_ALL[:d], None)]  # np.expand_dims, minus its Python wrapper: always a view
    return out, lambda g: (g.reshape(in_shape),)


_ALL = (slice(None),) * 64  # numpy's limit on dimensions


@register("expand", saves=False)
def expand(a, size):
    lead = len(size) - a.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(size)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({a.ndim})"
        )
    shape = tuple(a.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(size))
    try:
        strides = np.broadcast_to(a, shape).strides
    except ValueError:
        raise RuntimeError(
            f"The expanded size of the tensor ({list(shape)}) must match the existing size "
            f"({list(a.shape)}) at non-singleton dimensions"
        ) from None
    # Writable like PyTorch's (numpy's broadcast_to is read-only): a view of it that picks
    # each element once (``x.expand(3, 4)[0]``) may be written; in-place ops refuse to
    # write the expanded tensor itself (views.overlapping_write).
    out = strided_view(a, shape, strides, writeable=a.flags.writeable)
    return out, lambda g: (g,)  # the engine sums the broadcast gradient back down


@register("repeat", saves=False)
def repeat(a, repeats):
    if len(repeats) < a.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    shape = (1,) * (len(repeats) - a.ndim) + a.shape
    out = np.tile(a.reshape(shape), repeats)
    in_shape = a.shape  # the shape only: a backward holding ``a`` would save it

    def backward(g):
        split = []
        for r, s in zip(repeats, shape, strict=True):
            split += [r, s]
        g = g.reshape(split).sum(axis=tuple(range(0, 2 * len(shape), 2)))
        return (g.reshape(in_shape),)

    return out, backward


def _is_basic(index: Any) -> bool:
    """Basic indexing (ints, slices, None, ...) can never select an element twice."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if p is None or p is Ellipsis or isinstance(p, (int, slice, np.integer)):
            continue
        if isinstance(p, np.ndarray) and p.dtype == np.bool_:
            continue
        return False
    return True


def _take(a: np.ndarray, index: Any) -> np.ndarray:
    """``a[index]``, but a 0-d view rather than a numpy scalar when ints pick one element
    (PyTorch's ``x[0]`` of a 1-d tensor is a view that ``x[0].add_(1)`` writes through)."""
    out = a[index]
    if type(out) is not np.ndarray:
        parts = index if isinstance(index, tuple) else (index,)
        out = a[(*parts, Ellipsis)]
    return out


@register("getitem", saves=False, grad_fn="IndexBackward0")
def getitem(a, index):
    """``a[index]``: a view for a basic index; a copy for index arrays and masks, whose node
    is then ``ADVANCED_GETITEM`` (views.view_op swaps it), which saves as PyTorch's."""
    shape, dtype = a.shape, a.dtype
    try:
        out = _take(a, index)
    except IndexError as e:
        reason = str(e).replace(" for axis ", " for dimension ")  # PyTorch's word
        raise IndexError(f"getitem: {reason} (indexing a tensor of shape {tuple(shape)})"
                         ) from None
    basic = _is_basic(index)

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        if basic:
            full[index] = g
        else:
            np.add.at(full, index, g)
        return (full,)

    return out, backward


# getitem with index tensors: PyTorch's IndexBackward0 saves them (a second backward
# raises); the same forward and the same op event.
ADVANCED_GETITEM = OpDef("getitem", getitem, True, "IndexBackward0")


@register("index_put", grad_fn="IndexPutBackward0")
def index_put(a, value, index):
    """``a[index] = value`` out of place: ``__setitem__`` with index tensors or masks."""
    out = a.copy()
    out[index] = value

    def backward(g):
        ga = g.copy()
        ga[index] = 0
        return ga, g[index]

    return out, backward


def _gather(a: np.ndarray, dim: int, index: np.ndarray) -> tuple[Any, Any]:
    """gather's forward, and its backward from the input's shape, dtype and the index."""
    d = _dim(dim, max(a.ndim, 1))
    if index.ndim != a.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, (n_index, n_input) in enumerate(zip(index.shape, a.shape, strict=True)):
        if i != d and n_index > n_input:
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{list(index.shape)} to be smaller than self "
                               f"{list(a.shape)} apart from dimension {d}")
    index_out_of_bounds(index, a.shape[d] if a.ndim else 1, d, "gather")
    if not a.ndim:  # a 0-d input, whose only index is 0
        return a.copy(), lambda g: (g, None)
    # PyTorch allows an index smaller than the input in the other dimensions: the aranges
    # pick that leading part.
    where = _along(index, d)
    out = a[where]
    shape, dtype = a.shape, a.dtype

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        if index.shape[d] == 1:  # one pick per row (a loss's target): no duplicates to add
            full[where] = g
        else:
            np.add.at(full, where, g)
        return (full, None)

    return out, backward


@register("gather")
def gather(a, dim, index):
    out, backward = _gather(a, dim, index)
    # PyTorch's GatherBackward0 saves the input (for its sizes) and the index: holding
    # the input, the version counter refuses it changed in place, as PyTorch does.
    return out, lambda g, a=a: backward(g)


def _select_along(a, dim, index):
    return _gather(a, dim, index)  # saves only the index, as sort's and topk's backward


# The values of sort and topk: a gather (the same op event) whose node, as PyTorch's
# SortBackward0 / TopkBackward0, saves only the indices.
SORT_VALUES = OpDef("gather", _select_along, True, "SortBackward0")
TOPK_VALUES = OpDef("gather", _select_along, True, "TopkBackward0")


def _along(index: np.ndarray, d: int) -> tuple[np.ndarray, ...]:
    """The fancy index of ``index``'s entries along dimension ``d`` (numpy's
    take_along_axis without its Python wrapper, which cost more than a loss's gather)."""
    shape = index.shape
    where: list[np.ndarray] = []
    for i, n in enumerate(shape):
        if i == d:
            where.append(index)
        else:
            where.append(np.arange(n).reshape((1,) * i + (n,) + (1,) * (len(shape) - i - 1)))
    return tuple(where)


@register("scatter_add", saved_for={"where_t": 2})  # the index: only for src's gradient
def scatter_add(a, index, src, dim=0):
    d = _dim(dim, max(a.ndim, 1))
    if index.ndim != a.ndim or src.ndim != a.ndim:
        raise RuntimeError("scatter_add(): Index tensor must have the same number of "
                           "dimensions as self tensor")
    index_out_of_bounds(index, a.shape[d] if a.ndim else 1, d, "scatter_add")
    where = list(np.ix_(*[np.arange(s) for s in index.shape]))
    where[d] = index
    where_t = tuple(where)
    region = tuple(slice(0, s) for s in index.shape)
    out = a.copy()
    np.add.at(out, where_t, src[region])
    src_shape = src.shape  # not src itself: PyTorch saves only the index

    def backward(g):
        gsrc = np.zeros(src_shape, dtype=g.dtype)
        gsrc[region] = g[where_t]
        return g, None, gsrc

    return out, backward


@register("index_select")
def index_select(a, dim, index):
    d = _dim(dim, max(a.ndim, 1))
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    size = a.shape[d] if a.ndim else 1
    if index.size and (index.min() < 0 or index.max() >= size):  # -1 never wraps
        bad = int(index.min() if index.min() < 0 else index.max())
        # PyTorch's kernels word it three ways: an empty tensor of 2+ dims and dim 1 take
        # another path than the rest, and both raise RuntimeError there.
        if a.ndim >= 2 and a.size == 0 and size == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        if a.ndim >= 2 and (d == 1 or a.size == 0):
            raise RuntimeError(f"index_select(): INDICES element is out of DATA bounds, "
                               f"id={bad} axis_dim={size}")
        raise IndexError(f"index out of range in self (index_select: index {bad} for "
                         f"dimension {d} of size {size})")
    out = np.take(a, index.reshape(-1), axis=d)
    shape, dtype = a.shape, a.dtype

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        np.add.at(np.moveaxis(full, d, 0), index.reshape(-1), np.moveaxis(g, d, 0))
        return (full, None)

    return out, backward


def joined_dtype(arrays: tuple[np.ndarray, ...]) -> np.dtype:
    """PyTorch's dtype of a cat or stack: every tensor's promoted together (int with
    float16 is float16, where numpy joins them in float64)."""
    dt = arrays[0].dtype
    for x in arrays[1:]:
        if x.dtype is not dt:
            dt = promote_types(dt, x.dtype)
    return dt


@register("cat", saves=False)
def cat(*arrays, dim=0):
    if not arrays:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, x in enumerate(arrays):
        if x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    # PyTorch still skips 1-D empty tensors (the old way to start an accumulation).
    kept = [i for i, x in enumerate(arrays) if x.shape != (0,)]
    if not kept:
        out = np.zeros(0, joined_dtype(arrays))
        n = len(arrays)
        return out, lambda g: tuple(np.zeros(0, g.dtype) for _ in range(n))
    joined = [arrays[i] for i in kept]
    d = _dim(dim, max(joined[0].ndim, 1))
    for i in kept:
        x, first = arrays[i], joined[0]
        if x.ndim != first.ndim:
            raise RuntimeError(f"cat(): Tensors must have same number of dimensions: got "
                               f"{first.ndim} and {x.ndim}")
        for k, (n, m) in enumerate(zip(first.shape, x.shape, strict=True)):
            if k != d and n != m:
                raise RuntimeError(f"cat(): Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {n} but got size {m} for tensor number "
                                   f"{i} in the list.")
    dt = joined_dtype(arrays)  # skipped tensors still take part in promotion
    out = np.concatenate([x.astype(dt, copy=False) for x in joined], axis=d)
    ends = np.cumsum([x.shape[d] for x in joined])
    count = len(arrays)  # the backward keeps no input array (nothing saved for it)

    def backward(g):
        pieces = iter(np.split(g, ends[:-1], axis=d))
        return tuple(next(pieces) if i in kept else np.zeros(0, g.dtype)
                     for i in range(count))

    return out, backward


@register("stack", saves=False)
def stack(*arrays, dim=0):
    if not arrays:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = _dim(dim, arrays[0].ndim + 1)
    dt = joined_dtype(arrays)
    try:
        out = np.stack([x.astype(dt, copy=False) for x in arrays], axis=d)
    except ValueError as e:
        raise RuntimeError(f"stack: {e}") from None
    return out, lambda g: tuple(np.moveaxis(g, d, 0))


@register("split", saves=False)
def split(a, dim, start, length):
    """One piece of ``split``/``chunk``/``unbind``: ``length`` rows from ``start`` on ``dim``."""
    d = _dim(dim, a.ndim)
    index = (slice(None),) * d + (slice(start, start + length),)
    shape, dtype = a.shape, a.dtype

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        full[index] = g
        return (full,)

    return a[index], backward


@register("select", saves=False)
def select(a, dim, index):
    d = _dim(dim, a.ndim)
    if not -a.shape[d] <= index < a.shape[d]:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(a.shape)} at "
            f"dimension {d}"
        )
    where = (slice(None),) * d + (index,)
    shape, dtype = a.shape, a.dtype

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        full[where] = g
        return (full,)

    return _take(a, where), backward


@register("diagonal", saves=False)
def diagonal(a, offset=0, dim1=0, dim2=1):
    d1, d2 = _dim(dim1, a.ndim), _dim(dim2, a.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = np.diagonal(a, offset, d1, d2)
    if a.flags.writeable:
        out.flags.writeable = True  # numpy's diagonal view is read-only; PyTorch's is not
    shape, dtype = a.shape, a.dtype

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        region = np.diagonal(full, offset, d1, d2)
        region.flags.writeable = True
        region[...] = g
        return (full,)

    return out, backward


# -- in-place changes through views ----------------------------------------------------------
class ViewStep:
    """One view op on the way from a base tensor's array to a view's: replayable on any
    array of the base's shape (the base itself, or a gradient)."""

    __slots__ = ("op", "attrs")

    def __init__(self, op: str, attrs: dict[str, Any]) -> None:
        self.op = op
        self.attrs = attrs

    def __call__(self, array: np.ndarray) -> np.ndarray:
        return OPS[self.op].forward(array, **self.attrs)[0]

    def __repr__(self) -> str:  # what an event's attrs show
        args = ", ".join(f"{k}={_text(v)}" for k, v in self.attrs.items())
        return f"{self.op}({args})"


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_text(v) for v in value) + ")"
    if isinstance(value, slice):
        parts = ["" if p is None else str(p) for p in (value.start, value.stop)]
        return ":".join(parts + ([str(value.step)] if value.step is not None else []))
    return "..." if value is Ellipsis else str(value)


def replay(chain: tuple[ViewStep, ...], array: np.ndarray) -> np.ndarray:
    for step in chain:
        array = step(array)
    return array


def _positions(shape: tuple[int, ...], chain: tuple[ViewStep, ...]) -> np.ndarray:
    """Where each element of the view sits in the base, as flat (C-order) indices."""
    return replay(chain, np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape))


@register("as_strided", saves=False, grad_fn="AsStridedBackward0")
def as_strided(base, chain):
    """A view of ``base`` rebuilt after its history changed (PyTorch regenerates a view's
    grad_fn the same way once an in-place op touched its base)."""
    shape, dtype = base.shape, base.dtype
    repeats = any(step.op == "expand" for step in chain)

    def backward(g):
        full = np.zeros(shape, dtype=dtype)
        flat = full.reshape(-1)
        if repeats:  # an expanded view reads some base elements more than once
            np.add.at(flat, _positions(shape, chain), g)
        else:
            flat[_positions(shape, chain)] = g
        return (full,)

    return replay(chain, base), backward


OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a "
    "single memory location. Please clone() the tensor before performing the operation."
)


@register("copy_slices", saves=False, grad_fn="CopySlices", exact=True)
def copy_slices(base, value, chain):
    """The commit of an in-place op on a view: ``value`` (the view's new values) is written
    into ``base``'s memory, and base, changed in place, is the output. The one op that
    mutates an input, because that is what it stands for (PyTorch's CopySlices).

    Backward: the region's gradient goes to ``value``, the rest to the base's history.
    """
    region = replay(chain, base)
    repeats = any(step.op == "expand" for step in chain)
    if repeats and any(st == 0 and n > 1 for st, n in zip(region.strides, region.shape,
                                                           strict=True)):
        # An expand-ed region (fill_, masked_fill_, index_put_ write one): PyTorch's
        # kernel writes only what the op wrote, so an element read back unchanged must
        # not overwrite the memory it shares with one the op wrote.
        np.copyto(region, value, where=value != region)
    else:
        region[...] = value
    shape = base.shape

    def backward(g):
        where = _positions(shape, chain)
        if repeats and np.unique(where).size != where.size:  # a fill_ of an expanded view
            raise RuntimeError(OVERLAP_MESSAGE)
        rest = np.array(g, order="C")
        rest.reshape(-1)[where] = 0
        return rest, np.asarray(g).reshape(-1)[where]

    return base, backward


@register("tril", saves=False)
def tril(a, diagonal=0):
    if a.ndim < 2:
        raise RuntimeError(f"tril: input tensor must have at least 2 dimensions (got {a.ndim})")
    return np.tril(a, diagonal), lambda g: (np.tril(g, diagonal),)


@register("triu", saves=False)
def triu(a, diagonal=0):
    if a.ndim < 2:
        raise RuntimeError(f"triu: input tensor must have at least 2 dimensions (got {a.ndim})")
    return np.triu(a, diagonal), lambda g: (np.triu(g, diagonal),)


@register("flip", saves=False)
def flip(a, dims):
    dims = tuple(_dim(d, max(a.ndim, 1)) for d in dims)
    if not a.ndim:
        return a.copy(), lambda g: (g,)
    # A copy: numpy's flip is a view, PyTorch's is not (writes to it must not reach ``a``).
    return np.flip(a, dims).copy(), lambda g: (np.flip(g, dims),)
