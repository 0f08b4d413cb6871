"""``torch.autograd``'s public surface, so ``import dyngraph as torch`` finds
``torch.autograd.grad`` and ``from torch.autograd import grad`` works. The engine itself
(graph nodes, the iterative backward pass) lives in ``dyngraph/engine/autograd.py``.
"""

from __future__ import annotations

from .engine.autograd import (
    backward,
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .missing import module_getattr

__all__ = [
    "backward", "enable_grad", "grad", "inference_mode", "is_grad_enabled", "no_grad",
    "set_grad_enabled",
]


__getattr__ = module_getattr(__name__)  # names a missing torch.* piece
