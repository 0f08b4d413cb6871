"""Summaries of PyTorch tensors, computed by torch itself: one batched read per op.

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

Integer and bool tensors are summarised in float64; complex ones get a norm only; float8
ones in float32. Tensors whose values cannot be read (sparse, nested, meta, fake, quantized,
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
_shapes: dict[Any, tuple[int, ...]] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` for ``torch.float32``: the names the numpy engine's events use."""
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).removeprefix("torch.")
    return name


def dtype_of(t: torch.Tensor) -> str:
    """``dtype_name`` of the tensor's dtype, with its layout beside it when that is not an
    ordinary strided one: ``float32 sparse_coo``, ``float32 nested``, ``float32 meta``."""
    return dtype_name(t.dtype) + layouts.dtype_suffix(t)


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
    present = [t for t in tensors if t is not None and t.numel()]
    if not present:
        return [None if t is None else _empty(t) for t in tensors]
    if len(present) == 1:
        norms = [_vector_norm(_as_float(present[0])).item()]
    else:
        norms = _stack([_vector_norm(_as_float(t)).to(_F64) for t in present]).tolist()
    out: list[Summary | None] = []
    it = iter(norms)
    for t in tensors:
        if t is None:
            out.append(None)
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
        f = _as_float(t).reshape(-1)
        start = len(parts)
        if f.is_complex():
            parts.append(_vector_norm(f).to(_F64).reshape(1))
        else:
            low, high = torch.aminmax(f)
            parts.append(_stack([low, high, f.sum(), _vector_norm(f)]).to(_F64))
            parts.append(f[:PREVIEW].to(_F64))
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


def _full_summary(t: torch.Tensor, numbers: list[float]) -> Summary:
    shape, dtype = shape_of(t), dtype_name(t.dtype)
    if t.is_complex():
        norm = numbers[0]
        if not _isfinite(norm):
            return _nonfinite(t, full=False)
        return Summary(shape, dtype, norm=norm)
    low, high, total, norm = numbers[:4]
    preview = tuple(numbers[4:])
    if not (_isfinite(total) and _isfinite(norm) and _isfinite(low) and _isfinite(high)):
        return _nonfinite(t, full=True)
    n = t.numel()
    mean = total / n
    var = (norm * norm - n * mean * mean) / (n - 1) if n > 1 else 0.0
    if n > 1 and var < 1e-4 * mean * mean:
        # |mean| >> std: the one-pass formula cancels; redo it in two passes.
        f = _as_float(t).reshape(-1).to(_F64)
        var = float(((f - mean) ** 2).sum()) / (n - 1)
    return Summary(shape, dtype, low, high, mean, math.sqrt(max(var, 0.0)), norm, 0, 0,
                   preview, False)


def _empty(t: torch.Tensor) -> Summary:
    return Summary(shape_of(t), dtype_name(t.dtype))


def _nonfinite(t: torch.Tensor, full: bool) -> Summary:
    """The rare path: exact NaN/Inf counts; statistics of the finite elements."""
    f = _as_float(t).reshape(-1)
    if f.is_complex():
        f = torch.view_as_real(f).reshape(-1)
    nan = int(torch.isnan(f).sum())
    inf = int(torch.isinf(f).sum())
    finite = f[torch.isfinite(f)].to(_F64)
    shape, dtype = shape_of(t), dtype_name(t.dtype)
    if not finite.numel():
        preview = tuple(f[:PREVIEW].to(_F64).tolist()) if full else ()
        return Summary(shape, dtype, nan=nan, inf=inf, preview=preview)
    norm = float(_vector_norm(finite))
    if not full:
        return _cheap_summary(shape, dtype, norm, nan, inf, False)
    n = finite.numel()
    std = float(finite.std()) if n > 1 else 0.0
    return Summary(shape, dtype, float(finite.min()), float(finite.max()), float(finite.mean()),
                   std, norm, nan, inf, tuple(f[:PREVIEW].to(_F64).tolist()), False)


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
