"""Graph nodes, grad modes, the iterative backward pass and ``autograd.grad``.

A ``Node`` is what PyTorch calls a ``grad_fn``: it holds the op's backward closure (which
captured whatever the forward saved) and one edge per forward input: the input's own Node,
the leaf Tensor itself (gradients accumulate into its ``.grad``), or None where no gradient
flows. Edges are fixed when the op runs, so rebinding a tensor later never rewires a graph.

Backward never recurses. Every tensor gets an increasing id when it is created, and an op's
output is created after its inputs, so walking nodes from the highest id down (a heap keyed
by id) visits each node after every consumer of its output has contributed: a topological
order with no dependency-counting pass. A chain of 100,000 ops is as fine as a chain of ten.

This module knows tensors only by duck type (``data``, ``_grad``, ``grad_fn``, ``_id``,
``_hooks``, ``_post_hooks``); ``tensor.py`` injects the array-to-Tensor wrapper.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from heapq import heappop, heappush
from typing import Any

import numpy as np

from ..capture.tracing import now_ns, tracer
from . import recording, versions

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)
NO_GRAD_FN_MESSAGE = "element {} of tensors does not require grad and does not have a grad_fn"
UNUSED_MESSAGE = (
    "The differentiated Tensor at index {} appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)

# Set by tensor.py: wraps an ndarray into a Tensor that does not require grad.
wrap: Callable[[np.ndarray], Any] = lambda a: a  # noqa: E731


# -- grad modes --------------------------------------------------------------------------
class _GradMode:
    __slots__ = ("enabled",)

    def __init__(self) -> None:
        self.enabled = True


grad_mode = _GradMode()


class set_grad_enabled:
    """Set grad mode on or off: as a call, a context manager, or a decorator (as in PyTorch).

    >>> with set_grad_enabled(False):
    ...     assert not is_grad_enabled()
    """

    def __init__(self, mode: bool) -> None:
        self.prev = grad_mode.enabled
        self.mode = bool(mode)
        grad_mode.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        grad_mode.enabled = self.prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        grad_mode.enabled = self.prev  # used as a decorator: do not change the mode now
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = grad_mode.enabled
            grad_mode.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                grad_mode.enabled = prev

        return wrapper


class _ModeContext:
    """Base of ``no_grad`` / ``enable_grad``: a context manager and a decorator.

    Like PyTorch's, it decorates with or without parentheses: ``@no_grad()`` or ``@no_grad``.
    """

    mode = True

    def __new__(cls, fn: Callable[..., Any] | None = None) -> Any:
        self = super().__new__(cls)
        if fn is None:
            return self
        return self(fn)

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        self.prev: list[bool] = []

    def __enter__(self) -> None:
        self.prev.append(grad_mode.enabled)
        grad_mode.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        grad_mode.enabled = self.prev.pop()

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = grad_mode.enabled
            grad_mode.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                grad_mode.enabled = prev

        return wrapper


class no_grad(_ModeContext):
    """Disable gradient tracking: ``with dyngraph.no_grad(): ...`` or ``@dyngraph.no_grad()``."""

    mode = False


class enable_grad(_ModeContext):
    """Re-enable gradient tracking inside a ``no_grad`` block."""

    mode = True


class inference_mode(_ModeContext):
    """Same as ``no_grad`` in dyngraph (there are no inference tensors)."""

    mode = False

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):
            return super().__new__(cls, mode)
        self = super().__new__(cls)
        self.mode = not mode
        return self

    def __init__(self, mode: Any = True) -> None:
        super().__init__()


def is_grad_enabled() -> bool:
    return grad_mode.enabled


# -- nodes -------------------------------------------------------------------------------
class Node:
    """The backward half of one forward op (``tensor.grad_fn``).

    ``shape`` and ``dtype`` are those of the op's output: gradients arriving here are
    summed down to that shape and cast to that dtype.
    """

    # Rarely set fields (hooks, retain_grad) default on the class and live in a lazily made
    # __dict__, so recording a node costs six stores (``tensor.apply`` makes them inline).
    __slots__ = ("op", "backward_fn", "inputs", "out_id", "shape", "dtype", "__dict__")
    hooks: list[Callable[[Any], Any]] | None = None
    retained: weakref.ref[Any] | None = None
    # True once hooks or retain_grad are set: backward then takes the slow path.
    special = False

    def __init__(self, op: Any, backward_fn: Callable[[np.ndarray], Sequence[Any]],
                 inputs: tuple[Any, ...], out_id: int, shape: tuple[int, ...],
                 dtype: np.dtype) -> None:
        self.op = op
        self.backward_fn: Callable[[np.ndarray], Sequence[Any]] | None = backward_fn
        self.inputs = inputs
        self.out_id = out_id
        self.shape = shape
        self.dtype = dtype

    def name(self) -> str:
        return self.op.grad_fn_name

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return tuple(
            (None, 0) if t is None or (type(t) is not Node and t._borrowed)  # (no accumulator)
            else (t if type(t) is Node else AccumulateGrad(t), 0)
            for t in self.inputs
        )

    def register_hook(self, hook: Callable[..., Any]) -> Any:
        raise NotImplementedError(
            "grad_fn.register_hook is not supported by dyngraph; use Tensor.register_hook"
        )

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


recording.Node = Node  # recording tells nodes from leaves by type, without importing us


class AccumulateGrad:
    """Stands for a leaf in ``next_functions``, as in PyTorch."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    next_functions: tuple[tuple[Any, int], ...] = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


