"""``torch.nn.modules.dropout``: dropout layers."""

from ..activation import Dropout
from ..dropout import Dropout1d, Dropout2d

__all__ = ["Dropout", "Dropout1d", "Dropout2d"]
