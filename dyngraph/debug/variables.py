"""One-line descriptions of the Python values a paused frame holds (in the child).

Tensors (dyngraph's, PyTorch's, numpy arrays) get shape, dtype, requires_grad and the
statistics of ``capture.summaries`` (bounded cost: large tensors are sampled); modules
their class and parameter count; numbers, strings and small containers their value;
anything else its type and a shortened repr. Backends are recognised by duck typing and by
``sys.modules``: describing a value never imports PyTorch.
"""

from __future__ import annotations

import reprlib
import sys
import types
from typing import Any

import numpy as np

from ..capture.summaries import summarize
from .inspection import TensorInfo, Variable

ROW_CHARS = 160  # a row's summary is cut here
MAX_VARIABLES = 300  # rows of one frame; the rest are counted, not described


class _ShortRepr(reprlib.Repr):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.maxstring = self.maxother = width
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 8
        self.maxdict = 6
        self.maxlevel = 2


_row_repr = _ShortRepr(ROW_CHARS)


class _LongRepr(reprlib.Repr):
    """The console's repr: what a REPL prints, but a huge container stays bounded."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = 1 << 20
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 1000
        self.maxdict = 1000
        self.maxlevel = 8


_long_repr = _LongRepr()


def type_name(value: Any) -> str:
    t = type(value)
    return t.__name__ if t.__module__ in ("builtins", "__main__") else t.__qualname__


# -- tensors ----------------------------------------------------------------------------------
def _torch_tensor_class() -> Any:
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


def tensor_info(value: Any) -> TensorInfo | None:
    """Statistics of a dyngraph tensor, a PyTorch tensor or a numpy array; else None."""
    try:
        if isinstance(value, np.ndarray):
            return TensorInfo(_summary(value))
        array = getattr(value, "_array", None)
        if isinstance(array, np.ndarray) and hasattr(value, "requires_grad"):
            return TensorInfo(_summary(array), bool(value.requires_grad),
                              getattr(value, "_id", None))
        torch_tensor = _torch_tensor_class()
        if torch_tensor is not None and isinstance(value, torch_tensor):
            return _torch_info(value)
    except Exception:  # noqa: BLE001 - a strange tensor gets described by its repr instead
        return None
    return None


def _summary(array: np.ndarray) -> Any:
    if array.dtype.kind == "b":  # statistics of 0/1, under the array's own dtype name
        return summarize(array.astype(np.uint8), "full").replace(dtype="bool")  # type: ignore[union-attr]
    if array.dtype.kind not in "fiuc":
        raise TypeError(f"no statistics for dtype {array.dtype}")
    return summarize(array, "full")


def _torch_info(t: Any) -> TensorInfo:
    torch = sys.modules["torch"]
    d = t.detach()
    if d.layout != torch.strided:
        d = d.to_dense()
    if d.device.type != "cpu":
        d = d.cpu()
    if d.dtype in (torch.bfloat16, torch.float16) or d.is_quantized:
        d = d.dequantize() if d.is_quantized else d.float()
    summary = _summary(d.numpy())
    summary = summary.replace(dtype=str(t.dtype).removeprefix("torch."))
    return TensorInfo(summary, bool(t.requires_grad), _torch_node(t))


def _torch_node(t: Any) -> int | None:
    """The PyTorch backend's tensor id: ``_dg_id`` is ``(id(tensor), number)``, and a pair
    copied onto another tensor (deepcopy, torch.load) names no node."""
    mark = getattr(t, "__dict__", {}).get("_dg_id")
    if isinstance(mark, int):
        return mark
    if isinstance(mark, tuple) and len(mark) == 2 and mark[0] == id(t):
        return int(mark[1])
    return None


def tensor_text(info: TensorInfo) -> str:
    """``(16, 8) float32 requires_grad min -0.98 max 0.99 mean 0.012 NaN 0 Inf 0``."""
    s = info.summary
    parts = [f"{tuple(s.shape)} {s.dtype}"]
    if info.requires_grad:
        parts.append("requires_grad")
    if s.min is not None:
        parts.append(f"min {_num(s.min)} max {_num(s.max)} mean {_num(s.mean)}")
    parts.append(f"NaN {s.nan} Inf {s.inf}" + (" (sampled)" if s.sampled else ""))
    return "  ".join(parts)


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.4g}"
    return f"{x:.3e}"


# -- modules and the rest -------------------------------------------------------------------
def is_module(value: Any) -> bool:
    """A dyngraph or PyTorch ``nn.Module`` instance (duck-typed on what both define)."""
    if isinstance(value, type):
        return False
    t = type(value)
    return (callable(getattr(t, "named_parameters", None)) and callable(getattr(t, "forward", None))
            and callable(getattr(t, "named_modules", None)))


def module_text(value: Any) -> str:
    try:
        count = 0
        for p in value.parameters():
            shape = getattr(p, "shape", ())
            n = 1
            for d in shape:
                n *= int(d)
            count += n
    except Exception as exc:  # noqa: BLE001 - a broken module still gets a row
        return f"{type(value).__name__} (parameters unavailable: {type(exc).__name__})"
    return f"{type(value).__name__}, {count:,} parameters"


def short_repr(value: Any, width: int = ROW_CHARS) -> str:
    """A one-line repr, cut to ``width`` characters."""
    try:
        text = _row_repr.repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ is the user's, shown as such
        text = f"<repr failed: {type(exc).__name__}: {exc}>"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def long_repr(value: Any) -> str:
    """The console's text of a value: a tensor's summary line then its first values; a
    numpy array as numpy prints it (elided); anything else its repr (huge containers
    elided)."""
    info = tensor_info(value)
    if info is not None:
        return tensor_text(info) + "\n" + preview(info)
    if isinstance(value, np.ndarray):
        return np.array2string(value, threshold=1000, edgeitems=5)
    return _long_repr.repr(value)


def preview(info: TensorInfo) -> str:
    s = info.summary
    shown = [_num(v) for v in s.preview]
    more = s.numel > len(shown)
    return "[" + ", ".join(shown) + (", …" if more else "") + "]" + (
        f"  of {s.numel:,}" if more else "")


def describe(name: str, value: Any) -> Variable:
    """The variables pane's row for ``name = value``."""
    info = tensor_info(value)
    kind = type_name(value)
    if info is not None:
        return Variable(name, kind, tensor_text(info), info)
    if is_module(value):
        return Variable(name, kind, module_text(value))
    return Variable(name, kind, short_repr(value))


def shown(name: str, value: Any, module_level: bool) -> bool:
    """Whether a frame's variable gets a row: not dunders and imported modules, and at
    module level not the functions and classes a script defines (noise next to its data)."""
    if name.startswith("__") and name.endswith("__"):
        return False
    if isinstance(value, types.ModuleType):
        return False
    if module_level and isinstance(value, (types.FunctionType, type, types.BuiltinFunctionType)):
        return False
    return True
