"""``torch.nn.modules.flatten``: ``Flatten``."""

from ..linear import Flatten

__all__ = ["Flatten"]
