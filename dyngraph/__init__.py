"""dyngraph: see and debug define-by-run computational graphs.

A numpy autograd engine with a PyTorch-shaped API that emits one structured event per
forward op and backward step. ``import dyngraph as torch`` runs small PyTorch scripts.

The public names are loaded on first use (a module ``__getattr__``): the ``dyngraph``
command, and the child process that runs a PyTorch script under it, import this package
for its capture layer and never touch the numpy engine, ``nn``, ``optim`` or
``distributions``, which cost about half a second of start-up per process. The first
engine name a script reads (``torch.tensor``, ``torch.nn`` ...) loads all of them at once,
so what ``import dyngraph`` gives a script is the same as when it was loaded eagerly.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import missing
from . import torch_backend as _torch_backend  # noqa: F401  (registers; imports no torch)
from .version import __version__ as __version__

# Where each public name lives, by module: ``name`` or ``name=attribute``. The capture
# layer's names load alone; the first engine name or submodule loads them all (every
# module of _ENGINE and of _SUBMODULES: see _everything.py), as ``import dyngraph`` did.
_CAPTURE = {
    ".capture.traces": "Trace read_trace record",
    ".capture.tracing": "Handle iteration subscribe",
    ".debug.hooks": "breakpoint",  # a no-op outside the debugger
}
_ENGINE = {
    ".engine.autograd": "enable_grad inference_mode is_grad_enabled no_grad set_grad_enabled",
    ".engine.compat": """
        compile device get_default_dtype get_float32_matmul_precision set_default_dtype
        set_float32_matmul_precision""",
    ".engine.creation": """
        arange empty empty_like eye from_numpy full full_like linspace normal ones ones_like
        rand rand_like randint randn randn_like randperm seed tensor zeros zeros_like""",
    ".engine.dtypes": """
        bfloat16 double dtype float float16 float32 float64 half int32 int64 long uint8
        bool=bool_""",
    ".engine.functions": """
        abs absolute add all allclose amax amin any argmax argmin argsort as_tensor
        bernoulli bitwise_and bitwise_not bitwise_or bitwise_xor bmm ceil clamp clamp_max
        clamp_min clip clone cos cumsum detach div divide dot einsum eq equal exp expm1
        floor floor_divide ge gelu greater gt is_floating_point is_tensor isclose isfinite
        isinf isnan le leaky_relu less log log1p log2 log10 log_softmax logical_and
        logical_not logical_or logical_xor logsumexp lt masked_fill matmul max maximum mean
        min minimum mm mul multinomial multiply ne neg negative norm not_equal numel outer
        pow prod relu remainder round rsqrt scatter_add sigmoid sign sin softmax sort sqrt
        square std sub subtract sum tanh topk true_divide trunc var where""",
    ".engine.functions_linalg": "diag diag_embed diagonal",
    ".engine.functions_shape": """
        broadcast_to cat chunk concat concatenate flatten flip gather hstack index_select
        movedim narrow permute reshape select split squeeze stack swapaxes swapdims t
        tensor_split transpose tril triu unbind unflatten unsqueeze vstack""",
    ".engine.generator": "Generator default_generator initial_seed manual_seed",
    ".engine.legacy": """
        BoolTensor ByteTensor DoubleTensor FloatTensor HalfTensor IntTensor LongTensor""",
    ".engine.promotion": "can_cast promote_types result_type",
    ".engine.tensor": "Size Tensor",
    ".amp": "autocast",
    ".serialization": "load save",
    ".sparse": "sparse_coo sparse_coo_tensor spmm strided",
}
# torch's submodules that dyngraph has; ``dyngraph.nn`` works without an import, as
# ``torch.nn`` does.
_SUBMODULES = frozenset("""
    accelerator amp autograd backends cuda distributed distributions nn optim serialization
    sparse utils""".split())


def _table(modules: dict[str, str]) -> dict[str, tuple[str, str]]:
    """public name -> (module, attribute)."""
    where = {}
    for module, names in modules.items():
        for entry in names.split():
            name, _, attribute = entry.partition("=")
            where[name] = (module, attribute or name)
    return where


_CAPTURE_NAMES = _table(_CAPTURE)
_ENGINE_NAMES = _table(_ENGINE)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES or name in _ENGINE_NAMES:
        importlib.import_module("._everything", __name__)  # (once; or wait for its thread)
        if name in globals():
            return globals()[name]
        # Asked for by a module that this thread's load is importing: that one alone.
        if name in _SUBMODULES:  # (importing sets it as an attribute)
            return importlib.import_module(f".{name}", __name__)
        module, attribute = _ENGINE_NAMES[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    if name in _CAPTURE_NAMES:
        module, attribute = _CAPTURE_NAMES[name]
        value = globals()[name] = getattr(importlib.import_module(module, __name__), attribute)
        return value
    # Only reached for names dyngraph lacks: say so, instead of a bare AttributeError.
    return missing.module_getattr(__name__)(name)


__all__ = sorted([*_CAPTURE_NAMES, *_ENGINE_NAMES, *_SUBMODULES,
                  "trace", "show", "load_ipython_extension", "__version__"])


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def trace(*args: Any, **kwargs: Any) -> Any:
    """Two functions share this name. ``with dyngraph.trace(stats=...) as t:`` records the
    events of the block (see ``capture.traces.trace``); ``dyngraph.trace(matrix)`` is
    ``torch.trace``, the sum of the main diagonal."""
    import sys

    engine = sys.modules.get("dyngraph.engine.tensor")  # loaded if args[0] is a Tensor
    if "input" in kwargs or (args and engine is not None and isinstance(args[0], engine.Tensor)):
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


missing.install_submodule_finder()  # import dyngraph.onnx: "dyngraph does not implement ..."
_register_magic_in_ipython()
