"""Tensor, and ``apply()``: the one place an op runs, builds its graph node and is recorded.

Every Tensor method, operator and function in ``dyngraph`` and ``dyngraph.nn.functional``
ends in ``apply(OPS[name], *inputs, **attrs)``. Nothing else creates graph nodes or emits
op events. In-place ops (``add_``, ``zero_`` ... in ``inplace.py``) change the array directly
when no graph is involved (optimizers under ``no_grad``), so they are not graph ops.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..capture.tracing import Handle, now_ns, tensor_ids, tracer
from . import autograd, numpy_warnings, versions
from . import recording as _recording
from .autograd import Node, grad_mode
from .dtypes import COMPLEX_MESSAGE, promoted
from .errors import TorchValueError, translate
from .ops import OPS, OpDef
from .recording import op as _record_op

_ids = tensor_ids
_new_node = Node.__new__
DEFAULT_DTYPE = np.float32
_F64 = np.dtype(np.float64)
_ndarray = np.ndarray
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)

LEAF_INPLACE_MESSAGE = (
    "a leaf Variable that requires grad is being used in an in-place operation."
)
NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)
INT_GRAD_MESSAGE = "Only Tensors of floating point and complex dtype can require gradients"


class Tensor:
    """An n-dimensional array that records the ops applied to it.

    The values live in the ``np.ndarray`` ``_array``; ``.data`` is, as in PyTorch, a
    Tensor sharing that memory outside the graph.

    >>> import dyngraph as torch
    >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4.])
    """

    # Hot fields are slots; rare ones (a name, hooks) default on the class and go to a
    # lazily created __dict__ when set, so making a tensor costs five stores.
    __slots__ = ("_array", "requires_grad", "grad_fn", "_id", "__dict__", "__weakref__")
    _grad: Tensor | None = None
    _name = ""
    _is_param = False
    _hooks: list[Callable[[Tensor], Any]] | None = None
    _post_hooks: list[Callable[[Tensor], Any]] | None = None
    _view_info: Any = None  # views.ViewInfo on a view (its base, how it was taken)
    _views: list[weakref.ref[Tensor]] | None = None  # a base's views made in grad mode
    _untracked = False  # ``.data``: in-place changes through it bump no version (PyTorch)
    # A view that requires grad only because its base was made to after it (PyTorch's view
    # whose grad_fn stayed None): a leaf whose gradient goes nowhere (views.py).
    _borrowed = False
    # Let numpy defer to Tensor's reflected operators (ndarray + Tensor -> Tensor.__radd__).
    __array_priority__ = 1000

    if TYPE_CHECKING:  # bound at import by methods.py; declared here for type checkers
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __eq__(self, other: object) -> Any: ...  # type: ignore[override]
        def __ne__(self, other: object) -> Any: ...  # type: ignore[override]
        def __getitem__(self, index: Any) -> Tensor: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def __iadd__(self, other: Any) -> Tensor: ...
        def __isub__(self, other: Any) -> Tensor: ...
        def __imul__(self, other: Any) -> Tensor: ...
        def __itruediv__(self, other: Any) -> Tensor: ...
        T: Tensor
        mT: Tensor

    def __init__(self, *data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        if len(data) == 1 and not isinstance(data[0], int):
            array = _to_array(data[0], dtype)
            if dtype is None and array.dtype.kind in "iub" and type(self) is Tensor:
                array = array.astype(DEFAULT_DTYPE)  # torch.Tensor([1, 2]) is float32
        else:  # torch.Tensor(2, 3): an uninitialised (here: zero) tensor of that shape
            from .dtypes import to_numpy_dtype

            np_dtype = DEFAULT_DTYPE if dtype is None else to_numpy_dtype(dtype)
            array = np.zeros(tuple(int(d) for d in data), dtype=np_dtype)
        if requires_grad and array.dtype.kind not in "fc":
            raise RuntimeError(INT_GRAD_MESSAGE)
        self._array = array
        self.requires_grad = bool(requires_grad)
        self.grad_fn: Node | None = None
        self._id = next(_ids)

    # -- grad ---------------------------------------------------------------------------
    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (leaves, and non-leaves after ``retain_grad()``)."""
        node = self.grad_fn
        if node is not None and self._grad is None and node.retained is None:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            if value._array.shape != self._array.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``, as ``torch.Tensor.backward``."""
        autograd.backward(self, None if gradient is None else (gradient,), retain_graph,
                          create_graph, inputs)

    def retain_grad(self) -> None:
        """Keep this non-leaf's gradient in ``.grad`` during backward."""
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self.grad_fn.retained = weakref.ref(self)
        self.grad_fn.special = True

    @property
    def retains_grad(self) -> bool:
        node = self.grad_fn
        return node is not None and node.retained is not None and node.retained() is self

    def register_hook(self, hook: Callable[[Tensor], Any]) -> Handle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a return value replaces it.

        >>> import dyngraph as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 2)
        >>> x.sum().backward(); x.grad
        tensor([2., 2.])
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            node = self.grad_fn
            node.hooks = hooks = node.hooks or []
            node.special = True
        else:
            self._hooks = hooks = self._hooks or []
        hooks.append(hook)
        return Handle(lambda: _discard(hooks, hook))

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], Any]) -> Handle:
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        self._post_hooks = hooks = self._post_hooks or []
        hooks.append(hook)
        return Handle(lambda: _discard(hooks, hook))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and self._array.dtype.kind not in "fc":
            raise RuntimeError(INT_GRAD_MESSAGE)
        self.requires_grad = bool(requires_grad)
        self.__dict__.pop("_borrowed", None)  # a view's own flag now: a leaf of its own
        if self._views:  # its views made in grad mode require grad as it does (PyTorch)
            from .views import lend_requires_grad

            lend_requires_grad(self)
        return self

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's memory, outside the graph (``torch.Tensor.data``).

        ``p.data.add_(g, alpha=-lr)`` and ``p.data -= lr * p.grad`` update ``p`` itself and
        are not recorded; prefer ``with torch.no_grad():``, as in PyTorch. As in PyTorch,
        changes made through ``.data`` are invisible to the version counter.
        """
        t = _wrap(self._array)
        t._untracked = True
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._array = value._array

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's data, cut out of the graph."""
        return _wrap(self._array)

    def detach_(self) -> Tensor:
        if self._view_info is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is "
                "set as True, gradients are views of DDP buckets, and hence detach_() cannot "
                "be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self.grad_fn = None
        self.requires_grad = False
        return self

    # -- plain attributes ----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._array.shape)

    def size(self, dim: int | None = None) -> Any:
        return Size(self._array.shape) if dim is None else self._array.shape[dim]

    @property
    def dtype(self) -> Any:
        from .dtypes import dtype_of

        return dtype_of(self._array.dtype)

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def dim(self) -> int:
        return self._array.ndim

    def numel(self) -> int:
        return int(self._array.size)

    nelement = numel

    def element_size(self) -> int:
        return int(self._array.itemsize)

    def is_floating_point(self) -> bool:
        return self._array.dtype.kind == "f"

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Is the memory laid out row-major without gaps (a transpose or an expand is not)?"""
        return bool(self._array.flags.c_contiguous)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """This tensor if it is contiguous, else a row-major copy (``CloneBackward0``)."""
        if self._array.flags.c_contiguous:
            return self
        return apply(OPS["clone"], self)

    @property
    def _base(self) -> Tensor | None:
        """The tensor this one is a view of (None if it is not a view), as in PyTorch."""
        view = self._view_info
        return None if view is None else view.base

    def _is_view(self) -> bool:
        return self._view_info is not None

    @property
    def _version(self) -> int:
        """How many in-place ops changed this tensor's memory (PyTorch's version counter)."""
        return versions.version(self._array)

    def data_ptr(self) -> int:
        return int(self._array.__array_interface__["data"][0])

    def cpu(self) -> Tensor:
        return self

    def item(self) -> Any:
        if self._array.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._array.size} elements cannot be converted to Scalar"
            )
        return self._array.reshape(()).item()

    def tolist(self) -> Any:
        return self._array.tolist()

    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._array

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._array if dtype is None else self._array.astype(dtype)

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._array.shape[0]))

    def __repr__(self) -> str:
        data = self._array
        fixed = data.dtype.kind == "f" and bool(np.any(data[np.isfinite(data)] % 1))
        body = np.array2string(data, separator=", ", precision=4, prefix="tensor(",
                               threshold=1000, edgeitems=3,
                               floatmode="fixed" if fixed else "maxprec")
        extras = []
        if data.size == 0:
            extras.append(f"size={tuple(data.shape)}")
        if data.dtype not in (np.float32, np.int64, np.bool_):
            extras.append(f"dtype={self.dtype!r}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extras]) + ")"

    def __format__(self, spec: str) -> str:
        if self._array.ndim == 0:
            return format(self._array.item(), spec)
        return format(repr(self), spec)

    def __bool__(self) -> bool:
        if self._array.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._array.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub" or self._array.size != 1:
            raise TypeError(
                "only integer tensors of a single element can be converted to an index"
            )
        return int(self.item())

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment."
            )
        new = type(self).__new__(type(self))
        _init_slots(new, self._array.copy(), self.requires_grad)
        if self._grad is not None:
            new._grad = _wrap(self._grad._array.copy())
        import copy

        # The dict holds rare fields (name, hooks) and whatever subclasses add; the copy is
        # no view of anything (its memory is its own).
        rare = {k: v for k, v in self.__dict__.items()
                if k not in ("_view_info", "_views", "_untracked")}
        new.__dict__.update(copy.deepcopy(rare, memo))
        memo[id(self)] = new
        return new

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup failed: name the missing piece instead of a bare
        # AttributeError, so ported PyTorch code says exactly what dyngraph lacks.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"'Tensor' object has no attribute '{name}': dyngraph does not implement "
            f"Tensor.{name} (the supported surface is listed in docs/api.md)"
        )

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


def _discard(hooks: list[Any], hook: Any) -> None:
    if hook in hooks:
        hooks.remove(hook)


def _to_array(data: Any, dtype: Any = None) -> np.ndarray:
    """Copy ``data`` into a fresh ndarray with PyTorch's default dtypes."""
    if isinstance(data, Tensor):
        data = data._array
    elif isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [x._array if isinstance(x, Tensor) else x for x in data]
    if dtype is not None:
        from .dtypes import to_numpy_dtype

        target = to_numpy_dtype(dtype)
        try:
            return np.array(data, dtype=target)
        except (OverflowError, ValueError):  # numbers that do not fit: PyTorch's verdict
            return _checked_array(data, target)
    array = np.array(data)
    kind = array.dtype.kind
    if kind == "f" and array.dtype != _F32 and not isinstance(data, (np.ndarray, np.generic)):
        array = array.astype(DEFAULT_DTYPE)  # Python floats become float32, as in PyTorch
    elif kind in "iu" and array.dtype != np.int64 and not isinstance(data, np.ndarray):
        if array.dtype == np.uint64:  # Python ints of 2**63 and more
            raise ValueError("Overflow when unpacking long long")
        array = array.astype(np.int64)
    elif kind == "O" and not isinstance(data, np.ndarray):
        return _checked_array(data, None)
    elif kind not in "fiub":
        raise TypeError(f"can't convert {type(data).__name__} to a tensor")
    return array


