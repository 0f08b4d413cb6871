"""Differentiable functions on tensors (``dyngraph.add``, ``dyngraph.matmul`` ...).

Each is a few lines of argument handling over one ``apply``; ``methods.py`` binds the same
functions to Tensor as methods and operators. Shape, indexing and joining functions live
in ``functions_shape.py``.
"""

from __future__ import annotations

import operator
from collections import namedtuple
from typing import Any

import numpy as np

from .ops import CLAMP_TENSORS, OPS
from .ops_shape import SORT_VALUES, TOPK_VALUES
from .tensor import Tensor, _to_array, _wrap, apply

_ADD, _SUB, _MUL, _DIV = OPS["add"], OPS["sub"], OPS["mul"], OPS["div"]
_SUM, _MEAN = OPS["sum"], OPS["mean"]


def _dims(dim: Any) -> Any:
    """PyTorch takes a dim as an int, a list or a tuple; ops take an int or a tuple.
    A float is a TypeError, as in PyTorch (``int()`` would quietly truncate it)."""
    if isinstance(dim, (list, tuple)):
        return tuple(operator.index(d) for d in dim)
    return dim if dim is None else operator.index(dim)


def _array(x: Any) -> Any:
    return x._array if isinstance(x, Tensor) else x


def _nn_op(name: str) -> Any:
    """An op defined by ``ops_nn.py`` (softmax, gelu, pad ...), imported on first use."""
    op = OPS.get(name)
    if op is None:
        from . import ops_nn  # noqa: F401  (registers the nn ops)

        op = OPS[name]
    return op


# -- arithmetic ---------------------------------------------------------------------------
def deprecated_overload(name: str, old: str, new: str) -> None:
    """PyTorch 2.13's warning for a deprecated overload it still accepts, pointing at the
    caller's line (user code -> method -> legacy_* helper -> here)."""
    import warnings

    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}({old})\nConsider using "
                  f"one of the following signatures instead:\n\t{name}({new})", UserWarning,
                  stacklevel=4)


def legacy_alpha(name: str, first: Any, rest: tuple[Any, ...]) -> tuple[Any, Any]:
    """PyTorch still takes the deprecated ``add_(Number alpha, Tensor other)`` (old code's
    ``p.data.add_(-lr, p.grad)``), with a warning; return ``(other, alpha)``."""
    if len(rest) != 1 or isinstance(first, Tensor) or not isinstance(rest[0], Tensor):
        raise TypeError(f"{name}() takes 1 positional argument but {1 + len(rest)} were given")
    deprecated_overload(name, "Number alpha, Tensor other", "Tensor other, *, Number alpha = 1")
    return rest[0], first


def _check_alpha(input: Any, other: Any, alpha: Any, name: str) -> None:
    def integral(x: Any) -> bool:
        if isinstance(x, Tensor):
            return x._array.dtype.kind in "biu"
        return isinstance(x, (int, np.integer))

    if isinstance(alpha, float) and integral(input) and integral(other):
        raise RuntimeError(f"{name}: For integral input tensors, argument alpha must not be a "
                           f"floating point number (alpha={alpha}).")


def add(input: Any, other: Any, *legacy: Any, alpha: float = 1) -> Tensor:
    if legacy:
        other, alpha = legacy_alpha("add", other, legacy)
    if alpha == 1:
        return apply(_ADD, input, other)
    _check_alpha(input, other, alpha, "add")
    return apply(_ADD, input, other * alpha)


def sub(input: Any, other: Any, *legacy: Any, alpha: float = 1) -> Tensor:
    if legacy:
        other, alpha = legacy_alpha("sub", other, legacy)
    if alpha == 1:
        return apply(_SUB, input, other)
    _check_alpha(input, other, alpha, "sub")
    return apply(_SUB, input, other * alpha)


def mul(input: Any, other: Any) -> Tensor:
    return apply(_MUL, input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return apply(_DIV, input, other)
    if rounding_mode == "floor":
        return apply(OPS["floor_divide"], input, other)
    if rounding_mode == "trunc":
        if _integral(input) and _integral(other):
            return apply(OPS["div_trunc"], input, other)
        return trunc(apply(_DIV, input, other))
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def check_fill_value(value: Any) -> None:
    """masked_fill's value: a number or a 0-d tensor, as PyTorch's."""
    if isinstance(value, Tensor) and value._array.ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._array.ndim} dimension(s).")


