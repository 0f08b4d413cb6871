"""Convolution and pooling ops (im2col), registered into ``ops_nn``'s ``NN_OPS`` as the
other network ops: numpy forward and backward side by side, knowing no Tensor."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .ops_nn import _define


# -- windows --------------------------------------------------------------------------------
def _windows(xp: np.ndarray, kh: int, kw: int, stride: tuple[int, int],
             dilation: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """A read-only (N, C, kh, kw, Ho, Wo) view of every window of a padded input."""
    n, c = xp.shape[:2]
    sn, sc, sh, sw = xp.strides
    return as_strided(
        xp,
        shape=(n, c, kh, kw, out_hw[0], out_hw[1]),
        strides=(sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]),
        writeable=False,
    )


def _scatter_windows(gcols: np.ndarray, padded_shape: tuple[int, ...], stride, dilation,
                     dtype) -> np.ndarray:
    """col2im: add each window position's gradient back into the padded input."""
    gxp = np.zeros(padded_shape, dtype=dtype)
    kh, kw, ho, wo = gcols.shape[2:]
    for i in range(kh):
        r = i * dilation[0]
        for j in range(kw):
            s = j * dilation[1]
            gxp[:, :, r:r + stride[0] * ho:stride[0], s:s + stride[1] * wo:stride[1]] += (
                gcols[:, :, i, j]
            )
    return gxp


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil: bool = False) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    if ceil:
        out = -(-span // s) + 1
        if (out - 1) * s >= size + p:  # the last window must start inside the input
            out -= 1
        return out
    return span // s + 1


@_define("conv2d", "ConvolutionBackward0", needs_input_grad=True)
def conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           needs_input_grad=(True, True, True)):
    if x.ndim != 4:
        raise RuntimeError(f"conv2d: expected a 4-D input (N, C, H, W), got shape {x.shape}")
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if c != cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)}"
            f" to have {cg * groups} channels, but got {c} channels instead"
        )
    ph, pw = padding
    ho = _out_size(h, kh, stride[0], ph, dilation[0])
    wo = _out_size(wd, kw, stride[1], pw, dilation[1])
    if ho <= 0 or wo <= 0:
        raise RuntimeError(f"conv2d: kernel {kh}x{kw} is larger than the padded input "
                           f"{h + 2 * ph}x{wd + 2 * pw}")
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if ph or pw else x
    cols = _windows(xp, kh, kw, stride, dilation, (ho, wo))
    og = o // groups
    outs = []
    for gi in range(groups):
        cols_g = cols[:, gi * cg:(gi + 1) * cg]
        # (N, C, kh, kw, Ho, Wo) x (O, C, kh, kw) -> (N, Ho, Wo, O)
        outs.append(np.tensordot(cols_g, w[gi * og:(gi + 1) * og], axes=((1, 2, 3), (1, 2, 3))))
    out = np.concatenate(outs, axis=-1) if groups > 1 else outs[0]
    out = np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    if b is not None:
        out += b.reshape(1, -1, 1, 1)

    need_x, need_w = needs_input_grad[0], needs_input_grad[1]

    def backward(g):
        gw = np.empty_like(w) if need_w else None
        gcols = np.empty((n, c, kh, kw, ho, wo), dtype=x.dtype) if need_x else None
        for gi in range(groups):
            gg = g[:, gi * og:(gi + 1) * og]
            if gw is not None:
                cols_g = cols[:, gi * cg:(gi + 1) * cg]
                gw[gi * og:(gi + 1) * og] = np.tensordot(gg, cols_g,
                                                         axes=((0, 2, 3), (0, 4, 5)))
            if gcols is not None:
                # (O, C, kh, kw) x (N, O, Ho, Wo) -> (C, kh, kw, N, Ho, Wo)
                part = np.tensordot(w[gi * og:(gi + 1) * og], gg, axes=((0,), (1,)))
                gcols[:, gi * cg:(gi + 1) * cg] = part.transpose(3, 0, 1, 2, 4, 5)
        gx = None
        if gcols is not None:  # col2im, skipped for a first layer's input
            gxp = _scatter_windows(gcols, xp.shape, stride, dilation, x.dtype)
            gx = gxp[:, :, ph:ph + h, pw:pw + wd]
        gb = g.sum(axis=(0, 2, 3)) if b is not None else None
        return gx, gw, gb

    return out, backward


@_define("conv1d", "ConvolutionBackward0", needs_input_grad=True)
def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1,
           needs_input_grad=(True, True, True)):
    # A 1-D convolution is a 2-D one over a height-1 image.
    out, backward2d = conv2d(x[:, :, None], w[:, :, None], b, stride=(1, stride),
                             padding=(0, padding), dilation=(1, dilation), groups=groups,
                             needs_input_grad=needs_input_grad)

    def backward(g):
        gx, gw, gb = backward2d(g[:, :, None])
        return (None if gx is None else gx[:, :, 0], None if gw is None else gw[:, :, 0], gb)

    return out[:, :, 0], backward


