"""Tensor creation: ``tensor``, ``zeros``, ``randn`` ... and the global random generator.

Every function takes ``dtype=`` and ``requires_grad=``; ``device=`` accepts only the CPU.
Random numbers come from one numpy Generator that ``manual_seed`` resets (it is not
PyTorch's stream: the same seed gives different numbers than in PyTorch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import checked_scalar, to_numpy_dtype
from .errors import check_new_shape, check_size, not_implemented_for
from .generator import numpy_rng
from .tensor import DEFAULT_DTYPE, Tensor, _to_array, _wrap

_rng = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Seed dyngraph's global random generator (creation functions, dropout, init)."""
    global _rng
    _rng = np.random.default_rng(int(seed))
    return _rng


def seed() -> int:
    """Seed the generator from the OS and return the seed used."""
    value = int(np.random.default_rng().integers(2**63))
    manual_seed(value)
    return value


def generator() -> np.random.Generator:
    return _rng


def _shape(size: tuple[Any, ...], name: str = "size") -> tuple[int, ...]:
    """``zeros(2, 3)`` and ``zeros((2, 3))``: ints only, none negative, as in PyTorch."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = check_size(size, name)
    check_new_shape(shape, name)
    return shape


def _sized(name: str, size: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, ...]:
    """The shape given as ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``;
    other keywords PyTorch takes are refused by name (``pin_memory=False`` is fine)."""
    if "size" in kwargs:
        if size:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if kwargs:
        from ..missing import reject_kwargs

        reject_kwargs(name, kwargs, {"pin_memory": False, "out": None, "layout": None})
    return _shape(size, name)


def _check_device(device: Any) -> None:
    if device is not None and str(device) not in ("cpu", "cpu:0"):
        raise NotImplementedError(f"dyngraph runs on the CPU only (asked for {device!r})")


def _new(array: np.ndarray, dtype: Any, requires_grad: bool, device: Any = None) -> Tensor:
    _check_device(device)
    if dtype is not None:
        array = array.astype(to_numpy_dtype(dtype), copy=False)
    t = _wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Copy ``data`` into a new leaf tensor (float32 for Python floats, as in PyTorch).

    >>> tensor([[1, 2], [3, 4]]).dtype
    dyngraph.int64
    """
    _check_device(device)
    t = _wrap(_to_array(data, dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return _wrap(array)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **kwargs: Any) -> Tensor:
    shape = _sized("zeros", size, kwargs)
    return _new(np.zeros(shape, DEFAULT_DTYPE), dtype, requires_grad, device)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         **kwargs: Any) -> Tensor:
    shape = _sized("ones", size, kwargs)
    return _new(np.ones(shape, DEFAULT_DTYPE), dtype, requires_grad, device)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **kwargs: Any) -> Tensor:
    shape = _sized("empty", size, kwargs)
    return _unwritten(zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad))


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    value = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    target = np.dtype(np.bool_ if isinstance(value, bool) else np.int64 if isinstance(
        value, int) else DEFAULT_DTYPE) if dtype is None else to_numpy_dtype(dtype)
    shape = _shape(tuple(size) if isinstance(size, (tuple, list)) else (size,), "full")
    _check_device(device)
    return _new(np.full(shape, checked_scalar(value, target), dtype=target), None,
                requires_grad)


def _like(t: Tensor, dtype: Any) -> Any:
    return t._array.dtype if dtype is None else dtype


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return _new(np.zeros(input._array.shape, _like(input, dtype) if dtype is None
                         else to_numpy_dtype(dtype)), None, requires_grad, device)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return _new(np.ones(input._array.shape, _like(input, dtype) if dtype is None
                        else to_numpy_dtype(dtype)), None, requires_grad, device)


def empty_like(input: Tensor, **kwargs: Any) -> Tensor:
    return _unwritten(zeros_like(input, **kwargs))


