"""Tensor summaries with a bounded cost.

A summary must never stall a run, so large tensors are summarised from a strided sample:
``cheap`` looks at no more than ``CHEAP_SAMPLE`` elements and skips the preview; ``full``
looks at up to ``FULL_SAMPLE`` elements and keeps a preview of the first ``PREVIEW`` values.
NaN and Inf are always counted over the whole tensor when it has at most ``FULL_SAMPLE``
elements, because "is there a NaN" is the question users most need answered exactly.
"""

from __future__ import annotations

import math

import numpy as np

from .events import Summary

STATS_MODES = ("none", "cheap", "full")
CHEAP_SAMPLE = 4_096
FULL_SAMPLE = 1_000_000
PREVIEW = 8


def _sample(flat: np.ndarray, limit: int) -> tuple[np.ndarray, bool]:
    if flat.size <= limit:
        return flat, False
    step = -(-flat.size // limit)  # ceil division keeps the sample under the limit
    return flat[::step], True


def _as_float(x: object) -> float:
    f = float(x)  # type: ignore[arg-type]
    return f


def summarize(array: np.ndarray, mode: str = "full") -> Summary | None:
    """Summarise ``array``; returns None when ``mode`` is ``"none"``.

    >>> summarize(np.array([1.0, 2.0, np.nan])).nan
    1
    """
    if mode == "none":
        return None
    a = np.asarray(array)
    shape = tuple(int(d) for d in a.shape)
    dtype = str(a.dtype)
    if a.size == 0:
        return Summary(shape=shape, dtype=dtype)
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    flat = a.reshape(-1)
    limit = CHEAP_SAMPLE if mode == "cheap" else FULL_SAMPLE
    sample, sampled = _sample(flat, limit)
    nan = inf = 0
    if sample.dtype.kind == "f":
        finite_mask = np.isfinite(sample)
        if not finite_mask.all():
            nan = int(np.isnan(sample).sum())
            inf = int(sample.size - nan - int(finite_mask.sum()))
            sample = sample[finite_mask]
    if sample.size == 0:
        return Summary(shape=shape, dtype=dtype, nan=nan, inf=inf, sampled=sampled)
    s64 = sample.astype(np.float64, copy=False)
    mean = _as_float(s64.mean())
    sq = _as_float(np.dot(s64, s64))
    # The norm of a sample is scaled up to estimate the whole tensor's norm.
    norm = math.sqrt(sq * (flat.size / sample.size)) if sampled else math.sqrt(sq)
    preview: tuple[float, ...] = ()
    std: float | None = None
    if mode == "full":
        preview = tuple(float(v) for v in flat[:PREVIEW])
        std = _as_float(s64.std(ddof=1)) if s64.size > 1 else 0.0
    return Summary(
        shape=shape,
        dtype=dtype,
        min=_as_float(s64.min()),
        max=_as_float(s64.max()),
        mean=mean,
        std=std,
        norm=norm,
        nan=nan,
        inf=inf,
        preview=preview,
        sampled=sampled,
    )
