"""What a call seen by the capture mode is: an op to record, in-place, backward, or noise.

A ``TorchFunctionMode`` sees every call at the level the user wrote it (``F.linear``,
``Tensor.add``, ``x.T``, ``x[1:3]``), and also calls that are not ops at all: attribute
reads (``x.shape``, ``p.grad``), ``x.dim()``, ``print`` machinery, the profiler markers
the optimizers set. Each function is classified once and the answer cached.
"""

from __future__ import annotations

from typing import Any

import torch

SKIP, OP, INPLACE, BACKWARD, ITER, EMPTY = range(6)
# Creation calls whose memory is not written: their results are not data until written.
_EMPTY = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                    "new_empty_strided"})
# In-place writes to a part of a tensor: an ``empty`` one is still not all data after them.
PARTIAL_WRITES = frozenset({"setitem", "index_put_", "index_copy_", "index_fill_",
                            "index_add_", "masked_fill_", "masked_scatter_", "scatter_",
                            "scatter_add_", "scatter_reduce_", "put_", "diagonal_scatter"})

# Attribute reads that are ops (they build a graph node); every other getter is not.
_OP_GETTERS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
_NOT_OPS = frozenset({
    "__repr__", "__str__", "__format__", "__len__", "__bool__", "__hash__", "__index__",
    "__int__", "__float__", "__complex__", "__reduce_ex__", "__deepcopy__", "__setstate__",
    "__array__", "__array_wrap__", "__contains__", "__dir__", "__reversed__", "size", "dim",
    "numel", "nelement", "ndimension", "item", "tolist", "data_ptr", "stride",
    "storage_offset", "is_contiguous", "element_size", "is_floating_point", "is_complex",
    "untyped_storage", "storage", "get_device", "_is_view", "register_hook",
    "register_post_accumulate_grad_hook", "retain_grad", "requires_grad_", "numpy",
    "_set_grad_enabled", "detach_", "is_nonzero", "is_same_size", "type", "__get__",
    "__set__", "__delete__", "_record_function_enter_new", "_record_function_exit",
    "_record_function_enter", "is_inference", "is_pinned", "is_shared", "share_memory_",
    "pin_memory", "new_zeros", "new_ones",
    "new_full", "new_tensor", "zero_", "fill_", "uniform_", "normal_", "random_",
    "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_",
})
_IN_PLACE_DUNDERS = {
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__idiv__": "div_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_",
    "__ipow__": "pow_", "__iand__": "bitwise_and_", "__ior__": "bitwise_or_",
    "__ixor__": "bitwise_xor_", "__ilshift__": "bitwise_left_shift_",
    "__irshift__": "bitwise_right_shift_", "__imatmul__": "matmul_",
}

_kinds: dict[Any, tuple[int, str]] = {}  # the cache; the capture mode reads it inline


def classify(func: Any) -> tuple[int, str]:
    """(kind, op name) of ``func``; cached."""
    try:
        return _kinds[func]
    except KeyError:
        pass
    except TypeError:  # an unhashable callable: classify it every time
        return _classify(func)
    found = _classify(func)
    if len(_kinds) > 50_000:
        _kinds.clear()
    _kinds[func] = found
    return found


def _classify(func: Any) -> tuple[int, str]:
    if func is torch.Tensor.backward or func is torch.autograd.backward:
        return BACKWARD, "backward"
    if func is torch.autograd.grad:
        return BACKWARD, "grad"
    name = getattr(func, "__name__", "") or ""
    if name == "__get__":
        owner = getattr(getattr(func, "__self__", None), "__name__", "")
        return (OP, owner) if owner in _OP_GETTERS else (SKIP, owner)
    if name == "__iter__":
        return ITER, "unbind"
    if name in _EMPTY:
        return EMPTY, name
    if name in _IN_PLACE_DUNDERS:
        return INPLACE, _IN_PLACE_DUNDERS[name]
    if name == "__setitem__":
        return INPLACE, "setitem"
    if name in _NOT_OPS:  # (and creation-like methods: their results enter as leaves)
        return SKIP, name
    if name.startswith("__") and name.endswith("__"):
        return OP, name[2:-2]
    if name.endswith("_") and not name.endswith("__"):
        return INPLACE, name
    return OP, name or repr(func)[:40]
