"""The op registry: every differentiable op's numpy forward and backward, side by side.

An op is a function ``forward(*arrays, **attrs) -> (out, backward)`` where ``backward(g)``
returns one gradient per positional input (None where none flows). The backward is a
closure, so whatever it captured *is* the op's saved state; the engine drops it after
backward unless ``retain_graph=True``. Ops registered with ``saves=False`` capture no
tensors, so their graphs can be walked twice (as in PyTorch: ``(a + 1).sum()``). A
non-differentiable op returns ``None`` as its backward.

Gradients may come back broadcast to the output's shape: the engine sums them down to
each input's shape and casts them to its dtype. A backward never mutates ``g`` in place.
This module knows no Tensor; ``tensor.apply`` is the only caller.

This file holds elementwise ops; ``ops_linalg.py`` matmul, einsum and the diagonal ops;
``ops_reduce.py`` reductions and ``ops_shape.py`` shape, indexing and joining ops;
``ops_nn.py`` (nn.functional) the fused network ops such as softmax, gelu and
cross_entropy, and ``ops_conv.py`` convolution and pooling. All register into ``OPS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .dtypes import COMPLEX_MESSAGE, checked_scalar, promoted, result_type
from .errors import not_implemented_for

Backward = Callable[[np.ndarray], tuple[Any, ...]]
Forward = Callable[..., tuple[Any, Backward | None]]


class OpDef:
    """A registered op. ``needs_input_grad``: the forward gets a ``needs_input_grad`` tuple
    (which inputs will receive a gradient) so its backward can skip costly unused ones.
    ``exact``: the output dtype is the op's own (a cast), never adjusted by the engine.
    ``saved_for``: names under which the backward holds an array needed only for one
    input's gradient (``mul``'s ``a`` serves ``b``'s); the version counter ignores such an
    array when that input needs no gradient, as PyTorch then does not save it.
    ``promotes``: an elementwise op of two tensors, whose operands follow PyTorch's type
    promotion (a 0-d tensor does not widen a dimensioned one of its category)."""

    __slots__ = ("name", "forward", "saves", "grad_fn_name", "needs_input_grad", "exact",
                 "saved_for", "promotes")

    def __init__(self, name: str, forward: Forward, saves: bool, grad_fn_name: str,
                 needs_input_grad: bool = False, exact: bool = False,
                 saved_for: dict[str, int] | None = None, promotes: bool = False) -> None:
        self.name = name
        self.forward = forward
        self.saves = saves
        self.grad_fn_name = grad_fn_name
        self.needs_input_grad = needs_input_grad
        self.exact = exact
        self.saved_for = saved_for
        self.promotes = promotes

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"


OPS: dict[str, OpDef] = {}


def register(name: str, saves: bool = True, grad_fn: str | None = None,
             needs_input_grad: bool = False, exact: bool = False,
             saved_for: dict[str, int] | None = None, promotes: bool = False
             ) -> Callable[[Forward], Forward]:
    """Add an op to the registry under ``name`` (its event and graph-node name)."""

    def decorate(forward: Forward) -> Forward:
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        camel = "".join(part.capitalize() for part in name.split("_"))
        OPS[name] = OpDef(name, forward, saves, grad_fn or f"{camel}Backward0",
                          needs_input_grad, exact, saved_for, promotes)
        return forward

    return decorate


def _floating(a: np.ndarray) -> np.ndarray:
    """Integers and bools go into float ops as PyTorch's default float32 (numpy would pick
    float16 for bools and bytes, float64 for wider integers)."""
    return a if a.dtype.kind in "fc" else a.astype(np.float32)


def _arr(x: Any) -> bool:
    """Is ``x`` an array (a tensor's data) rather than a Python scalar constant?"""
    return type(x) is np.ndarray


# -- elementwise arithmetic ---------------------------------------------------------------
# Backwards that capture nothing are made once, not per call: a tiny op's cost is mostly
# Python objects, and each one also feeds the cyclic garbage collector.
def _add_backward(g):
    return g, g


def _sub_backward(g):
    return g, -g


def _neg_backward(g):
    return (-g,)


def _identity_backward(g):
    return (g,)


@register("add", saves=False, promotes=True)
def add(a, b):
    return a + b, _add_backward


@register("sub", saves=False, promotes=True)
def sub(a, b):
    check_sub_operands(a, b)
    return a - b, _sub_backward


def check_sub_operands(a: Any, b: Any) -> None:
    """PyTorch refuses ``-`` with a bool operand (also in place, also when empty)."""
    if _is_bool(a) or _is_bool(b):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use "
                "the `^` or `logical_xor()` operator instead.")
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _integer(x: Any) -> bool:
    return type(x) is np.ndarray and x.dtype.kind in "iu"


