"""In-place ops: ``add_``, ``mul_``, ``zero_``, ``copy_``, ``x[i] = v``, ``x += y`` ...

They always change the tensor's memory, as in PyTorch, so whatever shares it (its views,
its base, a ``detach()``-ed tensor) sees the change; each bumps the version counter
(``versions.py``), which backward checks.

Outside a graph (under ``no_grad``, or when nothing involved needs a gradient) that is all:
numpy writes in place, no node, no event. That is how optimizers update parameters.

Inside a graph the new values are computed out of place through ``apply``, from a copy of
the old values (so what that op saves stays as it was), then written into the memory, and
the tensor takes the result's place in the graph (PyTorch "rebases" it the same way). On a
view, the base gets a CopySlices history instead and every view of it follows
(``views.py``).

PyTorch's refusals, with its messages: a leaf that requires grad, or a view of one, in grad
mode; a view made under ``no_grad``, or one of several outputs of ``split``/``unbind``,
changed in a graph; a result whose shape or dtype does not fit the tensor; writing an
``expand``-ed tensor.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    from numpy import byte_bounds  # type: ignore[attr-defined,no-redef]

from . import functions as fn
from . import functions_shape as fs
from . import (
    ops_inplace,  # noqa: F401  (registers copy, fill, zero, normal, uniform)
    versions,
    views,
)
from .autograd import grad_mode
from .creation import generator
from .dtypes import can_cast, checked_scalar, promoted, wrapped_int
from .ops import OPS, check_sub_operands, complex_name
from .ops_shape import OVERLAP_MESSAGE
from .tensor import LEAF_INPLACE_MESSAGE, Tensor, _wrap, apply

_SCALAR_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
}


def _array(x: Any) -> Any:
    return x._array if isinstance(x, Tensor) else x


# -- the checks ----------------------------------------------------------------------------
def _in_graph(self: Tensor, *others: Any) -> bool:
    """Must this in-place op be recorded? Raises PyTorch's refusals first."""
    if not grad_mode.enabled or self._array.dtype.kind not in "fc":
        return False  # an integer or bool result never requires grad (copy_ of a float)
    needs = self.requires_grad
    if not needs:
        for o in others:
            if isinstance(o, Tensor) and o.requires_grad:
                needs = True
                break
    if self._view_info is not None:
        view = views.info(self)
        if view is not None:
            needs = needs or view.base.requires_grad
            views.check(self, view, needs)
            return needs
    if needs and self.requires_grad and self.grad_fn is None:
        raise RuntimeError(LEAF_INPLACE_MESSAGE)
    return needs


def _check_shape(self: Tensor, *others: Any, overlap: bool = True) -> None:
    """The result must have ``self``'s shape: operands broadcast to it, never it to them;
    and (``overlap``) no operand may partly overlap the memory being written."""
    shape = self._array.shape
    for o in others:
        if type(o) is complex:  # (dyngraph has no complex tensors, nor does self)
            raise RuntimeError(f"result type {complex_name(self._array)} can't be cast to "
                               f"the desired output type {_scalar_name(self._array.dtype)}")
        if overlap and isinstance(o, Tensor):
            _check_no_partial_overlap(self, o)
        other = o._array.shape if isinstance(o, Tensor) else np.shape(o)
        if other == shape or not other:
            continue
        try:
            full = np.broadcast_shapes(shape, other)
        except ValueError:
            raise RuntimeError(_mismatch(shape, other)) from None
        if full != shape:
            raise RuntimeError(
                f"output with shape {list(shape)} doesn't match the broadcast shape {list(full)}"
            )


def _overlap(a: np.ndarray, b: np.ndarray, strides: Any = None) -> str:
    """PyTorch's memory-overlap status of two arrays: "none", "full" (the same elements
    in the same layout: PyTorch's strides, from ``strides()``, are equal), "partial", or
    "too hard" (an operand is not dense, which PyTorch does not judge)."""
    if a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):  # bounds only: cheap
        return "none"
    a_lo, a_hi = byte_bounds(a)
    b_lo, b_hi = byte_bounds(b)
    if a_hi - a_lo != a.nbytes or b_hi - b_lo != b.nbytes:
        return "too hard"
    if (a_lo, a_hi) == (b_lo, b_hi):
        a_strides, b_strides = (a.strides, b.strides) if strides is None else strides()
        return "full" if a_strides == b_strides else "partial"
    return "partial" if a_lo < b_hi and b_lo < a_hi else "none"


