"""The numpy engine as a capture backend: its tensors and arrays, told to the tracer.

``apply()``, the backward pass and the optimizers call these functions when
``tracer.listening``; each turns engine objects into the ids, shapes, dtype names and
summaries of the tracer's recording API (``dyngraph.capture.tracing.Tracer``). Nothing
else in the engine talks to the tracer about ops or gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..capture import events as ev
from ..capture.tracing import tracer

# The engine's Tensor class, set by engine/tensor.py once it exists (it imports this
# module): inputs that are tensors are told from constants with isinstance, not getattr.
Tensor: Any = type("_NoTensorYet", (), {})
Node: Any = type("_NoNodeYet", (), {})  # autograd's Node, set by engine/autograd.py
_dtype_names: dict[Any, str] = {}
_NONES = {n: (None,) * n for n in range(8)}
# Gradient summaries of the backward pass in progress, by array identity: the array a
# backward step hands to an input is usually the very array that input's own step (or its
# leaf's accumulation) sees next, so each is summarised once.
_grad_summaries: dict[int, tuple[np.ndarray, ev.Summary | None]] = {}


def _dtype_name(dt: Any) -> str:
    name = _dtype_names.get(dt)
    if name is None:
        name = _dtype_names[dt] = str(dt)
    return name


def op(name: str, inputs: tuple[Any, ...], out: Any, attrs: dict[str, Any],
       grad_enabled: bool, duration_ns: int) -> None:
    """``apply()`` ran op ``name``; ``inputs`` mixes tensors and constants."""
    known = tracer.known
    if len(inputs) == 2:  # most ops: unrolled, no list
        x, y = inputs
        if isinstance(x, Tensor):
            a = x._id
            if a not in known:
                announce(x)
        else:
            a = -1
        if isinstance(y, Tensor):
            b = y._id
            if b not in known:
                announce(y)
        else:
            b = -1
        ids: tuple[int, ...] = (a, b)
    else:
        ids_list = []
        for x in inputs:
            if isinstance(x, Tensor):
                tid = x._id
                ids_list.append(tid)
                if tid not in known:
                    announce(x)
            else:
                ids_list.append(-1)
        ids = tuple(ids_list)
    data = out._array
    dt = data.dtype
    tracer.op(name, ids, out._id, data.shape, _dtype_names.get(dt) or _dtype_name(dt),
              out.requires_grad, attrs, grad_enabled, duration_ns, tracer.summarize_array(data),
              data, inputs, 3)  # 3: the source lookup starts above us and apply()


def announce(tensor: Any) -> None:
    """``tensor`` enters this iteration's graph from outside it (a leaf, a parameter ...)."""
    data = tensor._array
    grad_fn = tensor.grad_fn
    tracer.tensor(
        tensor._id, getattr(tensor, "_name", "") or "", data.shape, _dtype_name(data.dtype),
        tensor.requires_grad, getattr(tensor, "_is_param", False),
        None if tracer.stats != "full" else tracer.summarize_array(data), grad_fn is None,
        "" if grad_fn is None else grad_fn.name(), data,
    )


def _grad_summary(g: np.ndarray) -> ev.Summary | None:
    cache = _grad_summaries
    hit = cache.get(id(g))
    if hit is not None and hit[0] is g:
        return hit[1]
    summary = tracer.summarize_array(g)
    cache[id(g)] = (g, summary)  # holding g keeps its id from being reused meanwhile
    return summary


def backward_start(root: Any, retain_graph: bool) -> None:
    _grad_summaries.clear()
    tracer.backward_start(root._id, retain_graph)


def backward_step(node_id: int, op: str, grad_fn: str, input_ids: tuple[int, ...],
                  grad_output: np.ndarray, grad_inputs: tuple[np.ndarray | None, ...],
                  duration_ns: int) -> None:
    if tracer.stats == "none":
        tracer.backward_step(node_id, op, grad_fn, input_ids, None,
                             _NONES.get(len(grad_inputs)) or (None,) * len(grad_inputs),
                             duration_ns, grad_output, grad_inputs)
        return
    summ = _grad_summary
    go = summ(grad_output)
    if len(grad_inputs) == 2:  # most nodes: unrolled (a comprehension is a call in 3.11)
        gx, gy = grad_inputs
        summaries: tuple[ev.Summary | None, ...] = (
            None if gx is None else summ(gx), None if gy is None else summ(gy))
    elif len(grad_inputs) == 1:
        (gx,) = grad_inputs
        summaries = (None if gx is None else summ(gx),)
    else:
        summaries = tuple([None if g is None else summ(g) for g in grad_inputs])
    tracer.backward_step(node_id, op, grad_fn, input_ids, go, summaries,
                         duration_ns, grad_output, grad_inputs)


def node_ran(node_id: int, node: Any, grad_output: np.ndarray, in_grads: Any,
             duration_ns: int) -> None:
    """The backward pass ran ``node`` (an autograd Node) on ``grad_output`` and handed
    ``in_grads`` to its inputs: ``backward_step`` with the ids and gradients taken apart
    here, unrolled for one and two inputs (most nodes) instead of generator expressions."""
    inputs = node.inputs
    n = len(inputs)
    if n == 2 and type(in_grads) is tuple and len(in_grads) == 2:
        x, y = inputs
        gx, gy = in_grads
        if x is None:
            a, gx = -1, None
        else:
            a = x.out_id if type(x) is Node else x._id
        if y is None:
            b, gy = -1, None
        else:
            b = y.out_id if type(y) is Node else y._id
        ids: tuple[int, ...] = (a, b)
        grads: tuple[np.ndarray | None, ...] = (gx, gy)
    elif n == 1 and type(in_grads) is tuple and len(in_grads) == 1:
        (x,) = inputs
        if x is None:
            ids, grads = (-1,), (None,)
        else:
            ids, grads = (x.out_id if type(x) is Node else x._id,), in_grads
    else:
        ids = tuple([-1 if t is None else (t.out_id if type(t) is Node else t._id)
                     for t in inputs])
        grads = tuple([None if t is None else g
                       for t, g in zip(inputs, in_grads, strict=False)])
    op = node.op
    backward_step(node_id, op.name, op.grad_fn_name, ids, grad_output, grads, duration_ns)


def grad_accumulated(tensor: Any) -> None:
    grad = getattr(tensor, "_grad", None)
    if grad is None:
        grad = tensor.grad
    data = grad._array
    tracer.grad_accumulated(tensor._id, getattr(tensor, "_name", "") or "",
                            _grad_summary(data), data)


def backward_end(root: Any, duration_ns: int) -> None:
    _grad_summaries.clear()
    tracer.backward_end(root._id, duration_ns)
