"""Summaries of PyTorch tensors, computed by torch itself: one batched read per call.

All numbers a summary needs for a list of tensors (an op's outputs, a backward node's
gradients) are computed as 0-d tensors on the tensors' device, stacked, and read with one
``tolist()``; nothing is copied to numpy and nothing is read element by element. Counts
are exact over the whole tensor (``sampled`` is always False):

- ``"cheap"``: the L2 norm and NaN/Inf counts. A finite norm settles "no NaN, no Inf";
  only a non-finite one (rare) pays a second pass that counts them exactly, and then the
  norm is that of the finite elements, as in ``dyngraph.capture.summaries``.
- ``"full"``: also min, max, mean, std (unbiased) and the first ``PREVIEW`` values. The
  std comes from the sum and the sum of squares (``var_mean`` is ten times slower on CPU),
  with a two-pass fallback where the one-pass formula cancels.
- ``"none"``: no summaries.

At ``cheap``, integer and bool tensors get no statistics (``no_stats``: none can hold NaN
or Inf); at ``full`` they are summarised in float64. Complex ones get a norm only; float8
ones are read in float32. This module reads at once (the debugger's per-op value
breakpoints); ``deferred`` computes the same numbers on the device and reads them once per
iteration. Tensors whose values cannot be read (sparse, nested, meta, fake, quantized,
inside ``vmap`` ...: see ``layouts``) get None, and one note says why; so does any tensor
that makes a statistic raise. While the script has a ``TorchDispatchMode`` on (a
``FlopCounterMode``, ``FakeTensorMode``), statistics are computed with it set aside: the
mode sees the script's calls, not dyngraph's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ..capture.events import Summary
from ..capture.summaries import PREVIEW
from . import layouts

_vector_norm = torch.linalg.vector_norm
_stack = torch.stack
_cheap_summary = Summary.cheap
_isfinite = math.isfinite
_F64 = torch.float64
_LOW_PRECISION = layouts.THROUGH_FLOAT32  # (read through float32: exact)
_strided = torch.strided
_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_dispatch_modes = torch._C._len_torch_dispatch_stack
_dtype_names: dict[torch.dtype, str] = {}
_NO_STATS: dict[tuple[tuple[int, ...], str], Summary] = {}
_NO_STATS_ROWS: dict[tuple[tuple[int, ...], torch.dtype], tuple[Any, ...]] = {}
_shapes: dict[Any, tuple[int, ...]] = {}
_EXACT_COUNT = 1 << 24  # (float32's integers are exact up to here; bfloat16 is read as float32)


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` for ``torch.float32``: the names the numpy engine's events use."""
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).removeprefix("torch.")
    return name


def dtype_of(t: torch.Tensor) -> str:
    """``dtype_name`` of the tensor's dtype, with its layout beside it when that is not an
    ordinary strided one: ``float32 sparse_coo``, ``float32 nested``, ``float32 meta``."""
    name = _dtype_names.get(t.dtype) or dtype_name(t.dtype)
    if t.layout is _strided and not t.is_nested and not t.is_meta:
        return name  # (the usual tensor: ``dtype_suffix`` would say "")
    return name + layouts.dtype_suffix(t)


def shape_of(t: torch.Tensor) -> tuple[int, ...]:
    """The shape as a plain tuple, one shared tuple per distinct shape (a nested tensor's
    padded shape: see ``layouts``)."""
    try:
        size = t.shape
        return _shapes[size]
    except KeyError:
        if len(_shapes) > 10_000:
            _shapes.clear()
        shape = tuple(size)
        if all(type(d) is int for d in shape):
            _shapes[size] = shape
            return shape
    except (TypeError, RuntimeError):  # SymInt sizes (jagged), none at all (strided nested)
        pass
    return layouts.shape_of_unusual(t)


def no_stats(t: torch.Tensor) -> Summary:
    """The cheap summary of an integer or bool tensor: shape and dtype, no NaN and no Inf
    (none can be there), and no norm (it would cost a conversion and a reduction per op of
    index arithmetic, and says nothing). One shared object per shape and dtype."""
    shape, dtype = shape_of(t), dtype_name(t.dtype)
    key = (shape, dtype)
    s = _NO_STATS.get(key)
    if s is None:
        if len(_NO_STATS) > 10_000:
            _NO_STATS.clear()
        s = _NO_STATS[key] = Summary(shape, dtype)
    return s


