"""``torch.nn.modules.conv``: convolutions."""

from ..conv import Conv1d, Conv2d

__all__ = ["Conv1d", "Conv2d"]
