"""Statistics on the device, read once: PyTorch capture on a GPU's terms.

On a GPU every host read (``.item()``, ``.tolist()``, ``float(t)``) waits for the device to
finish all the work queued before it. Reading each op's summary as the op runs would stall
a recorded step once per op. So an op's and a gradient's statistics are computed as device
tensors on the current stream (the same reductions ``stats`` reads at once: the numbers
are equal, exactly), kept here with a ``Pending`` handed to the tracer in their place,
and read in one ``tolist()`` per device (``read``): at the iteration's end, at a pause,
when the run ends, or when ``CAP`` entries wait.

Host reads that remain: the rare repair of a summary whose norm came out non-finite (exact
NaN/Inf counts, one read per such tensor, from the tensor as it is at the read: a tensor
changed in place since keeps its norm and a lower bound of its counts, marked sampled),
``full``'s two-pass variance where the one-pass formula cancels, a tensor learning rate
(``.item()`` once per step), and tensors that only the old path can summarise (sparse,
nested, quantized ..., and every tensor while the script has a ``TorchDispatchMode`` on):
those are summarised at once, as ``stats`` does.

Held until the read: each summarised tensor (for the repair above), so a device's memory
holds an iteration's outputs a little longer; ``CAP`` bounds how many.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ..capture.events import Summary
from ..capture.pending import UNREAD, Pending
from . import layouts, stats
from .guard import failed
from .stats import dtype_name, shape_of

CAP = 16_384
"""Entries kept before the buffer is read anyway (an iteration that never ends)."""

_vector_norm = torch.linalg.vector_norm
_F64 = torch.float64
_LOW = stats._LOW_PRECISION
_strided = torch.strided
_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_dispatch_modes = torch._C._len_torch_dispatch_stack
_isfinite = math.isfinite
_cheap_summary = Summary.cheap
_wrapped = layouts._is_wrapped  # (vmap, grad: their tensors outlive no transform level)
_legacy_batched = layouts._is_legacy_batched
no_stats = stats.no_stats

# What an entry is: its kind decides how its numbers become a summary.
_NORM, _SCALAR, _FULL, _UPDATES = range(4)


def _plain(t: torch.Tensor) -> bool:
    """Can the device path summarise ``t``? (An ordinary strided tensor, no dispatch mode
    of the script's on: anything else goes the old way, read at once.)"""
    cls = type(t)
    return ((cls is _Tensor or cls is _Parameter) and t.layout is _strided
            and not t.is_nested and not t.is_quantized and not t.is_meta
            and not _dispatch_modes() and not _wrapped(t) and not _legacy_batched(t))


class StatsBuffer:
    """This iteration's statistics as device tensors, with the Pendings they fill."""

    def __init__(self, set_quiet: Callable[[int], None],
                 on_full: Callable[[], None]) -> None:
        self._set_quiet = set_quiet
        self._on_full = on_full  # (reads the buffer through the tracer: see ``read``)
        # One list per kind of entry: the device numbers, and (Pending, what builds the
        # summary: shape, dtype, the tensor, its version) beside them.
        self._numbers: list[torch.Tensor] = []
        self._entries: list[tuple[int, Pending, Any, Any, Any, Any]] = []
        self.reads = 0  # buffer reads so far (tests, the bench)

    def __len__(self) -> int:
        return len(self._entries)

    # -- what the capture calls per op and per gradient ------------------------------------
    def cheap_one(self, t: torch.Tensor, value: bool = True) -> Summary | Pending | None:
        """The pending cheap summary of ``t`` (a ready one for integers, bools, empties).
        ``value``: a one-element tensor (a loss) gets its value, as ``stats.cheap_one``
        gives it (an op's single output); a list of tensors gets norms (``stats.cheap``)."""
        if not _plain(t):
            return stats.cheap([t])[0] if not value else stats.cheap_one(t)
        dtype = t.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            return no_stats(t)
        n = t.numel()
        if not n:
            return Summary(shape_of(t), dtype_name(dtype))
        if t.requires_grad:
            t = t.detach()
        f = t.float() if dtype in _LOW else t
        if n == 1 and value and not dtype.is_complex:
            return self._add(_SCALAR, f.reshape(1).to(_F64, copy=True), t)
        return self._add(_NORM, _vector_norm(f), t)

    def full_one(self, t: torch.Tensor) -> Summary | Pending | None:
        if not _plain(t):
            return stats.full([t])[0]
        n = t.numel()
        if not n:
            return Summary(shape_of(t), dtype_name(t.dtype))
        if t.requires_grad:
            t = t.detach()
        f = stats._as_float(t).reshape(-1)
        if f.is_complex():
            return self._add(_FULL, _vector_norm(f).to(_F64).reshape(1), t)
        low, high = torch.aminmax(f)
        parts = torch.cat([torch.stack([low, high, f.sum(), _vector_norm(f)]).to(_F64),
                           f[:stats.PREVIEW].to(_F64)])
        return self._add(_FULL, parts, t)

    def cheap(self, tensors: Sequence[torch.Tensor | None]) -> list[Any]:
        one = self.cheap_one
        return [None if t is None else one(t, False) for t in tensors]

    def full(self, tensors: Sequence[torch.Tensor | None]) -> list[Any]:
        one = self.full_one
        return [None if t is None else one(t) for t in tensors]

    def updates(self, ids: Sequence[int], norms: Sequence[torch.Tensor]) -> Pending:
        """An optimizer step's update norms (one per parameter, ``ids``), pending."""
        numbers = torch.stack([n.to(_F64) for n in norms]) if norms else torch.zeros(0, dtype=_F64)
        return self._add(_UPDATES, numbers, tuple(ids))

    def _add(self, kind: int, numbers: torch.Tensor, t: Any) -> Pending:
        p = Pending()
        self._numbers.append(numbers)
        version = t._version if kind != _UPDATES else 0
        self._entries.append((kind, p, t, version, None, None))
        if len(self._entries) >= CAP:
            self._on_full()
        return p

    # -- the read ---------------------------------------------------------------------------
    def read(self) -> bool:
        """Read every pending number to the host (one ``tolist()`` per device) and fill in
        the Pendings. False when nothing was pending."""
        entries = self._entries
        if not entries:
            return False
        numbers = self._numbers
        self._entries, self._numbers = [], []
        self.reads += 1
        self._set_quiet(1)
        try:
            if _dispatch_modes():
                with _disable_current_modes():
                    values = _to_host(numbers)
            else:
                values = _to_host(numbers)
            for (kind, p, t, version, _, _), v in zip(entries, values, strict=True):
                p.row = _summary(kind, t, version, v)
        except Exception as exc:  # noqa: BLE001 - statistics must never fail the script
            for entry in entries:  # (and no row may wait for them forever)
                if entry[1].row is UNREAD:
                    entry[1].row = None
            failed("the statistics of an iteration", exc)
        finally:
            self._set_quiet(-1)
        return True


def _to_host(numbers: list[torch.Tensor]) -> list[Any]:
    """Each device tensor's numbers as Python floats: a 0-d one gives a float, a 1-d one a
    list. Norms are stacked by device and dtype (each converted to float64 exactly), then
    everything of one device goes to the host in one ``tolist()``."""
    by_device: dict[Any, list[int]] = {}
    for i, n in enumerate(numbers):
        by_device.setdefault(n.device, []).append(i)
    out: list[Any] = [None] * len(numbers)
    for indexes in by_device.values():
        scalars: dict[torch.dtype, list[int]] = {}
        vectors: list[int] = []
        for i in indexes:
            n = numbers[i]
            if n.dim() == 0:
                scalars.setdefault(n.dtype, []).append(i)
            else:
                vectors.append(i)
        order: list[int] = []
        parts: list[torch.Tensor] = []
        for group in scalars.values():
            parts.append(torch.stack([numbers[i] for i in group]).to(_F64))
            order.extend(group)
        parts.extend(numbers[i] for i in vectors)
        flat = torch.cat(parts).tolist() if len(parts) > 1 else parts[0].tolist()
        at = 0
        for i in order:
            out[i] = flat[at]
            at += 1
        for i in vectors:
            size = numbers[i].numel()
            out[i] = flat[at:at + size]
            at += size
    return out


def _summary(kind: int, t: Any, version: int, v: Any) -> Any:
    """The summary row of an entry from its numbers (see ``stats`` for the forms)."""
    if kind == _UPDATES:
        return tuple(zip(t, v, strict=True))
    s: Summary | None
    if kind == _NORM:
        if _isfinite(v):
            s = _cheap_summary(shape_of(t), dtype_name(t.dtype), v, 0, 0, False)
        else:
            s = _repaired(t, version, v, full=False)
    elif kind == _SCALAR:
        value = v[0]
        if _isfinite(value):
            s = Summary(shape_of(t), dtype_name(t.dtype), value, value, value, 0.0,
                        abs(value), 0, 0, (value,), False)
        else:
            s = _repaired(t, version, value, full=True)
    else:  # _FULL
        numbers = v
        finite = all(_isfinite(x) for x in numbers[:4])
        if not finite:
            s = _repaired(t, version, numbers[0] if t.is_complex() else numbers[3],
                          full=not t.is_complex())
        elif t._version != version:
            s = _one_pass(t, numbers)  # (a two-pass fallback would read the changed tensor)
        else:
            s = stats._full_summary(t, numbers)
    return None if s is None else _row(s)


def _one_pass(t: torch.Tensor, numbers: list[float]) -> Summary:
    low, high, total, norm = numbers[:4]
    n = t.numel()
    mean = total / n
    var = (norm * norm - n * mean * mean) / (n - 1) if n > 1 else 0.0
    cancelled = n > 1 and var < 1e-4 * mean * mean  # (then the std is not exact)
    return Summary(shape_of(t), dtype_name(t.dtype), low, high, mean,
                   math.sqrt(max(var, 0.0)), norm, 0, 0, tuple(numbers[4:]), cancelled)


def _repaired(t: torch.Tensor, version: int, norm: float, full: bool) -> Summary | None:
    """A non-finite statistic: the exact counts from the tensor (a host read, rare), or,
    when it changed in place since, what the non-finite norm proves (at least one NaN, or
    at least one Inf), marked sampled."""
    if t._version == version:
        try:
            return stats._nonfinite(t, full)
        except Exception:  # noqa: BLE001 - statistics must never fail the script
            return None
    nan = 1 if math.isnan(norm) else 0
    return Summary(shape_of(t), dtype_name(t.dtype), norm=None, nan=nan, inf=1 - nan,
                   sampled=True)


def _row(s: Summary) -> tuple[Any, ...]:
    from ..capture.rows import summary_row

    return summary_row(s)  # type: ignore[return-value]
