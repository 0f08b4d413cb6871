"""Reductions: sum, mean, max/min/amax/amin, var/std, prod, logsumexp, norm, cumsum, arg*.

Registered into ``ops.OPS`` (see ``ops.py`` for the op contract). ``dim`` is None (all
dimensions), an int, or a tuple of ints, negative allowed, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import check_dims, type_name
from .ops import register

_INT64 = np.dtype(np.int64)
_F32, _F16 = np.dtype(np.float32), np.dtype(np.float16)


def _axes(dim: Any, ndim: int) -> tuple[int, ...]:
    """``dim`` as axes: None and ``()`` mean every dimension (as in PyTorch's sum, mean,
    amax ...); an int or a tuple, negative allowed, each in range and none repeated."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    return check_dims((dim,) if isinstance(dim, (int, np.integer)) else tuple(dim), ndim)


def _int64_for_ints(a: np.ndarray) -> Any:
    """PyTorch sums and multiplies bools and integers of every width into int64."""
    return _INT64 if a.dtype.kind in "biu" else None


def _sum(a: np.ndarray, axes: tuple[int, ...], keepdim: bool) -> Any:
    """A sum as PyTorch's: float16 accumulates in float32 and rounds back at the end
    (np.add.reduce: np.sum without its Python wrapper)."""
    acc = _F32 if a.dtype == _F16 else _int64_for_ints(a)
    out = _add_reduce(a, axis=axes, keepdims=keepdim, dtype=acc)  # type: ignore[call-overload]
    return out.astype(np.float16) if a.dtype == _F16 else out


def _float_only(a: np.ndarray, message: str) -> None:
    if a.dtype.kind not in "fc":
        raise RuntimeError(message.format(type_name(a.dtype)))


def _nonempty(a: np.ndarray, axes: tuple[int, ...], name: str) -> None:
    """max/min/argmax have no value over an empty dimension; PyTorch raises IndexError."""
    for d in axes:
        if a.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _keep(g: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> Any:
    """Reshape a reduced array so it broadcasts against the input's shape again."""
    if keepdim or not axes:
        return g
    return np.expand_dims(g, axes)


def _spread(g: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool
            ) -> np.ndarray:
    """A sum's gradient: ``g`` repeated over the summed axes. A small one is filled into a
    fresh array (np.broadcast_to's Python wrapper costs more than that); a large one is a
    read-only broadcast, which costs no memory."""
    if not keepdim and axes and g.ndim != len(shape):
        g = g.reshape(tuple(1 if i in axes else n for i, n in enumerate(shape)))
    if g.shape == shape:
        return g
    size = 1
    for n in shape:
        size *= n
    if size > _SPREAD_COPY_LIMIT:
        return np.broadcast_to(g, shape)
    out = np.empty(shape, g.dtype)
    out[...] = g  # (np.copyto is a Python wrapper; the setitem is not)
    return out


_SPREAD_COPY_LIMIT = 4096
_add_reduce = np.add.reduce


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for d in axes:
        n *= shape[d]
    return n


@register("sum", saves=False)
def sum_(a, dim=None, keepdim=False):
    shape = a.shape
    axes = _axes(dim, len(shape))
    out = _sum(a, axes, keepdim)
    return out, lambda g: (_spread(g, shape, axes, keepdim),)


@register("mean", saves=False)
def mean(a, dim=None, keepdim=False):
    shape = a.shape
    axes = _axes(dim, len(shape))
    n = _count(shape, axes)
    if n:
        out = _sum(a, axes, keepdim) / a.dtype.type(n)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):  # an empty mean is nan, silently
            out = _sum(a, axes, keepdim) / a.dtype.type(n)
    n = max(n, 1)
    return out, lambda g: (_spread(g / n, shape, axes, keepdim),)


def _even(a: np.ndarray, fn: Any, dim: Any, keepdim: bool, name: str) -> tuple[Any, Any]:
    """A max/min over ``dim`` whose ties share the gradient evenly (amax, amin, max())."""
    axes = _axes(dim, a.ndim)
    if a.size == 0 and (dim is None or dim == ()):
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the "
                           "'dim' argument.")
    _nonempty(a, axes, name)
    out = np.asarray(fn(a, axis=axes, keepdims=keepdim))  # the output's own array, even 0-d

    def backward(g):
        hit = a == _keep(out, a.shape, axes, keepdim)
        if name in ("max", "min") and np.isnan(out).any():  # max() is nan: nans share
            hit = np.isnan(a)
        share = hit / hit.sum(axis=axes, keepdims=True)
        g = _keep(g, a.shape, axes, keepdim)
        if name in ("max", "min"):  # PyTorch's max() selects, so a nan grad stays put ...
            return (np.where(hit, g * share, 0),)
        return (g * share,)  # ... and amax's multiplies (nan * 0 is nan everywhere)

    return out, backward