def _checked_array(data: Any, target: np.dtype | None) -> np.ndarray:
    """``tensor(data, dtype=target)`` for numbers numpy would not convert: ints outside
    64 bits (PyTorch cannot unpack them, unless beside a float: then all are floats),
    and numbers outside ``target``'s range (PyTorch's checked conversion: an unsigned type
    takes negatives down to -max, wrapped; a NaN or an infinity never fits an integer)."""
    wide = np.array(data, dtype=object) if not isinstance(data, np.ndarray) else data
    flat = list(wide.reshape(-1)) if isinstance(wide, np.ndarray) else [wide]
    floats = any(isinstance(v, (float, np.floating)) for v in flat)
    if not floats and any(not -2**63 <= int(v) < 2**63 for v in flat):
        raise ValueError("Overflow when unpacking long long")
    values = np.array(data, dtype=np.float64 if floats else np.int64)
    if target is None:
        return values.astype(DEFAULT_DTYPE if floats else np.int64)
    if target.kind in "iu" and values.size:
        info = np.iinfo(target)
        low = -int(info.max) if target.kind == "u" and not floats else int(info.min)
        if (floats and bool(np.isnan(values).any())) or values.min() < low or \
                values.max() > info.max:
            raise RuntimeError(f"value cannot be converted to type {target.name} without "
                               "overflow")
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(target)


