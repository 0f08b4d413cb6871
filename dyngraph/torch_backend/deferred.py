"""Statistics on the device, read once: PyTorch capture on a GPU's terms.

On a GPU every host read (``.item()``, ``.tolist()``, ``float(t)``) waits for the device to
finish all the work queued before it. Reading each op's summary as the op runs would stall
a recorded step once per op. So an op's and a gradient's statistics are computed as device
tensors on the current stream (the same reductions ``stats`` reads at once: the numbers
are equal, exactly), kept here with a ``Pending`` handed to the tracer in their place,
and read in one ``tolist()`` per device (``read``): at the iteration's end, at a pause,
when the run ends, or when ``CAP`` entries wait.

Host reads that remain: a second read in an iteration where some summary needs another
look at its tensor (one for all of them): a norm that came out non-finite (an attention
mask's -inf; exact NaN/Inf counts and the finite elements' statistics, from the tensor as
it is at the read: one changed in place since keeps a lower bound of its counts, marked
sampled) or ``full``'s two-pass variance where the one-pass formula cancels; a tensor
learning rate (``.item()`` once per step); and tensors only the old path can summarise
(sparse, nested, quantized, under torch.func, and every tensor while the script has a
``TorchDispatchMode`` on), summarised at once as ``stats`` does.

Held until the read: each summarised tensor (for the repair above), so a device's memory
holds an iteration's outputs a little longer; ``CAP`` bounds how many.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ..capture.events import Summary
from ..capture.pending import UNREAD, Pending
from ..capture.rows import summary_row
from . import layouts, stats
from .guard import failed
from .stats import dtype_name, shape_of

CAP = 16_384
"""Entries kept before the buffer is read anyway (an iteration that never ends)."""

_vector_norm = torch.linalg.vector_norm
_foreach_norm = torch._foreach_norm
_no_torch_function = torch._C.DisableTorchFunction  # (see ``backward``)
_F64 = torch.float64
_LOW = stats._LOW_PRECISION
_strided = torch.strided
_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_dispatch_modes = torch._C._len_torch_dispatch_stack
_isfinite = math.isfinite
_weak = weakref.ref
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
        self._numbers: list[Any] = []  # (a tensor, or a tuple: ``_to_host``)
        self._entries: list[tuple[int, Pending, Any, Any, Any, Any]] = []
        # id of a tensor summarised in this iteration -> (it, its version, the summary),
        # by kind of entry (``_once``)
        self._seen: tuple[dict[int, tuple[Any, int, Pending]], ...] = ({}, {}, {})
        self.reads = 0  # buffer reads so far (tests, the bench)

    def __len__(self) -> int:
        return len(self._entries)

    # -- what the capture calls per op and per gradient ------------------------------------
    def cheap_one(self, t: torch.Tensor, value: bool = True) -> Summary | Pending | None:
        """The pending cheap summary of ``t`` (a ready one for integers, bools, empties).
        ``value``: a one-element tensor (a loss) gets its value, as ``stats.cheap_one``
        gives it (an op's single output); a list of tensors gets norms (``stats.cheap``)."""
        dtype = t.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            return no_stats(t)  # (first: index arithmetic is most of the tiny ops)
        if not _plain(t):
            return stats.cheap([t])[0] if not value else stats.cheap_one(t)
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
        if not t.numel():
            return Summary(shape_of(t), dtype_name(t.dtype))
        if t.requires_grad:
            t = t.detach()
        return self._add(_FULL, stats.full_parts(t), t)

    def cheap(self, tensors: Sequence[torch.Tensor | None]) -> list[Any]:
        """Norms of a backward step's gradients (or a leaf's): each tensor once per
        iteration (``_once``)."""
        return self._once(_NORM, tensors, self.cheap_one)

    def full(self, tensors: Sequence[torch.Tensor | None]) -> list[Any]:
        return self._once(_FULL, tensors, self.full_one)

    def _once(self, kind: int, tensors: Sequence[torch.Tensor | None],
              one: Callable[..., Any]) -> list[Any]:
        """``one`` of each gradient, but one summarised before in this iteration (by the
        same kind, unchanged since: the same version) gets the same summary. A gradient a
        node hands on is the very tensor the next node takes in (PyTorch keeps its Python
        object while autograd holds it): it is reduced once, not twice. The buffer keeps a
        detached alias of each (its memory, for the read), never the gradient itself:
        autograd hands a gradient nobody else holds to ``.grad`` as it is, and one held
        here would be copied there instead. A weak reference tells a tensor seen before
        from a later one that took its ``id``."""
        seen = self._seen[kind]
        out: list[Any] = []
        batch: list[tuple[int, torch.Tensor, torch.Tensor]] = []  # (place, tensor, float)
        waiting: dict[int, int] = {}  # id of a tensor in ``batch`` -> its place
        copies: list[tuple[int, int]] = []  # (place, the place of the same tensor before)
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            key = id(t)
            hit = seen.get(key)
            if hit is not None and hit[0]() is t and hit[1] == t._version:
                out.append(hit[2])
                continue
            if key in waiting:  # (twice in this list: a gradient a node hands on as it is)
                copies.append((len(out), waiting[key]))
                out.append(None)
                continue
            if not _plain(t):  # (summarised at once)
                out.append(one(t, False) if kind == _NORM else one(t))
                continue
            d = t.detach()
            dtype = d.dtype
            if kind == _NORM and dtype.is_floating_point and d.numel():
                waiting[key] = len(out)
                batch.append((len(out), t, d))  # (its norm comes with the others')
                out.append(None)
                continue
            s = one(d, False) if kind == _NORM else one(d)
            if type(s) is Pending:
                seen[key] = (_weak(t), t._version, s)
            out.append(s)
        if batch:
            self._norms(batch, out, seen)
            for place, first in copies:
                out[place] = out[first]
        return out

    def _norms(self, batch: list[tuple[int, torch.Tensor, torch.Tensor]], out: list[Any],
               seen: dict[int, tuple[Any, int, Pending]]) -> None:
        """The norms of ``batch``'s float tensors in one call (``_foreach_norm``: one
        kernel launch for them all on a GPU; the same numbers as ``vector_norm`` one by
        one, which ``stats.cheap`` reads), put in ``out`` at their places."""
        floats = [d.float() if d.dtype in _LOW else d for _, _, d in batch]
        norms = _foreach_norm(floats) if len(floats) > 1 else [_vector_norm(floats[0])]
        for (place, t, d), norm in zip(batch, norms, strict=True):
            p = out[place] = self._add(_NORM, norm, d)
            seen[id(t)] = (_weak(t), t._version, p)

    def updates(self, ids: Sequence[int], norms: Sequence[torch.Tensor]) -> Pending:
        """An optimizer step's update norms (one per parameter, ``ids``), pending."""
        # (stacked first, then one conversion: exact, as each norm's own conversion was)
        numbers = torch.stack(list(norms)).to(_F64) if norms else torch.zeros(0, dtype=_F64)
        return self._add(_UPDATES, numbers, tuple(ids))

    def _add(self, kind: int, numbers: Any, t: Any) -> Pending:
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
        for seen in self._seen:
            seen.clear()
        self.reads += 1
        self._set_quiet(1)
        no_modes = _no_torch_function()  # (dyngraph's calls: not through any mode)
        no_modes.__enter__()
        try:
            if _dispatch_modes():
                with _disable_current_modes():
                    values = _to_host(numbers)
            else:
                values = _to_host(numbers)
            repairs: list[tuple[Pending, Any, bool, Any]] = []
            for (kind, p, t, version, _, _), v in zip(entries, values, strict=True):
                p.row = _summary(kind, t, version, v, p, repairs)
            if repairs:
                _repair(repairs)
        except Exception as exc:  # noqa: BLE001 - statistics must never fail the script
            failed("the statistics of an iteration", exc)
        finally:
            # No row may wait for its statistics for ever: after a failure, or a Ctrl-C
            # landing in this read (the script's KeyboardInterrupt goes on from here), the
            # entries taken out above are in no buffer any more. Left unread, they held
            # back every row behind them, so an interrupted `dyngraph record` lost the rest
            # of its run: the script's traceback and the run's end (about 2 in 100 runs
            # interrupted at random; the child then reported as killed by SIGINT).
            # (Unknown: no summary; an optimizer step's updates, none. None there made the
            # row garbage to the other end, which then ended the script.)
            for entry in entries:
                if entry[1].row is UNREAD:
                    entry[1].row = () if entry[0] == _UPDATES else None
            no_modes.__exit__(None, None, None)
            self._set_quiet(-1)
        return True


def _to_host(numbers: list[Any]) -> list[Any]:
    """Each entry's numbers as Python floats: a 0-d tensor gives a float, a 1-d one a list,
    a tuple (``stats.full_parts``: 0-d ones of one dtype, then maybe a float64 vector) the
    list of all its numbers in order. The 0-d ones are stacked by device and dtype (each
    converted to float64 exactly), then everything of one device goes to the host in one
    ``tolist()``."""
    # device -> (dtype -> its 0-d tensors, the 1-d ones); per entry: where its numbers are
    devices: dict[Any, tuple[dict[Any, list[torch.Tensor]], list[torch.Tensor]]] = {}
    places: list[tuple[Any, Any, int, int, int]] = []  # (device, dtype, at, count, vector)
    for n in numbers:
        first = n[0] if type(n) is tuple else n
        device = first.device
        found = devices.get(device)
        if found is None:
            found = devices[device] = ({}, [])
        scalars, vectors = found
        if type(n) is tuple or first.dim() == 0:
            dtype = first.dtype
            group = scalars.get(dtype)
            if group is None:
                group = scalars[dtype] = []
            at = len(group)
            if type(n) is tuple:
                last = n[-1]
                if last.dim():  # (the preview)
                    group.extend(n[:-1])
                    vectors.append(last)
                    places.append((device, dtype, at, len(n) - 1, len(vectors) - 1))
                else:
                    group.extend(n)
                    places.append((device, dtype, at, len(n), -1))
            else:
                group.append(n)
                places.append((device, dtype, at, 0, -1))  # (0: one float, not a list)
        else:
            vectors.append(n)
            places.append((device, None, 0, 0, len(vectors) - 1))
    # device -> (dtype -> its numbers, the vectors' numbers)
    values: dict[Any, tuple[dict[Any, list[float]], list[list[float]]]] = {}
    for device, (scalars, vectors) in devices.items():
        parts = [torch.stack(group).to(_F64) for group in scalars.values()]
        parts.extend(vectors)
        flat = torch.cat(parts).tolist() if len(parts) > 1 else parts[0].tolist()
        by_dtype: dict[Any, list[float]] = {}
        at = 0
        for dtype, group in scalars.items():
            by_dtype[dtype] = flat[at:at + len(group)]
            at += len(group)
        lists = []
        for v in vectors:
            lists.append(flat[at:at + v.numel()])
            at += v.numel()
        values[device] = (by_dtype, lists)
    out: list[Any] = []
    for device, dtype, at, count, vector in places:
        by_dtype, lists = values[device]
        if dtype is None:
            out.append(lists[vector])
        elif not count:
            out.append(by_dtype[dtype][at])
        elif vector < 0:
            out.append(by_dtype[dtype][at:at + count])
        else:
            out.append(by_dtype[dtype][at:at + count] + lists[vector])
    return out


def _summary(kind: int, t: Any, version: int, v: Any, p: Pending,
             repairs: list[tuple[Pending, Any, bool, Any]]) -> Any:
    """The summary row of an entry from its numbers (see ``stats`` for the forms), or
    UNREAD with the entry added to ``repairs`` when it needs a second look at the tensor
    (read for all such entries at once: ``_repair``)."""
    if kind == _UPDATES:
        return tuple(zip(t, v, strict=True))
    s: Summary | None
    if kind == _NORM:
        if _isfinite(v):
            # (the cheap summary's row, ``rows.summary_row``, made directly)
            return (shape_of(t), dtype_name(t.dtype), v, 0, 0, False)
        return _nonfinite(t, version, v, False, p, repairs)
    if kind == _SCALAR:
        value = v[0]
        if not _isfinite(value):
            return _nonfinite(t, version, value, True, p, repairs)
        s = Summary(shape_of(t), dtype_name(t.dtype), value, value, value, 0.0, abs(value),
                    0, 0, (value,), False)
        return _row(s)
    numbers = v  # _FULL
    complex_ = t.is_complex()
    if not all(_isfinite(x) for x in numbers[:4]):
        return _nonfinite(t, version, numbers[0] if complex_ else numbers[3], not complex_,
                          p, repairs)
    if complex_:
        return _row(Summary(shape_of(t), dtype_name(t.dtype), norm=numbers[0]))
    n = t.numel()
    mean = numbers[2] / n
    var = (numbers[3] ** 2 - n * mean * mean) / (n - 1) if n > 1 else 0.0
    if not stats.cancels(n, mean, var):
        return _row(stats.with_variance(t, numbers, var))
    if t._version != version:  # (changed since: the one pass, marked inexact)
        return _row(Summary(shape_of(t), dtype_name(t.dtype), numbers[0], numbers[1], mean,
                            math.sqrt(max(var, 0.0)), numbers[3], 0, 0, tuple(numbers[4:]),
                            True))
    repairs.append((p, t, False, (numbers, mean)))
    return UNREAD


def _nonfinite(t: torch.Tensor, version: int, norm: float, full: bool, p: Pending,
               repairs: list[tuple[Pending, Any, bool, Any]]) -> Any:
    """A non-finite statistic: exact counts from the tensor (``_repair``), or, when it
    changed in place since, what the non-finite number proves (at least one NaN, or at
    least one Inf), marked sampled."""
    if t._version == version:
        repairs.append((p, t, True, full))
        return UNREAD
    nan = 1 if math.isnan(norm) else 0
    return _row(Summary(shape_of(t), dtype_name(t.dtype), norm=None, nan=nan, inf=1 - nan,
                        sampled=True))


def _repair(repairs: list[tuple[Pending, Any, bool, Any]]) -> None:
    """The second look, for every entry that needs one, in one more read: exact NaN/Inf
    counts and the finite elements' statistics, or a two-pass variance."""
    parts = [stats.nonfinite_parts(t, info) if nonfinite
             else stats.squares_about(t, info[1]).reshape(1)
             for _, t, nonfinite, info in repairs]
    for (p, t, nonfinite, info), numbers in zip(repairs, _to_host(parts), strict=True):
        if nonfinite:
            p.row = _row(stats.nonfinite_summary(t, numbers, info))
        else:
            p.row = _row(stats.with_variance(t, info[0], numbers[0] / (t.numel() - 1)))


_row = summary_row
