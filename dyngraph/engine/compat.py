"""Small PyTorch names that ported scripts touch: ``device``, ``cuda.is_available()``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class device:
    """``torch.device``: dyngraph runs on the CPU only."""

    def __init__(self, type: str, index: int | None = None) -> None:
        kind = str(type).split(":")[0]
        if kind != "cpu":
            raise NotImplementedError(f"dyngraph runs on the CPU only (asked for {type!r})")
        self.type = "cpu"
        self.index = index

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other: Any) -> bool:
        return str(other) in ("cpu", "cpu:0")

    def __hash__(self) -> int:
        return hash("cpu")


cuda = SimpleNamespace(is_available=lambda: False, device_count=lambda: 0,
                       manual_seed=lambda seed: None, manual_seed_all=lambda seed: None)


def get_default_dtype() -> Any:
    from .dtypes import float32

    return float32


def set_default_dtype(d: Any) -> None:
    from .dtypes import float32

    if d != float32:
        raise NotImplementedError("dyngraph's default dtype is float32 and cannot be changed")
