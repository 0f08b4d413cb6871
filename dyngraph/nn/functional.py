"""``dyngraph.nn.functional`` (``F``): the stateless half of ``nn``, as in PyTorch.

Every function ends in one ``apply`` of a registered op, so a call shows in the graph as
one node named after it ("linear", "cross_entropy" ...).

>>> import dyngraph as torch
>>> import dyngraph.nn.functional as F
>>> logits = torch.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, torch.tensor([0]))
>>> loss.backward()
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..engine import creation
from ..engine import functions as _fn
from ..engine.ops import OPS
from ..engine.ops_nn import NN_OPS
from ..engine.tensor import Tensor, apply
from ..missing import module_getattr

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "conv1d", "conv2d", "cosine_similarity", "cross_entropy",
    "dropout", "dropout1d", "dropout2d", "elu", "embedding", "gelu", "group_norm", "huber_loss",
    "kl_div", "l1_loss",
    "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss",
    "normalize", "one_hot", "pad", "relu", "scaled_dot_product_attention", "sigmoid", "silu",
    "smooth_l1_loss", "softmax", "softplus", "tanh",
]

_REDUCTIONS = ("none", "mean", "sum")


def _pair(value: Any, name: str) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
    return pair  # type: ignore[return-value]


def _check_reduction(reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _softmax_dim(ndim: int, dim: int | None, name: str) -> int:
    if dim is None:
        # PyTorch's legacy implicit choice (it warns too).
        import warnings

        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=3)
        return 0 if ndim in (0, 1, 3) else 1
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})")
    return dim


def _cast(x: Tensor, dtype: Any) -> Tensor:
    return x if dtype is None else x.to(dtype)


# -- activations --------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return apply(OPS["relu"], input)


def tanh(input: Tensor) -> Tensor:
    return apply(OPS["tanh"], input)


def sigmoid(input: Tensor) -> Tensor:
    return apply(OPS["sigmoid"], input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")
    return apply(NN_OPS["gelu"], input, approximate=approximate)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if "leaky_relu" in OPS:
        return apply(OPS["leaky_relu"], input, negative_slope=negative_slope)
    return _fn.relu(input) - _fn.relu(-input) * negative_slope


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return input * sigmoid(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return apply(NN_OPS["softplus"], input, beta=float(beta), threshold=float(threshold))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return apply(NN_OPS["elu"], input, alpha=float(alpha))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p over dim, eps)``."""
    return input / _fn.clamp_min(_fn.norm(input, p, dim, keepdim=True), eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``."""
    n1 = _fn.clamp_min(_fn.norm(x1, 2, dim, keepdim=True), eps)
    n2 = _fn.clamp_min(_fn.norm(x2, 2, dim, keepdim=True), eps)
    return _fn.sum((x1 / n1) * (x2 / n2), dim)


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    dim = _softmax_dim(input.ndim, dim, "softmax")
    return apply(NN_OPS["softmax"], _cast(input, dtype), dim=dim)


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    dim = _softmax_dim(input.ndim, dim, "log_softmax")
    return apply(NN_OPS["log_softmax"], _cast(input, dtype), dim=dim)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    return apply(NN_OPS["dropout"], input, p=float(p))


def _channel_dropout(input: Tensor, p: float, training: bool, batched: bool) -> Tensor:
    """Zero whole channels with probability ``p`` (scaling the rest): one draw per
    (sample, channel), broadcast over the positions; recorded as a "mul" by that mask."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    shape = input._array.shape
    keep_dims = 2 if batched else 1
    mask_shape = shape[:keep_dims] + (1,) * (len(shape) - keep_dims)
    dtype = input._array.dtype
    if p >= 1.0:
        mask = np.zeros(mask_shape, dtype)
    else:
        keep = creation.generator().random(mask_shape) >= p
        mask = keep.astype(dtype) / np.asarray(1.0 - p, dtype=dtype)
    return apply(OPS["mul"], input, mask)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, L) or (C, L) inputs."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, H, W) or (C, H, W) inputs (a 3-D input is taken as
    (N, C, L), with PyTorch's warning)."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release.",
                      UserWarning, stacklevel=2)
    elif input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      UserWarning, stacklevel=2)
    return _channel_dropout(input, p, training, input.ndim >= 3)


