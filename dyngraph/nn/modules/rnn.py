"""``torch.nn.modules.rnn``: recurrent layers and cells (and their base, ``RNNBase``)."""

from ..rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from ..rnn import _RNNBase as RNNBase

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell"]
