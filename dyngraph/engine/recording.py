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

_dtype_names: dict[Any, str] = {}
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
    ids = []
    for x in inputs:
        tid = getattr(x, "_id", None)
        if tid is None:
            ids.append(-1)
            continue
        ids.append(tid)
        if tid not in known:
            announce(x)
    data = out._array
    tracer.op(name, tuple(ids), out._id, data.shape,
              _dtype_names.get(data.dtype) or _dtype_name(data.dtype), out.requires_grad,
              attrs, grad_enabled, duration_ns, tracer.summarize_array(data), data, inputs)


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
    summ = _grad_summary
    tracer.backward_step(
        node_id, op, grad_fn, input_ids, summ(grad_output),
        tuple([None if g is None else summ(g) for g in grad_inputs]), duration_ns,
        grad_output, grad_inputs,
    )


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