@register("amax")
def amax(a, dim=None, keepdim=False):
    return _even(a, np.amax, dim, keepdim, "amax")


@register("amin")
def amin(a, dim=None, keepdim=False):
    return _even(a, np.amin, dim, keepdim, "amin")


def _select(a: np.ndarray, dim: int, keepdim: bool, argfn: Any) -> tuple[Any, Any]:
    """max(dim)/min(dim): the gradient goes to the index returned, as in PyTorch."""
    axes = _axes(dim, a.ndim)
    if not axes:  # a 0-d input
        return a.copy(), lambda g: (g,)
    (axis,) = axes
    _nonempty(a, axes, "max" if argfn is np.argmax else "min")
    idx = np.expand_dims(argfn(a, axis=axis), axis)
    out = np.take_along_axis(a, idx, axis=axis)
    shape = a.shape

    def backward(g):
        full = np.zeros(shape, dtype=g.dtype)
        np.put_along_axis(full, idx, g if keepdim else np.expand_dims(g, axis), axis=axis)
        return (full,)

    return (out if keepdim else out.squeeze(axis)), backward


@register("max", grad_fn="MaxBackward0")
def max_(a, dim=None, keepdim=False):
    if dim is None:
        return _even(a, np.amax, None, False, "max")
    return _select(a, dim, keepdim, np.argmax)


@register("min", grad_fn="MinBackward0")
def min_(a, dim=None, keepdim=False):
    if dim is None:
        return _even(a, np.amin, None, False, "min")
    return _select(a, dim, keepdim, np.argmin)


def _dof(n: int, correction: int) -> int:
    """Degrees of freedom, never negative: no data (or too few) gives nan, as in PyTorch."""
    return max(n - correction, 0)


_STD_VAR_DTYPES = "std and var only support floating point and complex dtypes (got {})"