def _check_no_partial_overlap(written: Tensor, read: Tensor) -> None:
    """PyTorch's refusal to read memory that the op writes, unless it reads exactly what
    it writes (``x.add_(x)``)."""
    if written._array is not read._array and _overlap(
            written._array, read._array,
            lambda: (views.torch_strides(written), views.torch_strides(read))) == "partial":
        raise RuntimeError(_PARTIAL_OVERLAP_MESSAGE)


def _check_setitem_overlap(self: Tensor, index: Any, target: np.ndarray, value: Tensor
                           ) -> None:
    """The same refusal for ``self[index] = value``, which PyTorch's setitem copies into
    the view ``target`` as the value is when the shapes agree; else a 0-d value fills
    (reading it first); else the value without its leading size-1 dims is expanded to
    the target's shape."""
    array = value._array
    k = 0
    if array.shape != target.shape:
        if array.ndim == 0:
            return
        while k < array.ndim and array.shape[k] == 1:
            k += 1
        try:
            array = np.broadcast_to(array[(0,) * k + (Ellipsis,)], target.shape)
        except ValueError:
            return  # the shapes do not fit: that error comes with the write

    def strides() -> tuple[tuple[int, ...], tuple[int, ...]]:
        own = views.torch_strides(self)
        _, target_strides = views.getitem_strides(self._array.shape, own, index,
                                                  target.itemsize)
        value_strides = views.torch_strides(value)
        if value._array.shape != target.shape:
            shape = value._array.shape
            value_strides = views.expand_strides(shape[k:], value_strides[k:], target.shape,
                                                 target.itemsize)
        return target_strides, value_strides

    if _overlap(target, array, strides) == "partial":
        raise RuntimeError(_PARTIAL_OVERLAP_MESSAGE)


_PARTIAL_OVERLAP_MESSAGE = (
    "unsupported operation: some elements of the input tensor and the written-to tensor "
    "refer to a single memory location. Please clone() the tensor before performing the "
    "operation."
)


def _mismatch(a: tuple[int, ...], b: tuple[int, ...]) -> str:
    n = max(len(a), len(b))
    for k in range(1, n + 1):
        da = a[-k] if k <= len(a) else 1
        db = b[-k] if k <= len(b) else 1
        if da != db and da != 1 and db != 1:
            return (f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                    f"non-singleton dimension {n - k}")
    return f"shapes {list(a)} and {list(b)} do not broadcast"


def _cast_error(result: np.dtype, target: np.dtype) -> RuntimeError:
    return RuntimeError(
        f"result type {_scalar_name(result)} can't be cast to the desired output type "
        f"{_scalar_name(target)}"
    )


def _scalar_name(dtype: np.dtype) -> str:
    return _SCALAR_NAMES.get(dtype.name, dtype.name)


def _overlapping(array: np.ndarray) -> bool:
    """Would writing ``array`` write one memory location twice (an expand-ed view)?"""
    return array.size > 1 and any(
        s == 0 and n > 1 for s, n in zip(array.strides, array.shape, strict=True))


def _writable(self: Tensor, same_value: bool = False) -> np.ndarray:
    """The array to write; PyTorch's refusal to write an ``expand``-ed tensor, except a
    ``fill_``/``zero_`` (``same_value``), whose writes all agree (in a graph its backward
    then refuses, as PyTorch's CopySlices does)."""
    array: np.ndarray = self._array
    if not same_value and views.overlapping_write(self):
        raise RuntimeError(OVERLAP_MESSAGE)
    return array


# -- changing the memory -------------------------------------------------------------------
def _bumped(self: Tensor) -> Tensor:
    """Record the change in the version counter (not for ``.data``, as in PyTorch)."""
    view = self._view_info
    owner = self if view is None else view.base
    if not (self._untracked or owner._untracked):
        node = owner.grad_fn
        versions.bump(self._array, None if node is None else node.name())
    if owner._views:
        views.base_changed(owner)
    return self


