"""``torch.accelerator``: there is none; dyngraph runs on the CPU."""

from __future__ import annotations

from typing import Any

from .missing import module_getattr

__all__ = ["current_accelerator", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False) -> Any:
    """None, as PyTorch answers on a machine without an accelerator."""
    return None


def device_count() -> int:
    return 0


def synchronize(device: Any = None) -> None:
    """A no-op: nothing runs asynchronously."""


__getattr__ = module_getattr(__name__)