def _integral(x: Any) -> bool:
    """An integer or bool tensor, or a Python int or bool."""
    if isinstance(x, Tensor):
        return x._array.dtype.kind in "iub"
    return isinstance(x, (int, np.integer))


def floor_divide(input: Any, other: Any) -> Tensor:
    return apply(OPS["floor_divide"], input, other)


def remainder(input: Any, other: Any) -> Tensor:
    return apply(OPS["remainder"], input, other)


def neg(input: Tensor) -> Tensor:
    return apply(OPS["neg"], input)


def pow(input: Any, exponent: Any) -> Tensor:
    return apply(OPS["pow"], input, exponent)


def square(input: Tensor) -> Tensor:
    if input._array.dtype == np.bool_:
        return apply(OPS["pow"], input, 2)  # PyTorch squares bools into int64
    return apply(_MUL, input, input)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return apply(OPS["matmul"], input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors"
        )
    return matmul(input, other)


def einsum(equation: str, *operands: Any) -> Tensor:
    """``einsum("bij,bjk->bik", a, b)``: explicit or implicit output, no ``...``, no index
    repeated inside one operand."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return apply(OPS["einsum"], *operands, equation=equation)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    from .functions_shape import unsqueeze

    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


# -- elementwise --------------------------------------------------------------------------
def _unary(name: str) -> Any:
    op = OPS[name]

    def fn(input: Tensor) -> Tensor:
        return apply(op, input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``, as ``torch.{name}``."
    return fn


exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
abs = _unary("abs")  # noqa: A001
sin = _unary("sin")
log1p = _unary("log1p")
expm1 = _unary("expm1")
log2 = _unary("log2")
log10 = _unary("log10")
cos = _unary("cos")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
relu = _unary("relu")
sign = _unary("sign")
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
isnan = _unary("isnan")
isinf = _unary("isinf")
isfinite = _unary("isfinite")
logical_not = _unary("logical_not")
bitwise_not = _unary("bitwise_not")


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    if decimals:
        raise NotImplementedError("round(decimals=...) is not supported by dyngraph")
    return apply(OPS["round"], input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return apply(OPS["leaky_relu"], input, negative_slope=negative_slope)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return apply(_nn_op("gelu"), input, approximate=approximate)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.to(dtype)
    return apply(_nn_op("softmax"), input, dim=int(dim))


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.to(dtype)
    return apply(_nn_op("log_softmax"), input, dim=int(dim))


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if not isinstance(input, Tensor):
        given = ", ".join([type(input).__name__] + [f"{k}={type(v).__name__}" for k, v in
                                                    (("min", min), ("max", max)) if v is not None])
        raise TypeError(
            f"clamp() received an invalid combination of arguments - got ({given}), but "
            "expected one of: (Tensor input, Tensor min = None, Tensor max = None) or (Tensor "
            "input, Number min = None, Number max = None)")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):  # bounds that may need a gradient
        if not (min is None or isinstance(min, Tensor)) or not (
                max is None or isinstance(max, Tensor)):
            raise TypeError(
                "clamp() received an invalid combination of arguments - got (Tensor, "
                f"min={type(min).__name__}, max={type(max).__name__}), but expected one of: "
                "(Tensor input, Tensor min = None, Tensor max = None) or (Tensor input, "
                "Number min = None, Number max = None)")
        return apply(CLAMP_TENSORS, input, min, max)
    return apply(OPS["clamp"], input, min=min, max=max)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    return clamp(input, max=max)


def maximum(input: Any, other: Any) -> Tensor:
    _check_tensors("maximum", input, other)
    return apply(OPS["maximum"], input, other)


def minimum(input: Any, other: Any) -> Tensor:
    _check_tensors("minimum", input, other)
    return apply(OPS["minimum"], input, other)


def _check_tensors(name: str, input: Any, other: Any) -> None:
    """PyTorch's refusal of a number where an op takes only tensors (``maximum``,
    ``logical_and`` ...: no Number overload)."""
    for arg, position, value in (("input", 1, input), ("other", 2, other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be "
                            f"Tensor, not {type(value).__name__}")


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    if input is None and other is None:
        return tuple(_wrap(i.astype(np.int64)) for i in np.nonzero(_array(condition)))
    return apply(OPS["where"], condition, input, other)


def masked_fill(input: Tensor, mask: Any, value: Any) -> Tensor:
    check_fill_value(value)
    if isinstance(value, Tensor) and value.requires_grad:
        raise NotImplementedError(
            "masked_fill with a value that requires grad is not supported by dyngraph"
        )
    return apply(OPS["masked_fill"], input, mask, _array(value))


def _binary(name: str) -> Any:
    op = OPS[name]
    tensors_only = name.startswith("logical_")

    def fn(input: Any, other: Any) -> Tensor:
        if tensors_only:
            _check_tensors(name, input, other)
        return apply(op, input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (not differentiable), as ``torch.{name}``."
    return fn


bitwise_and = _binary("bitwise_and")
bitwise_or = _binary("bitwise_or")
bitwise_xor = _binary("bitwise_xor")
eq = _binary("eq")
ne = _binary("ne")
lt = _binary("lt")
le = _binary("le")
gt = _binary("gt")
ge = _binary("ge")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")


def equal(input: Tensor, other: Tensor) -> bool:
    return bool(input.shape == other.shape and np.array_equal(input._array, other._array))


def allclose(input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    return bool(np.allclose(input._array, _array(other), rtol=rtol, atol=atol,
                            equal_nan=equal_nan))


def isclose(input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    return _wrap(np.isclose(input._array, _array(other), rtol=rtol, atol=atol,
                            equal_nan=equal_nan))


# -- conversion ---------------------------------------------------------------------------
def to(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``tensor.to(dtype)``, ``.to("cpu")``, ``.to(other)``: dyngraph has one device."""
    from .dtypes import dtype as dtype_cls
    from .dtypes import to_numpy_dtype

    target = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            target = arg._array.dtype
        elif isinstance(arg, (dtype_cls, type)) or (isinstance(arg, np.dtype)):
            target = arg
        else:
            device = arg
    if device is not None and str(device) not in ("cpu", "cpu:0"):
        raise NotImplementedError(f"dyngraph runs on the CPU only (asked for {device!r})")
    if target is None or to_numpy_dtype(target) == input._array.dtype:
        return clone(input) if copy else input
    return apply(OPS["to"], input, dtype=to_numpy_dtype(target))


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    return apply(OPS["clone"], input)


