"""Tensor, and ``apply()``: the one place an op runs, builds its graph node and is recorded.

Every Tensor method, operator and function in ``dyngraph`` and ``dyngraph.nn.functional``
ends in ``apply(OPS[name], *inputs, **attrs)``. Nothing else creates graph nodes or emits
op events.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import autograd
from .autograd import Node, grad_mode
from .ops import OPS, OpDef
from .tracing import Handle, now_ns, tracer

_ids = itertools.count(1)
DEFAULT_DTYPE = np.float32


class Tensor:
    """An n-dimensional array that records the ops applied to it.

    >>> import dyngraph as torch
    >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4.])
    """

    __slots__ = (
        "data", "requires_grad", "_grad", "grad_fn", "_id", "_name", "_is_param",
        "_hooks", "_post_hooks", "__weakref__",
    )
    # Let numpy defer to Tensor's reflected operators (ndarray + Tensor -> Tensor.__radd__).
    __array_priority__ = 1000

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        array = _to_array(data, dtype)
        if requires_grad and array.dtype.kind not in "fc":
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        self.data = array
        self.requires_grad = requires_grad
        self._grad: Tensor | None = None
        self.grad_fn: Node | None = None
        self._id = next(_ids)
        self._name = ""
        self._is_param = False
        self._hooks: list[Callable[[Tensor], Any]] | None = None
        self._post_hooks: list[Callable[[Tensor], Any]] | None = None

    # -- grad ---------------------------------------------------------------------------
    @property
    def grad(self) -> Tensor | None:
        if self.grad_fn is not None and self._grad is None and self.grad_fn.retained is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``, as ``torch.Tensor.backward``."""
        if create_graph:
            raise NotImplementedError("backward(create_graph=True) is not supported by dyngraph")
        if self.grad_fn is None and not self.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = np.ones_like(self.data)
        else:
            grad = _to_array(gradient, self.data.dtype)
            if grad.shape != self.data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {grad.shape} and "
                    f"output[0] has a shape of {self.data.shape}."
                )
        autograd.run_backward([self], [grad], bool(retain_graph))

    def retain_grad(self) -> None:
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        import weakref

        self.grad_fn.retained = weakref.ref(self)

    def register_hook(self, hook: Callable[[Tensor], Any]) -> Handle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a return value replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            node = self.grad_fn
            node.hooks = hooks = node.hooks or []
        else:
            self._hooks = hooks = self._hooks or []
        hooks.append(hook)
        return Handle(lambda: hook in hooks and hooks.remove(hook))

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], Any]) -> Handle:
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        self._post_hooks = hooks = self._post_hooks or []
        hooks.append(hook)
        return Handle(lambda: hook in hooks and hooks.remove(hook))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and self.data.dtype.kind not in "fc":
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        return _wrap(self.data)

    # -- plain attributes ----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self.data.shape)

    def size(self, dim: int | None = None) -> Any:
        return Size(self.data.shape) if dim is None else self.data.shape[dim]

    @property
    def dtype(self) -> Any:
        from .dtypes import dtype_of

        return dtype_of(self.data.dtype)

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return int(self.data.size)

    def item(self) -> Any:
        if self.data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.data.size} elements cannot be converted to Scalar"
            )
        return self.data.reshape(()).item()

    def tolist(self) -> Any:
        return self.data.tolist()

    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self.data

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", precision=4, prefix="tensor(")
        extras = []
        if self.data.dtype not in (np.float32, np.int64, np.bool_):
            extras.append(f"dtype=dyngraph.{self.data.dtype}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extras]) + ")"

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self.data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.data.dtype.kind not in "iub" or self.data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__


class Size(tuple):
    """``tensor.shape``: a tuple that prints like PyTorch's ``torch.Size``."""

    def __repr__(self) -> str:
        return f"dyngraph.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


def _to_array(data: Any, dtype: Any = None) -> np.ndarray:
    if isinstance(data, Tensor):
        data = data.data
    if dtype is not None:
        from .dtypes import to_numpy_dtype

        return np.array(data, dtype=to_numpy_dtype(dtype))
    array = np.array(data)
    kind = array.dtype.kind
    if kind == "f" and array.dtype != np.float32 and not isinstance(data, np.ndarray):
        array = array.astype(DEFAULT_DTYPE)  # Python floats become float32, as in PyTorch
    elif kind in "iu" and array.dtype != np.int64 and not isinstance(data, np.ndarray):
        array = array.astype(np.int64)
    elif kind == "O":
        raise TypeError(f"can't convert {type(data).__name__} to a tensor")
    return array


def _wrap(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """Make a Tensor around an existing ndarray without copying or converting it."""
    t = Tensor.__new__(Tensor)
    t.data = array
    t.requires_grad = requires_grad
    t._grad = None
    t.grad_fn = None
    t._id = next(_ids)
    t._name = ""
    t._is_param = False
    t._hooks = None
    t._post_hooks = None
    return t


autograd.wrap = _wrap


def apply(op: OpDef, *inputs: Any, **attrs: Any) -> Tensor:
    """Run ``op`` on ``inputs``: compute, build the graph node, emit the op event.

    Inputs may be Tensors or constants (Python scalars, numpy arrays); ``attrs`` are the
    op's non-tensor arguments (``dim``, ``keepdim`` ...).
    """
    arrays = [x.data if isinstance(x, Tensor) else x for x in inputs]
    listening = tracer.listening
    start = now_ns() if listening else 0
    out_data, backward_fn = op.forward(*arrays, **attrs)
    if type(out_data) is not np.ndarray:
        out_data = np.asarray(out_data)
    out = _wrap(out_data)
    enabled = grad_mode.enabled
    if enabled and backward_fn is not None:
        grad_inputs = tuple(
            x if isinstance(x, Tensor) and x.requires_grad else None for x in inputs
        )
        if any(t is not None for t in grad_inputs):
            out.requires_grad = True
            out.grad_fn = Node(op, backward_fn, grad_inputs, out._id)
    if listening:
        tracer.on_op(op.name, inputs, out, attrs, enabled, now_ns() - start)
    return out


def op(name: str) -> OpDef:
    """Look up a registered op by name (``apply(op("mul"), a, b)``)."""
    try:
        return OPS[name]
    except KeyError:
        raise NotImplementedError(f"dyngraph has no op named {name!r}") from None
