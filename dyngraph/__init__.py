# ruff: noqa: F401  (this module re-exports the public API)
"""dyngraph: see and debug define-by-run computational graphs.

A numpy autograd engine with a PyTorch-shaped API that emits one structured event per
forward op and backward step. ``import dyngraph as torch`` runs small PyTorch scripts.
"""

from __future__ import annotations

from typing import Any

from . import missing
from .capture.traces import Trace, read_trace, record
from .capture.tracing import Handle, iteration, subscribe
from .debug.hooks import breakpoint  # noqa: A001  (a no-op outside the debugger)
from .engine import methods as _methods  # noqa: F401  (binds Tensor methods)
from .engine.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .engine.compat import (
    compile,
    device,
    get_default_dtype,
    get_float32_matmul_precision,
    set_default_dtype,
    set_float32_matmul_precision,
)
from .engine.creation import (
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
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
from .engine.dtypes import (
    bfloat16,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    half,
    int32,
    int64,
    long,
    uint8,
)
from .engine.dtypes import bool_ as bool  # noqa: A001
from .engine.functions import (
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
    argsort,
    as_tensor,
    bernoulli,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
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
    einsum,
    eq,
    equal,
    exp,
    expm1,
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
    log1p,
    log2,
    log10,
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
    multinomial,
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
    scatter_add,
    sigmoid,
    sign,
    sin,
    softmax,
    sort,
    sqrt,
    square,
    std,
    sub,
    subtract,
    sum,
    tanh,
    topk,
    true_divide,
    trunc,
    var,
    where,
)
from .engine.functions_linalg import diag, diag_embed, diagonal
from .engine.functions_shape import (
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
from .engine.generator import Generator, default_generator, initial_seed, manual_seed
from .engine.legacy import (
    BoolTensor,
    ByteTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
)
from .engine.promotion import can_cast, promote_types, result_type
from .engine.tensor import Size, Tensor
from .version import __version__


def trace(*args: Any, **kwargs: Any) -> Any:
    """Two functions share this name. ``with dyngraph.trace(stats=...) as t:`` records the
    events of the block (see ``capture.traces.trace``); ``dyngraph.trace(matrix)`` is
    ``torch.trace``, the sum of the main diagonal."""
    if (args and isinstance(args[0], Tensor)) or "input" in kwargs:
        from .engine.functions_linalg import trace as matrix_trace

        return matrix_trace(*args, **kwargs)
    from .capture.traces import trace as record_events

    return record_events(*args, **kwargs)


def show(trace_or_path: Any, **options: Any) -> Any:
    """Show a trace (or a ``.dgtrace`` path) in the interactive viewer below a notebook
    cell: an anywidget with ``dyngraph[notebook]`` installed, self-contained HTML without.
    Options: ``graph="forward"|"backward"``, ``iterations="1-10,15"|"changed"|[...]``,
    ``height=620``, ``widget=None|True|False`` (see ``dyngraph.viewer.notebook.show``)."""
    from .viewer.notebook import show as show_viewer

    return show_viewer(trace_or_path, **options)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext dyngraph`` registers the ``%%dyngraph`` cell magic."""
    from .viewer.notebook import load_ipython_extension as register

    register(ipython)


def _register_magic_in_ipython() -> None:
    """Inside IPython (a notebook, a console), ``import dyngraph`` makes ``%%dyngraph``
    available at once, as ``%load_ext dyngraph`` would. Outside, it costs a dict lookup."""
    import sys

    module = sys.modules.get("IPython")
    shell = getattr(module, "get_ipython", lambda: None)() if module is not None else None
    if shell is not None and hasattr(shell, "register_magic_function"):
        load_ipython_extension(shell)


# Only reached for names dyngraph lacks: say so, instead of a bare AttributeError.
__getattr__ = missing.module_getattr(__name__)
missing.install_submodule_finder()  # import dyngraph.onnx: "dyngraph does not implement ..."

from . import (  # noqa: E402
    accelerator,
    amp,
    autograd,
    backends,
    cuda,
    distributed,
    distributions,
    nn,
    optim,
    serialization,
    sparse,
    utils,
)
from . import torch_backend as _torch_backend  # noqa: E402,F401  (registers; imports no torch)
from .amp import autocast  # noqa: E402
from .serialization import load, save  # noqa: E402
from .sparse import sparse_coo, sparse_coo_tensor, spmm, strided  # noqa: E402

_register_magic_in_ipython()
