"""``torch.nn.modules.sparse``: ``Embedding``."""

from ..linear import Embedding

__all__ = ["Embedding"]
