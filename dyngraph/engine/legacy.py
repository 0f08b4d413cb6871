"""PyTorch's legacy tensor types: ``torch.FloatTensor(...)``, ``isinstance(x,
torch.LongTensor)`` and ``tensor.type()`` / ``tensor.type("torch.DoubleTensor")``.

Old scripts (and many examples) build tensors with these constructors and cast with
``.type(...)``; each type is a dtype in disguise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .tensor import Size, Tensor

_NAMES = {
    "FloatTensor": dtypes.float32, "DoubleTensor": dtypes.float64,
    "HalfTensor": dtypes.float16, "LongTensor": dtypes.int64, "IntTensor": dtypes.int32,
    "ByteTensor": dtypes.uint8, "BoolTensor": dtypes.bool_,
}


class tensortype(type):  # noqa: N801  (PyTorch prints type(torch.FloatTensor) so)
    """The metaclass of ``FloatTensor`` ...: calling one builds a tensor of its dtype, and
    ``isinstance`` checks the dtype, as in PyTorch."""

    dtype: dtypes.dtype

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj._array.dtype == cls.dtype.numpy

    def __call__(cls, *data: Any, **kwargs: Any) -> Tensor:  # type: ignore[override]
        from .creation import tensor

        if kwargs:
            from ..missing import reject_kwargs

            reject_kwargs(f"{cls.__name__}", kwargs)
        if len(data) == 1 and not isinstance(data[0], (int, Size)):
            return tensor(data[0], dtype=cls.dtype)
        sizes = tuple(data[0]) if len(data) == 1 and isinstance(data[0], Size) else data
        shape = tuple(int(s) for s in sizes) if sizes else (0,)
        return _zeros(shape, cls.dtype)

    def __repr__(cls) -> str:
        return f"<class 'dyngraph.{cls.__name__}'>"


def _zeros(shape: tuple[int, ...], dtype: dtypes.dtype) -> Tensor:
    from .tensor import _wrap

    return _wrap(np.zeros(shape, dtype=dtype.numpy))  # "uninitialised" memory, here zeros


def _legacy_type(name: str, dtype: dtypes.dtype) -> tensortype:
    return tensortype(name, (), {"dtype": dtype, "__module__": "dyngraph"})


FloatTensor = _legacy_type("FloatTensor", dtypes.float32)
DoubleTensor = _legacy_type("DoubleTensor", dtypes.float64)
HalfTensor = _legacy_type("HalfTensor", dtypes.float16)
LongTensor = _legacy_type("LongTensor", dtypes.int64)
IntTensor = _legacy_type("IntTensor", dtypes.int32)
ByteTensor = _legacy_type("ByteTensor", dtypes.uint8)
BoolTensor = _legacy_type("BoolTensor", dtypes.bool_)


def dtype_of_type(dst: Any) -> Any:
    """The dtype meant by a dtype, a legacy type or its name (``"torch.LongTensor"``)."""
    if isinstance(dst, tensortype):
        return dst.dtype
    if isinstance(dst, str):
        short = dst.removeprefix("torch.").removeprefix("dyngraph.")
        if short not in _NAMES:
            raise ValueError(f"invalid type: {dst!r}")
        return _NAMES[short]
    return dst


def type_(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``x.type()`` -> ``'torch.FloatTensor'``; ``x.type(torch.long)``,
    ``x.type(torch.LongTensor)`` or ``x.type("torch.LongTensor")`` -> a cast copy."""
    if dtype is None:
        for name, d in _NAMES.items():
            if d.numpy == self._array.dtype:
                return f"torch.{name}"
        raise TypeError(f"dyngraph has no legacy type name for {self._array.dtype}")
    return self.to(dtype_of_type(dtype))


Tensor.type = type_  # type: ignore[attr-defined]
