"""Small PyTorch names that ported scripts touch: ``device``, the default dtype, the
float32 matmul precision and ``compile`` (``torch.cuda`` is the package ``dyngraph.cuda``)."""

from __future__ import annotations

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


def get_default_dtype() -> Any:
    from .dtypes import float32

    return float32


def set_default_dtype(d: Any) -> None:
    from .dtypes import float32

    if d != float32:
        raise NotImplementedError("dyngraph's default dtype is float32 and cannot be changed")


_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted and remembered; numpy's float32 matmul is always full precision."""
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision!r} (expected 'highest', 'high' or "
                           "'medium')")
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision


def compile(model: Any = None, **options: Any) -> Any:  # noqa: A001
    """``torch.compile`` speeds a model up; dyngraph runs it eagerly, op by op, so that
    every op is seen: the model (or function) comes back unchanged. Also a decorator."""
    if model is None:
        return lambda fn: fn
    return model
