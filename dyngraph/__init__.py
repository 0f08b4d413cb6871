"""dyngraph: see and debug define-by-run computational graphs.

A numpy autograd engine with a PyTorch-shaped API that emits one structured event per
forward op and backward step. ``import dyngraph as torch`` runs small PyTorch scripts.
"""

from __future__ import annotations

from . import methods as _methods  # noqa: F401  (binds Tensor methods)
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import from_numpy, manual_seed, ones, rand, randn, tensor, zeros
from .debug.hooks import breakpoint  # noqa: A001  (a no-op outside the debugger)
from .dtypes import bool_ as bool  # noqa: A001
from .dtypes import double, dtype, float, float16, float32, float64, half, int32, int64, long
from .functions import (
    add, div, exp, log, matmul, mean, mul, neg, pow, relu, reshape, sigmoid, sub, sum, tanh,
    transpose,
)
from .tensor import Size, Tensor
from .tracing import Handle, iteration, subscribe

__version__ = "0.1.0"

from . import nn, optim  # noqa: E402,F401