def detach(input: Tensor) -> Tensor:
    return input.detach()


def numel(input: Tensor) -> int:
    return input.numel()


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None:
        return data
    if isinstance(data, np.ndarray) and dtype is None:
        return _wrap(data)
    return Tensor(_to_array(data, dtype))


# -- reductions ---------------------------------------------------------------------------
def _reduce_dtype(input: Tensor, dtype: Any) -> Tensor:
    return input if dtype is None else to(input, dtype)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = to(input, dtype)
    return apply(_SUM, input, dim=dim if dim is None else _dims(dim), keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = to(input, dtype)
    if input._array.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {_torch_name(input)}"
        )
    return apply(_MEAN, input, dim=dim if dim is None else _dims(dim), keepdim=keepdim)


def _torch_name(t: Tensor) -> str:
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "uint8": "Byte"}.get(
        str(t._array.dtype), str(t._array.dtype))


# Named like PyTorch's torch.return_types.max / .min.
ReturnMax = namedtuple("max", ["values", "indices"])  # type: ignore[name-match]
ReturnMin = namedtuple("min", ["values", "indices"])  # type: ignore[name-match]


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """``max(x)``: the largest value; ``max(x, dim)``: ``(values, indices)``;
    ``max(x, other)``: the elementwise maximum."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        return apply(OPS["max"], input)
    dim = operator.index(dim)
    values = apply(OPS["max"], input, dim=dim, keepdim=keepdim)
    return ReturnMax(values, apply(OPS["argmax"], _bytes(input), dim=dim, keepdim=keepdim))


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Like ``max``, for the smallest."""
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        return apply(OPS["min"], input)
    dim = operator.index(dim)
    values = apply(OPS["min"], input, dim=dim, keepdim=keepdim)
    return ReturnMin(values, apply(OPS["argmin"], _bytes(input), dim=dim, keepdim=keepdim))