def _integer_pow(a: np.ndarray, b: Any) -> np.ndarray:
    """Integers to integer powers as PyTorch: a negative Python exponent raises (even on an
    empty tensor); a negative exponent inside a tensor gives 1, -1 or 0 (numpy raises)."""
    if type(b) is int:
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return a**b
    negative = b < 0
    if not negative.any():
        return a**b
    with np.errstate(over="ignore"):
        out = a ** np.where(negative, 0, b)
    reciprocal = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(negative, reciprocal, out).astype(out.dtype)


def _is_bool(x: Any) -> bool:
    return type(x) is bool or (type(x) is np.ndarray and x.dtype.kind == "b")


@register("mul", saved_for={"a": 1, "b": 0}, promotes=True)
def mul(a, b):
    # Saved arrays bound as defaults rather than closure cells: one object per call instead
    # of three (mul is the commonest op that saves anything).
    if type(b) is not np.ndarray:  # times a constant: a is not needed (nor saved, PyTorch)
        return a * b, lambda g, b=b: (g * b, None)
    return a * b, lambda g, a=a, b=b: (g * b, g * a)


@register("div", saved_for={"a": 1}, promotes=True)
def div(a, b):
    # Saves what PyTorch saves: b, and a only for b's gradient (never the output, which the
    # version counter would then guard); a constant over a tensor keeps only 1/b.
    if not _arr(a):
        r = 1 / b
        return a * r, lambda g: (None, -g * a * r * r)
    # PyTorch's div_tensor_other_backward: -grad * ((a / b) / b), never b * b (which
    # underflows to 0 for a tiny b where the quotient does not).
    return a / b, lambda g: (g / b, -g * (a / b / b) if _arr(b) else None)


