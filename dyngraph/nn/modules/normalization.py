"""``torch.nn.modules.normalization``: ``LayerNorm`` and ``GroupNorm``."""

from ..activation import LayerNorm
from ..batchnorm import GroupNorm

__all__ = ["GroupNorm", "LayerNorm"]