def _old(self: Tensor, copy: bool = True) -> Tensor:
    """``self``'s current value and history as an op's input; a copy of the values when
    the op may save them (they are about to be overwritten)."""
    t = _wrap(self._array.copy() if copy else self._array)
    t.requires_grad = self.requires_grad
    t.grad_fn = self.grad_fn
    t._id = self._id
    return t


def _commit(self: Tensor, out: Tensor, same_value: bool = False) -> Tensor:
    """Write ``out`` (computed out of place, in the graph) into ``self``; rebase self."""
    target = _writable(self, same_value)
    if out._array.shape != target.shape:
        _check_shape(self, out)
    if out._array.dtype != target.dtype:
        if not can_cast(out._array.dtype, target.dtype):
            raise _cast_error(out._array.dtype, target.dtype)
        out = fn.to(out, target.dtype)
    view = views.info(self)
    if view is not None:
        views.commit(self, view, out)
    else:
        np.copyto(target, out._array)
        views.take_place(self, out)
        views.refresh(self)
    _bumped(self)
    if out.grad_fn is not None and out._array.dtype == target.dtype:
        versions.written_into(out._array, target)
    return self


def _ufunc(self: Tensor, ufunc: Any, other: Any, name: str) -> Tensor:
    """The plain path of an arithmetic in-place op: numpy writes into the memory."""
    array = _writable(self)
    other = _array(other)
    if type(other) is np.ndarray and other.dtype is not array.dtype:
        other = promoted(array, other)[1]  # an int into float16 first, as PyTorch
    if type(other) is int and array.dtype.kind in "iu":
        other = wrapped_int(other, array.dtype)  # PyTorch wraps it; numpy would refuse
    try:
        ufunc(array, other, out=array, casting="same_kind")
    except TypeError:  # numpy's UFuncTypeError: e.g. a float result into an int tensor
        # The op out of place raises PyTorch's own refusal first (bool - bool ...).
        out_of_place = getattr(fn, name.rstrip("_"), None)
        if out_of_place is not None:
            out_of_place(_wrap(array), other)
        result = _result_type(array, other, ufunc)
        if not can_cast(result, array.dtype):
            raise _cast_error(result, array.dtype) from None
        ufunc(array, other, out=array, casting="unsafe")  # int64 into uint8: PyTorch's cast
    except ValueError as e:
        raise RuntimeError(f"{name}: {e} (in-place on a tensor of shape "
                           f"{tuple(array.shape)})") from None
    return _bumped(self)


def _result_type(array: np.ndarray, other: Any, ufunc: Any) -> np.dtype:
    """The dtype PyTorch would compute (a Python float makes integers float32)."""
    with np.errstate(all="ignore"):
        result = np.result_type(ufunc(np.zeros((), array.dtype),
                                      np.zeros((), np.asarray(other).dtype)))
    if result.kind == "f" and array.dtype.kind != "f" and np.asarray(other).dtype.kind != "f":
        return np.dtype(np.float32)  # true division of integers
    if result.kind == "f" and isinstance(other, float):
        return np.dtype(np.float32)
    return result


def _scaled(other: Any, alpha: Any) -> Any:
    return other if alpha == 1 else (other * alpha)


def _plain_update(self: Tensor, other: Any, ufunc: Any, alpha: Any) -> bool:
    """An optimizer's update, ``p.sub_(p.grad, alpha=lr)`` outside the graph: the same
    float dtype and shape, ``self`` its own base, separate memory. None of the general
    path's refusals can apply, so numpy writes straight into ``p`` (this runs for every
    parameter of every step). False when the general path must decide."""
    if type(other) is not Tensor or self._view_info is not None or type(alpha) not in _REAL:
        return False
    if grad_mode.enabled and (self.requires_grad or other.requires_grad):
        return False
    a: np.ndarray = self._array
    b: np.ndarray = other._array
    if a.dtype is not b.dtype or a.dtype.kind != "f" or a.shape != b.shape:
        return False
    if a.base is None and b.base is None and a is not b:
        # Two arrays owning their memory (a parameter, a fresh gradient) never overlap,
        # and one owning its memory never overlaps itself.
        if not a.flags.writeable:
            return False
    else:
        flags = a.flags
        if (not flags.c_contiguous or not flags.writeable or np.may_share_memory(a, b)):
            return False
    ufunc(a, b if alpha == 1 else b * alpha, out=a)
    if not self._untracked:  # _bumped(self) for a tensor that is its own base
        node = self.grad_fn
        versions.bump(a, None if node is None else node.name())
    if self._views:
        views.base_changed(self)
    return True


