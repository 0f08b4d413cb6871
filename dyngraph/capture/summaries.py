"""Tensor summaries with a bounded cost.

A summary must never stall a run, so each mode looks at a bounded number of elements:

- ``"cheap"``: L2 norm and NaN/Inf counts (what the NaN and gradient-norm breakpoints and
  the graph colouring need), on op outputs and gradients (the tracer leaves tensors that
  enter an iteration, such as parameters, unsummarised in this mode). Exact for tensors
  of up to ``EXACT_LIMIT`` (16,384) elements; above that, computed on an evenly strided
  sample of at most ``CHEAP_SAMPLE`` (4,096) elements (``sampled=True``; the norm is scaled
  up to estimate the whole tensor's). min, max, mean, std and the preview stay None/empty.
  Cost: one BLAS dot product, about 1-3 µs per tensor on one core whatever its size. A
  one-element tensor (a loss, a metric) gets the full summary instead: its value is worth
  keeping (``dyngraph summary`` shows the loss of each iteration) and costs nothing more.
- ``"full"``: min, max, mean, std, norm, NaN/Inf counts and a preview of the first
  ``PREVIEW`` values. Exact up to ``EXACT_LIMIT`` elements; above that, on a strided sample of
  at most ``FULL_SAMPLE`` (16,384) elements, copied once. Cost: about 5-15 µs per tensor.
- ``"none"``: no summary (None).

NaN/Inf are found through the dot products (a non-finite value makes the sum of squares
non-finite), so a finite tensor pays nothing extra; only then are they counted one by one.
On a sampled tensor the counts are counts in the sample: 0 means none seen there. A NaN
rarely stays alone: the next reduction or matmul spreads it to every element it touches.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .events import Summary
from .rows import SummaryRow, summary_of

# Summary rows are built as tuple displays, in ``rows``'s field order (a helper function
# would cost a call per summary).

STATS_MODES = ("none", "cheap", "full")
EXACT_LIMIT = 16_384
CHEAP_SAMPLE = 4_096
FULL_SAMPLE = 16_384
PREVIEW = 8
NORM_LIMIT = 1 << 20
SMALL = 16  # up to this many elements, a full summary is computed in plain Python
TINY = 16  # ... and a cheap one

_ONES: dict[np.dtype, np.ndarray] = {}
_isfinite = math.isfinite
_sqrt = math.sqrt
_hypot = math.hypot
_dot = np.dot
_vdot = np.vdot
_einsum = np.einsum
_SQUARES = {n: f"{'abcdefghijklmnopqrstuvwxyz'[:n]},{'abcdefghijklmnopqrstuvwxyz'[:n]}->"
            for n in range(1, 27)}  # einsum's sum of squares of an n-d array
_min = np.minimum.reduce
_max = np.maximum.reduce
_ndarray = np.ndarray
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_shape_cache: dict[tuple[int, ...], tuple[int, ...]] = {}


def _keep_nothing(value: object) -> None:
    return None


keep: Callable[[object], None] = _keep_nothing
"""Given each preview tuple made; the tracer sets it to ``pacing.keep`` while it records
(a summary row holding its preview is then untracked by the collector in one pass)."""
_dtype_names: dict[np.dtype, str] = {}


def _ones(dtype: np.dtype, n: int) -> np.ndarray:
    ones = _ONES.get(dtype)
    if ones is None or ones.size < n:
        ones = _ONES[dtype] = np.ones(max(n, EXACT_LIMIT), dtype)
    return ones[:n]


def _step(size: int, limit: int) -> int:
    """A stride that keeps at most ``limit`` of ``size`` elements.

    Coprime with 2, 3, 5 and 7, so the sample does not alias with rows whose lengths are
    made of those factors (a stride of 256 over a (N, 256) tensor would read one column).
    """
    step = -(-size // limit)
    while step > 1 and (step % 2 == 0 or step % 3 == 0 or step % 5 == 0 or step % 7 == 0):
        step += 1
    return step


BLOCK = 64  # a sample of a large contiguous array: runs of this many consecutive elements


def _block_sample(flat: np.ndarray, limit: int) -> np.ndarray:
    """A contiguous copy of ``limit`` elements of the contiguous 1-D ``flat`` (more than
    ``limit`` long): ``limit // BLOCK`` runs of ``BLOCK`` consecutive elements, evenly
    spaced.

    Runs, not single elements: an element-strided sample reads one cache line per element
    it keeps (a 784x256 gradient's 4,096-element sample took 11 µs just after the matmul
    that wrote it), runs read a sixteenth of that. The spacing is made coprime with 2, 3,
    5 and 7 (see ``_step``), so the runs do not all start in the same columns of rows of
    common lengths.
    """
    runs = limit // BLOCK
    size = flat.size
    stride = _strides.get((size, runs))
    if stride is None:
        stride = size // runs
        while stride > BLOCK and (stride % 2 == 0 or stride % 3 == 0 or stride % 5 == 0
                                  or stride % 7 == 0):
            stride -= 1
        if len(_strides) > 4096:
            _strides.clear()
        _strides[size, runs] = stride
    return flat[:runs * stride].reshape(runs, stride)[:, :BLOCK].copy().reshape(-1)


_strides: dict[tuple[int, int], int] = {}  # (size, runs) -> the spacing of the runs


def _dense_owner(a: np.ndarray) -> np.ndarray | None:
    """The contiguous array whose elements are exactly those of the view ``a``, if any.

    A permuted view (``transpose``, ``permute``, ``.T``: the outputs of attention's head
    shuffles) holds every element of its owner once, in another order. Every statistic a
    summary keeps but the preview is order-free, so it can be computed on the owner
    without gathering a copy. Proof that ``a`` covers its owner: same element count, all
    strides positive, and sorted by size they are those of a dense block (each the
    previous one times its extent), so the view spans exactly the owner's bytes.
    """
    base = a.base
    if type(base) is not _ndarray or base.size != a.size or not base.flags.c_contiguous:
        return None
    if base.dtype != a.dtype:
        return None
    expect = a.itemsize
    for stride, extent in sorted(zip(a.strides, a.shape, strict=True)):
        if extent == 1:
            continue
        if stride != expect:
            return None
        expect *= extent
    return base


def _flat(a: np.ndarray, limit: int) -> tuple[np.ndarray, bool]:
    """A 1-D float32/float64 view or copy of ``a`` with at most ``limit`` elements."""
    size = a.size
    if a.dtype.kind != "f" or a.dtype.itemsize < 4:
        # ints, bools, float16: BLAS has no kernels (float16 would overflow at 65504).
        if size > limit:
            a = np.ravel(a)[:: _step(size, limit)]
        return np.asarray(a, np.float64).reshape(-1), size > limit
    if not a.flags.c_contiguous:
        dense = _dense_owner(a)
        if dense is not None:
            a = dense
    if size <= limit:
        if a.flags.c_contiguous:
            return a.reshape(-1), False
        return np.ravel(a), False
    if a.flags.c_contiguous:
        return _block_sample(a.reshape(-1), limit), True
    # A large non-contiguous view: sample along the first axis before flattening, so the
    # copy stays bounded.
    rows = a.shape[0]
    per_row = size // rows
    take = max(1, limit // max(per_row, 1))
    sub = a[:: -(-rows // take)]
    flat = np.ravel(sub)
    if flat.size > limit:
        flat = flat[:: _step(flat.size, limit)]
    return flat, True


def _names(a: np.ndarray) -> tuple[tuple[int, ...], str]:
    shape = a.shape
    shape = _shape_cache.setdefault(shape, shape)
    dt = a.dtype
    name = _dtype_names.get(dt)
    if name is None:
        name = _dtype_names[dt] = str(dt)
    return shape, name


def _count_nonfinite(s: np.ndarray) -> tuple[int, int, np.ndarray]:
    nan_mask = np.isnan(s)
    nan = int(np.count_nonzero(nan_mask))
    finite = np.isfinite(s)
    inf = int(s.size - nan - np.count_nonzero(finite))
    return nan, inf, s[finite].astype(np.float64)


def l2_norm(a: np.ndarray) -> float:
    """The exact L2 norm of ``a``, cheaply: one BLAS dot product, no temporary array.

    Falls back to float64 on overflow. About 10 µs for 200,000 float32 elements, where
    ``np.sqrt(np.sum(a * a, dtype=np.float64))`` takes about 400 µs. Above ``NORM_LIMIT``
    (1,048,576) elements it is estimated from a strided sample, so the cost stays bounded.

    >>> l2_norm(np.array([3.0, 4.0], np.float32))
    5.0
    """
    a = np.asarray(a)
    scale = 1.0
    if a.size > NORM_LIMIT:  # bounded cost: estimate from a strided sample
        sample, _ = _flat(a, NORM_LIMIT)
        scale = a.size / sample.size
        a = sample
    if a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        sq = float(_vdot(a, a))  # (a contiguous array is read in place)
        if _isfinite(sq):
            return _sqrt(sq * scale)
    return float(np.sqrt(np.sum(np.square(a, dtype=np.float64)) * scale))


def update_norm(a: np.ndarray) -> float:
    """The L2 norm of an optimizer's update, at the cost of a cheap summary's.

    Exact for up to ``EXACT_LIMIT`` (16,384) elements; above that estimated from a sample
    of at most ``CHEAP_SAMPLE`` (4,096; ``_flat``), scaled up to the whole array (a
    few microseconds whatever the size, where the exact norm of a 784x256 weight's update
    costs about 20). Every optimizer step records one per parameter, and nothing stops on
    them: the NaN and gradient-norm breakpoints look at gradients.

    >>> update_norm(np.array([3.0, 4.0], np.float32))
    5.0
    """
    size = a.size
    if size <= EXACT_LIMIT:
        return l2_norm(a)
    s, _ = _flat(a, CHEAP_SAMPLE)
    sq = float(_dot(s, s))
    if not _isfinite(sq):
        return l2_norm(s) * _sqrt(size / s.size)
    return _sqrt(sq * (size / s.size))



def cheap_row(a: np.ndarray) -> SummaryRow:
    """``summarize(a, "cheap")`` for an ndarray, as a summary row, with a fast path for the
    common case.

    The tracer calls this for every op output and gradient, so the float32/float64 case
    costs one C call for the norm and as few attribute reads as can be: up to ``TINY``
    elements ``math.hypot`` of the values, up to ``EXACT_LIMIT`` one BLAS dot product
    (``np.vdot``: no reshape of a contiguous array, and the cheapest numpy entry point).
    """
    dt = a.dtype
    if dt is _F32 or dt is _F64:
        size = a.size
        if size <= TINY:
            if size > 1:
                # hypot: the norm in one C call (no Python loop), and non-finite exactly
                # when a value is NaN or ±Inf (it scales, so finite values never overflow).
                norm = _hypot(*(a.tolist() if a.ndim == 1 else a.ravel().tolist()))
                if _isfinite(norm):
                    shape = a.shape
                    return (_shape_cache.get(shape) or _shape_cache.setdefault(shape, shape),
                            "float32" if dt is _F32 else "float64", norm, 0, 0, False)
            elif size == 1:
                return _one(a, "float32" if dt is _F32 else "float64")
        elif size <= EXACT_LIMIT:
            if a.flags.c_contiguous:
                sq = float(_vdot(a, a))
            else:
                owner = _dense_owner(a)
                if owner is not None:
                    sq = float(_vdot(owner, owner))
                else:
                    # A strided view that is not a permutation (attention's q, k, v
                    # slices): einsum reads it in place, where a dot would first gather a
                    # copy (about twice the time on 16,384 elements).
                    sq = float(_einsum(_SQUARES[a.ndim], a, a))
            if _isfinite(sq):
                shape = a.shape
                return (_shape_cache.get(shape) or _shape_cache.setdefault(shape, shape),
                        "float32" if dt is _F32 else "float64", _sqrt(sq), 0, 0, False)
        elif a.flags.c_contiguous:  # what ``_cheap`` samples (``_flat``), directly
            s = _block_sample(a.reshape(-1), CHEAP_SAMPLE)
            sq = float(_vdot(s, s))
            if _isfinite(sq):
                shape = a.shape
                return (_shape_cache.get(shape) or _shape_cache.setdefault(shape, shape),
                        "float32" if dt is _F32 else "float64", _sqrt(sq * (size / s.size)),
                        0, 0, True)
    return summarize_row(a, "cheap")  # type: ignore[return-value]


def _one(a: np.ndarray, dtype: str) -> SummaryRow:
    """The full summary of a one-element float array (a loss, a metric: one per step in
    every mode), straight from its value; what ``_small_full`` gives, without its loops."""
    v = a.item() if a.ndim == 0 else a.reshape(-1)[0].item()
    if v - v != 0.0:  # NaN or ±Inf: counted by the general path
        return _small_full(a, *_names(a))
    shape = a.shape
    preview = (v,)
    keep(preview)  # (a tuple in a tuple: see pacing.keep)
    return (_shape_cache.setdefault(shape, shape), dtype, v, v, v, 0.0, _sqrt(v * v),
                      0, 0, preview, False)


def full_row(a: np.ndarray) -> SummaryRow:
    """``summarize(a, "full")`` for an ndarray, as a summary row, with a fast path for the
    common case.

    A finite float32/float64 array that is contiguous (or, up to ``EXACT_LIMIT`` elements,
    a permutation of a contiguous one) costs two dot products and two reductions, called
    directly, on the array or on its strided sample: numpy's fixed cost per call is most of
    a summary's below ~10,000 elements, so every wrapper skipped counts (``a.min()`` costs
    twice ``np.minimum.reduce(a)`` on 640 elements).
    """
    size = a.size
    dt = a.dtype
    if size == 1 and (dt is _F32 or dt is _F64):
        return _one(a, "float32" if dt is _F32 else "float64")
    if (dt is _F32 or dt is _F64) and size > SMALL:
        if a.flags.c_contiguous:
            flat = a.reshape(-1)
            preview = flat[:PREVIEW].tolist()
            if size > FULL_SAMPLE:  # what ``_flat`` samples
                flat = _block_sample(flat, FULL_SAMPLE)
        elif size <= EXACT_LIMIT and (owner := _dense_owner(a)) is not None:
            flat = owner.reshape(-1)  # the same elements in another order
            preview = a.flat[:PREVIEW].tolist()
        else:
            return summarize_row(a, "full")  # type: ignore[return-value]
        n = flat.size
        sq = float(_dot(flat, flat))
        total = float(_dot(flat, _ones(dt, n)))
        if _isfinite(sq) and _isfinite(total):
            mean = total / n
            var = sq / n - mean * mean
            if var < 1e-4 * mean * mean:  # cancellation: see ``_full``
                d = flat.astype(np.float64) - mean
                var = float(_dot(d, d)) / n
            shape = a.shape
            preview = tuple(preview)
            keep(preview)  # (a tuple in a tuple: see pacing.keep)
            return (_shape_cache.setdefault(shape, shape),
                              "float32" if dt is _F32 else "float64",
                              float(_min(flat)), float(_max(flat)), mean,
                              _sqrt(max(var, 0.0) * n / (n - 1)), _sqrt(sq * (size / n)),
                              0, 0, preview, n < size)
    return summarize_row(a, "full")  # type: ignore[return-value]


def none(a: np.ndarray) -> None:
    return None


def cheap(a: np.ndarray) -> Summary:
    """``summarize(a, "cheap")``, by its fast path (what the tracer records)."""
    return summary_of(cheap_row(a))  # type: ignore[return-value]


def full(a: np.ndarray) -> Summary:
    """``summarize(a, "full")``, by its fast path (what the tracer records)."""
    return summary_of(full_row(a))  # type: ignore[return-value]


SUMMARIZERS = {"none": none, "cheap": cheap, "full": full}
# What the tracer calls: the same, as summary rows (``dyngraph.capture.rows``).
ROW_SUMMARIZERS = {"none": none, "cheap": cheap_row, "full": full_row}


def summarize(array: np.ndarray, mode: str = "full") -> Summary | None:
    """Summarise ``array``; returns None when ``mode`` is ``"none"``.

    >>> summarize(np.array([1.0, 2.0, np.nan])).nan
    1
    """
    return summary_of(summarize_row(array, mode))


def summarize_row(array: np.ndarray, mode: str = "full") -> SummaryRow | None:
    """``summarize`` as a summary row (``dyngraph.capture.rows``)."""
    if mode == "none":
        return None
    a = array if type(array) is _ndarray else np.asarray(array)
    shape, dtype = _names(a)
    size = a.size
    if size == 0:
        return (shape, dtype, None, 0, 0, False)
    if mode == "cheap" and size > 1:  # one value: its full summary holds the value itself
        return _cheap(a, shape, dtype, size)
    if size <= SMALL and a.dtype.kind in "biuf":
        return _small_full(a, shape, dtype)
    return _full(a, shape, dtype, size)


def _small_full(a: np.ndarray, shape: tuple[int, ...], dtype: str) -> SummaryRow:
    """The full summary of a tiny array in plain Python floats (exact, float64): numpy's
    fixed cost per call, times the six reductions ``_full`` makes, is ten times the work.

    A loss, a metric, a bias of a small layer: one-element tensors get the full summary in
    every mode, so this is on the path of every recorded step.
    """
    values = a.tolist() if a.ndim <= 1 else a.reshape(-1).tolist()
    if type(values) is not list:
        values = [values]
    preview = tuple([float(v) for v in values[:PREVIEW]])
    keep(preview)  # (a tuple in a tuple: see pacing.keep)
    nan = inf = 0
    n = 0
    total = sq = 0.0
    lo = hi = None
    for v in values:
        v = float(v)
        if v - v != 0.0:  # NaN or ±Inf (v - v is NaN for both)
            if v != v:
                nan += 1
            else:
                inf += 1
            continue
        n += 1
        total += v
        sq += v * v
        if lo is None:
            lo = hi = v
        elif v < lo:
            lo = v
        elif v > hi:  # type: ignore[operator]
            hi = v
    if not n:
        return (shape, dtype, None, None, None, None, None, nan, inf, preview, False)
    mean = total / n
    if n > 1:
        dev = 0.0
        for v in values:
            v = float(v)
            if v - v == 0.0:
                dev += (v - mean) * (v - mean)
        std = _sqrt(dev / (n - 1))
    else:
        std = 0.0
    return (shape, dtype, lo, hi, mean, std, _sqrt(sq), nan, inf, preview, False)


def _cheap(a: np.ndarray, shape: tuple[int, ...], dtype: str, size: int) -> SummaryRow:
    s, sampled = _flat(a, EXACT_LIMIT if size <= EXACT_LIMIT else CHEAP_SAMPLE)
    sample_size = s.size
    sq = float(_dot(s, s))
    nan = inf = 0
    if not _isfinite(sq):
        nan, inf, s = _count_nonfinite(s)
        if not s.size:
            return (shape, dtype, None, nan, inf, sampled)
        sq = float(_dot(s, s))
    # NaN/Inf count as zero towards the norm, so scale by the whole sample's size.
    norm = _sqrt(sq * (size / sample_size)) if sampled else _sqrt(sq)
    return (shape, dtype, norm, nan, inf, sampled)


def _full(a: np.ndarray, shape: tuple[int, ...], dtype: str, size: int) -> SummaryRow:
    s, sampled = _flat(a, FULL_SAMPLE)
    if sampled:
        s = np.ascontiguousarray(s)  # one strided copy; every pass below is then contiguous
    if a.flags.c_contiguous:
        preview = a.reshape(-1)[:PREVIEW].tolist()
    else:
        preview = a.flat[:PREVIEW].tolist()
    preview = tuple(float(v) for v in preview) if a.dtype.kind != "f" else tuple(preview)
    keep(preview)  # (a tuple in a tuple: see pacing.keep)
    n = sample_size = s.size
    sq = float(_dot(s, s))
    total = float(_dot(s, _ones(s.dtype, n)))
    nan = inf = 0
    if not (_isfinite(sq) and _isfinite(total)):
        nan, inf, s = _count_nonfinite(s)
        if not s.size:
            return (shape, dtype, None, None, None, None, None, nan, inf, preview,
                              sampled)
        sq = float(_dot(s, s))
        total = float(s.sum())
        n = s.size
    mean = total / n
    var = sq / n - mean * mean
    if var < 1e-4 * mean * mean:
        # The one-pass formula cancels when |mean| >> std: redo it in two passes.
        d = s.astype(np.float64) - mean
        var = float(_dot(d, d)) / n
    std = _sqrt(max(var, 0.0) * n / (n - 1)) if n > 1 else 0.0
    # NaN/Inf count as zero towards the norm, so scale by the whole sample's size.
    norm = _sqrt(sq * (size / sample_size)) if sampled else _sqrt(sq)
    return (shape, dtype, float(_min(s)), float(_max(s)), mean, std, norm, nan,
                      inf, preview, sampled)


def scalar_of(shape: tuple[int, ...], s: Summary | None) -> float | None:
    """The value of a one-element tensor of ``shape`` from its summary (NaN/Inf as such;
    the sign of an Inf is in min/max when recorded); None for any other tensor: what
    ``summary`` and the ranks' grid show as an iteration's loss."""
    if s is None or math.prod(shape) != 1:
        return None
    if s.nan:
        return math.nan
    if s.inf:
        return -math.inf if s.min is not None and s.min < 0 else math.inf
    if s.mean is not None:
        return s.mean
    return s.preview[0] if s.preview else None