def no_stats_row(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[Any, ...]:
    """``no_stats`` of a tensor of ``shape`` and ``dtype``, as a summary row
    (``dyngraph.capture.rows``): one shared tuple per shape and dtype."""
    key = (shape, dtype)
    row = _NO_STATS_ROWS.get(key)
    if row is None:
        if len(_NO_STATS_ROWS) > 10_000:
            _NO_STATS_ROWS.clear()
        row = _NO_STATS_ROWS[key] = (shape, dtype_name(dtype), None, 0, 0, False)
    return row


def _numeric(t: torch.Tensor) -> bool:
    """Floating point or complex: a tensor that can hold NaN or Inf."""
    dtype = t.dtype
    return dtype.is_floating_point or dtype.is_complex


def _as_float(t: torch.Tensor) -> torch.Tensor:
    """A detached float view (or copy) the reductions below accept."""
    t = t.detach()
    if t.is_floating_point():
        return t.float() if t.dtype in _LOW_PRECISION else t
    if t.is_complex():
        return t
    return t.to(_F64)


def _readable(t: torch.Tensor) -> bool:
    cls = type(t)
    if ((cls is _Tensor or cls is _Parameter) and t.layout is _strided and not t.is_nested
            and not t.is_meta and not t.is_quantized) or not layouts.kind_of(t):
        return True
    layouts.unreadable(t)
    return False


def _aside(summarize: Callable[[Any], Any], arg: Any) -> Any:
    """``summarize(arg)`` with the script's dispatch modes set aside; None if it raised (a
    fake tensor, a tensor of a torch.func transform, a layout no statistic knows)."""
    try:
        if _dispatch_modes():
            with _disable_current_modes():
                return summarize(arg)
        return summarize(arg)
    except Exception:  # noqa: BLE001 - statistics must never fail the script
        for t in arg if isinstance(arg, (list, tuple)) else (arg,):
            if t is not None:
                layouts.unreadable(t)
        return None


def cheap(tensors: Sequence[torch.Tensor | None]) -> list[Summary | None]:
    """Norm and exact NaN/Inf counts of each tensor (None stays None; so does an unreadable
    one)."""
    if _dispatch_modes() or not all(t is None or _readable(t) for t in tensors):
        return _one_by_one(_cheap, tensors)
    found = _aside(_cheap, tensors)
    return found if found is not None else _one_by_one(_cheap, tensors)


def _one_by_one(summarize: Callable[[Any], list[Summary | None]],
                tensors: Sequence[torch.Tensor | None]) -> list[Summary | None]:
    out: list[Summary | None] = []
    for t in tensors:
        found = None if t is None or not _readable(t) else _aside(summarize, [t])
        out.append(None if found is None else found[0])
    return out


def _cheap(tensors: Sequence[torch.Tensor | None]) -> list[Summary | None]:
    present = [t for t in tensors if t is not None and t.numel() and _numeric(t)]
    if not present:
        return [None if t is None else _empty(t) if _numeric(t) else no_stats(t)
                for t in tensors]
    if len(present) == 1:
        norms = [_vector_norm(_as_float(present[0])).item()]
    else:
        # (``_foreach_norm``: the numbers ``deferred`` reads for a node's gradients)
        norms = _stack([n.to(_F64) for n in torch._foreach_norm([_as_float(t) for t in present])
                        ]).tolist()
    out: list[Summary | None] = []
    it = iter(norms)
    for t in tensors:
        if t is None:
            out.append(None)
        elif not _numeric(t):
            out.append(no_stats(t))
        elif not t.numel():
            out.append(_empty(t))
        else:
            norm = next(it)
            if _isfinite(norm):
                out.append(_cheap_summary(shape_of(t), dtype_name(t.dtype), norm, 0, 0, False))
            else:
                out.append(_nonfinite(t, full=False))
    return out


def full(tensors: Sequence[torch.Tensor | None]) -> list[Summary | None]:
    """Every statistic of each tensor, read in one ``tolist()`` (None for an unreadable
    one, as in ``cheap``)."""
    if _dispatch_modes() or not all(t is None or _readable(t) for t in tensors):
        return _one_by_one(_full, tensors)
    found = _aside(_full, tensors)
    return found if found is not None else _one_by_one(_full, tensors)


def _full(tensors: Sequence[torch.Tensor | None]) -> list[Summary | None]:
    parts: list[torch.Tensor] = []
    plan: list[tuple[torch.Tensor, int, int] | None] = []
    for t in tensors:
        if t is None or not t.numel():
            plan.append(None)
            continue
        found = full_parts(t)
        start = len(parts)
        if len(found) == 1:  # (complex: its norm)
            parts.append(found[0].to(_F64).reshape(1))
        else:
            parts.append(_stack(found[:4]).to(_F64))
            parts.append(found[4])
        plan.append((t, start, len(parts)))
    values = torch.cat(parts).tolist() if parts else []
    out: list[Summary | None] = []
    offsets = [0]
    for p in parts:
        offsets.append(offsets[-1] + p.numel())
    for t, entry in zip(tensors, plan, strict=True):
        if entry is None:
            out.append(None if t is None else _empty(t))
            continue
        t, start, end = entry
        numbers = values[offsets[start]:offsets[end]]
        out.append(_full_summary(t, numbers))
    return out


def full_parts(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The device numbers of the full summary of ``t`` (not empty): its min, max, sum and
    norm as 0-d tensors of its float dtype, and the preview as a float64 copy; a complex
    tensor's norm alone. The reductions run on ``t`` as it lies in memory (a transposed
    gradient is not copied first), and ``deferred`` reads the same tensors later."""
    f = _as_float(t)
    if f.is_complex():
        return (_vector_norm(f),)
    low, high = torch.aminmax(f)
    return low, high, f.sum(), _vector_norm(f), _head(f).to(_F64, copy=True)


def _head(f: torch.Tensor) -> torch.Tensor:
    """The first ``PREVIEW`` elements of ``f`` in order, as a view: of its first row (of
    its first row ...) where those hold them, so a transposed tensor is not copied whole."""
    if not f.is_contiguous():
        while f.dim() > 1 and f.numel() // f.shape[0] >= PREVIEW:
            f = f[0]
    return f.reshape(-1)[:PREVIEW]


def _full_summary(t: torch.Tensor, numbers: list[float]) -> Summary:
    shape, dtype = shape_of(t), dtype_name(t.dtype)
    if t.is_complex():
        norm = numbers[0]
        if not _isfinite(norm):
            return _nonfinite(t, full=False)
        return Summary(shape, dtype, norm=norm)
    low, high, total, norm = numbers[:4]
    if not (_isfinite(total) and _isfinite(norm) and _isfinite(low) and _isfinite(high)):
        return _nonfinite(t, full=True)
    n = t.numel()
    mean = total / n
    var = (norm * norm - n * mean * mean) / (n - 1) if n > 1 else 0.0
    if cancels(n, mean, var):
        var = squares_about(t, mean).item() / (n - 1)
    return with_variance(t, numbers, var)


def cancels(n: int, mean: float, var: float) -> bool:
    """|mean| >> std: the one-pass variance cancels; it must be redone in two passes."""
    return n > 1 and var < 1e-4 * mean * mean


def squares_about(t: torch.Tensor, mean: float) -> torch.Tensor:
    """The sum of squares of ``t``'s elements about ``mean`` (the two-pass variance's
    numerator), a float64 device scalar."""
    return ((_as_float(t).reshape(-1).to(_F64) - mean) ** 2).sum()


def with_variance(t: torch.Tensor, numbers: list[float], var: float) -> Summary:
    """The full summary of a finite real tensor from its numbers and its variance."""
    low, high, total, norm = numbers[:4]
    return Summary(shape_of(t), dtype_name(t.dtype), low, high, total / t.numel(),
                   math.sqrt(max(var, 0.0)), norm, 0, 0, tuple(numbers[4:]), False)


def _empty(t: torch.Tensor) -> Summary:
    return Summary(shape_of(t), dtype_name(t.dtype))


def _nonfinite(t: torch.Tensor, full: bool) -> Summary:
    """The rare path: exact NaN/Inf counts; statistics of the finite elements."""
    return nonfinite_summary(t, nonfinite_parts(t, full).tolist(), full)


def nonfinite_parts(t: torch.Tensor, full: bool) -> torch.Tensor:
    """What ``nonfinite_summary`` needs, as one float64 device vector (no host read, no
    boolean indexing, which would read a count on a GPU): NaN count, Inf count, finite
    count, the finite elements' norm, and at ``full`` their min, max, mean, std (unbiased,
    two passes) and the preview.

    Built from ``nan_to_num`` and sums, each one light pass over the tensor in its own
    float dtype: ``isfinite``/``isnan``/``isinf`` and sums of their boolean masks cost 5-15
    times as much on CPU (an attention mask of -inf, 0.5 M elements, took 33 ms at cheap
    and 75 ms at full that way; per step of a 6-layer GPT, six of them). Where ``f`` is
    finite, ``f - finite`` is exactly 0; elsewhere it is the Inf or the NaN itself, which
    ``nan_to_num`` turns into a 0/1 mark to count. The finite elements' norm, mean and std
    are taken in float64 (a norm that overflowed float32 comes here too, all finite).
    Nothing is written to ``t`` (a float64 ``f`` is ``t``'s memory)."""
    f = _as_float(t).reshape(-1)
    if f.is_complex():
        f = torch.view_as_real(f).reshape(-1)
    n = f.numel()
    # (marks summed in their float dtype are counted exactly up to 2^24: a float32 sum's
    # partial sums are integers no larger; float64 beyond, which costs a conversion)
    count_dtype = None if n <= _EXACT_COUNT else _F64
    finite = f.nan_to_num(0.0, 0.0, 0.0)  # (the finite elements, 0 elsewhere)
    odd = f - finite  # (0 where finite; the Inf or NaN elsewhere)
    nan = odd.nan_to_num(1.0, 0.0, 0.0).sum(dtype=count_dtype).to(_F64)
    inf = odd.nan_to_num_(0.0, 1.0, 1.0).sum(dtype=count_dtype).to(_F64)
    count = (n - nan) - inf
    parts = [nan, inf, count, _vector_norm(finite, dtype=_F64)]  # (1e30's square: no Inf)
    if full:
        mean = finite.sum(dtype=_F64) / count.clamp(min=1)
        # (a copy, also of a float64 tensor, which ``f`` may be itself; Inf - mean is Inf)
        spread = f.to(_F64, copy=True).sub_(mean).nan_to_num_(0.0, 0.0, 0.0)
        parts += [f.nan_to_num(math.inf, math.inf, math.inf).min().to(_F64),
                  f.nan_to_num(-math.inf, -math.inf, -math.inf).max().to(_F64),
                  mean, torch.dot(spread, spread) / (count - 1).clamp(min=1)]
    head = _stack(parts)
    return torch.cat([head, f[:PREVIEW].to(_F64)]) if full else head


def nonfinite_summary(t: torch.Tensor, numbers: list[float], full: bool) -> Summary:
    """The summary of a tensor holding NaN or Inf, from ``nonfinite_parts``'s numbers."""
    nan, inf, n, norm = int(numbers[0]), int(numbers[1]), int(numbers[2]), numbers[3]
    shape, dtype = shape_of(t), dtype_name(t.dtype)
    if not n:
        return Summary(shape, dtype, nan=nan, inf=inf, preview=tuple(numbers[8:]) if full else ())
    if not full:
        return _cheap_summary(shape, dtype, norm, nan, inf, False)
    low, high, mean, var = numbers[4:8]
    return Summary(shape, dtype, low, high, mean, math.sqrt(var) if n > 1 else 0.0, norm,
                   nan, inf, tuple(numbers[8:]), False)


def none(tensors: Sequence[torch.Tensor | None]) -> list[Summary | None]:
    return [None] * len(tensors)


SUMMARIZERS: dict[str, Callable[[Sequence[torch.Tensor | None]], list[Summary | None]]] = {
    "none": none, "cheap": cheap, "full": full,
}


def cheap_one(t: torch.Tensor) -> Summary | None:
    """``cheap([t])[0]``, without the lists (the forward hot path: one output per op)."""
    if t.layout is not _strided or _dispatch_modes():
        return cheap([t])[0]
    try:
        return _cheap_one(t)
    except Exception:  # noqa: BLE001 - (a nested, meta, fake, quantized or batched tensor)
        layouts.unreadable(t)
        return None


def _cheap_one(t: torch.Tensor) -> Summary | None:
    if not _numeric(t):
        return no_stats(t)
    n = t.numel()
    if not n:
        return _empty(t)
    if n == 1 and not t.is_complex():
        # A one-element tensor (a loss, a metric) gets its value, as the numpy engine's
        # cheap summaries do: `summary` shows it as the iteration's loss.
        return _full([t])[0]
    norm = _vector_norm(_as_float(t)).item()
    if _isfinite(norm):
        return _cheap_summary(shape_of(t), dtype_name(t.dtype), norm, 0, 0, False)
    return _nonfinite(t, full=False)
