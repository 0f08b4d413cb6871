"""Recurrent cells (RNNCell, LSTMCell, GRUCell) and the layers that unroll them.

Parameters are laid out as PyTorch's: ``weight_ih`` (gates*hidden, input), ``weight_hh``
(gates*hidden, hidden), ``bias_ih``, ``bias_hh``; gates in PyTorch's order (LSTM i, f, g,
o; GRU r, z, n), so state dicts load either way. Every parameter starts
U(-1/sqrt(hidden), 1/sqrt(hidden)).
"""

from __future__ import annotations

import math
from typing import Any

from .. import creation
from .. import functions as fn
from ..tensor import Tensor
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
        self.weight_ih = _empty(rows, input_size, dtype=dtype)
        self.weight_hh = _empty(rows, hidden_size, dtype=dtype)
        if bias:
            self.bias_ih = _empty(rows, dtype=dtype)
            self.bias_hh = _empty(rows, dtype=dtype)
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

    def _project(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        return (F.linear(x, self.weight_ih, self.bias_ih),
                F.linear(h, self.weight_hh, self.bias_hh))

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
        a, b = self._project(x, h)
        pre = a + b
        out = fn.tanh(pre) if self.nonlinearity == "tanh" else fn.relu(pre)
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
        a, b = self._project(x, h)  # type: ignore[arg-type]
        gates = a + b
        hs = self.hidden_size
        i = fn.sigmoid(_gate(gates, 0, hs))
        f = fn.sigmoid(_gate(gates, 1, hs))
        g = fn.tanh(_gate(gates, 2, hs))
        o = fn.sigmoid(_gate(gates, 3, hs))
        c_next = f * c + i * g
        h_next = o * fn.tanh(c_next)
        return _unbatch(h_next, batched), _unbatch(c_next, batched)


class GRUCell(_CellBase):
    """``r, z`` gates and the candidate ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""

    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._check(input, hx)
        h = _batch(hx, batched)
        if h is None:
            h = self._zeros(x)
        gi, gh = self._project(x, h)
        hs = self.hidden_size
        r = fn.sigmoid(_gate(gi, 0, hs) + _gate(gh, 0, hs))
        z = fn.sigmoid(_gate(gi, 1, hs) + _gate(gh, 1, hs))
        n = fn.tanh(_gate(gi, 2, hs) + r * _gate(gh, 2, hs))
        h_next = (1 - z) * n + z * h
        return _unbatch(h_next, batched)
