"""``torch.nn.modules.batchnorm``: batch normalisation."""

from ..batchnorm import BatchNorm1d, BatchNorm2d

__all__ = ["BatchNorm1d", "BatchNorm2d"]
