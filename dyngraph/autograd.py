"""Graph nodes, grad modes and the iterative backward pass.

A ``Node`` is what PyTorch calls a ``grad_fn``: it holds the op's backward closure (which
captured whatever the forward saved) and the input tensors gradients flow to. Backward
walks nodes with an explicit stack and dependency counts, never recursion, so a chain of
100,000 ops is as fine as a chain of ten.

This module knows tensors only by duck type (``data``, ``grad``, ``grad_fn``,
``requires_grad``, ``_id``, ``_hooks``); ``tensor.py`` injects the Tensor constructor.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .tracing import now_ns, tracer

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
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
    """Context manager (and decorator) that sets grad mode on or off, as in PyTorch."""

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
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class _ModeContext:
    """Base of ``no_grad`` / ``enable_grad``: a context manager and a decorator."""

    mode = True

    def __enter__(self) -> None:
        self.prev = grad_mode.enabled
        grad_mode.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        grad_mode.enabled = self.prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_ModeContext):
    """Disable gradient tracking: ``with dyngraph.no_grad(): ...`` or ``@dyngraph.no_grad()``."""

    mode = False


class enable_grad(_ModeContext):
    """Re-enable gradient tracking inside a ``no_grad`` block."""

    mode = True


def is_grad_enabled() -> bool:
    return grad_mode.enabled


# -- nodes -------------------------------------------------------------------------------
class Node:
    """The backward half of one forward op (``tensor.grad_fn``)."""

    __slots__ = ("op", "backward_fn", "inputs", "out_id", "hooks", "retained", "__weakref__")

    def __init__(self, op: Any, backward_fn: Callable[[np.ndarray], Sequence[Any]],
                 inputs: tuple[Any, ...], out_id: int) -> None:
        self.op = op
        self.backward_fn: Callable[[np.ndarray], Sequence[Any]] | None = backward_fn
        # One entry per forward input: the tensor if a gradient must flow to it, else None.
        self.inputs = inputs
        self.out_id = out_id
        self.hooks: list[Callable[[Any], Any]] | None = None
        self.retained: weakref.ref[Any] | None = None

    def name(self) -> str:
        return self.op.grad_fn_name

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        out: list[tuple[Any, int]] = []
        for t in self.inputs:
            if t is None:
                out.append((None, 0))
            elif t.grad_fn is not None:
                out.append((t.grad_fn, 0))
            else:
                out.append((AccumulateGrad(t), 0))
        return tuple(out)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad:
    """Stands for a leaf in ``next_functions``, as in PyTorch."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    next_functions: tuple[tuple[Any, int], ...] = ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` down to ``shape``, undoing numpy broadcasting."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


# -- the backward pass --------------------------------------------------------------------
def _apply_hooks(hooks: list[Callable[[Any], Any]] | None, grad: np.ndarray) -> np.ndarray:
    if hooks:
        for hook in hooks:
            result = hook(wrap(grad))
            if result is not None:
                grad = np.asarray(result.data if hasattr(result, "grad_fn") else result)
    return grad


def _accumulate_leaf(leaf: Any, grad: np.ndarray) -> None:
    grad = _apply_hooks(leaf._hooks, grad)
    if leaf.grad is None:
        # Copy: one backward closure may hand the same array to two inputs.
        leaf.grad = wrap(np.array(grad, dtype=leaf.data.dtype, copy=True))
    else:
        leaf.grad.data = leaf.grad.data + grad
    for hook in leaf._post_hooks or ():
        hook(leaf)
    if tracer.listening:
        tracer.on_grad_accumulated(leaf)


def run_backward(
    roots: Sequence[Any],
    grads: Sequence[np.ndarray],
    retain_graph: bool,
    capture: Sequence[Any] | None = None,
) -> list[np.ndarray | None] | None:
    """Propagate ``grads`` from ``roots`` to every leaf reachable from them.

    With ``capture`` (``autograd.grad``), the total gradients reaching those tensors are
    returned instead of being accumulated into leaves' ``.grad``.
    """
    listening = tracer.listening
    start = now_ns()
    if listening:
        tracer.on_backward_start(roots[0], retain_graph)
    captured: dict[int, np.ndarray] = {}
    capture_ids = {id(t) for t in capture} if capture is not None else None
    capture_out = _capture_out_ids(capture)

    # Dependency counts: how many gradient contributions each node and leaf will receive.
    deps: dict[Any, int] = {}
    leaves: dict[int, Any] = {}
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for t in node.inputs:
            if t is None:
                continue
            child = t.grad_fn
            key = child if child is not None else id(t)
            deps[key] = deps.get(key, 0) + 1
            if child is None:
                leaves[id(t)] = t
            elif child not in seen:
                seen.add(child)
                stack.append(child)

    pending: dict[Any, np.ndarray] = {}
    ready: list[Any] = []
    for root, grad in zip(roots, grads):
        if root.grad_fn is None:
            leaves[id(root)] = root
            deps.setdefault(id(root), 0)
            _deliver(id(root), grad, pending, deps, ready, force=True)
        else:
            _deliver(root.grad_fn, grad, pending, deps, ready, force=True)

    while ready:
        key = ready.pop()
        grad = pending.pop(key)
        if type(key) is int:  # a leaf
            leaf = leaves[key]
            if capture_ids is not None:
                if key in capture_ids:
                    captured[key] = _apply_hooks(leaf._hooks, grad)
            else:
                _accumulate_leaf(leaf, grad)
            continue
        node = key
        grad = _apply_hooks(node.hooks, grad)
        if node.retained is not None and capture_ids is None:
            owner = node.retained()
            if owner is not None:
                owner.grad = wrap(grad.copy()) if owner.grad is None else wrap(owner.grad.data + grad)
        if node.out_id in capture_out:
            captured[node.out_id] = grad
        backward_fn = node.backward_fn
        if backward_fn is None:
            raise RuntimeError(FREED_MESSAGE)
        t0 = now_ns() if listening else 0
        in_grads = backward_fn(grad)
        if not retain_graph and node.op.saves:
            node.backward_fn = None
        if listening:
            tracer.on_backward_step(
                node.out_id, node.op.name, node.op.grad_fn_name,
                tuple(-1 if t is None else t._id for t in node.inputs),
                grad, tuple(None if t is None else g for t, g in zip(node.inputs, in_grads)),
                now_ns() - t0,
            )
        for t, g in zip(node.inputs, in_grads):
            if t is None or g is None:
                continue
            data = t.data
            if type(g) is not np.ndarray:
                g = np.asarray(g, dtype=data.dtype)
            if g.shape != data.shape:
                g = unbroadcast(g, data.shape)
            if g.dtype != data.dtype:
                g = g.astype(data.dtype)
            child = t.grad_fn
            _deliver(child if child is not None else id(t), g, pending, deps, ready)

    if listening:
        tracer.on_backward_end(roots[0], now_ns() - start)
    if capture is None:
        return None
    result: list[np.ndarray | None] = []
    for t in capture:
        k = id(t) if t.grad_fn is None else t._id
        result.append(captured.get(k))
    return result


def _capture_out_ids(capture: Sequence[Any] | None) -> set[int]:
    return {t._id for t in capture or () if t.grad_fn is not None}


def _deliver(key: Any, grad: np.ndarray, pending: dict[Any, np.ndarray], deps: dict[Any, int],
             ready: list[Any], force: bool = False) -> None:
    previous = pending.get(key)
    pending[key] = grad if previous is None else previous + grad
    if force:
        if deps.get(key, 0) == 0:
            ready.append(key)
        return
    remaining = deps[key] - 1
    deps[key] = remaining
    if remaining == 0:
        ready.append(key)