_REAL = (int, float)


# -- arithmetic ----------------------------------------------------------------------------
def add_(self: Tensor, other: Any, *legacy: Any, alpha: Any = 1) -> Tensor:
    if legacy:  # the deprecated add_(Number alpha, Tensor other): p.data.add_(-lr, p.grad)
        other, alpha = fn.legacy_alpha("add_", other, legacy)
    if _plain_update(self, other, np.add, alpha):
        return self
    _check_shape(self, other)
    if _in_graph(self, other):
        return _commit(self, fn.add(_old(self, copy=False), other, alpha=alpha))
    return _ufunc(self, np.add, _scaled(_array(other), alpha), "add_")


def sub_(self: Tensor, other: Any, *legacy: Any, alpha: Any = 1) -> Tensor:
    if legacy:
        other, alpha = fn.legacy_alpha("sub_", other, legacy)
    if _plain_update(self, other, np.subtract, alpha):
        return self
    check_sub_operands(self._array, _array(other))
    _check_shape(self, other)
    if _in_graph(self, other):
        return _commit(self, fn.sub(_old(self, copy=False), other, alpha=alpha))
    return _ufunc(self, np.subtract, _scaled(_array(other), alpha), "sub_")


def mul_(self: Tensor, other: Any) -> Tensor:
    _check_shape(self, other)
    if _in_graph(self, other):
        return _commit(self, fn.mul(_old(self), other))
    return _ufunc(self, np.multiply, other, "mul_")


def div_(self: Tensor, other: Any) -> Tensor:
    _check_shape(self, other)
    if _in_graph(self, other):
        return _commit(self, fn.div(_old(self), other))
    return _ufunc(self, np.true_divide, other, "div_")


def pow_(self: Tensor, exponent: Any) -> Tensor:
    _check_shape(self, exponent)
    if _in_graph(self, exponent):
        return _commit(self, fn.pow(_old(self), exponent))
    if self._array.dtype.kind in "biu":
        # PyTorch's integer powers (numpy refuses a negative exponent inside a tensor,
        # where PyTorch gives 1, -1 or 0), computed out of place, then written back.
        array = _writable(self)
        out = fn.pow(_wrap(array), exponent)._array
        if not can_cast(out.dtype, array.dtype):
            raise _cast_error(out.dtype, array.dtype)
        np.copyto(array, out, casting="unsafe")
        return _bumped(self)
    return _ufunc(self, np.power, exponent, "pow_")


def sqrt_(self: Tensor) -> Tensor:
    if _in_graph(self):
        return _commit(self, fn.sqrt(_old(self)))
    array = _writable(self)
    if array.dtype.kind != "f":
        raise _cast_error(np.dtype(np.float32), array.dtype)
    np.sqrt(array, out=array)
    return _bumped(self)


def neg_(self: Tensor) -> Tensor:
    if self._array.dtype == np.bool_:
        fn.neg(self)  # raises PyTorch's refusal of - on bools
    if _in_graph(self):
        return _commit(self, fn.neg(_old(self, copy=False)))
    array = _writable(self)
    if array.flags.c_contiguous:
        np.negative(array, out=array)
    else:
        # numpy 2.4's in-place negative writes wrong values into some strided views
        # (x[:, 3] of a 4x4 float32 or int32 tensor); computed out of place, it is right.
        np.copyto(array, np.negative(array))
    return _bumped(self)


def addcmul_(self: Tensor, tensor1: Any, tensor2: Any, *legacy: Any, value: Any = 1) -> Tensor:
    if legacy:  # the deprecated addcmul_(Number value, Tensor tensor1, Tensor tensor2)
        (tensor1, tensor2), value = _legacy_value("addcmul_", tensor1, tensor2, legacy)
    _check_shape(self, tensor1, tensor2)
    if _in_graph(self, tensor1, tensor2):
        return _commit(self, fn.add(_old(self, copy=False), fn.mul(tensor1, tensor2),
                                    alpha=value))
    return _ufunc(self, np.add, _array(tensor1) * _array(tensor2) * value, "addcmul_")


