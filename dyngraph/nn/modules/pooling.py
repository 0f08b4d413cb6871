"""``torch.nn.modules.pooling``: pooling layers."""

from ..conv import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "MaxPool2d"]
