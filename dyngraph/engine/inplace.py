"""In-place ops: ``add_``, ``mul_``, ``zero_``, ``copy_``, ``x[i] = v``, ``x += y`` ...

Outside a graph (under ``no_grad``, or on tensors that need no gradient) they change
their array in place and are not graph ops: no node, no event. That is how optimizers update
parameters. Inside a graph they compute out of place through ``apply`` and the tensor takes
over the result's place in the graph (PyTorch "rebases" it the same way), so arrays saved
for backward are never overwritten. On a leaf that requires grad, outside ``no_grad``,
they raise PyTorch's error.

Not checked (PyTorch's version counter): changing, under ``no_grad``, a tensor that a live
graph saved for its backward makes that backward use the new values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import functions as fn
from . import functions_shape as fs
from .autograd import grad_mode
from .creation import generator
from .ops import OPS
from .tensor import LEAF_INPLACE_MESSAGE, Tensor, apply


def _array(x: Any) -> Any:
    return x._array if isinstance(x, Tensor) else x


def _in_graph(self: Tensor, *others: Any) -> bool:
    """Must this in-place op be recorded? Raises PyTorch's error for a leaf needing grad."""
    if not grad_mode.enabled:
        return False
    if self.requires_grad:
        if self.grad_fn is None:
            raise RuntimeError(LEAF_INPLACE_MESSAGE)
        return True
    for o in others:
        if isinstance(o, Tensor) and o.requires_grad:
            return True
    return False


def _rebase(self: Tensor, out: Tensor) -> Tensor:
    """``self`` becomes ``out``: same data, same place in the graph, same id in events."""
    self._array = out._array
    self.grad_fn = out.grad_fn
    self.requires_grad = out.requires_grad
    self._id = out._id
    return self


def _ufunc(self: Tensor, ufunc: Any, other: Any, name: str) -> Tensor:
    try:
        ufunc(self._array, _array(other), out=self._array, casting="same_kind")
    except TypeError as e:  # numpy's UFuncTypeError: a float result into an int tensor
        raise RuntimeError(f"{name}: result type can't be cast to the desired output type "
                           f"{self._array.dtype} ({e})") from None
    except ValueError as e:
        raise RuntimeError(f"{name}: {e} (in-place on a tensor of shape "
                           f"{tuple(self._array.shape)})") from None
    return self


def _scaled(other: Any, alpha: Any) -> Any:
    return other if alpha == 1 else (other * alpha)


def add_(self: Tensor, other: Any, *legacy: Any, alpha: Any = 1) -> Tensor:
    if legacy:  # the deprecated add_(Number alpha, Tensor other): p.data.add_(-lr, p.grad)
        other, alpha = fn.legacy_alpha("add_", other, legacy)
    if _in_graph(self, other):
        return _rebase(self, fn.add(self, other, alpha=alpha))
    return _ufunc(self, np.add, _scaled(_array(other), alpha), "add_")


def sub_(self: Tensor, other: Any, *legacy: Any, alpha: Any = 1) -> Tensor:
    if legacy:
        other, alpha = fn.legacy_alpha("sub_", other, legacy)
    if _in_graph(self, other):
        return _rebase(self, fn.sub(self, other, alpha=alpha))
    return _ufunc(self, np.subtract, _scaled(_array(other), alpha), "sub_")


def mul_(self: Tensor, other: Any) -> Tensor:
    if _in_graph(self, other):
        return _rebase(self, fn.mul(self, other))
    return _ufunc(self, np.multiply, other, "mul_")


def div_(self: Tensor, other: Any) -> Tensor:
    if _in_graph(self, other):
        return _rebase(self, fn.div(self, other))
    return _ufunc(self, np.true_divide, other, "div_")


def pow_(self: Tensor, exponent: Any) -> Tensor:
    if _in_graph(self, exponent):
        return _rebase(self, fn.pow(self, exponent))
    return _ufunc(self, np.power, exponent, "pow_")


def sqrt_(self: Tensor) -> Tensor:
    if _in_graph(self):
        return _rebase(self, fn.sqrt(self))
    np.sqrt(self._array, out=self._array)
    return self


def neg_(self: Tensor) -> Tensor:
    if _in_graph(self):
        return _rebase(self, fn.neg(self))
    np.negative(self._array, out=self._array)
    return self


def addcmul_(self: Tensor, tensor1: Any, tensor2: Any, *legacy: Any, value: Any = 1) -> Tensor:
    if legacy:  # the deprecated addcmul_(Number value, Tensor tensor1, Tensor tensor2)
        (tensor1, tensor2), value = _legacy_value("addcmul_", tensor1, tensor2, legacy)
    if _in_graph(self, tensor1, tensor2):
        return _rebase(self, fn.add(self, fn.mul(tensor1, tensor2), alpha=value))
    return _ufunc(self, np.add, _array(tensor1) * _array(tensor2) * value, "addcmul_")


