"""``torch.autograd``'s public surface, so ``import dyngraph as torch`` finds
``torch.autograd.grad`` and ``from torch.autograd import grad`` works. The engine itself
(graph nodes, the iterative backward pass) lives in ``dyngraph/engine/autograd.py``.
"""

from __future__ import annotations

from typing import Any

from .engine.autograd import (
    backward,
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = [
    "backward", "enable_grad", "grad", "inference_mode", "is_grad_enabled", "no_grad",
    "set_grad_enabled",
]


def __getattr__(name: str) -> Any:
    # Only reached for names this module lacks (``torch.autograd.Function``, ``functional``
    # ...): name the missing piece rather than raise a bare AttributeError.
    raise AttributeError(
        f"module 'dyngraph.autograd' has no attribute '{name}': dyngraph does not implement "
        f"torch.autograd.{name} (the supported surface is listed in docs/api.md)"
    )