@register("var")
def var(a, dim=None, correction=1, keepdim=False):
    _float_only(a, _STD_VAR_DTYPES)
    axes = _axes(dim, a.ndim)
    n = _dof(_count(a.shape, axes), correction)
    centred = a - a.mean(axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray((centred * centred).sum(axis=axes, keepdims=keepdim)
                         / n, dtype=a.dtype)
    scale = np.asarray(2 / n if n else np.inf, dtype=a.dtype)
    return out, lambda g: (_keep(g, a.shape, axes, keepdim) * centred * scale,)


@register("std")
def std(a, dim=None, correction=1, keepdim=False):
    _float_only(a, _STD_VAR_DTYPES)
    axes = _axes(dim, a.ndim)
    n = _dof(_count(a.shape, axes), correction)
    centred = a - a.mean(axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(np.sqrt((centred * centred).sum(axis=axes, keepdims=keepdim)
                                 / n), dtype=a.dtype)

    def backward(g):
        kept = _keep(out, a.shape, axes, keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            # Where the std is 0 (all values equal) PyTorch's gradient is 0, not 0/0.
            scale = np.where(kept == 0, 0, _keep(g, a.shape, axes, keepdim) / (kept * n))
            return (scale * centred,)

    return out, backward


def _exclusive_cumprod(x: np.ndarray, axis: int) -> np.ndarray:
    """Product of the elements strictly before each position along ``axis``."""
    ones = np.ones_like(np.take(x, [0], axis=axis))
    head = np.concatenate([ones, np.take(x, np.arange(x.shape[axis] - 1), axis=axis)], axis)
    return np.cumprod(head, axis=axis)


@register("prod")
def prod(a, dim=None, keepdim=False):
    # PyTorch's ProdBackward0/1 (saving the input and the result): without a zero in the
    # input, grad * result / input (so a NaN or an infinity anywhere reaches every
    # element's gradient); with zeros, the product of the others, which is exact there.
    if dim is None:
        flat = a.reshape(-1)
        out = np.prod(flat, dtype=_int64_for_ints(a))
        if keepdim:
            out = np.asarray(out).reshape((1,) * a.ndim)

        def backward_all(g, out=out):
            if a.ndim == 0:
                return (g,)
            zeros = np.count_nonzero(flat == 0)
            if zeros == 0:
                with np.errstate(divide="ignore", invalid="ignore"):
                    return (g * (out / a),)
            if zeros > 1:  # every product of the others holds a zero
                return (np.zeros(a.shape, dtype=g.dtype),)
            others = _exclusive_cumprod(flat, 0) * _exclusive_cumprod(flat[::-1], 0)[::-1]
            return ((g * others).reshape(a.shape),)

        return out, backward_all
    axes = _axes(dim, a.ndim)
    if not axes:  # a 0-d input
        out = a.astype(_int64_for_ints(a) or a.dtype)
        return out, lambda g, out=out: (g,)
    (axis,) = axes
    out = np.prod(a, axis=axis, keepdims=keepdim, dtype=_int64_for_ints(a))

    def backward(g, out=out):
        if a.size == 0:  # nothing received a product: every gradient is empty or zero
            return (np.zeros(a.shape, dtype=g.dtype),)
        g = _keep(g, a.shape, (axis,), keepdim)
        if not (a == 0).any():  # (a zero anywhere, not only in its slice, as PyTorch)
            with np.errstate(divide="ignore", invalid="ignore"):
                return (g * (_keep(out, a.shape, (axis,), keepdim) / a),)
        rev = np.flip(a, axis)
        others = _exclusive_cumprod(a, axis) * np.flip(_exclusive_cumprod(rev, axis), axis)
        return (g * others,)

    return out, backward


@register("logsumexp")
def logsumexp(a, dim, keepdim=False):
    if a.dtype.kind not in "fc":  # PyTorch computes integers in its default float type
        a = a.astype(np.float32)
    if dim == () and not keepdim and a.ndim and a.size:
        # PyTorch adds the maxima, taken with keepdim and squeezed over the dims named, into
        # the result in place: with none named they keep a 1 for every dim, which a 0-d
        # result cannot hold.
        raise RuntimeError(
            f"output with shape [] doesn't match the broadcast shape {[1] * a.ndim}")
    axes = _axes(dim, a.ndim)
    m = np.amax(a, axis=axes, keepdims=True, initial=-np.inf)  # -inf over an empty dim
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        kept = np.log(np.exp(a - m).sum(axis=axes, keepdims=True)) + m
    out = kept if keepdim else np.squeeze(kept, axes)
    return out, lambda g: (_keep(g, a.shape, axes, keepdim) * np.exp(a - kept),)


@register("norm", grad_fn="NormBackward1")
def norm(a, p=2, dim=None, keepdim=False):
    _float_only(a, "linalg.vector_norm: Expected a floating point or complex tensor as "
                "input. Got {}")
    axes = _axes(dim, a.ndim)
    mag = np.abs(a)
    if p == float("inf"):
        raise NotImplementedError("norm(p=inf) is not supported by dyngraph")
    out = np.asarray((mag**p).sum(axis=axes, keepdims=keepdim) ** (1 / p), dtype=a.dtype)

    def backward(g):
        kept = _keep(out, a.shape, axes, keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.sign(a) * mag ** (p - 1) / kept ** (p - 1)
        return (_keep(g, a.shape, axes, keepdim) * np.where(kept == 0, 0, d),)

    return out, backward


@register("cumsum", saves=False)
def cumsum(a, dim):
    axes = _axes(dim, a.ndim)
    if not axes:
        return a.astype(_int64_for_ints(a) or a.dtype), lambda g: (g,)
    out = np.cumsum(a, axis=axes[0], dtype=_int64_for_ints(a))
    axis = axes[0]
    return out, lambda g: (np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis),)


# -- not differentiable -------------------------------------------------------------------
def _arg_checks(a: np.ndarray, dim: Any, name: str) -> None:
    if a.dtype == np.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if a.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
    else:
        _nonempty(a, _axes(dim, a.ndim), name)


@register("argmax", saves=False)
def argmax(a, dim=None, keepdim=False):
    _arg_checks(a, dim, "argmax")
    if dim is None:
        out = np.asarray(np.argmax(a))
        return (out.reshape((1,) * a.ndim) if keepdim else out), None
    return np.argmax(a, axis=dim, keepdims=keepdim), None


@register("argmin", saves=False)
def argmin(a, dim=None, keepdim=False):
    _arg_checks(a, dim, "argmin")
    if dim is None:
        out = np.asarray(np.argmin(a))
        return (out.reshape((1,) * a.ndim) if keepdim else out), None
    return np.argmin(a, axis=dim, keepdims=keepdim), None


@register("argsort", saves=False)
def argsort(a, dim=-1, descending=False):
    if a.ndim == 0:
        return np.zeros((), np.int64), None
    if not descending:
        return np.argsort(a, axis=dim, kind="stable").astype(np.int64), None
    if a.dtype.kind in "biu":  # ~a reverses the order exactly, with no overflow
        return np.argsort(~a, axis=dim, kind="stable").astype(np.int64), None
    # Floats: NaN counts as the largest value (first when descending), as in PyTorch.
    nan = np.isnan(a)
    order = np.lexsort((np.where(nan, 0, -a), ~nan), axis=dim)
    return order.astype(np.int64), None


@register("any", saves=False)
def any_(a, dim=None, keepdim=False):
    return _logical(np.any(a, axis=dim, keepdims=keepdim), a), None


@register("all", saves=False)
def all_(a, dim=None, keepdim=False):
    return _logical(np.all(a, axis=dim, keepdims=keepdim), a), None


def _logical(out: Any, a: np.ndarray) -> Any:
    """any/all give bools, except on uint8, where PyTorch keeps uint8."""
    return np.asarray(out, np.uint8) if a.dtype == np.uint8 else out
