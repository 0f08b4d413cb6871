# ruff: noqa: F401  (this module re-exports the public API)
"""dyngraph: see and debug define-by-run computational graphs.

A numpy autograd engine with a PyTorch-shaped API that emits one structured event per
forward op and backward step. ``import dyngraph as torch`` runs small PyTorch scripts.
"""

from __future__ import annotations

from . import methods as _methods  # noqa: F401  (binds Tensor methods)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .compat import cuda, device, get_default_dtype, set_default_dtype
from .creation import (
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from .debug.hooks import breakpoint  # noqa: A001  (a no-op outside the debugger)
from .dtypes import bool_ as bool  # noqa: A001
from .dtypes import double, dtype, float, float16, float32, float64, half, int32, int64, long, uint8
from .functions import (
    abs,
    absolute,
    add,
    all,
    allclose,
    amax,
    amin,
    any,
    argmax,
    argmin,
    as_tensor,
    bmm,
    ceil,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    clone,
    cos,
    cumsum,
    detach,
    div,
    divide,
    dot,
    eq,
    equal,
    exp,
    floor,
    floor_divide,
    ge,
    gelu,
    greater,
    gt,
    is_floating_point,
    is_tensor,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    leaky_relu,
    less,
    log,
    log_softmax,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logsumexp,
    lt,
    masked_fill,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mul,
    multiply,
    ne,
    neg,
    negative,
    norm,
    not_equal,
    numel,
    outer,
    pow,
    prod,
    relu,
    remainder,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    softmax,
    sqrt,
    square,
    std,
    sub,
    subtract,
    sum,
    tanh,
    true_divide,
    trunc,
    var,
    where,
)
from .functions_shape import (
    broadcast_to,
    cat,
    chunk,
    concat,
    concatenate,
    flatten,
    flip,
    gather,
    hstack,
    index_select,
    movedim,
    narrow,
    permute,
    reshape,
    select,
    split,
    squeeze,
    stack,
    swapaxes,
    swapdims,
    t,
    tensor_split,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
    vstack,
)
from .tensor import Size, Tensor
from .trace import Trace, read_trace, record, trace
from .tracing import Handle, iteration, subscribe

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Only reached for names dyngraph lacks: say so, instead of a bare AttributeError.
    raise AttributeError(
        f"module 'dyngraph' has no attribute '{name}': dyngraph does not implement "
        f"torch.{name} (the supported surface is listed in docs/api.md)"
    )

from . import nn, optim  # noqa: E402,F401