def addcdiv_(self: Tensor, tensor1: Any, tensor2: Any, *legacy: Any, value: Any = 1) -> Tensor:
    if legacy:
        (tensor1, tensor2), value = _legacy_value("addcdiv_", tensor1, tensor2, legacy)
    if _in_graph(self, tensor1, tensor2):
        return _rebase(self, fn.add(self, fn.div(tensor1, tensor2), alpha=value))
    return _ufunc(self, np.add, _array(tensor1) / _array(tensor2) * value, "addcdiv_")


def _legacy_value(name: str, value: Any, tensor1: Any, rest: tuple[Any, ...]) -> Any:
    """The deprecated ``addcmul_(Number value, Tensor tensor1, Tensor tensor2)``."""
    if len(rest) != 1 or isinstance(value, Tensor):
        raise TypeError(f"{name}() takes 2 positional arguments but {2 + len(rest)} were given")
    fn.deprecated_overload(name, "Number value, Tensor tensor1, Tensor tensor2",
                           "Tensor tensor1, Tensor tensor2, *, Number value = 1")
    return (tensor1, rest[0]), value


def lerp_(self: Tensor, end: Any, weight: Any) -> Tensor:
    if _in_graph(self, end, weight):
        return _rebase(self, fn.add(self, fn.mul(fn.sub(end, self), weight)))
    return _ufunc(self, np.add, (_array(end) - self._array) * _array(weight), "lerp_")


def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if _in_graph(self):
        return _rebase(self, fn.clamp(self, min, max))
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    np.clip(self._array, _array(min), _array(max), out=self._array)
    return self


def clamp_min_(self: Tensor, min: Any) -> Tensor:  # noqa: A002
    return clamp_(self, min=min)


def clamp_max_(self: Tensor, max: Any) -> Tensor:  # noqa: A002
    return clamp_(self, max=max)


def masked_fill_(self: Tensor, mask: Any, value: Any) -> Tensor:
    if _in_graph(self, value):
        return _rebase(self, fn.masked_fill(self, mask, value))
    np.copyto(self._array, np.asarray(_array(value), dtype=self._array.dtype),
              where=np.broadcast_to(np.asarray(_array(mask), bool), self._array.shape))
    return self


def _overwrite(self: Tensor, values: np.ndarray) -> Tensor:
    """zero_/fill_/normal_ ...: the result no longer depends on the old values."""
    if _in_graph(self):
        # Recorded out of place (arrays saved for backward keep their values) as a where()
        # that takes every value from the constant: the tensor stays in the graph, with a
        # zero gradient to what it was before, as in PyTorch.
        fill = np.array(np.broadcast_to(values, self._array.shape), dtype=self._array.dtype)
        everywhere = np.ones(self._array.shape, dtype=bool)
        return _rebase(self, apply(OPS["where"], everywhere, fill, self))
    self._array[...] = values
    return self


def zero_(self: Tensor) -> Tensor:
    return _overwrite(self, np.zeros((), self._array.dtype))


def fill_(self: Tensor, value: Any) -> Tensor:
    return _overwrite(self, np.asarray(_array(value), dtype=self._array.dtype))


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _overwrite(self, generator().normal(mean, std, self._array.shape))


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    return _overwrite(self, generator().uniform(a, b, self._array.shape))


def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    if _in_graph(self, src):
        src = src if isinstance(src, Tensor) else Tensor(np.asarray(src))
        moved = fn.to(fs.expand(src, self._array.shape), self._array.dtype)
        return _rebase(self, fn.clone(moved))
    try:
        np.copyto(self._array, _array(src), casting="unsafe")
    except ValueError as e:
        raise RuntimeError(f"copy_: {e}") from None
    return self


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``tensor[index] = value``."""
    index = fs._index(index)
    if _in_graph(self, value):
        _rebase(self, apply(OPS["index_put"], self, value, index=index))
        return
    try:
        self._array[index] = _array(value)
    except ValueError as e:
        raise RuntimeError(f"setitem: {e}") from None


def iadd(self: Tensor, other: Any) -> Tensor:
    return add_(self, other)


def isub(self: Tensor, other: Any) -> Tensor:
    return sub_(self, other)


def imul(self: Tensor, other: Any) -> Tensor:
    return mul_(self, other)


def itruediv(self: Tensor, other: Any) -> Tensor:
    return div_(self, other)


METHODS: dict[str, Any] = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "pow_": pow_, "sqrt_": sqrt_,
    "neg_": neg_, "addcmul_": addcmul_, "addcdiv_": addcdiv_, "lerp_": lerp_,
    "clamp_": clamp_, "clamp_min_": clamp_min_, "clamp_max_": clamp_max_,
    "masked_fill_": masked_fill_, "zero_": zero_, "fill_": fill_, "normal_": normal_,
    "uniform_": uniform_, "copy_": copy_, "__setitem__": setitem,
    "__iadd__": iadd, "__isub__": isub, "__imul__": imul, "__itruediv__": itruediv,
    "multiply_": mul_, "divide_": div_, "subtract_": sub_, "clip_": clamp_,
}
