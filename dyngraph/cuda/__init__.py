"""``torch.cuda`` on a machine without CUDA, as a CPU-only PyTorch answers it.

Queries answer "no GPU" (``is_available()`` is False, ``device_count()`` 0), seeding and
cache calls are no-ops, and whatever needs a device says dyngraph runs on the CPU only.
``torch.cuda.amp`` holds the deprecated ``GradScaler`` and ``autocast`` aliases.
"""

from __future__ import annotations

from typing import Any

from ..missing import module_getattr
from . import amp

__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name",
           "is_available", "is_bf16_supported", "manual_seed", "manual_seed_all", "set_device",
           "synchronize"]

NO_CUDA = "dyngraph runs on the CPU only: torch.cuda.{} needs a CUDA device"


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed: int) -> None:
    """A no-op, as in a CPU-only PyTorch (CPU numbers come from ``dyngraph.manual_seed``)."""


def manual_seed_all(seed: int) -> None:
    """A no-op, as ``manual_seed``."""


def empty_cache() -> None:
    """A no-op: there is no CUDA cache."""


def synchronize(device: Any = None) -> None:
    """A no-op: there is no CUDA stream to wait for."""


def current_device() -> int:
    raise RuntimeError(NO_CUDA.format("current_device()"))


def get_device_name(device: Any = None) -> str:
    raise RuntimeError(NO_CUDA.format("get_device_name()"))


def set_device(device: Any) -> None:
    raise RuntimeError(NO_CUDA.format("set_device()"))


__getattr__ = module_getattr(__name__)
