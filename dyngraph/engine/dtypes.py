"""dtypes with PyTorch's names (``dyngraph.float32`` ...) mapped onto numpy's."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


class dtype:
    """A dtype object that prints like ``torch.float32`` and compares to numpy's."""

    __slots__ = ("name", "numpy", "is_floating_point")

    def __init__(self, name: str, numpy_dtype: Any) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = self.numpy.kind == "f"

    def __repr__(self) -> str:
        return f"dyngraph.{self.name}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dtype):
            return self.numpy == other.numpy
        try:
            return bool(self.numpy == np.dtype(other))  # type: ignore[call-overload]
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.numpy)


class _NoNumpyDtype(dtype):
    """A PyTorch dtype numpy lacks (``bfloat16``): it exists, so scripts that only name it
    run, and making a tensor of it fails on one line that names it."""

    def __init__(self, name: str) -> None:  # noqa: D107  (no numpy dtype to look up)
        self.name = name
        self.is_floating_point = True

    @property  # type: ignore[override]
    def numpy(self) -> np.dtype:
        raise TypeError(f"dyngraph does not implement {self.name} tensors: numpy, which "
                        f"holds dyngraph's values, has no {self.name} (use float32 or float16)")

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return hash(self.name)


float32 = float_ = float = dtype("float32", np.float32)
float64 = double = dtype("float64", np.float64)
float16 = half = dtype("float16", np.float16)
int64 = long = dtype("int64", np.int64)
int32 = int_ = dtype("int32", np.int32)
uint8 = dtype("uint8", np.uint8)
bool_ = dtype("bool", np.bool_)
bfloat16 = _NoNumpyDtype("bfloat16")

_BY_NUMPY = {d.numpy: d for d in (float32, float64, float16, int64, int32, uint8, bool_)}


def dtype_of(numpy_dtype: np.dtype) -> dtype:
    found = _BY_NUMPY.get(np.dtype(numpy_dtype))
    if found is None:
        raise TypeError(f"dyngraph does not support numpy dtype {numpy_dtype}")
    return found


def to_numpy_dtype(d: Any) -> np.dtype:
    if isinstance(d, dtype):
        return d.numpy
    if d is bool:
        return np.dtype(np.bool_)
    if d is float:
        return np.dtype(np.float32)
    if d is int:
        return np.dtype(np.int64)
    return np.dtype(d)


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
COMPLEX_MESSAGE = ("dyngraph does not implement complex tensors: a Python complex number in an "
                   "op would make one (PyTorch gives complex64 or complex128)")


def category(dt: np.dtype) -> int:
    """PyTorch's promotion category: bool 0 < integer 1 < float 2 < complex 3."""
    return _CATEGORY[dt.kind]


def promoted(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two operands of an elementwise op, cast where numpy would compute in another dtype
    than PyTorch's ``result_type``: an integer beside a float16 tensor (numpy: float64,
    PyTorch: float16), an integer beside any float (PyTorch casts it to the float type
    first, numpy rounds only the result), a 0-d tensor beside a dimensioned one of its
    category (which it does not widen in PyTorch). An operand numpy widens exactly as
    PyTorch does (float32 beside float64) is left as it is, so the op still holds the
    tensor's own memory; a bool too (bool - int keeps PyTorch's refusal of bools)."""
    dt = result_type(x, y)
    return _cast_to(x, dt), _cast_to(y, dt)


def _cast_to(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    kind = a.dtype.kind
    if a.dtype == dt or kind == "b":
        return a
    if _CATEGORY[kind] == _CATEGORY[dt.kind] and _promote_pair(a.dtype, dt) == dt:
        return a  # widened by numpy as by PyTorch
    return a.astype(dt)


def promote_types(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's ``promote_types``: across categories (bool < integer < float < complex)
    the higher one's dtype (int64 with float16 is float16, where numpy says float64);
    within one, the wider (uint8 with int8: int16)."""
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca != cb:
        return a if ca > cb else b
    return np.result_type(a, b)


