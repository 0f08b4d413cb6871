"""``dyngraph.nn``: modules, parameters, containers, losses, ``functional`` and ``init``.

>>> import dyngraph.nn as nn
>>> nn.Sequential(nn.Linear(2, 3), nn.ReLU())
Sequential(
  (0): Linear(in_features=2, out_features=3, bias=True)
  (1): ReLU()
)
"""


from ..missing import module_getattr
from . import functional, init, modules, parallel, utils  # noqa: F401
from .activation import (
    ELU,
    GELU,
    Dropout,
    LayerNorm,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .attention import MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d, GroupNorm
from .container import ModuleDict, ModuleList, ParameterList, Sequential
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d
from .dropout import Dropout1d, Dropout2d
from .linear import Embedding, Flatten, Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module
from .parameter import Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d",
    "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout", "Dropout1d", "Dropout2d", "ELU",
    "Embedding", "Flatten", "GELU",
    "GRU", "GRUCell", "GroupNorm", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LSTM",
    "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "MultiheadAttention", "NLLLoss", "Parameter", "ParameterList",
    "RNN", "RNNCell", "ReLU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax",
    "Softplus", "Tanh", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer",
    "functional", "init", "modules", "utils",
]


__getattr__ = module_getattr(__name__)  # names a missing torch.* piece