def addcdiv_(self: Tensor, tensor1: Any, tensor2: Any, *legacy: Any, value: Any = 1) -> Tensor:
    if legacy:
        (tensor1, tensor2), value = _legacy_value("addcdiv_", tensor1, tensor2, legacy)
    _check_shape(self, tensor1, tensor2)
    if _in_graph(self, tensor1, tensor2):
        return _commit(self, fn.add(_old(self, copy=False), fn.div(tensor1, tensor2),
                                    alpha=value))
    return _ufunc(self, np.add, _array(tensor1) / _array(tensor2) * value, "addcdiv_")


def _legacy_value(name: str, value: Any, tensor1: Any, rest: tuple[Any, ...]) -> Any:
    """The deprecated ``addcmul_(Number value, Tensor tensor1, Tensor tensor2)``."""
    if len(rest) != 1 or isinstance(value, Tensor):
        raise TypeError(f"{name}() takes 2 positional arguments but {2 + len(rest)} were given")
    fn.deprecated_overload(name, "Number value, Tensor tensor1, Tensor tensor2",
                           "Tensor tensor1, Tensor tensor2, *, Number value = 1")
    return (tensor1, rest[0]), value


def lerp_(self: Tensor, end: Any, weight: Any) -> Tensor:
    _check_shape(self, end, weight)
    if _in_graph(self, end, weight):
        old = _old(self)
        return _commit(self, fn.add(old, fn.mul(fn.sub(end, old), weight)))
    return _ufunc(self, np.add, (_array(end) - self._array) * _array(weight), "lerp_")


def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    _check_shape(self, *(b for b in (min, max) if isinstance(b, Tensor)))
    if _in_graph(self, min, max):
        return _commit(self, fn.clamp(_old(self), min, max))
    array = _writable(self)
    result = fn.clamp(_wrap(array), min, max)._array  # PyTorch's dtype for the result
    if not can_cast(result.dtype, array.dtype):
        raise _cast_error(result.dtype, array.dtype)
    np.copyto(array, result, casting="unsafe")
    return _bumped(self)


def clamp_min_(self: Tensor, min: Any) -> Tensor:  # noqa: A002
    return clamp_(self, min=min)


def clamp_max_(self: Tensor, max: Any) -> Tensor:  # noqa: A002
    return clamp_(self, max=max)


def masked_fill_(self: Tensor, mask: Any, value: Any) -> Tensor:
    fn.check_fill_value(value)
    _check_shape(self, mask)
    in_graph = _in_graph(self, value)
    # Its writes all agree: PyTorch writes an expand-ed tensor, with a deprecation warning
    # (in a graph, its backward then refuses, as fill_'s).
    if views.overlapping_write(self):
        warnings.warn(_EXPANDED_MASKED_FILL_WARNING, UserWarning, stacklevel=2)
    if in_graph:
        return _commit(self, fn.masked_fill(_old(self), mask, value), same_value=True)
    array = self._array
    value = checked_scalar(value, array.dtype) if not isinstance(value, Tensor) else value
    np.copyto(array, np.asarray(_array(value), dtype=array.dtype),
              where=np.broadcast_to(np.asarray(_array(mask), bool), array.shape))
    return _bumped(self)


_EXPANDED_MASKED_FILL_WARNING = (
    "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
    "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = "
    "scalar"
)


# -- replacing the values ------------------------------------------------------------------
def _overwrite(self: Tensor, op: str, values: Any, overlap: bool = True) -> Tensor:
    """zero_/fill_/copy_/normal_ ...: the result no longer depends on the old values, whose
    history stays in the graph with a zero gradient (as in PyTorch). ``overlap``: check
    ``values`` against the memory written (setitem has checked it its own way)."""
    same_value = op in ("fill", "zero")
    _check_shape(self, values, overlap=overlap and not same_value)  # fill_ reads one value
    if _in_graph(self, values):
        return _commit(self, apply(OPS[op], _old(self, copy=False), values), same_value)
    array = _writable(self, same_value)
    try:
        np.copyto(array, _array(values), casting="unsafe")
    except ValueError as e:
        raise RuntimeError(f"{op}_: {e}") from None
    return _bumped(self)


