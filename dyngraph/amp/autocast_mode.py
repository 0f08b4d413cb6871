"""``torch.autocast``: a no-op context manager and decorator (dyngraph computes in the
tensors' own dtypes; PyTorch's CPU autocast would run matmuls in bfloat16)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class autocast:  # noqa: N801  (PyTorch's name)
    """``with torch.autocast("cuda"):`` or ``@torch.autocast("cpu")``: runs the body as is.

    >>> import dyngraph as torch
    >>> with torch.autocast(device_type="cuda", dtype=torch.float16):
    ...     y = torch.ones(2) * 2
    >>> y.dtype
    dyngraph.float32
    """

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = enabled

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return run
