"""``torch.onnx``: importable, so scripts that import it for an optional export run; the
export itself is not implemented and says so."""

from __future__ import annotations

from typing import Any

from .missing import module_getattr, not_implemented

__all__ = ["export", "is_in_onnx_export"]


def export(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError(not_implemented("torch.onnx.export"))


def is_in_onnx_export() -> bool:
    return False


__getattr__ = module_getattr(__name__)
