"""``torch.nn.modules.linear``: ``Linear`` and ``Identity``."""

from ..linear import Identity, Linear

__all__ = ["Identity", "Linear"]
