"""Recurrent cells (RNNCell, LSTMCell, GRUCell) and the layers that unroll them (RNN,
LSTM, GRU).

Parameters are laid out as PyTorch's: ``weight_ih`` (gates*hidden, input), ``weight_hh``
(gates*hidden, hidden), ``bias_ih``, ``bias_hh``; gates in PyTorch's order (LSTM i, f, g,
o; GRU r, z, n), so state dicts load either way. Every parameter starts
U(-1/sqrt(hidden), 1/sqrt(hidden)).
"""

from __future__ import annotations

import math
from typing import Any

from ..engine import creation
from ..engine import functions as fn
from ..engine import functions_shape as fs
from ..engine.tensor import Tensor
from . import functional as F
from . import init
from .linear import _empty
from .module import Module


def _gate(t: Tensor, i: int, hidden: int) -> Tensor:
    return t[..., i * hidden:(i + 1) * hidden]


class _CellBase(Module):
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = self._gates * hidden_size
        self.weight_ih = _empty(rows, input_size, dtype=dtype, device=device)
        self.weight_hh = _empty(rows, hidden_size, dtype=dtype, device=device)
        if bias:
            self.bias_ih = _empty(rows, dtype=dtype, device=device)
            self.bias_hh = _empty(rows, dtype=dtype, device=device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _check(self, input: Tensor, hx: Any) -> tuple[Tensor, bool]:
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batched = input.ndim == 2
        return (input if batched else input.reshape(1, -1)), batched

    def _zeros(self, input: Tensor) -> Tensor:
        return creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            text += f", nonlinearity={nonlinearity}"
        return text


def _batch(h: Tensor | None, batched: bool) -> Tensor | None:
    if h is None or batched:
        return h
    return h.reshape(1, -1)


def _unbatch(h: Tensor, batched: bool) -> Tensor:
    return h if batched else h.reshape(-1)


def _rnn_step(xp: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None,
              nonlinearity: str) -> Tensor:
    pre = xp + F.linear(h, w_hh, b_hh)
    return fn.tanh(pre) if nonlinearity == "tanh" else fn.relu(pre)


def _lstm_step(xp: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None
               ) -> tuple[Tensor, Tensor]:
    """One LSTM step from the input projection ``xp`` (gates i, f, g, o)."""
    gates = xp + F.linear(h, w_hh, b_hh)
    hs = h.shape[-1]
    i = fn.sigmoid(_gate(gates, 0, hs))
    f = fn.sigmoid(_gate(gates, 1, hs))
    g = fn.tanh(_gate(gates, 2, hs))
    o = fn.sigmoid(_gate(gates, 3, hs))
    c_next = f * c + i * g
    return o * fn.tanh(c_next), c_next


def _gru_step(xp: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """One GRU step from the input projection ``xp`` (gates r, z, n)."""
    gh = F.linear(h, w_hh, b_hh)
    hs = h.shape[-1]
    r = fn.sigmoid(_gate(xp, 0, hs) + _gate(gh, 0, hs))
    z = fn.sigmoid(_gate(xp, 1, hs) + _gate(gh, 1, hs))
    n = fn.tanh(_gate(xp, 2, hs) + r * _gate(gh, 2, hs))
    return (1 - z) * n + z * h


class RNNCell(_CellBase):
    """``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.__dict__["nonlinearity"] = nonlinearity
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._check(input, hx)
        h = _batch(hx, batched)
        if h is None:
            h = self._zeros(x)
        xp = F.linear(x, self.weight_ih, self.bias_ih)
        out = _rnn_step(xp, h, self.weight_hh, self.bias_hh, self.nonlinearity)
        return _unbatch(out, batched)


class LSTMCell(_CellBase):
    """Returns ``(h', c')``; gates i, f, g, o stacked in ``weight_ih``'s rows."""

    _gates = 4

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        x, batched = self._check(input, hx)
        if hx is None:
            h = c = self._zeros(x)
        else:
            h, c = _batch(hx[0], batched), _batch(hx[1], batched)  # type: ignore[assignment]
        xp = F.linear(x, self.weight_ih, self.bias_ih)
        h_next, c_next = _lstm_step(xp, h, c, self.weight_hh, self.bias_hh)  # type: ignore
        return _unbatch(h_next, batched), _unbatch(c_next, batched)


class GRUCell(_CellBase):
    """``r, z`` gates and the candidate ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""

    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._check(input, hx)
        h = _batch(hx, batched)
        if h is None:
            h = self._zeros(x)
        xp = F.linear(x, self.weight_ih, self.bias_ih)
        h_next = _gru_step(xp, h, self.weight_hh, self.bias_hh)
        return _unbatch(h_next, batched)


class _RNNBase(Module):
    """Multi-layer, optionally bidirectional recurrent layers (``nn.RNN``, ``nn.LSTM``,
    ``nn.GRU``) with PyTorch's parameter names: ``weight_ih_l0``, ``bias_hh_l1_reverse`` ...

    The input projection of a whole sequence is one "linear" op per layer and direction;
    each time step then adds the hidden projection and the gate ops.
    """

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None, nonlinearity: str = "tanh") -> None:
        super().__init__()
        if proj_size:
            raise NotImplementedError("dyngraph's LSTM does not support proj_size")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = 0
        self.nonlinearity = nonlinearity
        dirs = 2 if bidirectional else 1
        rows = self._gates * hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * dirs
            for suffix in ("", "_reverse")[:dirs]:
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                setattr(self, names[0], _empty(rows, width, dtype=dtype, device=device))
                setattr(self, names[1], _empty(rows, hidden_size, dtype=dtype, device=device))
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    setattr(self, names[2], _empty(rows, dtype=dtype, device=device))
                    setattr(self, names[3], _empty(rows, dtype=dtype, device=device))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def flatten_parameters(self) -> None:
        """A no-op: PyTorch packs the weights for cuDNN; numpy needs no packing."""

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _weights(self, layer: int, suffix: str) -> tuple[Any, Any, Any, Any]:
        get = self._parameters.get
        return (get(f"weight_ih_l{layer}{suffix}"), get(f"weight_hh_l{layer}{suffix}"),
                get(f"bias_ih_l{layer}{suffix}"), get(f"bias_hh_l{layer}{suffix}"))

    def _step(self, xp: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None) -> Any:
        raise NotImplementedError

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D instead")
        if not batched:
            input = input.reshape(input.shape[0], 1, input.shape[1])
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        length, batch = input.shape[0], input.shape[1]
        dirs = 2 if self.bidirectional else 1
        initial = self._initial_state(hx, batched, dirs * self.num_layers, batch, input)
        finals: list[Any] = []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(("", "_reverse")[:dirs]):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, suffix)
                xp = F.linear(layer_input, w_ih, b_ih)
                state = initial(layer * dirs + d)
                steps: list[Any] = [None] * length
                for t in (range(length) if d == 0 else range(length - 1, -1, -1)):
                    state = self._step(xp[t], state, w_hh, b_hh)
                    steps[t] = state[0] if isinstance(state, tuple) else state
                outputs.append(fs.stack(steps, 0))
                finals.append(state)
            layer_input = outputs[0] if dirs == 1 else fs.cat(outputs, dim=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout)
        output = layer_input
        if not batched:
            output = output.reshape(length, output.shape[-1])
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, self._final_state(finals, batched)

    def _initial_state(self, hx: Any, batched: bool, count: int, batch: int,
                       input: Tensor) -> Any:
        if hx is None:
            zeros = creation.zeros(batch, self.hidden_size, dtype=input.dtype)
            return lambda i: zeros
        if not batched:
            hx = hx.reshape(hx.shape[0], 1, hx.shape[-1])
        expected = (count, batch, self.hidden_size)
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected hidden size {expected}, got {tuple(hx.shape)}")
        return lambda i: hx[i]

    def _final_state(self, finals: list[Any], batched: bool) -> Any:
        h_n = fs.stack(finals, 0)
        return h_n if batched else h_n.reshape(h_n.shape[0], h_n.shape[-1])

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


class RNN(_RNNBase):
    """Elman RNN: ``output, h_n = rnn(input, h_0)``."""

    def _step(self, xp: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None) -> Any:
        return _rnn_step(xp, state, w_hh, b_hh, self.nonlinearity)


class LSTM(_RNNBase):
    """``output, (h_n, c_n) = lstm(input, (h_0, c_0))``; gates i, f, g, o."""

    _gates = 4

    def _step(self, xp: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None) -> Any:
        return _lstm_step(xp, state[0], state[1], w_hh, b_hh)

    def _initial_state(self, hx: Any, batched: bool, count: int, batch: int,
                       input: Tensor) -> Any:
        if hx is None:
            zeros = creation.zeros(batch, self.hidden_size, dtype=input.dtype)
            return lambda i: (zeros, zeros)
        h0 = super()._initial_state(hx[0], batched, count, batch, input)
        c0 = super()._initial_state(hx[1], batched, count, batch, input)
        return lambda i: (h0(i), c0(i))

    def _final_state(self, finals: list[Any], batched: bool) -> Any:
        return (super()._final_state([s[0] for s in finals], batched),
                super()._final_state([s[1] for s in finals], batched))


class GRU(_RNNBase):
    """``output, h_n = gru(input, h_0)``; gates r, z, n."""

    _gates = 3

    def _step(self, xp: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None) -> Any:
        return _gru_step(xp, state, w_hh, b_hh)
