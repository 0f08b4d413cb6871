"""Channel dropout layers: ``Dropout1d`` and ``Dropout2d`` zero whole channels while
training (``Dropout`` itself lives in ``activation.py``)."""

from __future__ import annotations

from ..engine.tensor import Tensor
from . import functional as F
from .activation import Dropout


class Dropout1d(Dropout):
    """Zeroes each channel of an (N, C, L) or (C, L) input with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training)


class Dropout2d(Dropout):
    """Zeroes each channel of an (N, C, H, W) or (C, H, W) input with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training)
