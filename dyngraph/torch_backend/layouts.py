"""Tensors whose values dyngraph cannot read: recorded with what can be known, and why.

Sparse (COO, CSR ...), nested (jagged or strided), meta, fake (``FakeTensorMode``,
``torch.export``), quantized tensors, tensors inside ``torch.func`` transforms (``vmap``,
``grad``) and other tensor subclasses that intercept every call run unchanged under
capture. Statistics and ``.numpy()`` raise on most of them, and some would even be
changed by being read (an op dyngraph ran on a tensor under ``torch.jit.trace`` or
``torch.export`` would be traced into the user's graph). So they are recorded with their
shape (a nested tensor's padded shape), their dtype with the layout beside it
(``float32 sparse_coo``), no summary, and one note per reason
("statistics and values are not recorded for sparse_coo tensors ...").

float8 tensors are read through float32 (exactly), so they get statistics as usual.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..capture import backends

_strided = torch.strided
_noted: set[str] = set()
_functorch = getattr(torch._C, "_functorch", None)
_is_wrapped = getattr(_functorch, "is_functorch_wrapped_tensor", lambda t: False)
# (autograd.grad(..., is_grads_batched=True) batches with the legacy vmap)
_is_legacy_batched = getattr(_functorch, "is_legacy_batchedtensor", lambda t: False)
THROUGH_FLOAT32 = (torch.float16, torch.bfloat16, *(
    getattr(torch, name) for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                      "float8_e5m2fnuz", "float8_e8m0fnu")
    if hasattr(torch, name)))
"""Dtypes read through float32 (exactly): half precision and float8."""
UNREADABLE = np.zeros(0, np.float32)
"""What ``to_numpy`` gives for such a tensor: no values (a check sees nothing to judge)."""


def reset() -> None:
    """A new recording: each kind is noted again."""
    _noted.clear()


def kind_of(t: torch.Tensor) -> str:
    """What kind of unreadable tensor ``t`` is ("sparse_coo", "nested", "meta" ...), or ""
    for an ordinary one."""
    layout = t.layout
    if layout is not _strided:
        return "nested" if layout is torch.jagged else str(layout).removeprefix("torch.")
    if t.is_nested:
        return "nested"
    if t.is_meta:
        return "meta"
    if t.is_quantized:
        return "quantized"
    if _is_wrapped(t) or _is_legacy_batched(t):
        return "torch.func"  # BatchedTensor (vmap), GradTrackingTensor (grad)
    cls = type(t)
    if cls is not torch.Tensor and cls is not torch.nn.Parameter:
        if hasattr(t, "fake_mode"):
            return "fake"
        dispatch = getattr(cls, "__torch_dispatch__", None)
        if dispatch is not None and dispatch is not torch.Tensor.__torch_dispatch__:
            return cls.__name__
    return ""


_WHY = {
    "nested": "nested tensors (their shapes are padded: a ragged dimension as long as its "
              "longest component)",
    "meta": "meta tensors (they hold no data)",
    "quantized": "quantized tensors",
    "torch.func": "tensors inside torch.func transforms (vmap, grad)",
    "fake": "fake tensors (FakeTensorMode, torch.export)",
}


def unreadable(t: Any, kind: str = "") -> None:
    """Note once per kind that tensors like ``t`` are recorded without values."""
    try:
        kind = kind or kind_of(t) or "other"
    except Exception:  # noqa: BLE001 - a tensor that cannot even say what it is
        kind = "other"
    if kind in _noted:
        return
    _noted.add(kind)
    what = _WHY.get(kind) or (
        f"{kind} tensors" if kind != "other" else "some tensors whose values torch would not "
        "hand out")
    backends.note(f"statistics and values are not recorded for {what}: they are recorded "
                  "with shape, dtype and layout only")


def shape_of_unusual(t: Any) -> tuple[int, ...]:
    """The shape of a tensor whose ``shape`` holds SymInts or raises: a nested tensor's
    padded shape (each ragged dimension as long as its longest component, what
    ``to_padded_tensor`` gives), as plain ints."""
    try:
        size: list[Any] | None = list(t.shape)
    except RuntimeError:  # a strided nested tensor has no sizes at all
        size = None
    if size is not None and all(type(d) is int for d in size):
        return tuple(size)
    try:
        if t.layout is torch.jagged and size is not None:
            lengths = t.lengths()
            if lengths is None:
                lengths = t.offsets().diff()
            longest = int(lengths.max()) if lengths.numel() else 0
            return tuple(d if type(d) is int else longest for d in size)
        sizes = t._nested_tensor_size()  # (components, dims of each)
        padded = sizes.max(0).values.tolist() if sizes.numel() else [0] * (t.dim() - 1)
        return (t.size(0), *padded)
    except Exception:  # noqa: BLE001 - what cannot be measured is recorded as 0 long
        return tuple(d if type(d) is int else 0 for d in size or ())


def dtype_suffix(t: torch.Tensor) -> str:
    """"" for an ordinary tensor; " sparse_coo", " nested", " meta" ... for the others
    (what ``dtype_name`` adds after the dtype)."""
    if t.layout is _strided and not t.is_nested and not t.is_meta:
        return ""
    kind = kind_of(t)
    return f" {kind}" if kind else ""


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as numpy (on the CPU; low precision floats as float32); no values
    (``UNREADABLE``) for a tensor whose values cannot be read, never an exception."""
    kind = kind_of(t)
    if kind:
        unreadable(t, kind)
        return UNREADABLE
    try:
        if torch._C._len_torch_dispatch_stack():
            from torch.utils._python_dispatch import _disable_current_modes

            with _disable_current_modes():  # the script's mode sees the script's calls only
                return _plain_numpy(t)
        return _plain_numpy(t)
    except Exception:  # noqa: BLE001 - a fake tensor, a tensor of a torch.func transform ...
        unreadable(t)
        return UNREADABLE


def _plain_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype in THROUGH_FLOAT32:
        t = t.float()
    if t.is_conj():
        t = t.resolve_conj()
    return t.cpu().numpy()  # type: ignore[no-any-return]