@_define("max_pool2d", "MaxPool2DWithIndicesBackward0")
def max_pool2d(x, kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1),
               ceil_mode=False):
    squeeze = x.ndim == 3
    xb = x[None] if squeeze else x
    n, c, h, wd = xb.shape
    kh, kw = kernel_size
    ph, pw = padding
    if ph > kh // 2 or pw > kw // 2:
        raise RuntimeError("pad should be at most half of effective kernel size, but got "
                           f"pad={max(ph, pw)}, kernel_size={max(kh, kw)}")
    ho = _out_size(h, kh, stride[0], ph, dilation[0], ceil_mode)
    wo = _out_size(wd, kw, stride[1], pw, dilation[1], ceil_mode)
    # Pad far enough on the bottom/right for ceil_mode's partial windows too.
    need_h = (ho - 1) * stride[0] + dilation[0] * (kh - 1) + 1
    need_w = (wo - 1) * stride[1] + dilation[1] * (kw - 1) + 1
    pad_h = (ph, max(need_h - h - ph, 0))
    pad_w = (pw, max(need_w - wd - pw, 0))
    xp = np.pad(xb, ((0, 0), (0, 0), pad_h, pad_w), constant_values=-np.inf)
    cols = _windows(xp, kh, kw, stride, dilation, (ho, wo))
    flat = cols.transpose(0, 1, 4, 5, 2, 3).reshape(n, c, ho, wo, kh * kw)
    arg = flat.argmax(axis=-1)
    out = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]

    def backward(g):
        gb = g[None] if squeeze else g
        onehot = (arg[..., None] == np.arange(kh * kw)) * gb[..., None]
        gcols = onehot.reshape(n, c, ho, wo, kh, kw).transpose(0, 1, 4, 5, 2, 3)
        gxp = _scatter_windows(gcols, xp.shape, stride, dilation, x.dtype)
        gx = gxp[:, :, ph:ph + h, pw:pw + wd]
        return (gx[0] if squeeze else gx,)

    return (out[0] if squeeze else out), backward


@_define("avg_pool2d", "AvgPool2DBackward0")
def avg_pool2d(x, kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), count_include_pad=True):
    squeeze = x.ndim == 3
    xb = x[None] if squeeze else x
    kh, kw = kernel_size
    ph, pw = padding
    h, wd = xb.shape[2:]
    ho = _out_size(h, kh, stride[0], ph, 1)
    wo = _out_size(wd, kw, stride[1], pw, 1)
    xp = np.pad(xb, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if ph or pw else xb
    out = _windows(xp, kh, kw, stride, (1, 1), (ho, wo)).sum(axis=(2, 3))
    if count_include_pad or not (ph or pw):
        divisor: Any = kh * kw
    else:  # count only the real elements under each window
        ones = np.pad(np.ones((1, 1, h, wd), x.dtype), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        divisor = _windows(ones, kh, kw, stride, (1, 1), (ho, wo)).sum(axis=(2, 3))
    out = out / np.asarray(divisor, dtype=x.dtype)

    def backward(g):
        gb = (g[None] if squeeze else g) / np.asarray(divisor, dtype=x.dtype)
        gcols = np.broadcast_to(gb[:, :, None, None], (*gb.shape[:2], kh, kw, ho, wo))
        gxp = _scatter_windows(gcols, xp.shape, stride, (1, 1), x.dtype)
        gx = gxp[:, :, ph:ph + h, pw:pw + wd]
        return (gx[0] if squeeze else gx,)

    return (out[0] if squeeze else out), backward


def _adaptive_bins(size: int, out: int) -> list[tuple[int, int]]:
    # PyTorch's bins: [floor(i * size / out), ceil((i + 1) * size / out)).
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


@_define("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0")
def adaptive_avg_pool2d(x, output_size=(1, 1)):
    oh, ow = output_size
    rows = _adaptive_bins(x.shape[-2], oh)
    cols = _adaptive_bins(x.shape[-1], ow)
    out = np.empty((*x.shape[:-2], oh, ow), dtype=x.dtype)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))

    def backward(g):
        gx = np.zeros_like(x)
        for i, (r0, r1) in enumerate(rows):
            for j, (c0, c1) in enumerate(cols):
                area = (r1 - r0) * (c1 - c0)
                gx[..., r0:r1, c0:c1] += (g[..., i, j] / area)[..., None, None]
        return (gx,)

    return out, backward
