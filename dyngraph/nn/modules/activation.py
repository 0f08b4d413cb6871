"""``torch.nn.modules.activation``: activations (and ``MultiheadAttention``)."""

from ..activation import (
    ELU,
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from ..attention import MultiheadAttention

__all__ = ["ELU", "GELU", "LeakyReLU", "LogSoftmax", "MultiheadAttention", "ReLU", "SiLU",
           "Sigmoid", "Softmax", "Softplus", "Tanh"]
