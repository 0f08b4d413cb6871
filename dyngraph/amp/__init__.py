"""``torch.amp``: mixed precision, which dyngraph (float32 numpy on the CPU) does not do.

``GradScaler`` behaves as PyTorch's with ``enabled=False``: ``scale`` is the identity and
``step``/``update`` just step the optimizer. ``autocast`` is a context manager and
decorator that changes nothing. Scripts written for a GPU run unchanged, in float32.
"""

from ..missing import module_getattr
from .autocast_mode import autocast
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast"]

__getattr__ = module_getattr(__name__)