# -- layers -------------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` as one "linear" node."""
    x_shape, w_shape = input._array.shape, weight._array.shape
    if not x_shape or x_shape[-1] != w_shape[-1]:
        rows = int(np.prod(x_shape[:-1])) if len(x_shape) > 1 else 1
        cols = x_shape[-1] if x_shape else 1
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
            f"{w_shape[-1]}x{w_shape[0]})"
        )
    if bias is None:
        return apply(NN_OPS["linear"], input, weight)
    return apply(NN_OPS["linear"], input, weight, bias)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    return apply(NN_OPS["layer_norm"], *_inputs(input, weight, bias), normalized_shape=shape,
                 eps=float(eps))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float | None = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) by batch statistics while training (and update the
    running statistics in place, outside the graph), by the running ones otherwise."""
    if input.ndim < 2:
        raise ValueError(f"expected 2D or more input (got {input.ndim}D input)")
    data = input._array
    axes = (0, *range(2, data.ndim))
    count = data.size // data.shape[1]
    if training and count <= 1:
        raise ValueError("Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: running_mean and running_var are needed in eval mode")
    out = apply(NN_OPS["batch_norm"], input, running_mean, running_var,
                *_inputs(weight, bias), training=bool(training), eps=float(eps))
    if training and running_mean is not None and running_var is not None:
        m = 0.1 if momentum is None else momentum  # (BatchNorm passes its own average)
        mean = data.mean(axis=axes)
        var = data.var(axis=axes, ddof=1)
        running_mean._array *= 1 - m
        running_mean._array += (m * mean).astype(running_mean._array.dtype)
        running_var._array *= 1 - m
        running_var._array += (m * var).astype(running_var._array.dtype)
    return out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    if input.ndim < 2 or input._array.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    return apply(NN_OPS["group_norm"], *_inputs(input, weight, bias),
                 num_groups=int(num_groups), eps=float(eps))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "dyngraph's embedding supports no max_norm, scale_grad_by_freq or sparse"
        )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return apply(NN_OPS["embedding"], input, weight, padding_idx=padding_idx)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution by im2col (zero padding; ``padding`` may be an int, a pair, "valid"
    or "same")."""
    squeeze = input.ndim == 3
    if squeeze:
        input = input.reshape(1, *input.shape)
    dil = _pair(dilation, "dilation")
    if padding == "valid":
        pad = (0, 0)
    elif padding == "same":
        if _pair(stride, "stride") != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        kh, kw = weight.shape[2:]
        totals = (dil[0] * (kh - 1), dil[1] * (kw - 1))
        if totals[0] % 2 or totals[1] % 2:
            raise NotImplementedError("dyngraph's padding='same' needs an odd effective kernel")
        pad = (totals[0] // 2, totals[1] // 2)
    else:
        pad = _pair(padding, "padding")
    args = [input, weight] if bias is None else [input, weight, bias]
    out = apply(NN_OPS["conv2d"], *args, stride=_pair(stride, "stride"), padding=pad,
                dilation=dil, groups=int(groups))
    return out.reshape(*out.shape[1:]) if squeeze else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution over (N, C, L) (or unbatched (C, L)) inputs."""
    squeeze = input.ndim == 2
    if squeeze:
        input = input.reshape(1, *input.shape)
    stride, dilation = _single(stride), _single(dilation)
    if padding == "valid":
        pad = 0
    elif padding == "same":
        total = dilation * (weight._array.shape[-1] - 1)
        if stride != 1 or total % 2:
            raise NotImplementedError("dyngraph's padding='same' needs stride 1 and an odd "
                                      "effective kernel")
        pad = total // 2
    else:
        pad = _single(padding)
    args = [input, weight] if bias is None else [input, weight, bias]
    out = apply(NN_OPS["conv1d"], *args, stride=stride, padding=pad, dilation=dilation,
                groups=int(groups))
    return out.reshape(*out.shape[1:]) if squeeze else out


def _single(value: Any) -> int:
    return int(value) if isinstance(value, int) else int(tuple(value)[0])


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    if return_indices:
        raise NotImplementedError("dyngraph's max_pool2d does not return indices")
    k = _pair(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _pair(stride, "stride")
    return apply(NN_OPS["max_pool2d"], input, kernel_size=k, stride=s,
                 padding=_pair(padding, "padding"), dilation=_pair(dilation, "dilation"),
                 ceil_mode=bool(ceil_mode))


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    if ceil_mode or divisor_override is not None:
        raise NotImplementedError("dyngraph's avg_pool2d supports no ceil_mode or "
                                  "divisor_override")
    k = _pair(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _pair(stride, "stride")
    return apply(NN_OPS["avg_pool2d"], input, kernel_size=k, stride=s,
                 padding=_pair(padding, "padding"), count_include_pad=bool(count_include_pad))


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    h, w = input._array.shape[-2:]
    out = (h if size[0] is None else int(size[0]), w if size[1] is None else int(size[1]))
    return apply(NN_OPS["adaptive_avg_pool2d"], input, output_size=out)


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    if mode != "constant":
        raise NotImplementedError(f"dyngraph's pad supports mode='constant' only, got {mode!r}")
    return apply(NN_OPS["pad"], input, pad=tuple(int(p) for p in pad),
                 value=0.0 if value is None else float(value))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    return apply(NN_OPS["one_hot"], tensor, num_classes=int(num_classes))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(q kᵀ · scale + mask) v over the last two dimensions."""
    weights = _attention_weights(query, key, attn_mask, is_causal, scale)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _attention_weights(query: Tensor, key: Tensor, mask: Any, is_causal: bool,
                       scale: float | None) -> Tensor:
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query * scale) @ key.transpose(-2, -1)
    additive = additive_mask(mask, L, S, scores._array.dtype, is_causal)
    if additive is not None:
        scores = scores + (additive if isinstance(additive, Tensor) else additive)
    return softmax(scores, dim=-1)