def _unwritten(t: Tensor) -> Tensor:
    """Marks ``t`` as memory nobody wrote yet (zeros here, garbage in PyTorch): until an
    in-place write to all of it (a write to a part, ``t[i] = x``, keeps the mark: see
    ``inplace._to_a_part``) a check does not judge what it holds (see
    ``dyngraph.debug.nonfinite``), as on PyTorch."""
    t._unwritten = t._version  # type: ignore[attr-defined]
    return t


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return full(input._array.shape, fill_value, dtype=_like(input, dtype), device=device,
                requires_grad=requires_grad)


def rand(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         generator: Any = None, **kwargs: Any) -> Tensor:
    rng = numpy_rng(generator)
    return _new(rng.random(_sized("rand", size, kwargs), dtype=np.float32), dtype,
                requires_grad, device)


def randn(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          generator: Any = None, **kwargs: Any) -> Tensor:
    rng = numpy_rng(generator)
    return _new(rng.standard_normal(_sized("randn", size, kwargs), dtype=np.float32), dtype,
                requires_grad, device)


def _float_like(input: Tensor, dtype: Any, kernel: str) -> None:
    if dtype is None:
        not_implemented_for(input._array, kernel, "biu")


def rand_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    _float_like(input, dtype, "check_uniform_bounds")
    return rand(input._array.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    _float_like(input, dtype, "normal_kernel_cpu")
    return randn(input._array.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint(*args: Any, size: Any = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False, generator: Any = None) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: int64 in ``[low, high)``."""
    args_list = list(args)
    if size is None:
        if not args_list or not isinstance(args_list[-1], (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        size = args_list.pop()
    if len(args_list) == 1:
        low, high = 0, args_list[0]
    elif len(args_list) == 2:
        low, high = args_list
    else:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    if int(high) <= int(low):
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    array = numpy_rng(generator).integers(int(low), int(high), _shape((size,), "randint"),
                                          dtype=np.int64)
    return _new(array, dtype, requires_grad, device)


def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    (n,) = check_size((n,), "randperm")
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    array = numpy_rng(generator).permutation(n).astype(np.int64)
    return _new(array, dtype, requires_grad, device)


def normal(mean: Any, std: Any, size: Any = None, *, generator: Any = None, dtype: Any = None,
           requires_grad: bool = False) -> Tensor:
    m = mean._array if isinstance(mean, Tensor) else mean
    s = std._array if isinstance(std, Tensor) else std
    shape = None if size is None else _shape((size,))
    array = np.asarray(numpy_rng(generator).normal(m, s, shape), dtype=DEFAULT_DTYPE)
    return _new(array, dtype, requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """int64 when every bound is an int, float32 otherwise (as in PyTorch)."""
    if end is None:
        start, end = 0, start
    bounds = [b.item() if isinstance(b, Tensor) else b for b in (start, end, step)]
    ints = all(isinstance(b, (int, np.integer)) for b in bounds)
    lo, hi, by = bounds
    if by == 0:
        raise RuntimeError(f"arange: step must be nonzero (start={lo}, end={hi})")
    if (by > 0 and hi < lo) or (by < 0 and hi > lo):
        raise RuntimeError(f"arange: upper bound and lower bound inconsistent with step sign "
                           f"(start={lo}, end={hi}, step={by})")
    array = np.arange(*bounds, dtype=np.int64 if ints else None)
    if not ints:
        array = array.astype(DEFAULT_DTYPE)
    return _new(array, dtype, requires_grad, device)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    (steps,) = check_size((steps,), "linspace")
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative (got {steps})")
    return _new(np.linspace(start, end, steps, dtype=np.float64).astype(DEFAULT_DTYPE),
                dtype, requires_grad, device)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    rows, cols = check_size((n, n if m is None else m), "eye")
    for name, value in (("n", rows), ("m", cols)):
        if value < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {value}")
    return _new(np.eye(rows, cols, dtype=DEFAULT_DTYPE), dtype, requires_grad, device)
