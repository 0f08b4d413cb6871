"""The neural-network ops: numpy forward and backward side by side, as in ``ops.py``.

Each op here is one readable node in the graph ("linear", "cross_entropy", "layer_norm"
...) rather than the dozen elementwise nodes it would decompose into. Like ``ops.py`` this
module knows no Tensor: ``nn.functional`` calls these through ``tensor.apply``.

An op whose name the core registry already holds (the engine may define ``softmax`` or
``gelu`` for Tensor methods) is kept here as a private OpDef with the same name, so its
events read the same and neither definition breaks the other's import.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import creation
from .errors import not_implemented_for
from .ops import OPS, Forward, OpDef, register, sgn

NN_OPS: dict[str, OpDef] = {}


def _define(name: str, grad_fn: str, saves: bool = True, needs_input_grad: bool = False,
            saved_for: dict[str, int] | None = None) -> Callable[[Forward], Forward]:
    """Register an nn op (``needs_input_grad``: the forward is told which inputs need a
    gradient, so its backward can skip costly unused ones, e.g. the data's in a first
    layer; ``saved_for``: see ``OpDef``)."""

    def decorate(forward: Forward) -> Forward:
        if name in OPS:
            NN_OPS[name] = OpDef(name, forward, saves, grad_fn, needs_input_grad,
                                 saved_for=saved_for)
        else:
            register(name, saves=saves, grad_fn=grad_fn, needs_input_grad=needs_input_grad,
                     saved_for=saved_for)(forward)
            NN_OPS[name] = OPS[name]
        return forward

    return decorate


def _sum_to_last(g: np.ndarray, ndim: int) -> np.ndarray:
    """Sum ``g`` over every leading axis, keeping the last ``ndim`` (a bias's gradient)."""
    lead = g.ndim - ndim
    return g.sum(axis=tuple(range(lead))) if lead > 0 else g


# -- linear -------------------------------------------------------------------------------
def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` as a matrix of its last dim (``reshape(-1, n)`` cannot infer -1 when empty)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


@_define("linear", "AddmmBackward0", needs_input_grad=True, saved_for={"x": 1, "w": 0})
def linear(x, w, b=None, needs_input_grad=(True, True, True)):
    out = x @ w.T
    if b is not None:
        out += b
    need_x, need_w = needs_input_grad[0], needs_input_grad[1]
    has_bias = b is not None  # not b itself: what a backward holds, the version counter guards

    def backward(g):
        gx = g @ w if need_x else None
        g2 = _rows(g)
        gw = g2.T @ _rows(x) if need_w else None
        gb = g2.sum(axis=0) if has_bias else None
        return gx, gw, gb

    return out, backward


# -- activations --------------------------------------------------------------------------
def _erf(z: np.ndarray) -> np.ndarray:
    """erf with fractional error below 1.2e-7 (Numerical Recipes' Chebyshev erfc fit)."""
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.5 * a)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(-a * a + poly)
    return np.where(z >= 0, 1.0 - erfc, erfc - 1.0)


_erf_each = np.frompyfunc(math.erf, 1, 1)


def _exact_erf(z: np.ndarray) -> np.ndarray:
    return np.asarray(_erf_each(z), dtype=np.float64)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@_define("gelu", "GeluBackward0")
def gelu(a, approximate="none"):
    x = a.astype(np.float64)  # the erf fit and tanh form are evaluated in float64
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x**3)
        th = np.tanh(inner)
        out = 0.5 * x * (1.0 + th)

        def backward(g):
            d_inner = _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x * x)
            d = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * d_inner
            return ((g * d).astype(a.dtype),)
    else:
        # float64 asks for float64's precision: math.erf per element (float64 gelu is rare).
        erf = _exact_erf if a.dtype == np.float64 else _erf
        cdf = 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
        out = x * cdf

        def backward(g):
            d = cdf + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x)
            return ((g * d).astype(a.dtype),)

    return out.astype(a.dtype), backward


@_define("softplus", "SoftplusBackward0")
def softplus(a, beta=1.0, threshold=20.0):
    z = a * beta
    linear = z > threshold  # PyTorch switches to the identity there
    soft = (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / beta
    out = np.where(linear, a, soft).astype(a.dtype, copy=False)

    def backward(g):
        e = np.exp(-np.abs(z))
        sig = np.where(z >= 0, 1 / (1 + e), e / (1 + e))
        return (g * np.where(linear, 1.0, sig).astype(a.dtype, copy=False),)

    return out, backward


@_define("elu", "EluBackward0")
def elu(a, alpha=1.0):
    neg = a <= 0
    em1 = np.expm1(np.minimum(a, 0))
    out = np.where(neg, alpha * em1, a).astype(a.dtype, copy=False)
    return out, lambda g: (g * np.where(neg, alpha * (em1 + 1), 1.0).astype(a.dtype),)


# The ufuncs' reductions: ndarray.max and .sum, minus their Python wrappers (hot: every
# classifier's loss runs these each step).
_max, _sum = np.maximum.reduce, np.add.reduce


def _kernel(name: str, a: np.ndarray, dim: int) -> str:
    """PyTorch's kernel name in its refusal of integers: along the last dim or another."""
    last = a.ndim <= 1 or dim % a.ndim == a.ndim - 1
    return f"{name}_lastdim_kernel_impl" if last else f"{name}_kernel_impl"


@_define("softmax", "SoftmaxBackward0")
def softmax(a, dim):
    if a.size == 0:  # (the backward holds the output PyTorch saves, as below)
        out = a.copy()  # of any dtype: PyTorch refuses integers only when there are some
        return out, lambda g, out=out: (g,)
    if a.dtype.kind in "biu":
        not_implemented_for(a, _kernel("softmax", a, dim), "biu")
    e = np.exp(a - _max(a, axis=dim, keepdims=True))
    out = e / _sum(e, axis=dim, keepdims=True)
    return out, lambda g: (out * (g - _sum(g * out, axis=dim, keepdims=True)),)


def _log_softmax(a: np.ndarray, dim: int) -> np.ndarray:
    shifted = a - _max(a, axis=dim, keepdims=True)
    return shifted - np.log(_sum(np.exp(shifted), axis=dim, keepdims=True))


@_define("log_softmax", "LogSoftmaxBackward0")
def log_softmax(a, dim):
    if a.size == 0:  # (the backward holds the output PyTorch saves, as below)
        out = a.copy()
        return out, lambda g, out=out: (g,)
    if a.dtype.kind in "biu":
        not_implemented_for(a, _kernel("log_softmax", a, dim), "biu")
    out = _log_softmax(a, dim)
    return out, lambda g: (g - np.exp(out) * _sum(g, axis=dim, keepdims=True),)


@_define("dropout", "NativeDropoutBackward0")
def dropout(a, p=0.5):
    if p >= 1.0:
        mask = np.zeros_like(a)
    else:
        keep = creation.generator().random(a.shape) >= p
        mask = keep.astype(a.dtype) / np.asarray(1.0 - p, dtype=a.dtype)
    return a * mask, lambda g: (g * mask,)


# -- normalisation and lookup -------------------------------------------------------------
@_define("layer_norm", "NativeLayerNormBackward0")
def layer_norm(x, w=None, b=None, normalized_shape=(), eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + np.asarray(eps, dtype=x.dtype))
    out = xc * rstd
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    nd = len(normalized_shape)

    def backward(g):
        # What PyTorch's NativeLayerNormBackward0 saves: the input, weight, bias, mean and
        # rstd (never the output). The version counter guards the input, so an in-place
        # change of it raises here as there; one of the output does not.
        xhat = (x - mu) * rstd
        gxhat = g * w if w is not None else g
        gx = rstd * (gxhat - gxhat.mean(axis=axes, keepdims=True)
                     - xhat * (gxhat * xhat).mean(axis=axes, keepdims=True))
        gw = _sum_to_last(g * xhat, nd) if w is not None else None
        gb = _sum_to_last(g, nd) if b is not None else None
        return gx, gw, gb

    return out, backward


@_define("batch_norm", "NativeBatchNormBackward0")
def batch_norm(x, running_mean=None, running_var=None, w=None, b=None, training=True,
               eps=1e-5):
    # Statistics per channel (axis 1) over the batch and every spatial position.
    axes = (0, *range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mu = x.mean(axis=axes, keepdims=True)
        xc = x - mu
        var = (xc * xc).mean(axis=axes, keepdims=True)
    else:
        mu = running_mean.reshape(shape)
        xc = x - mu
        var = running_var.reshape(shape)
    rstd = (1.0 / np.sqrt(var + np.asarray(eps, dtype=x.dtype))).astype(x.dtype)
    xhat = xc * rstd
    out = xhat * w.reshape(shape) if w is not None else xhat
    has_bias = b is not None  # not b itself: PyTorch does not save the bias
    if has_bias:
        out = out + b.reshape(shape)

    def backward(g):
        gxhat = g * w.reshape(shape) if w is not None else g
        if training:
            gx = rstd * (gxhat - gxhat.mean(axis=axes, keepdims=True)
                         - xhat * (gxhat * xhat).mean(axis=axes, keepdims=True))
        else:
            gx = gxhat * rstd
        gw = (g * xhat).sum(axis=axes) if w is not None else None
        gb = g.sum(axis=axes) if has_bias else None
        return gx, None, None, gw, gb

    return out, backward


@_define("group_norm", "NativeGroupNormBackward0")
def group_norm(x, w=None, b=None, num_groups=1, eps=1e-5):
    n, c = x.shape[:2]
    xg = x.reshape(n, num_groups, -1)  # each group: its channels and positions together
    mu = xg.mean(axis=2, keepdims=True)
    xc = xg - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=2, keepdims=True) + np.asarray(eps, x.dtype))
    xhat = (xc * rstd).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    out = xhat * w.reshape(shape) if w is not None else xhat
    if b is not None:
        out = out + b.reshape(shape)
    axes = (0, *range(2, x.ndim))

    def backward(g):
        gxhat = (g * w.reshape(shape) if w is not None else g).reshape(n, num_groups, -1)
        xh = xhat.reshape(n, num_groups, -1)
        gx = rstd * (gxhat - gxhat.mean(axis=2, keepdims=True)
                     - xh * (gxhat * xh).mean(axis=2, keepdims=True))
        gw = (g * xhat).sum(axis=axes) if w is not None else None
        gb = g.sum(axis=axes) if b is not None else None
        return gx.reshape(x.shape), gw, gb

    return out, backward


@_define("embedding", "EmbeddingBackward0")
def embedding(indices, weight, padding_idx=None):
    if indices.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {indices.dtype} instead"
        )
    num = weight.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= num):  # -1 never wraps
        bad = int(indices.min() if indices.min() < 0 else indices.max())
        raise IndexError(f"index out of range in self (embedding: index {bad} with "
                         f"{num} embeddings)")

    shape, dtype = weight.shape, weight.dtype  # PyTorch saves the indices, not the weight

    def backward(g):
        gw = np.zeros(shape, dtype)
        np.add.at(gw, indices.reshape(-1), g.reshape(-1, shape[1]))
        if padding_idx is not None:
            gw[padding_idx] = 0
        return None, gw

    return weight[indices], backward


# -- losses -------------------------------------------------------------------------------
def _class_last(x: np.ndarray) -> np.ndarray:
    """(N, C, d1, ...) -> (N*d1*..., C): the class axis last, one row per prediction."""
    if x.ndim <= 2:
        return x.reshape(-1, x.shape[-1])
    return np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def _class_back(g2: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of ``_class_last`` for a gradient."""
    if len(shape) <= 2:
        return g2.reshape(shape)
    moved = (shape[0], *shape[2:], shape[1])
    return np.moveaxis(g2.reshape(moved), -1, 1)


def _reduce(per_item: np.ndarray, reduction: str, denom: Any, item_shape: tuple[int, ...]):
    """Apply ``reduction``; returns (out, scale) where d(out)/d(item) = g * scale."""
    if reduction == "none":
        return per_item.reshape(item_shape), None
    if reduction == "sum":
        return per_item.sum(), 1.0
    if reduction == "mean":  # an empty mean is nan, as in PyTorch (not ZeroDivisionError)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.divide(1.0, denom)
            return per_item.sum() * scale, scale
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _nll_core(logp, target, weight, ignore_index, reduction, label_smoothing):
    """Negative log-likelihood on (M, C) log-probabilities with integer targets (M,).

    Returns (loss, dlogp(g)): the loss and a function from the output's gradient to the
    gradient with respect to ``logp``.
    """
    m, c = logp.shape
    t = target.reshape(-1)
    if t.shape[0] != m:
        raise ValueError(f"Expected input batch_size ({m}) to match target batch_size "
                         f"({t.shape[0]}).")
    valid = t != ignore_index
    safe_t = np.where(valid, t, 0)
    if valid.any() and (safe_t[valid].min() < 0 or safe_t[valid].max() >= c):
        bad = int(safe_t[valid][(safe_t[valid] < 0) | (safe_t[valid] >= c)][0])
        raise IndexError(f"Target {bad} is out of bounds.")
    rows = np.arange(m)
    w_t = (weight[safe_t] if weight is not None else np.ones(m, logp.dtype)) * valid
    picked = logp[rows, safe_t]
    per = -w_t * picked
    eps = label_smoothing
    if eps:
        smooth = -(logp * weight).sum(axis=1) if weight is not None else -logp.sum(axis=1)
        per = (1.0 - eps) * per + (eps / c) * smooth * valid
    denom = w_t.sum()
    item_shape = target.shape
    loss, scale = _reduce(per, reduction, denom, item_shape)

    def dlogp(g):
        gi = g.reshape(-1) if scale is None else np.full(m, g * scale, dtype=logp.dtype)
        out = np.zeros_like(logp)
        out[rows, safe_t] = -(1.0 - eps) * w_t * gi
        if eps:
            row = (gi * valid * (eps / c))[:, None]
            out -= row * (weight[None, :] if weight is not None else 1.0)
        return out

    return np.asarray(loss, dtype=logp.dtype), dlogp


@_define("nll_loss", "NllLossBackward0")
def nll_loss(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    shape = logp.shape
    lp = logp.reshape(1, -1) if logp.ndim == 1 else _class_last(logp)
    tgt = np.asarray(target)
    loss, dlogp = _nll_core(lp, tgt, weight, ignore_index, reduction, 0.0)
    return loss, lambda g: (_class_back(dlogp(g), shape), None, None)


def _soft_target_ce(logp2, tgt2, weight, reduction, label_smoothing, item_shape):
    """Cross entropy against class probabilities (target shaped like the input)."""
    m, c = logp2.shape
    if label_smoothing:
        tgt2 = tgt2 * (1.0 - label_smoothing) + label_smoothing / c
    wt = tgt2 * weight if weight is not None else tgt2
    per = -(wt * logp2).sum(axis=1)
    loss, scale = _reduce(per, reduction, m, item_shape)

    def grads(g):
        gi = g.reshape(-1, 1) if scale is None else np.asarray(g * scale)
        dlogp = -wt * gi
        dx = dlogp - np.exp(logp2) * dlogp.sum(axis=1, keepdims=True)
        dw = weight if weight is not None else 1.0
        dt = -(logp2 * dw) * gi * (1.0 - label_smoothing)
        return dx, dt

    return loss, grads


@_define("cross_entropy", "NllLossBackward0")
def cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    shape = x.shape
    x2 = x.reshape(1, -1) if x.ndim == 1 else _class_last(x)
    logp2 = _log_softmax(x2, 1)
    tgt = np.asarray(target)
    if tgt.dtype.kind == "f":  # class probabilities
        if tgt.shape != shape:
            raise RuntimeError(f"cross_entropy: target shape {tgt.shape} must match input "
                               f"shape {shape} for class probabilities")
        item_shape = (shape[0], *shape[2:]) if x.ndim > 1 else ()
        tgt2 = tgt.reshape(1, -1) if x.ndim == 1 else _class_last(tgt)
        loss, grads = _soft_target_ce(logp2, tgt2, weight, reduction, label_smoothing,
                                      item_shape)

        def backward_soft(g):
            dx, dt = grads(g)
            return _class_back(dx, shape), _class_back(dt, shape), None

        return np.asarray(loss, dtype=x.dtype), backward_soft
    loss, dlogp = _nll_core(logp2, tgt, weight, ignore_index, reduction, label_smoothing)

    def backward(g):
        d = dlogp(g)
        dx = d - np.exp(logp2) * d.sum(axis=1, keepdims=True)
        return _class_back(dx, shape), None, None

    return loss, backward


@_define("mse_loss", "MseLossBackward0")
def mse_loss(a, b, reduction="mean"):
    diff = a - b
    sq = diff * diff
    loss, scale = _reduce(sq, reduction, sq.size, sq.shape)

    def backward(g):
        # From the input and target, which PyTorch's MseLossBackward0 saves (the version
        # counter guards them), not from a private difference.
        ga = 2.0 * (a - b) * (g if scale is None else g * scale)
        return ga, -ga

    return np.asarray(loss, dtype=sq.dtype), backward


@_define("l1_loss", "L1LossBackward0")
def l1_loss(a, b, reduction="mean"):
    diff = a - b
    loss, scale = _reduce(np.abs(diff), reduction, diff.size, diff.shape)

    def backward(g):
        ga = sgn(diff) * (g if scale is None else g * scale)
        return ga, -ga

    return np.asarray(loss, dtype=diff.dtype), backward


@_define("smooth_l1_loss", "SmoothL1LossBackward0")
def smooth_l1_loss(a, b, reduction="mean", beta=1.0, huber=False):
    """Smooth L1 (``huber=False``: quadratic below ``beta`` scaled by 1/beta) or Huber
    (``huber=True``: ``beta`` is delta, not rescaled). The backward reads the input and
    target, which PyTorch saves (and its version counter guards)."""
    diff = a - b
    ad = np.abs(diff)
    small = ad < beta
    if huber:
        per = np.where(small, 0.5 * diff * diff, beta * (ad - 0.5 * beta))
    elif beta == 0:
        per = ad
    else:
        per = np.where(small, 0.5 * diff * diff / beta, ad - 0.5 * beta)
    per = per.astype(diff.dtype, copy=False)
    loss, scale = _reduce(per, reduction, per.size, per.shape)

    def backward(g):
        gs = g if scale is None else g * scale
        diff = a - b
        small = np.abs(diff) < beta
        if huber:
            d = np.where(small, diff, beta * np.sign(diff))
        elif beta == 0:
            d = sgn(diff)
        else:
            d = np.where(small, diff / beta, np.sign(diff))
        ga = (gs * d).astype(diff.dtype, copy=False)
        return ga, -ga

    return np.asarray(loss, dtype=diff.dtype), backward


@_define("kl_div", "KlDivBackward0")
def kl_div(logq, target, reduction="mean", log_target=False):
    """KL(target || q) pointwise: ``target * (log target - logq)`` (0 where target is 0)."""
    if log_target:
        p = np.exp(target)
        per = p * (target - logq)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(target > 0, target * (np.log(np.where(target > 0, target, 1)) - logq),
                           0.0)
        p = target
    per = per.astype(logq.dtype, copy=False)
    if reduction == "batchmean":
        batch = logq.shape[0] if logq.ndim else 1
        loss, scale = per.sum() / batch, 1.0 / batch
    else:
        loss, scale = _reduce(per, reduction, per.size, per.shape)

    def backward(g):
        gs = g if scale is None else g * scale
        return (-p * gs).astype(logq.dtype, copy=False), None

    return np.asarray(loss, dtype=logq.dtype), backward


@_define("binary_cross_entropy", "BinaryCrossEntropyBackward0")
def binary_cross_entropy(p, y, weight=None, reduction="mean"):
    if p.size and (p.min() < 0 or p.max() > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        # PyTorch clamps each log at -100 so a confident wrong answer stays finite.
        log_p = np.maximum(np.log(p), -100)
        log_q = np.maximum(np.log1p(-p), -100)
    per = -(y * log_p + (1 - y) * log_q)
    if weight is not None:
        per = per * weight
    loss, scale = _reduce(per, reduction, per.size, per.shape)

    def backward(g):
        gs = g if scale is None else g * scale
        w = weight if weight is not None else 1.0
        eps = 1e-12  # PyTorch's guard against p*(1-p) == 0
        gp = gs * w * (p - y) / np.maximum(p * (1 - p), eps)
        gy = gs * w * (log_q - log_p)
        return gp, gy, None

    return np.asarray(loss, dtype=per.dtype), backward


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log(sigmoid(x)) = -softplus(-x), computed without overflow."""
    return -(np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x))))


@_define("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0")
def binary_cross_entropy_with_logits(x, y, weight=None, pos_weight=None, reduction="mean"):
    log_sig = _log_sigmoid(x)
    log_one_minus = log_sig - x
    pw = 1.0 if pos_weight is None else pos_weight
    per = -(pw * y * log_sig + (1 - y) * log_one_minus)
    if weight is not None:
        per = per * weight
    loss, scale = _reduce(per, reduction, per.size, per.shape)

    def backward(g):
        # From what PyTorch saves (input, target, weight, pos_weight), which the version
        # counter guards: a later in-place change of the input raises, as there.
        log_sig = _log_sigmoid(x)
        log_one_minus = log_sig - x
        sig = np.exp(log_sig)
        gs = g if scale is None else g * scale
        w = weight if weight is not None else 1.0
        gx = gs * w * ((pw * y + 1 - y) * sig - pw * y)
        gy = gs * w * (log_one_minus - pw * log_sig)
        return gx, gy, None, None

    return np.asarray(loss, dtype=per.dtype), backward


@_define("one_hot", "OneHotBackward0", saves=False)
def one_hot(indices, num_classes=-1):
    if indices.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes < 0:
        num_classes = int(indices.max()) + 1 if indices.size else 0
    if indices.size and (indices.min() < 0 or indices.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return np.eye(num_classes, dtype=np.int64)[indices], None


@_define("pad", "ConstantPadNdBackward0", saves=False)
def pad(a, pad=(), value=0.0):
    if len(pad) % 2 or len(pad) // 2 > a.ndim:
        raise RuntimeError(f"Padding length must be divisible by 2 and at most twice the "
                           f"input's dimensions ({a.ndim}), got {len(pad)}")
    widths = [(0, 0)] * a.ndim
    for i in range(len(pad) // 2):  # pad lists the last dimension first, as in PyTorch
        widths[a.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    # Negative padding crops: pad with the positive part, then slice the negative part off.
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    out = np.pad(a, grow, constant_values=value) if any(lo or hi for lo, hi in grow) else a
    crop = tuple(slice(-min(lo, 0), out.shape[d] + min(hi, 0)) for d, (lo, hi)
                 in enumerate(widths))
    out = out[crop]
    shape = a.shape

    def backward(g):
        gfull = np.zeros(tuple(s + max(lo, 0) + max(hi, 0) for s, (lo, hi)
                               in zip(shape, widths, strict=True)), dtype=g.dtype)
        gfull[crop] = g
        back = tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape, grow, strict=True))
        return (gfull[back],)

    return np.ascontiguousarray(out), backward


from . import ops_conv  # noqa: E402,F401  (registers convolution and pooling, with _define)
