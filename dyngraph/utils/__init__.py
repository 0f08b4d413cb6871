"""``torch.utils``: ``data`` (datasets, samplers, DataLoader)."""

from ..missing import module_getattr
from . import data

__all__ = ["data"]

__getattr__ = module_getattr(__name__)