def zero_(self: Tensor) -> Tensor:
    return _overwrite(self, "zero", np.zeros((), self._array.dtype))


def fill_(self: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor) and value._array.ndim:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value._array.ndim} dimensions."
        )
    if not isinstance(value, Tensor):  # PyTorch's checked conversion to self's dtype
        value = np.asarray(checked_scalar(value, self._array.dtype))
    return _overwrite(self, "fill", value)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _overwrite(self, "normal", generator().normal(mean, std, self._array.shape))


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    return _overwrite(self, "uniform", generator().uniform(a, b, self._array.shape))


def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    return _overwrite(self, "copy", src if isinstance(src, Tensor) else np.asarray(src))


# -- indexing ------------------------------------------------------------------------------
def _is_view_index(index: Any) -> bool:
    """Ints, slices, None and ``...`` pick a view; arrays and masks pick copies."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice, np.integer))
               for p in parts)


def _is_mask_fill(index: Any, value: Any) -> bool:
    """Is this index_put_ PyTorch's masked_fill_ (its one index tensor a mask, the value
    one element)?"""
    if np.size(_array(value)) != 1:
        return False
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if isinstance(p, (np.ndarray, list))]
    return len(arrays) == 1 and isinstance(arrays[0], np.ndarray) and arrays[0].dtype == bool


def _check_no_index_put_overlap(self: Tensor, index: Any, value: Tensor) -> None:
    """PyTorch's index_put_ refuses values that share any memory with the tensor written
    (one mask and a one-element value is masked_fill_, which reads the value first)."""
    same = value._array is self._array  # PyTorch refuses it even when empty
    if not _is_mask_fill(index, value) and (
            same or _overlap(self._array, value._array) in ("full", "partial")):
        raise RuntimeError(_PARTIAL_OVERLAP_MESSAGE)


def _warn_expanded_index_put(self: Tensor, index: Any, value: Any) -> None:
    """PyTorch's deprecation warnings for index_put_ on an expand-ed tensor (and for the
    masked_fill_ it dispatches to)."""
    if views.overlapping_write(self) and self._array[index].size:
        warnings.warn(_EXPANDED_INDEX_PUT_WARNING, UserWarning, stacklevel=3)
        if _is_mask_fill(index, value):
            warnings.warn(_EXPANDED_MASKED_FILL_WARNING, UserWarning, stacklevel=3)


def _check_index_into_empty(shape: tuple[int, ...], index: Any) -> None:
    """PyTorch's index_put_ refuses an index tensor into a size-0 dim that picks anything
    (no number indexes nothing) before it compares the value's shape with the result's."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [np.asarray(p) if isinstance(p, list) else p for p in parts]
    used = sum(a.ndim if isinstance(a, np.ndarray) and a.dtype == bool else
               0 if a is None or a is Ellipsis else 1 for a in arrays)
    dim = 0
    sizes: list[int] = []
    picks: list[tuple[int, ...]] = []
    for a in arrays:
        if a is Ellipsis:
            dim += len(shape) - used
        elif isinstance(a, np.ndarray) and a.dtype == bool:
            sizes.extend(shape[dim:dim + a.ndim])
            picks.append((int(np.count_nonzero(a)),))
            dim += a.ndim
        elif isinstance(a, np.ndarray):
            sizes.append(shape[dim] if dim < len(shape) else 1)
            picks.append(a.shape)
            dim += 1
        elif a is not None:
            dim += 1
    if 0 not in sizes:
        return
    try:
        picked = np.broadcast_shapes(*picks)
    except ValueError:
        return  # the indices' own shape mismatch, raised as it was
    if 0 not in picked:
        raise IndexError("index is out of bounds for dimension with size 0")