_promote_pair = promote_types


def result_type(*arrays: np.ndarray) -> np.dtype:
    """PyTorch's result dtype of several tensors (``torch.result_type``): the dimensioned
    ones decide; 0-d ones only where they are of a higher category."""
    dimmed: np.dtype | None = None
    zero: np.dtype | None = None
    for a in arrays:
        if a.ndim:
            dimmed = a.dtype if dimmed is None else _promote_pair(dimmed, a.dtype)
        else:
            zero = a.dtype if zero is None else _promote_pair(zero, a.dtype)
    if dimmed is None or zero is None:
        found = dimmed if zero is None else zero
        assert found is not None, "result_type of no arrays"
        return found
    if _CATEGORY[zero.kind] > _CATEGORY[dimmed.kind]:
        return _promote_pair(dimmed, zero)
    return dimmed


_C_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                 "int64": "int64_t", "float16": "c10::Half", "float32": "float",
                 "float64": "double"}


def checked_scalar(value: Any, dtype: np.dtype, name: str | None = None) -> Any:
    """PyTorch's checked conversion of a Python number to a tensor's ``dtype`` (fill_,
    full, setitem, masked_fill, clamp, where ...): ``value cannot be converted to type
    int without overflow`` where it does not fit; an unsigned type takes a negative int
    down to -max, wrapped (uint8: -1 is 255). Returns the number to use."""
    kind = dtype.kind
    t = type(value)
    if t is int and 0 <= value <= 127:  # fits every type: the common case, no lookup
        return value
    if t is builtins.float or isinstance(value, np.floating):  # (``float`` is dyngraph's)
        if kind == "f" and -65504.0 <= value <= 65504.0:
            return value
        low, high = _limits(dtype)
        if low <= value <= high or (kind == "f" and (value != value or abs(value) == np.inf)):
            return value
        if kind not in "iuf":
            return value
    elif (t is int or isinstance(value, np.integer)) and kind in "iuf":
        low, high = _limits(dtype)
        if kind == "u":
            low = -high
        if low <= value <= high:
            return value % (high + 1) if value < 0 and kind == "u" else value
    elif t is complex:  # dyngraph has no complex tensors; PyTorch converts only real ones
        if kind == "b":
            return bool(value)
        if value.imag == 0:
            return checked_scalar(value.real, dtype, name)
    else:
        return value  # a bool, a tensor: nothing to check
    raise RuntimeError(f"value cannot be converted to type "
                       f"{name or _C_TYPE_NAMES.get(dtype.name, dtype.name)} without overflow")


def _limits(dtype: np.dtype) -> tuple[Any, Any]:
    found = _LIMITS.get(dtype)
    if found is None:
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            found = (int(info.min), int(info.max))
        elif dtype.kind == "f":
            finfo = np.finfo(dtype)
            found = (-builtins.float(finfo.max), builtins.float(finfo.max))
        else:
            found = (-np.inf, np.inf)
        _LIMITS[dtype] = found
    return found


_LIMITS: dict[np.dtype, tuple[Any, Any]] = {}


def wrapped_int(value: int, dtype: np.dtype) -> int:
    """A Python int beside an integer tensor in arithmetic, as PyTorch takes it: wrapped
    to the tensor's width (``uint8 + 300`` adds 44); beyond 64 bits, Python's
    OverflowError."""
    if not -(2**63) <= value < 2**64:
        raise OverflowError("int too big to convert")
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def can_cast(src: np.dtype, dst: np.dtype) -> bool:
    """PyTorch's canCast for writing an in-place op's result into a tensor: never a float
    into an integer or bool tensor, never anything but a bool into a bool tensor; any
    integer into any integer (int64 into uint8 wraps, where numpy's same_kind refuses)."""
    if src.kind in "fc" and dst.kind in "iub":
        return False
    return not (dst.kind == "b" and src.kind != "b")