_BOOL_NEG = ("Negation, the `-` operator, on a bool tensor is not supported. If you are "
             "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


@register("neg", saves=False)
def neg(a):
    if a.dtype.kind == "b":
        raise RuntimeError(_BOOL_NEG)
    return -a, _neg_backward


@register("pow", promotes=True)
def pow_(a, b):
    if _is_bool(a) and type(b) is np.ndarray and b.dtype.kind == "b":
        raise NotImplementedError('"pow" not implemented for \'Bool\'')
    if _is_bool(a) and type(b) is bool:  # PyTorch keeps bool: a ** True is a, ** False 1
        return (a.copy() if b else np.ones_like(a)), None
    if _is_bool(a) and type(b) is not np.ndarray:
        a = a.astype(np.int64)  # PyTorch's bool ** int is int64 (numpy's would be int8)
    if type(b) is int and b >= 0 and type(a) is np.ndarray and a.dtype.kind in "iu":
        b = checked_scalar(b, a.dtype)  # an integer exponent must fit the tensor's type
    # An array even for 0-d input: the output tensor's own.
    integers = ((_integer(a) or _is_bool(a)) and (_integer(b) or type(b) is int)) or (
        (type(a) is int or type(a) is bool) and _integer(b))  # a number ** an int tensor
    out = np.asarray(_integer_pow(a, b) if integers else _scalar_pow(a, b))
    # PyTorch's PowBackward1 (a tensor exponent) saves the result even when the exponent
    # needs no gradient; PowBackward0 (a number) never does.
    result = out if type(b) is np.ndarray else None

    def backward(g):
        if _arr(b):
            if b.dtype.kind == "b" and _arr(a):
                check_sub_operands(b, 1)  # PyTorch's 'exponent - 1' refuses a bool tensor
            with np.errstate(divide="ignore", invalid="ignore"):
                # PyTorch's pow_backward_self: 0 where the exponent is 0 (not 0 * inf).
                ga = np.where(b == 0, 0, g * b * a ** (b - 1)) if _arr(a) else None
                # d(a**b)/db = a**b * log(a); PyTorch's pow_backward_exponent gives 0 where
                # a == 0 and b >= 0 only: below, inf * log(0) is -inf, as its formula.
                gb = g * np.where((a == 0) & (b >= 0), 0, result * np.log(a))
            return ga, gb
        if b == 0:
            return np.zeros_like(g), None
        return g * b * _scalar_pow(a, b - 1), None

    return out, backward


def _scalar_pow(a: Any, b: Any) -> Any:
    """``a ** b`` as PyTorch computes a number exponent of ±0.5: sqrt and rsqrt (where
    pow would give -0.0 ** -0.5 = inf, rsqrt gives -inf)."""
    if type(b) is float and (b == 0.5 or b == -0.5) and _arr(a) and a.dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sqrt(a) if b > 0 else 1 / np.sqrt(a)
    return a**b


# -- unary --------------------------------------------------------------------------------
@register("exp")
def exp(a):
    a = _floating(a)
    out = np.asarray(np.exp(a))  # (0-d: the array the output tensor wraps, as saved)
    return out, lambda g: (g * out,)


@register("log")
def log(a):
    a = _floating(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(a)
    return out, lambda g: (g / a,)


@register("sqrt")
def sqrt(a):
    a = _floating(a)
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.sqrt(a))
    return out, lambda g: (g / (2 * out),)


@register("rsqrt")
def rsqrt(a):
    a = _floating(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(1 / np.sqrt(a))
    return out, lambda g: (-0.5 * g * out * out * out,)


@register("abs")
def abs_(a):
    not_implemented_for(a, "abs_cpu", "b")
    return np.abs(a), lambda g: (g * sgn(a),)


@register("log1p")
def log1p(a):
    a = _floating(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log1p(a)
    return out, lambda g: (g / (1 + a),)


@register("expm1")
def expm1(a):
    a = _floating(a)
    out = np.asarray(np.expm1(a))
    return out, lambda g: (g * (out + 1),)


@register("log2")
def log2(a):
    a = _floating(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log2(a)
    return out, lambda g: (g / (a * np.log(2.0)),)


@register("log10")
def log10(a):
    a = _floating(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log10(a)
    return out, lambda g: (g / (a * np.log(10.0)),)


@register("sin")
def sin(a):
    a = _floating(a)
    return np.sin(a), lambda g: (g * np.cos(a),)


@register("cos")
def cos(a):
    a = _floating(a)
    return np.cos(a), lambda g: (-g * np.sin(a),)


@register("tanh")
def tanh(a):
    a = _floating(a)
    out = np.asarray(np.tanh(a))
    return out, lambda g: (g * (1 - out * out),)


@register("sigmoid")
def sigmoid(a):
    # Split by sign so exp never overflows.
    if a.dtype.kind not in "fc":
        a = a.astype(np.float32)  # integers and bools give PyTorch's default float
    e = np.exp(-np.abs(a))
    out = np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)
    return out, lambda g: (g * out * (1 - out),)


@register("relu")
def relu(a):
    if a.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    out = np.asarray(np.maximum(a, 0))
    return out, lambda g: (_threshold_backward(g, out),)


def _threshold_backward(g: np.ndarray, out: np.ndarray) -> np.ndarray:
    """PyTorch's threshold_backward: ``g`` where ``out > 0``, else 0, as a select: a NaN
    input passes its gradient (NaN <= 0 is false) and a NaN or Inf gradient is stopped
    where the output is 0.

    A product with the mask computes the same at a fraction of np.where's cost (this runs
    on every hidden layer of every step) when every gradient is finite; otherwise (a run
    already going wrong) 0 * inf would be NaN where the select gives 0, so the select runs.
    ``out`` is relu's output, never below 0: "not ``out <= 0``" (``out > 0``, or NaN) is
    ``out != 0``, one comparison.
    """
    if g.ndim and _all_true(np.isfinite(g), axis=None):  # (ndarray.all: a Python wrapper)
        return g * (out != 0)
    return np.where(out <= 0, 0, g)


_all_true = np.logical_and.reduce


@register("leaky_relu")
def leaky_relu(a, negative_slope=0.01):
    out = np.where(a > 0, a, a * negative_slope).astype(a.dtype, copy=False)
    # The backward reads the input, as PyTorch's LeakyReluBackward0 saves it: a later
    # in-place change of the input raises at backward there and here.
    return out, lambda g: (np.where(a > 0, g, g * negative_slope),)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_NUMBERS = (bool, int, float, complex)
_F32_MAX = float(np.finfo(np.float32).max)
_INFINITIES = (float("inf"), float("-inf"))


def _checked_number(x: Any, a: np.ndarray) -> Any:
    """A Python number ``x`` beside tensor ``a``, converted as PyTorch converts it to the
    op's result dtype (checked: ``value cannot be converted ... without overflow``;
    uint8 takes -1 as 255). Other operands pass as they are."""
    t = type(x)
    if t is float:
        dt = a.dtype
        if (dt is _F32 and -_F32_MAX <= x <= _F32_MAX) or dt is _F64 or x in _INFINITIES:
            return x  # the common cases, without a lookup
        return checked_scalar(x, dt if dt.kind == "f" else _F32)
    if t is int and not 0 <= x <= 127 and a.dtype.kind in "iuf":
        return checked_scalar(x, a.dtype)
    if t is complex:
        return checked_scalar(x, a.dtype)
    return x


@register("clamp", grad_fn="ClampBackward1")
def clamp(a, min=None, max=None):
    if a.dtype.kind == "b" and all(b is None or _is_bool(b) for b in (min, max)):
        kernel = "clamp_min" if max is None else "clamp_max" if min is None else "clamp"
        raise NotImplementedError(f'"{kernel}_scalar_cpu" not implemented for \'Bool\'')
    if type(min) is complex or type(max) is complex:
        if a.dtype.kind == "f":  # (PyTorch's own words)
            raise RuntimeError("value cannot be converted to type double without overflow")
        raise NotImplementedError("clamp is not supported for complex types")
    if min is not None:
        min = _checked_number(min, a)
    if max is not None:
        max = _checked_number(max, a)
    out = np.clip(a, min, max)

    def backward(g):
        # The gradient flows where the input is inside [min, max] (bounds included). Read
        # from the input at backward, as PyTorch's ClampBackward1 saves it (the version
        # counter then guards it).
        inside = a >= min if min is not None else None
        if max is not None:
            inside = a <= max if inside is None else inside & (a <= max)
        return (np.where(inside, g, 0),)  # a select: a NaN gradient stops too

    return out, backward


def _clamp_tensors(a, lo, hi, needs_input_grad=(True, True, True)):
    """clamp with tensor bounds (one may be None): PyTorch's ClampBackward0, which saves
    the input and both bounds and gives each the gradient where it is the result."""
    dt = result_type(*(x for x in (a, lo, hi) if x is not None))
    if dt.kind == "b" and lo is not None and hi is not None:
        raise NotImplementedError('"clamp_cpu" not implemented for \'Bool\'')
    out = a.astype(dt, copy=False)
    if lo is not None:
        out = np.maximum(out, lo.astype(dt, copy=False))  # a NaN anywhere gives NaN
    if hi is not None:
        out = np.minimum(out, hi.astype(dt, copy=False))
    need_a, need_lo, need_hi = needs_input_grad

    def backward(g):
        # PyTorch's clamp_backward_min_max and clamp_backward, mask for mask: where
        # min > max the result is max, whose gradient it is.
        if lo is not None and hi is not None:
            _check_clamp_masks(a, lo, hi, need_a, need_lo, need_hi)
            ga = np.where((a >= lo) & (a <= hi), g, 0)
            glo = np.where((a < lo) & (lo < hi), g, 0) if need_lo else None
            ghi = np.where((a > hi) | (hi < lo), g, 0) if need_hi else None
        elif lo is not None:
            ga = np.where(a >= lo, g, 0)
            glo, ghi = (np.where(a < lo, g, 0) if need_lo else None), None
        else:
            ga = np.where(a <= hi, g, 0)
            glo, ghi = None, (np.where(a > hi, g, 0) if need_hi else None)
        return ga, glo, ghi

    return out, backward


def _check_clamp_masks(a: np.ndarray, lo: np.ndarray, hi: np.ndarray, need_a: bool,
                       need_lo: bool, need_hi: bool) -> None:
    """PyTorch combines each pair of masks in place (``(self < min).logical_and_(min <
    max)`` ...), into the first one's broadcast shape: where bounds broadcast the result
    beyond it, its backward raises. Checked in its order: min's, max's, then the input's."""
    pairs = []
    if need_lo:
        pairs.append(((a, lo), (lo, hi)))
    if need_hi:
        pairs.append(((a, hi), (hi, lo)))
    if need_a:
        pairs.append(((a, lo), (a, hi)))
    for first, second in pairs:
        into = np.broadcast_shapes(first[0].shape, first[1].shape)
        full = np.broadcast_shapes(into, second[0].shape, second[1].shape)
        if full != into:
            raise RuntimeError(
                f"output with shape {list(into)} doesn't match the broadcast shape {list(full)}")


CLAMP_TENSORS = OpDef("clamp", _clamp_tensors, True, "ClampBackward0", needs_input_grad=True)


@register("maximum", promotes=True)
def maximum(a, b):
    return np.maximum(a, b), lambda g: _extremum_grads(g, a == b, a < b, a > b)


@register("minimum", promotes=True)
def minimum(a, b):
    return np.minimum(a, b), lambda g: _extremum_grads(g, a == b, a > b, a < b)


def _extremum_grads(g: Any, tie: Any, a_loses: Any, b_loses: Any) -> tuple[Any, Any]:
    """PyTorch's rule: ties split the gradient, the loser gets none (masked to 0, so not
    even a NaN gradient), and where a NaN makes neither lose (NaN compares false) both
    sides get all of it."""
    shared = np.where(tie, g * 0.5, g)
    return np.where(a_loses, 0, shared), np.where(b_loses, 0, shared)


@register("where")
def where(cond, a, b):
    cond = np.asarray(cond, bool)
    if type(a) is complex or type(b) is complex:
        raise NotImplementedError(COMPLEX_MESSAGE)
    if type(a) is np.ndarray and type(b) is np.ndarray:
        if a.dtype != b.dtype:
            a, b = promoted(a, b)
    elif type(a) is np.ndarray:
        b = _checked_number(b, a)
    elif type(b) is np.ndarray:
        a = _checked_number(a, b)
    return np.where(cond, a, b), lambda g: (None, np.where(cond, g, 0), np.where(cond, 0, g))


@register("masked_fill")
def masked_fill(a, mask, value):
    if np.asarray(mask).dtype != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{np.asarray(mask).dtype}")
    mask = np.asarray(mask, bool)
    # A number is converted to the tensor's own type, checked (uint8: -0.5 overflows).
    value = checked_scalar(value, a.dtype) if type(value) in _NUMBERS else value
    out = np.where(mask, np.asarray(value, dtype=a.dtype), a)
    return out, lambda g: (np.where(mask, 0, g), None, None)


@register("to", saves=False, grad_fn="ToCopyBackward0", exact=True)
def to(a, dtype):
    out = a.astype(dtype)
    if out.dtype.kind != "f" or a.dtype.kind != "f":
        return out, None  # a cast to an integer or bool type cuts the graph, as in PyTorch
    return out, _identity_backward  # the engine casts g back to the input's dtype


@register("clone", saves=False)
def clone(a):
    return a.copy(), _identity_backward


# -- not differentiable -------------------------------------------------------------------
def _nondiff(name: str, fn: Callable[..., Any]) -> None:
    register(name, saves=False, promotes=True)(lambda *args, **kw: (fn(*args, **kw), None))


def _ordering(name: str, ufunc: Any) -> None:
    """``< <= > >=``: PyTorch has no order of complex numbers (``==`` it has)."""

    def forward(a, b):
        if type(a) is complex or type(b) is complex:
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{complex_name(a if type(b) is complex else b)}'")
        return ufunc(a, b), None

    register(name, saves=False, promotes=True)(forward)


def complex_name(beside: Any) -> str:
    """PyTorch's name of the complex type a Python complex number makes beside ``beside``
    (a float16 tensor's ComplexHalf, a float64 one's ComplexDouble, else ComplexFloat)."""
    dt = getattr(beside, "dtype", None)
    return {"float16": "ComplexHalf", "float64": "ComplexDouble"}.get(
        getattr(dt, "name", ""), "ComplexFloat")


for _name, _ufunc in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                      "ge": np.greater_equal}.items():
    _ordering(_name, _ufunc)


_fn: Any
for _name, _fn in {
    "eq": np.equal, "ne": np.not_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "logical_not": np.logical_not,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
}.items():
    _nondiff(_name, _fn)


def _bitwise(name: str, ufunc: Any) -> None:
    """``& | ^`` are bitwise on integers and logical on bools; floats have no bits to use."""

    def forward(a, b):
        np.broadcast_shapes(np.shape(a), np.shape(b))  # PyTorch checks shapes before dtypes
        for x in (a, b):
            if type(x) is np.ndarray:
                not_implemented_for(x, f"{name}_cpu", "fc")
        for x in (a, b):
            if isinstance(x, float):  # promotes the result to float32, which has no bits
                raise NotImplementedError(f'"{name}_cpu" not implemented for \'Float\'')
            if isinstance(x, complex):
                raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                          f"'{complex_name(a if x is b else b)}'")
        return ufunc(a, b), None

    register(name, saves=False, promotes=True)(forward)


_bitwise("bitwise_and", np.bitwise_and)
_bitwise("bitwise_or", np.bitwise_or)
_bitwise("bitwise_xor", np.bitwise_xor)


@register("bitwise_not", saves=False)
def bitwise_not(a):
    if a.dtype.kind not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        f"tensors (got {a.dtype})")
    return np.invert(a), None


def _zero_grad_backward(g):
    return (np.zeros_like(g),)


def _zero_grad(name: str, fn: Callable[..., Any], kernel: str) -> None:
    """Piecewise-constant ops: differentiable with a zero gradient, as in PyTorch, and
    not defined on bools (``kernel`` is the name PyTorch's error gives)."""

    def forward(a):
        not_implemented_for(a, kernel, "b")
        return fn(a), _zero_grad_backward

    register(name, saves=False)(forward)


for _name, _fn in {"floor": np.floor, "ceil": np.ceil, "round": np.round,
                   "trunc": np.trunc}.items():
    _zero_grad(_name, _fn, f"{_name}_vml_cpu")


@register("sign", saves=False)
def sign(a):
    if a.dtype.kind == "b":
        return a.copy(), _zero_grad_backward
    return sgn(a), _zero_grad_backward


def sgn(a: np.ndarray) -> np.ndarray:
    """PyTorch's sign: of NaN it is 0 (numpy's is NaN), also inside abs' and l1's grads."""
    a = np.asarray(a)  # 0-d arithmetic gives numpy scalars
    if a.dtype.kind == "f":
        return (a > 0).astype(a.dtype) - (a < 0)
    return np.sign(a)


def _integer_division(a: Any, b: Any, ufunc: Any, kernel: str) -> np.ndarray:
    """``//`` and ``%``: PyTorch raises on an integer division by zero (numpy gives 0), when
    any is done: an empty result divides nothing."""
    np.broadcast_shapes(np.shape(a), np.shape(b))  # shapes first, as PyTorch (ValueError)
    if _is_bool(a) and _is_bool(b):
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if type(a) is complex or type(b) is complex:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{complex_name(b if type(a) is complex else a)}'")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = ufunc(a, b)
    if out.size and out.dtype.kind in "iu" and np.any(np.asarray(b) == 0):
        raise ZeroDivisionError
    return out


def _floor_divide_backward(g):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


@register("floor_divide", saves=False, grad_fn="NotImplemented", promotes=True)
def floor_divide(a, b):
    # PyTorch records floor_divide in the graph and fails only if backward reaches it.
    return _integer_division(a, b, np.floor_divide, "div_floor_cpu"), _floor_divide_backward


@register("div_trunc", saves=False, grad_fn="DivBackward3", promotes=True)
def div_trunc(a, b):
    """``div(a, b, rounding_mode="trunc")`` of integers: exact, in their type (a float
    division would round 123456789 / 10 to 12345679), refusing a division by zero."""
    return _integer_division(a, b, _trunc_divide, "div_trunc_cpu"), None


def _trunc_divide(a: Any, b: Any) -> np.ndarray:
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)))


def _scalar_remainder_backward(g):
    raise RuntimeError("derivative for aten::remainder is not implemented")


@register("remainder", grad_fn="RemainderBackward1", promotes=True, saved_for={"a": 1, "b": 1})
def remainder(a, b):
    out = _integer_division(a, b, np.remainder, "remainder_cpu")
    if not _arr(a):  # PyTorch's remainder(Scalar, Tensor) has no derivative
        return out, _scalar_remainder_backward

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            return g, (-g * np.floor(a / b) if _arr(b) else None)

    return out, backward


# Linear algebra, shape, reduction and joining ops register themselves on import.
from . import ops_linalg, ops_reduce, ops_shape  # noqa: E402,F401
