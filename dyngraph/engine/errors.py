"""PyTorch's errors, raised the way PyTorch raises them.

A user's ``except RuntimeError`` must catch what PyTorch's would, so the engine never lets
numpy's exception types (ValueError, AxisError, ZeroDivisionError) escape: ``apply()`` hands
whatever an op's numpy code raised to ``translate``, which returns PyTorch's exception type
with PyTorch's message phrase, naming the op and the values involved. Checks that PyTorch
makes before computing (dims in range, sizes that are ints, indices in range, dtypes an op
supports) live here too, so every op words them alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
               "bool": "Bool"}


class TorchValueError(ValueError):
    """A ValueError that PyTorch raises too (a batch-size mismatch in ``nll_loss`` ...):
    ``apply()`` passes it through instead of turning it into a RuntimeError."""


def type_name(dtype: Any) -> str:
    """PyTorch's scalar type name of a numpy dtype: ``Long`` for int64, ``Float`` ..."""
    name = str(np.dtype(dtype))
    return _TYPE_NAMES.get(name, name)


def not_implemented_for(a: np.ndarray, kernel: str, kinds: str) -> None:
    """PyTorch's error for an op with no kernel for ``a``'s dtype (``kinds``: numpy dtype
    kinds refused, "b" bool, "iu" integers, "fc" floats)."""
    if a.dtype.kind in kinds:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{type_name(a.dtype)}\'')


def dim_out_of_range(dim: int, ndim: int) -> IndexError:
    n = max(ndim, 1)
    return IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                      f"but got {dim})")


def check_dim(dim: Any, ndim: int) -> int:
    """``dim`` as a non-negative axis; a 0-d tensor takes dim 0 and -1, as in PyTorch."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise dim_out_of_range(int(dim), ndim)
    return int(dim) % n


def check_dims(dims: Iterable[Any], ndim: int) -> tuple[int, ...]:
    """A tuple of dims as non-negative axes: each in range, none repeated."""
    seen: list[int] = []
    for d in dims:
        axis = check_dim(d, ndim)
        if axis in seen:
            raise RuntimeError(f"dim {axis} appears multiple times in the list of dims")
        seen.append(axis)
    return tuple(seen) if ndim else ()


def check_size(size: Sequence[Any], name: str) -> tuple[int, ...]:
    """A shape argument (``zeros(2, 3)``, ``reshape(-1, 4)``) as ints: PyTorch refuses floats
    with a TypeError and negative sizes with a RuntimeError."""
    out = []
    for i, s in enumerate(size):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            if hasattr(s, "__index__") and not isinstance(s, (float, np.floating)):
                s = s.__index__()  # a 0-d integer tensor counts as an int, as in PyTorch
            else:
                raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found "
                                f"element of type {type(s).__name__} at pos {i}")
        out.append(int(s))
    return tuple(out)


def check_new_shape(shape: tuple[int, ...], name: str) -> None:
    """A shape a new tensor is created with: no negative sizes."""
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{name}: Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")


def index_out_of_bounds(index: np.ndarray, size: int, dim: int, name: str,
                        kind: type[Exception] = RuntimeError) -> None:
    """Raise PyTorch's error if any entry of ``index`` is outside ``[0, size)``: negative
    indices never wrap around in gather, scatter and friends."""
    if index.size == 0:
        return
    low, high = np.minimum.reduce(index, axis=None), np.maximum.reduce(index, axis=None)
    if low < 0 or high >= size:
        bad = int(low if low < 0 else high)
        raise kind(f"{name}(): index {bad} is out of bounds for dimension {dim} with size "
                   f"{size}")


def _broadcast_mismatch(shapes: list[tuple[int, ...]]) -> str | None:
    """PyTorch's wording for the first pair of shapes that do not broadcast."""
    for i, a in enumerate(shapes):
        for b in shapes[i + 1:]:
            n = max(len(a), len(b))
            pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
            for d, (x, y) in enumerate(zip(pa, pb, strict=True)):
                if x != y and x != 1 and y != 1:
                    return (f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                            f"at non-singleton dimension {d}")
    return None


def _shapes(inputs: Iterable[Any]) -> list[tuple[int, ...]]:
    out = []
    for x in inputs:
        if isinstance(x, (list, tuple)):
            out.extend(_shapes(x))
        else:
            shape = getattr(x, "shape", None)
            if shape is not None:
                out.append(tuple(shape))
    return out


def translate(op_name: str, inputs: tuple[Any, ...], exc: Exception) -> Exception:
    """PyTorch's exception for what numpy raised inside op ``op_name``."""
    if isinstance(exc, np.exceptions.AxisError):
        axis, ndim = getattr(exc, "axis", None), getattr(exc, "ndim", None)
        if axis is not None and ndim is not None:
            return IndexError(f"{op_name}(): {dim_out_of_range(axis, ndim)}")
        return IndexError(f"{op_name}(): {exc}")
    if isinstance(exc, ZeroDivisionError):
        return RuntimeError(f"ZeroDivisionError in {op_name}()")
    message = str(exc)
    if "broadcast" in message:
        shapes = _shapes(inputs)
        phrase = _broadcast_mismatch(shapes)
        if phrase is not None:
            return RuntimeError(f"{op_name}(): {phrase} (shapes "
                                f"{', '.join(str(list(s)) for s in shapes)})")
    return RuntimeError(f"{op_name}(): {message}")