_add_reduce = np.add.reduce


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` down to ``shape``, undoing numpy broadcasting."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:  # np.add.reduce: np.sum without its Python wrapper (a bias's every step)
        grad = _add_reduce(grad, axis=0 if extra == 1 else tuple(range(extra)))
    if grad.shape != shape:
        axes = tuple(i for i, d in enumerate(shape) if d == 1 and grad.shape[i] != 1)
        if axes:
            grad = _add_reduce(grad, axis=axes, keepdims=True)
    if grad.shape != shape:
        grad = np.broadcast_to(grad, shape)  # a gradient of a broadcast scalar constant
    return grad


def _apply_hooks(hooks: list[Callable[[Any], Any]], grad: np.ndarray) -> np.ndarray:
    """Run tensor hooks in order; a returned tensor replaces the gradient, and must have its
    shape and dtype (PyTorch's errors otherwise)."""
    for hook in tuple(hooks):
        result = hook(wrap(grad))
        if result is None:
            continue
        new = getattr(result, "_array", None)
        if new is None:
            raise TypeError(f"hook '{_hook_name(hook)}' returned a {type(result).__name__}; "
                            "a hook must return a Tensor or None")
        if new.shape != grad.shape:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
        if new.dtype != grad.dtype:
            raise RuntimeError(
                f"hook '{_hook_name(hook)}' has changed the type of value (was "
                f"{versions.type_name(grad.dtype)} got {versions.type_name(new.dtype)})"
            )
        grad = new
    return grad


def _hook_name(hook: Any) -> str:
    return str(getattr(hook, "__name__", type(hook).__name__))


# -- the backward pass --------------------------------------------------------------------
def run_backward(
    roots: Sequence[Any],
    grads: Sequence[np.ndarray],
    retain_graph: bool,
    capture: Sequence[Any] | None = None,
) -> list[np.ndarray | None] | None:
    """Propagate ``grads`` from ``roots`` to every leaf reachable from them.

    Nodes run newest first (a heap keyed by id). Leaves have no backward of their own, so
    their gradients are only collected on the way and accumulated into ``.grad`` at the
    end, in the order they were first reached. With ``capture`` (``autograd.grad``), the
    total gradients reaching those tensors are returned instead of being accumulated.
    """
    listening = tracer.listening
    start = now_ns() if listening else 0
    if listening:
        recording.backward_start(roots[0], retain_graph)
    pending: dict[int, Any] = {}  # node id -> gradient (or a list of them, summed later)
    heap: list[tuple[int, Node]] = []
    leaf_grads: dict[int, Any] = {}
    leaves: dict[int, Any] = {}
    for root, grad in zip(roots, grads):  # noqa: B905  (one each: _root_grads made them)
        node = root.grad_fn
        if node is None:
            leaves[root._id] = root
            previous = leaf_grads.get(root._id)
            leaf_grads[root._id] = grad if previous is None else previous + grad
            continue
        previous = pending.get(node.out_id)
        if previous is None:
            pending[node.out_id] = grad
            heappush(heap, (-node.out_id, node))
        else:
            pending[node.out_id] = previous + grad

    capture_ids: dict[int, int] | None = None
    captured: dict[int, np.ndarray] = {}
    floor = 0
    if capture is not None:
        capture_ids = {}
        for t in capture:
            capture_ids[t._id if t.grad_fn is None else t.grad_fn.out_id] = 1
        floor = min(capture_ids)  # nothing below the lowest captured id can reach one
    # A one-item buffer in front of the heap: in a chain each node's input is the next to
    # run, so it skips the heap and the pending dict (the next item is always the newest of
    # the buffer and the heap's top).
    nxt: Any = None
    nxt_id = 0
    nxt_grad: Any = None
    free = not retain_graph
    capturing = capture_ids is not None
    ndarray = np.ndarray
    # Nodes made before the newest in-place op may have saved memory it changed: only those
    # are checked (versions.py), so a graph built after the last change checks nothing.
    changed_after = versions.newest

    while True:
        if nxt is not None:
            if heap and -heap[0][0] > nxt_id:
                pending[nxt_id] = nxt_grad
                heappush(heap, (-nxt_id, nxt))
                tid, node = heappop(heap)
                tid = -tid
                grad = pending.pop(tid)
            else:
                tid, node, grad = nxt_id, nxt, nxt_grad
            nxt = None
        elif heap:
            tid, node = heappop(heap)
            tid = -tid
            grad = pending.pop(tid)
        else:
            break
        if type(grad) is list:
            grad = _total(grad)
        if node.special or capturing:
            if capture_ids is not None and tid < floor:
                break
            grad = _node_extras(node, grad, tid, capture_ids, captured)
        backward_fn = node.backward_fn
        if backward_fn is None:
            raise RuntimeError(FREED_MESSAGE)
        if tid < changed_after:
            versions.check_saved(node, tid)
        if listening:
            t0 = now_ns()
            in_grads = backward_fn(grad)
            recording.node_ran(tid, node, grad, in_grads, now_ns() - t0)
        else:
            in_grads = backward_fn(grad)
        if free and node.op.saves:
            node.backward_fn = None
        inputs = node.inputs
        # (zip without ``strict=``: a keyword makes the builtin parse its arguments from a
        # dict, which cost a third of a tiny node's loop overhead)
        for t, g in zip(inputs, in_grads):  # noqa: B905
            if t is None or g is None:
                continue
            if type(t) is not Node:  # a leaf: collect now, accumulate at the end
                data = t._array
                if type(g) is not ndarray:
                    g = np.asarray(g, dtype=data.dtype)
                if g.shape != data.shape:
                    g = unbroadcast(g, data.shape)
                if g.dtype is not data.dtype and g.dtype != data.dtype:
                    g = g.astype(data.dtype)
                cid = t._id
                previous = leaf_grads.get(cid)
                if previous is None:
                    leaf_grads[cid] = g
                    leaves[cid] = t
                elif type(previous) is list and len(previous) < _DEFER:
                    previous.append(g)
                else:
                    leaf_grads[cid] = _add(previous, g)
                continue
            # Sum broadcast gradients down to the input's shape, cast to its dtype.
            if type(g) is not ndarray:
                g = np.asarray(g, dtype=t.dtype)
            if g.shape != t.shape:
                g = unbroadcast(g, t.shape)
            if g.dtype is not t.dtype and g.dtype != t.dtype:
                g = g.astype(t.dtype)
            cid = t.out_id
            if nxt is not None and cid == nxt_id:
                nxt_grad = _add(nxt_grad, g)
                continue
            previous = pending.get(cid)
            if previous is not None:
                if type(previous) is list and len(previous) < _DEFER:
                    previous.append(g)
                else:
                    pending[cid] = _add(previous, g)
            elif nxt is None:
                nxt, nxt_id, nxt_grad = t, cid, g
            else:
                pending[cid] = g
                heappush(heap, (-cid, t))

    # Arrays already stored as some leaf's .grad: a second leaf gets a copy, never an alias.
    handed: dict[int, np.ndarray] = {}
    for cid, grad in leaf_grads.items():
        leaf = leaves[cid]
        if leaf._borrowed:
            continue  # a view whose base came to require grad after it: no accumulator
        if type(grad) is list:
            grad = _total(grad)
        if leaf._hooks:
            grad = _apply_hooks(leaf._hooks, grad)
        if capture_ids is not None:
            if cid in capture_ids:
                captured[cid] = grad
        else:
            if leaf.grad_fn is not None and leaf.requires_grad:
                # used as a leaf, then made part of a graph in place (requires_grad_(False)
                # let an in-place op through): PyTorch's AccumulateGrad refuses it
                raise RuntimeError("leaf variable has been moved into the graph interior")
            _accumulate_leaf(leaf, grad, handed)
    if listening:
        recording.backward_end(roots[0], now_ns() - start)
    if capture is None:
        return None
    return [captured.get(t._id if t.grad_fn is None else t.grad_fn.out_id) for t in capture]


# Small gradients reaching one tensor from many consumers (a weight shared by every step
# of a long chain) are summed in one numpy call rather than one call each; large ones are
# added as they come (numpy's per-call cost is noise there, and memory stays bounded).
_SMALL = 4096
_DEFER = 256


def _node_extras(node: Node, grad: np.ndarray, tid: int, capture_ids: dict[int, int] | None,
                 captured: dict[int, np.ndarray]) -> np.ndarray:
    """Tensor hooks, then autograd.grad's capture of this node's gradient and
    retain_grad's ``.grad`` (PyTorch fills a retained ``.grad`` under autograd.grad too)."""
    if node.hooks:
        grad = _apply_hooks(node.hooks, grad)
    if capture_ids is not None and tid in capture_ids:
        captured[tid] = grad
    if node.retained is not None:
        owner = node.retained()
        if owner is not None:
            owner._grad = (wrap(grad.copy()) if owner._grad is None
                           else wrap(owner._grad._array + grad))
    return grad


def _total(grads: list[np.ndarray]) -> np.ndarray:
    # Every item has the tensor's shape and dtype (the loop cast them), so np.array stacks
    # them as np.stack would, in C: np.stack's Python loops over the items cost more than
    # the sum (a third of a microsecond per contribution of a weight in a tiny-op chain).
    return _add_reduce(np.array(grads), axis=0)


def _add(previous: Any, g: np.ndarray) -> Any:
    """Add one more contribution to a tensor's pending gradient (maybe a deferred list)."""
    if type(previous) is list:
        previous.append(g)
        return _total(previous) if len(previous) >= _DEFER else previous
    if g.size <= _SMALL:
        return [previous, g]
    return previous + g


def _accumulate_leaf(leaf: Any, grad: np.ndarray, handed: dict[int, np.ndarray]) -> None:
    if leaf._grad is None:
        # Store the array itself when nothing else can see it (the common case: a fresh
        # result of the backward closure); copy views, read-only broadcasts, arrays another
        # leaf already holds, and anything a post-accumulate hook could mutate under us.
        if (grad.base is not None or id(grad) in handed or leaf._post_hooks
                or not grad.flags.writeable):
            grad = grad.copy()
        handed[id(grad)] = grad
        leaf._grad = wrap(grad)
    else:
        leaf._grad._array = leaf._grad._array + grad
    if leaf._post_hooks:
        for hook in tuple(leaf._post_hooks):
            hook(leaf)
    if tracer.listening:
        recording.grad_accumulated(leaf)


# -- public entry points ------------------------------------------------------------------
def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _root_grads(outputs: tuple[Any, ...], grad_outputs: tuple[Any, ...] | None,
                name: str) -> list[np.ndarray]:
    if grad_outputs is not None and len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"{name}: got {len(grad_outputs)} gradients for {len(outputs)} outputs"
        )
    grads = []
    for i, out in enumerate(outputs):
        if out.grad_fn is None and not out.requires_grad:
            raise RuntimeError(NO_GRAD_FN_MESSAGE.format(i))
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if out._array.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            # (np.ones_like's and np.ones's Python wrappers cost more than a scalar loss's
            # own backward)
            seed = np.empty(out._array.shape, out._array.dtype)
            seed[...] = 1
            grads.append(seed)
            continue
        array = np.array(getattr(g, "data", g), dtype=out._array.dtype)
        if array.shape != out._array.shape:
            size = type(out.shape)
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {size(array.shape)!r} and "
                f"output[{i}] has a shape of {size(out._array.shape)!r}."
            )
        grads.append(array)
    return grads


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """``torch.autograd.backward``: accumulate gradients of ``tensors`` into the leaves."""
    if create_graph:
        raise NotImplementedError("backward(create_graph=True) is not supported by dyngraph")
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...) is not supported by dyngraph")
    outs = _as_tuple(tensors)
    grads = _root_grads(outs, None if grad_tensors is None else _as_tuple(grad_tensors),
                        "backward")
    run_backward(outs, grads, bool(retain_graph))


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple[Any, ...]:
    """``torch.autograd.grad``: the gradients of ``outputs`` w.r.t. ``inputs``, as a tuple.

    Leaves' ``.grad`` are left untouched.

    >>> import dyngraph as torch
    >>> x = torch.tensor(3.0, requires_grad=True)
    >>> torch.autograd.grad(x * x, x)
    (tensor(6.),)
    """
    if create_graph:
        raise NotImplementedError(
            "autograd.grad(create_graph=True) (higher-order gradients) is not supported by "
            "dyngraph"
        )
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported")
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    for t in ins:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    gouts = None if grad_outputs is None else _as_tuple(grad_outputs)
    grads = _root_grads(outs, gouts, "grad")
    found = run_backward(outs, grads, bool(retain_graph), capture=ins)
    assert found is not None
    result = []
    for i, (t, g) in enumerate(zip(ins, found, strict=True)):
        if g is None:
            if materialize_grads:
                result.append(wrap(np.zeros_like(t._array)))
                continue
            if not allow_unused:
                raise RuntimeError(UNUSED_MESSAGE.format(i))
            result.append(None)
        else:
            result.append(wrap(np.array(g, dtype=t._array.dtype)))
    return tuple(result)
