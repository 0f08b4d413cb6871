"""``torch.nn.modules.module``: the Module base class, for type checks and subclassing."""

from ..module import Module

__all__ = ["Module"]
