"""``torch.amp.GradScaler`` with PyTorch's ``enabled=False`` behaviour.

Loss scaling exists to keep float16 gradients from underflowing; dyngraph computes in
float32, where scaling by a power of two and unscaling again changes nothing. So the
scaler is always disabled: ``scale(loss)`` returns ``loss``, ``step(optimizer)`` calls
``optimizer.step()``, ``update()`` does nothing and ``get_scale()`` is 1.0, exactly as
PyTorch's scaler constructed with ``enabled=False``.
"""

from __future__ import annotations

import warnings
from typing import Any


class GradScaler:
    """``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`` train as
    ``loss.backward(); opt.step()``.

    >>> import dyngraph as torch
    >>> scaler = torch.amp.GradScaler("cuda")
    >>> scaler.scale(torch.tensor(3.0)), scaler.get_scale(), scaler.is_enabled()
    (tensor(3.), 1.0, False)
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
        self._device = device
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval

    def scale(self, outputs: Any) -> Any:
        return outputs

    def unscale_(self, optimizer: Any) -> None:
        return None

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: Any = None) -> None:
        return None

    def get_scale(self) -> float:
        return 1.0

    def is_enabled(self) -> bool:
        return False

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return None