def additive_mask(mask: Any, L: int, S: int, dtype: Any, is_causal: bool = False) -> Any:
    """A boolean mask (True = may not attend) or float mask turned into an additive one.

    Returns None (no mask), a numpy constant, or the float mask Tensor itself (so a learnt
    mask keeps its gradient).
    """
    if mask is None:
        if not is_causal:
            return None
        return np.triu(np.full((L, S), -np.inf, dtype=dtype), k=1)
    data = mask._array if isinstance(mask, Tensor) else np.asarray(mask)
    if data.dtype == np.bool_:
        return np.where(data, np.asarray(-np.inf, dtype), np.asarray(0, dtype))
    if isinstance(mask, Tensor):
        return mask
    return data.astype(dtype)


# -- losses -------------------------------------------------------------------------------
def _inputs(*xs: Any) -> list[Any]:
    """Positional op inputs without trailing Nones (absent optional tensors)."""
    out = list(xs)
    while out and out[-1] is None:
        out.pop()
    return out


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """log_softmax + nll_loss as one "cross_entropy" node; targets are class indices (or
    class probabilities shaped like ``input``)."""
    _legacy(size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    return apply(NN_OPS["cross_entropy"], *_inputs(input, target, weight),
                 ignore_index=int(ignore_index), reduction=_check_reduction(reduction),
                 label_smoothing=float(label_smoothing))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    return apply(NN_OPS["nll_loss"], *_inputs(input, target, weight),
                 ignore_index=int(ignore_index), reduction=_check_reduction(reduction))


def _broadcast_target(input: Tensor, target: Tensor) -> None:
    """PyTorch's regression losses broadcast a target of another shape, with a warning."""
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({_torch_size(target)}) that is different to the input size "
            f"({_torch_size(input)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=3)


def _torch_size(t: Tensor) -> str:
    return f"torch.Size({list(t.shape)})"


def _same_shape(input: Tensor, target: Tensor, name: str) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"{name}: target size ({list(target.shape)}) must be the same as input size "
            f"({list(input.shape)})"
        )


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    _broadcast_target(input, target)
    return apply(NN_OPS["mse_loss"], input, target, reduction=_check_reduction(reduction))


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    _broadcast_target(input, target)
    return apply(NN_OPS["l1_loss"], input, target, reduction=_check_reduction(reduction))


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None,
                   reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    _legacy(size_average, reduce)
    _broadcast_target(input, target)
    return apply(NN_OPS["smooth_l1_loss"], input, target, reduction=_check_reduction(reduction),
                 beta=float(beta), huber=False)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    _broadcast_target(input, target)
    return apply(NN_OPS["smooth_l1_loss"], input, target, reduction=_check_reduction(reduction),
                 beta=float(delta), huber=True)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence with ``input`` as log-probabilities; use ``reduction="batchmean"``
    for the mathematical definition (PyTorch's "mean" averages over every element)."""
    _legacy(size_average, reduce)
    if reduction != "batchmean":
        _check_reduction(reduction)
    return apply(NN_OPS["kl_div"], input, target, reduction=reduction,
                 log_target=bool(log_target))


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "binary_cross_entropy")
    return apply(NN_OPS["binary_cross_entropy"], *_inputs(input, target, weight),
                 reduction=_check_reduction(reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    _legacy(size_average, reduce)
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    return apply(NN_OPS["binary_cross_entropy_with_logits"],
                 *_inputs(input, target, weight, pos_weight),
                 reduction=_check_reduction(reduction))


def _legacy(size_average: Any, reduce: Any) -> None:
    if size_average is not None or reduce is not None:
        raise NotImplementedError(
            "size_average and reduce are deprecated in PyTorch and not supported by dyngraph: "
            "use reduction='none'|'mean'|'sum'"
        )


__getattr__ = module_getattr(__name__)  # names a missing torch.* piece
