"""Binds the functions of ``functions*.py`` and ``inplace.py`` to Tensor as methods and
operators. The hottest operators call ``apply``'s two-input form ``_apply_binary``
directly: one Python call fewer per op, and no argument packing."""

from __future__ import annotations

from typing import Any

from . import functions as fn
from . import functions_shape as fs
from . import inplace
from .ops import OPS
from .tensor import Tensor, _apply_binary
from .views import view_op

_ADD, _SUB, _MUL, _DIV, _MATMUL = OPS["add"], OPS["sub"], OPS["mul"], OPS["div"], OPS["matmul"]
_GETITEM = OPS["getitem"]


def __add__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_ADD, self, other)


def __radd__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_ADD, other, self)


def __sub__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_SUB, self, other)


def __rsub__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_SUB, other, self)


def __mul__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_MUL, self, other)


def __rmul__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_MUL, other, self)


def __truediv__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_DIV, self, other)


def __rtruediv__(self: Tensor, other: Any) -> Tensor:
    return _apply_binary(_DIV, other, self)


def __matmul__(self: Tensor, other: Any) -> Any:
    if type(other) in _NUMBERS:  # Python's own TypeError, as PyTorch's
        return NotImplemented
    return _apply_binary(_MATMUL, self, other)


def __rmatmul__(self: Tensor, other: Any) -> Any:
    if type(other) in _NUMBERS:
        return NotImplemented
    return _apply_binary(_MATMUL, other, self)


_NUMBERS = (bool, int, float, complex)


def __getitem__(self: Tensor, index: Any) -> Tensor:
    if type(index) is int or type(index) is slice:
        return view_op(_GETITEM, self, index=index)
    return fs.getitem(self, index)


def __eq__(self: Tensor, other: Any) -> Any:  # noqa: N807
    if other is None:
        return False
    return fn.eq(self, other)


def __ne__(self: Tensor, other: Any) -> Any:  # noqa: N807
    if other is None:
        return True
    return fn.ne(self, other)


def _T(self: Tensor) -> Tensor:  # noqa: N802
    if self.ndim <= 2:
        return fs.t(self)
    return fs.permute(self, tuple(reversed(range(self.ndim))))


def _mT(self: Tensor) -> Tensor:  # noqa: N802
    if self.ndim == 1:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           "Got 1-D tensor.")
    return fs.transpose(self, -2, -1) if self.ndim else self  # PyTorch: 0-d mT is self


def _cast(dtype_name: str) -> Any:
    def method(self: Tensor) -> Tensor:
        from . import dtypes

        return fn.to(self, getattr(dtypes, dtype_name))

    method.__name__ = dtype_name
    return method


def _type_as(self: Tensor, other: Tensor) -> Tensor:
    return fn.to(self, other._array.dtype)


def _new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None,
              requires_grad: bool = False, **kwargs: Any) -> Tensor:
    from .creation import full

    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_zeros(self: Tensor, *size: Any, **kwargs: Any) -> Tensor:
    return _new_full(self, fs._shape_args(size), 0, **kwargs)


def _new_ones(self: Tensor, *size: Any, **kwargs: Any) -> Tensor:
    return _new_full(self, fs._shape_args(size), 1, **kwargs)


def _new_tensor(self: Tensor, data: Any, dtype: Any = None, requires_grad: bool = False,
                **kwargs: Any) -> Tensor:
    from .creation import tensor

    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _softmax(self: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return fn.softmax(self, dim, dtype)


_METHODS: dict[str, Any] = {
    "__add__": __add__, "__radd__": __radd__, "__sub__": __sub__, "__rsub__": __rsub__,
    "__mul__": __mul__, "__rmul__": __rmul__, "__truediv__": __truediv__,
    "__rtruediv__": __rtruediv__, "__matmul__": __matmul__, "__rmatmul__": __rmatmul__,
    "__getitem__": __getitem__,
    "__floordiv__": fn.floor_divide,
    "__rfloordiv__": lambda self, other: fn.floor_divide(other, self),
    "__mod__": fn.remainder, "__rmod__": lambda self, other: fn.remainder(other, self),
    "__neg__": fn.neg, "__pos__": lambda self: self, "__abs__": fn.abs,
    "__pow__": fn.pow, "__rpow__": lambda self, other: fn.pow(other, self),
    "__eq__": __eq__, "__ne__": __ne__, "__lt__": fn.lt, "__le__": fn.le, "__gt__": fn.gt,
    "__ge__": fn.ge, "__and__": fn.bitwise_and, "__or__": fn.bitwise_or,
    "__xor__": fn.bitwise_xor, "__invert__": fn.bitwise_not,
    "__rand__": lambda self, other: fn.bitwise_and(other, self),
    "__ror__": lambda self, other: fn.bitwise_or(other, self),
    "__rxor__": lambda self, other: fn.bitwise_xor(other, self),
    "T": property(_T), "mT": property(_mT),
    "float": _cast("float32"), "double": _cast("float64"), "long": _cast("int64"),
    "int": _cast("int32"), "bool": _cast("bool_"), "half": _cast("float16"),
    "type_as": _type_as, "new_full": _new_full, "new_zeros": _new_zeros,
    "new_ones": _new_ones, "new_tensor": _new_tensor, "softmax": _softmax,
}

# Functions whose first argument is the tensor bind as methods under the same name.
_FROM_FUNCTIONS = (
    "add sub mul div neg pow matmul mm bmm dot outer square exp log sqrt rsqrt abs sin cos "
    "tanh sigmoid relu sign floor ceil round trunc isnan isinf isfinite logical_not "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not "
    "eq ne lt le gt ge equal allclose isclose "
    "leaky_relu log_softmax clamp clamp_min clamp_max clip maximum minimum masked_fill "
    "to clone sum mean max min amax amin argmax argmin var std prod logsumexp norm cumsum "
    "any all floor_divide remainder multiply divide true_divide subtract negative absolute "
    "greater less not_equal log1p expm1 log2 log10 argsort sort topk multinomial bernoulli "
    "scatter_add"
).split()
_FROM_SHAPE = (
    "reshape view view_as reshape_as flatten unflatten transpose swapaxes swapdims t "
    "permute movedim squeeze unsqueeze expand expand_as broadcast_to repeat gather "
    "index_select split chunk tensor_split unbind select narrow diagonal tril triu flip"
).split()

for _name in _FROM_FUNCTIONS:
    _METHODS.setdefault(_name, getattr(fn, _name))
for _name in _FROM_SHAPE:
    _METHODS.setdefault(_name, getattr(fs, _name))
_METHODS.update(inplace.METHODS)


def _where(self: Tensor, condition: Any, other: Any) -> Tensor:
    return fn.where(condition, self, other)


_METHODS["where"] = _where
_METHODS["__array_ufunc__"] = None  # numpy must not swallow Tensors into ndarray ufuncs

for _name, _method in _METHODS.items():
    setattr(Tensor, _name, _method)