def _without_leading_ones(value: Tensor) -> Tensor:
    """PyTorch's setitem drops a value's leading size-1 dims (``x[0] = v`` of shape
    (1,) into a 0-d element)."""
    shape = value._array.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return value.reshape(shape[k:]) if k else value


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``tensor[index] = value``: a copy into the view ``tensor[index]`` (CopySlices), or
    with index tensors or a mask, PyTorch's ``index_put_`` (IndexPutBackward0)."""
    index = fs._index(index)
    scalar = not isinstance(value, Tensor) and np.ndim(value) == 0  # PyTorch then fills
    if scalar:  # made a tensor of self's dtype, by PyTorch's checked conversion
        value = checked_scalar(value, self._array.dtype)
    view_index = _is_view_index(index)
    if view_index:  # PyTorch takes the view first: a bad index is an IndexError, even on
        target = OPS["getitem"].forward(self._array, index)[0]  # a leaf requiring grad
    given = value
    if isinstance(value, Tensor) and view_index and value._array.ndim > target.ndim:
        value = _without_leading_ones(value)
    in_graph = _in_graph(self, value)  # a leaf's refusal comes before index_put_'s own
    if not view_index:
        if isinstance(value, Tensor):
            _check_no_index_put_overlap(self, index, value)
        if 0 in self._array.shape:
            _check_index_into_empty(self._array.shape, index)
    else:
        # PyTorch copies into the view, a number too (a 0-d tensor's fill_ is a copy_):
        # it refuses to write one element of the view twice, whatever self is.
        if _overlapping(target):
            raise RuntimeError(OVERLAP_MESSAGE)
        if isinstance(given, Tensor):
            _check_setitem_overlap(self, index, target, given)
    if in_graph:
        if view_index:
            view = views.view_op(OPS["getitem"], self, temporary=True, index=index)
            if scalar:
                fill_(view, value)
            else:
                _overwrite(view, "copy", value if isinstance(value, Tensor)
                           else np.asarray(value), overlap=False)
        else:
            out = apply(OPS["index_put"], _old(self), value, index=index)
            _warn_expanded_index_put(self, index, value)
            _commit(self, out, True)
        return
    # index_put_ (not a view index) on an expand-ed tensor writes, with a deprecation
    # warning; a copy into a view was checked above.
    array = self._array
    try:
        if not view_index:
            _warn_expanded_index_put(self, index, value)
        array[index] = _array(value)
    except IndexError as e:  # indices out of range, checked before anything is written
        raise IndexError(str(e).replace(" for axis ", " for dimension ")) from None
    except ValueError as e:
        raise RuntimeError(f"setitem: {e}") from None
    _bumped(self)


_EXPANDED_INDEX_PUT_WARNING = (
    "Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
    "performing this operation. This also applies to advanced indexing e.g. "
    "tensor[indices] = tensor"
)


def iadd(self: Tensor, other: Any) -> Tensor:
    return add_(self, other)


def isub(self: Tensor, other: Any) -> Tensor:
    return sub_(self, other)


def imul(self: Tensor, other: Any) -> Tensor:
    return mul_(self, other)


def itruediv(self: Tensor, other: Any) -> Tensor:
    return div_(self, other)


def _to_a_part(write: Any) -> Any:
    """An in-place write to a part of the tensor: one made by ``empty`` and unwritten before
    is not all data after it either (see ``creation._unwritten``)."""

    def partial(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        mark = self.__dict__.get("_unwritten")
        unwritten = mark is not None and mark == self._version
        out = write(self, *args, **kwargs)
        if unwritten:
            self._unwritten = self._version  # type: ignore[attr-defined]
        return out

    partial.__name__ = partial.__qualname__ = write.__name__
    partial.__doc__ = write.__doc__
    return partial


setitem = _to_a_part(setitem)
masked_fill_ = _to_a_part(masked_fill_)

METHODS: dict[str, Any] = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "pow_": pow_, "sqrt_": sqrt_,
    "neg_": neg_, "addcmul_": addcmul_, "addcdiv_": addcdiv_, "lerp_": lerp_,
    "clamp_": clamp_, "clamp_min_": clamp_min_, "clamp_max_": clamp_max_,
    "masked_fill_": masked_fill_, "zero_": zero_, "fill_": fill_, "normal_": normal_,
    "uniform_": uniform_, "copy_": copy_, "__setitem__": setitem,
    "__iadd__": iadd, "__isub__": isub, "__imul__": imul, "__itruediv__": itruediv,
    "multiply_": mul_, "divide_": div_, "subtract_": sub_, "clip_": clamp_,
}