def _bytes(input: Tensor) -> Tensor:
    """max(dim)/min(dim) of bools has indices, though argmax of bools is refused."""
    return _wrap(input._array.view(np.uint8)) if input._array.dtype == np.bool_ else input


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The largest value over ``dim`` (every dimension when ``dim`` is ``()``)."""
    return apply(OPS["amax"], input, dim=_dims(dim), keepdim=keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return apply(OPS["amin"], input, dim=_dims(dim), keepdim=keepdim)


def argmax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return apply(OPS["argmax"], input, dim=_dims(dim), keepdim=keepdim)


def argmin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return apply(OPS["argmin"], input, dim=_dims(dim), keepdim=keepdim)


def _correction(unbiased: Any, correction: Any) -> int:
    if correction is not None:
        return int(correction)
    return 1 if unbiased is None or unbiased else 0


def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    if isinstance(dim, bool):  # the legacy var(unbiased) form
        dim, unbiased = None, dim
    return apply(OPS["var"], input, dim=_dims(dim), correction=_correction(unbiased, correction),
                 keepdim=keepdim)


def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return apply(OPS["std"], input, dim=_dims(dim), correction=_correction(unbiased, correction),
                 keepdim=keepdim)


_UNSET: Any = object()


def prod(input: Tensor, dim: Any = _UNSET, keepdim: Any = _UNSET, *,
         dtype: Any = None) -> Tensor:
    """``prod(input)`` or ``prod(input, dim, keepdim=False)``: one int dim, as PyTorch's
    overloads take (a tuple, None or a keepdim without a dim is its TypeError)."""
    if dim is _UNSET:
        if keepdim is not _UNSET:
            raise TypeError(_PROD_ARGS.format(got="keepdim without dim"))
        return apply(OPS["prod"], _reduce_dtype(input, dtype), dim=None, keepdim=False)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer, Tensor)):
        raise TypeError(_PROD_ARGS.format(got=f"dim={type(dim).__name__}"))
    return apply(OPS["prod"], _reduce_dtype(input, dtype), dim=operator.index(dim),
                 keepdim=False if keepdim is _UNSET else keepdim)


_PROD_ARGS = ("prod() received an invalid combination of arguments - got {got}, but "
              "expected one of: (*, torch.dtype dtype = None) or (int dim, bool keepdim = "
              "False, *, torch.dtype dtype = None)")


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    if dim is None or isinstance(dim, float):
        raise TypeError(f"logsumexp(): argument 'dim' (position 1) must be tuple of ints, "
                        f"not {type(dim).__name__}")
    return apply(OPS["logsumexp"], input, dim=_dims(dim), keepdim=keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    if p in ("fro", None):
        if isinstance(dim, (tuple, list)) and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(map(str, dim))}")
        p = 2
    if isinstance(p, str):
        raise NotImplementedError(f"norm(p={p!r}) is not supported by dyngraph")
    return apply(OPS["norm"], _reduce_dtype(input, dtype), p=float(p), dim=_dims(dim),
                 keepdim=keepdim)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    return apply(OPS["cumsum"], _reduce_dtype(input, dtype), dim=int(dim))


ReturnSort = namedtuple("sort", ["values", "indices"])  # type: ignore[name-match]
ReturnTopk = namedtuple("topk", ["values", "indices"])  # type: ignore[name-match]


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
            ) -> Tensor:
    return apply(OPS["argsort"], input, dim=int(dim), descending=bool(descending))


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """``(values, indices)``; the values' gradient flows back to where each came from."""
    indices = argsort(input, dim, descending)
    return ReturnSort(apply(SORT_VALUES, input, int(dim), indices), indices)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
         ) -> Any:
    from .functions_shape import narrow

    n = input._array.shape[int(dim)] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    indices = narrow(argsort(input, dim, descending=largest), dim, 0, int(k))
    return ReturnTopk(apply(TOPK_VALUES, input, int(dim), indices), indices)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """Draw category indices from (rows of) non-negative weights (not differentiable)."""
    from .generator import numpy_rng

    probs = np.asarray(input._array, dtype=np.float64)
    rows = probs.reshape(-1, probs.shape[-1]) if probs.ndim else probs.reshape(1, 1)
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not replacement and num_samples > rows.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = numpy_rng(generator)
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for r, row in enumerate(rows):
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        out[r] = rng.choice(row.size, size=num_samples, replace=replacement, p=row / total)
    return _wrap(out.reshape(probs.shape[:-1] + (num_samples,)))


def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:
    from .generator import numpy_rng

    probs = input._array if p is None else np.full(input._array.shape, p)
    draws = numpy_rng(generator).random(input._array.shape)
    return _wrap((draws < probs).astype(input._array.dtype))


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return apply(OPS["any"], input, dim=_dims(dim), keepdim=keepdim)


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return apply(OPS["all"], input, dim=_dims(dim), keepdim=keepdim)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return apply(OPS["scatter_add"], input, index, src, dim=int(dim))


# PyTorch's aliases.
multiply, divide, true_divide, subtract, negative = mul, div, div, sub, neg
clip, absolute, greater, less, not_equal = clamp, abs, gt, lt, ne