def _init_slots(t: Tensor, array: np.ndarray, requires_grad: bool) -> None:
    t._array = array
    t.requires_grad = requires_grad
    t.grad_fn = None
    t._id = next(_ids)


def _wrap(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """Make a Tensor around an existing ndarray without copying or converting it."""
    t = Tensor.__new__(Tensor)
    t._array = array
    t.requires_grad = requires_grad
    t.grad_fn = None
    t._id = next(_ids)
    return t


autograd.wrap = _wrap
# numpy's RuntimeWarnings (x / 0) point at the user's line, not the engine's; see the module.
numpy_warnings.install()
_recording.Tensor = Tensor


def apply(op: OpDef, *inputs: Any, **attrs: Any) -> Tensor:
    """Run ``op`` on ``inputs``: compute, build the graph node, emit the op event.

    Inputs may be Tensors or constants (Python scalars, numpy arrays); ``attrs`` are the
    op's non-tensor arguments (``dim``, ``keepdim`` ...). This is the engine's hot path
    (a tiny op's whole forward cost is mostly here), hence the unrolled one- and
    two-input cases: no per-call lists, generators or repeated lookups.
    """
    listening = tracer.listening
    if listening:
        start = now_ns()
    enabled = grad_mode.enabled
    n = len(inputs)
    edges: tuple[Any, ...] | None
    try:  # free unless raised: numpy's errors become PyTorch's
        if n == 2:
            x, y = inputs
            if isinstance(x, Tensor):
                ex = x.grad_fn or x if x.requires_grad and enabled else None
                x = x._array
            else:
                ex = None
            if isinstance(y, Tensor):
                ey = y.grad_fn or y if y.requires_grad and enabled else None
                y = y._array
                if type(x) is _ndarray and x.dtype is not y.dtype and op.promotes:
                    x, y = promoted(x, y)
            else:
                ey = None
            if op.needs_input_grad:  # matmul, linear ...: backward only what is needed
                out_data, backward_fn = op.forward(
                    x, y, needs_input_grad=(ex is not None, ey is not None), **attrs)
            elif attrs:
                out_data, backward_fn = op.forward(x, y, **attrs)
            else:
                out_data, backward_fn = op.forward(x, y)
            edges = (ex, ey) if ex is not None or ey is not None else None
        elif n == 1 and not op.needs_input_grad:
            (x,) = inputs
            if isinstance(x, Tensor):
                edges = (x.grad_fn or x,) if x.requires_grad and enabled else None
                x = x._array
            else:
                edges = None
            out_data, backward_fn = op.forward(x, **attrs) if attrs else op.forward(x)
        else:
            out_data, backward_fn, edges = _forward_any(op, inputs, attrs, enabled)
    except (ValueError, ZeroDivisionError) as e:
        if isinstance(e, TorchValueError):
            raise
        raise translate(op.name, inputs, e) from None
    except OverflowError:  # a Python int beyond an integer tensor's type: numpy refuses it
        return apply(op, *_wrapped_ints(op, inputs), **attrs)
    except RefusedUse as e:  # a view whose use in a graph PyTorch refuses (views.py)
        return _past_refused(op, inputs, attrs, e)
    if type(out_data) is not _ndarray:  # a numpy scalar, from an op on 0-d arrays
        scalar, out_data = out_data, np.asarray(out_data)
        if backward_fn is not None:  # a saved output must be the tensor's own memory
            versions.rebind(backward_fn, scalar, out_data)
    dt = out_data.dtype
    if dt is not _F32 and (dt is _F64 or dt is _F16 or dt.kind == "c") and not op.exact:
        out_data = _demote(inputs, out_data)
    out = Tensor.__new__(Tensor)
    out._array = out_data
    out._id = oid = next(_ids)
    if edges is not None and backward_fn is not None:
        out.requires_grad = True
        # Node.__init__, inlined: one Python call fewer on every recorded op.
        out.grad_fn = node = _new_node(Node)
        node.op = op
        node.backward_fn = backward_fn
        node.inputs = edges
        node.out_id = oid
        node.shape = out_data.shape
        node.dtype = out_data.dtype
    else:
        out.requires_grad = False
        out.grad_fn = None
    if listening:
        _record_op(op.name, inputs, out, attrs, enabled, now_ns() - start)
    return out


def _apply_binary(op: OpDef, x: Any, y: Any) -> Tensor:
    """``apply(op, x, y)`` for the arithmetic operators (``a + b``, ``a @ b``): the same
    result, graph node and dtype, without packing ``*inputs`` and ``**attrs`` (a tiny op
    pays for that tuple and dict on every call; a recorded op too). A failing forward runs
    again inside ``apply``, so that its errors are translated there and name the op as
    ever (forwards are pure: running one twice changes nothing)."""
    listening = tracer.listening
    if listening:
        start = now_ns()
    enabled = grad_mode.enabled
    failed = False
    try:
        if isinstance(x, Tensor):
            ex = x.grad_fn or x if x.requires_grad and enabled else None
            a = x._array
        else:
            ex, a = None, x
        if isinstance(y, Tensor):
            ey = y.grad_fn or y if y.requires_grad and enabled else None
            b = y._array
            if type(a) is _ndarray and a.dtype is not b.dtype and op.promotes:
                a, b = promoted(a, b)
        else:
            ey, b = None, y
        if op.needs_input_grad:
            out_data, backward_fn = op.forward(
                a, b, needs_input_grad=(ex is not None, ey is not None))
        else:
            out_data, backward_fn = op.forward(a, b)
    except Exception:  # noqa: BLE001  (apply raises it again, as it always has)
        failed = True
    if failed:  # (outside the handler: the error apply raises chains to nothing of ours)
        return apply(op, x, y)
    if type(out_data) is not _ndarray:  # a numpy scalar, from an op on 0-d arrays
        scalar, out_data = out_data, np.asarray(out_data)
        if backward_fn is not None:
            versions.rebind(backward_fn, scalar, out_data)
    dt = out_data.dtype
    if dt is not _F32 and (dt is _F64 or dt is _F16 or dt.kind == "c") and not op.exact:
        out_data = _demote((x, y), out_data)
    out = Tensor.__new__(Tensor)
    out._array = out_data
    out._id = oid = next(_ids)
    if (ex is not None or ey is not None) and backward_fn is not None:
        out.requires_grad = True
        out.grad_fn = node = _new_node(Node)  # (as in apply)
        node.op = op
        node.backward_fn = backward_fn
        node.inputs = (ex, ey)
        node.out_id = oid
        node.shape = out_data.shape
        node.dtype = out_data.dtype
    else:
        out.requires_grad = False
        out.grad_fn = None
    if listening:
        _record_op(op.name, (x, y), out, {}, enabled, now_ns() - start)
    return out


def _forward_any(op: OpDef, inputs: tuple[Any, ...], attrs: dict[str, Any], enabled: bool
                 ) -> tuple[Any, Any, tuple[Any, ...] | None]:
    """``apply``'s general case: any number of inputs, and ``needs_input_grad`` ops."""
    arrays = []
    edges: list[Any] = []
    need = False
    for x in inputs:
        if isinstance(x, Tensor):
            arrays.append(x._array)
            if x.requires_grad and enabled:
                edges.append(x.grad_fn or x)
                need = True
                continue
        else:
            arrays.append(x)
        edges.append(None)
    if op.needs_input_grad:
        needs = tuple(e is not None for e in edges)
        out_data, backward_fn = op.forward(*arrays, needs_input_grad=needs, **attrs)
    else:
        out_data, backward_fn = op.forward(*arrays, **attrs)
    return out_data, backward_fn, tuple(edges) if need else None


class RefusedUse(RuntimeError):
    """Raised by truth-testing a ``views.RefusedView`` grad_fn, which ``apply`` does to
    every input that requires grad in grad mode."""


def _past_refused(op: OpDef, inputs: tuple[Any, ...], attrs: dict[str, Any],
                  error: RefusedUse) -> Tensor:
    """``op`` on a view whose use in a graph PyTorch refuses (an output of split, chunk or
    unbind whose base changed in place). PyTorch asks for the view's grad_fn, and so
    refuses, only where the op has a gradient to give: ``>``, ``.long()``, ``all()`` run,
    on the view's values as a tensor outside the graph (under its own id)."""
    if _differentiable(op, inputs, attrs):
        raise RuntimeError(str(error)) from None
    stand_ins = []
    for x in inputs:
        if isinstance(x, Tensor) and getattr(x.grad_fn, "refused", False):
            alias = _wrap(x._array)
            alias._id = x._id
            x = alias
        stand_ins.append(x)
    return apply(op, *stand_ins, **attrs)


def _differentiable(op: OpDef, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> bool:
    """Would ``op`` on ``inputs`` have a backward (its forward, run on the side, says)?
    An op that fails on them counts as differentiable: PyTorch refuses before it runs."""
    arrays = [x._array if isinstance(x, Tensor) else x for x in inputs]
    if (len(arrays) == 2 and op.promotes and type(arrays[0]) is _ndarray
            and type(arrays[1]) is _ndarray and arrays[0].dtype is not arrays[1].dtype):
        arrays = list(promoted(arrays[0], arrays[1]))
    kw = dict(attrs)
    if op.needs_input_grad:
        kw["needs_input_grad"] = tuple(isinstance(x, Tensor) and x.requires_grad
                                       for x in inputs)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, backward_fn = op.forward(*arrays, **kw)
    except Exception:  # noqa: BLE001  (whatever it is, PyTorch refused first)
        return True
    return backward_fn is not None


def _wrapped_ints(op: OpDef, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``apply``'s retry after numpy refused a Python int that does not fit the integer
    tensor beside it: PyTorch wraps it to that width (``uint8 + 300`` adds 44; true
    division takes it as a float). Raises the OverflowError again if no int is to blame."""
    from .dtypes import wrapped_int

    dtype = next((x._array.dtype for x in inputs if isinstance(x, Tensor)), None)
    if dtype is None or dtype.kind not in "iu":
        raise
    info = np.iinfo(dtype)
    out = list(inputs)
    for i, x in enumerate(inputs):
        if type(x) is int and not info.min <= x <= info.max:
            out[i] = float(x) if op.name == "div" else wrapped_int(x, dtype)
    if out == list(inputs):
        raise
    return tuple(out)


def _demote(inputs: tuple[Any, ...], out: np.ndarray) -> np.ndarray:
    """float64 (float16) only where a float64 (float16) tensor went in, as in PyTorch.

    numpy promotes ints to float64 (``int_tensor / 2``, ``sqrt(int_tensor)``) and bools and
    bytes to float16 (``exp(mask)``); PyTorch gives its default float32.

    A complex result (of a Python complex number: ``x * 1j``) is refused: dyngraph has no
    complex tensors.
    """
    dt = out.dtype
    if dt.kind == "c":
        raise NotImplementedError(COMPLEX_MESSAGE)
    for x in inputs:
        if isinstance(x, Tensor):
            if x._array.dtype is dt:
                return out
        elif isinstance(x, (list, tuple)):  # cat/stack take a sequence of tensors
            for y in x:
                if isinstance(y, Tensor) and y._array.dtype is dt:
                    return out
    return out.astype(DEFAULT_DTYPE)


def op(name: str) -> OpDef:
    """Look up a registered op by name (``apply(op("mul"), a, b)``)."""
    try:
        return OPS[name]
    except KeyError:
        raise NotImplementedError(f"dyngraph has no op named {name!r}") from None
