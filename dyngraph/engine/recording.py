"""The numpy engine as a capture backend: its tensors and arrays, told to the tracer.

``apply()``, the backward pass and the optimizers call these functions when
``tracer.listening``; each turns engine objects into the ids, shapes, dtype names and
summaries of the tracer's recording API (``dyngraph.capture.tracing.Tracer``). Nothing
else in the engine talks to the tracer about ops or gradients.

The two hottest, one call per forward op (``op``) and one per backward node
(``node_ran``), build the event's row (``dyngraph.capture.rows``) here and deliver it
themselves: ``Tracer.op`` and ``Tracer.backward_step`` do the same in general terms, a
few microseconds per event that a chain of tiny ops would pay twice per op. They must
stay in step with those two (tests/events compare the streams of both).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from ..capture.arrays import UNWRITTEN
from ..capture.rows import SummaryRow
from ..capture.tracing import BATCH_ROWS, tracer

# The engine's Tensor class, set by engine/tensor.py once it exists (it imports this
# module): inputs that are tensors are told from constants with isinstance, not getattr.
Tensor: Any = type("_NoTensorYet", (), {})
Node: Any = type("_NoNodeYet", (), {})  # autograd's Node, set by engine/autograd.py
_dtype_names: dict[Any, str] = {}
_NONES = {n: (None,) * n for n in range(8)}
# Gradient summaries of the backward pass in progress, by array identity: the array a
# backward step hands to an input is usually the very array that input's own step (or its
# leaf's accumulation) sees next, so each is summarised once. ``_summarised`` holds every
# array summarised until the pass ends, so no id is reused meanwhile (a list append, where
# a (array, summary) pair per gradient was one more object for the cyclic collector).
_grad_summaries: dict[int, SummaryRow | None] = {}
_summarised: list[np.ndarray] = []
_getframe = sys._getframe
_get_ident = threading.get_ident


def _dtype_name(dt: Any) -> str:
    name = _dtype_names.get(dt)
    if name is None:
        name = _dtype_names[dt] = str(dt)
    return name


def op(name: str, inputs: tuple[Any, ...], out: Any, attrs: dict[str, Any],
       grad_enabled: bool, duration_ns: int) -> None:
    """``apply()`` ran op ``name``; ``inputs`` mixes tensors and constants."""
    t = tracer
    if _get_ident() != t.thread and t.other_thread():
        return
    if t._pending_end:
        t.end_iteration()
    if t.iteration == 0 and grad_enabled and out.requires_grad:
        t.end_setup()  # before the inputs are announced: they enter iteration 1
    known = t.known
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
    calls = t.call_stack
    if t._announced < len(calls):
        t.announce_calls()
    # The source line (``Tracer.source``, inlined): the first frame outside the libraries,
    # from above apply(), its caller.
    frame = _getframe(2)
    internal = t._internal_files
    while frame is not None:
        code = frame.f_code
        file = code.co_filename
        inside = internal.get(file)
        if inside is None:
            inside = t.is_internal(file)
        if not inside:
            # ``frame.f_lineno`` walks the code's line table up to the current instruction:
            # thousands of machine instructions in a long function (a script's module
            # level). The line of an instruction offset never changes: remembered.
            lines = t.lines.get(id(code))
            if lines is None or lines[0] is not code:
                lines = t.code_lines(code)
            line = lines[1].get(frame.f_lasti)
            if line is None:
                line = lines[1][frame.f_lasti] = frame.f_lineno
            function = code.co_name
            if t.display is not None:  # (a shared trace's names: see Tracer.shown_file)
                file = t.shown_file(file)
            break
        frame = frame.f_back  # type: ignore[assignment]
    else:
        file, line, function = "", 0, ""
    data = out._array
    shape = data.shape
    shapes = t.shapes
    shape = shapes.get(shape) or shapes.setdefault(shape, shape)
    dt = data.dtype
    oid = out._id
    seq = t.seq = t.seq + 1
    summary = t.summarize_array(data)
    keep = t.keep  # (see Tracer.keep: the row's own tuples)
    keep(ids)
    keep(summary)
    # Positional, in field order (``rows``): this is the hottest line of a recording.
    row = ("op", seq, t.iteration, name, ids, oid, shape, _dtype_names.get(dt) or _dtype_name(dt),
           out.requires_grad, t.attrs(attrs) if attrs else (), t.module_stack[-1], file,
           line, function, grad_enabled, duration_ns, summary, calls[-1])
    known.add(oid)
    t.iteration_ops.append(row)
    if t.array_hook is not None:
        t.array_hook("op", oid, (data, inputs))
    rows = t.rows  # ``Tracer.deliver``, inlined
    rows.append(row)
    for hook in t.hooks:
        hook(row)
    if len(rows) >= BATCH_ROWS:
        t.flush_rows()
    if t.values == "small":
        t.emit_values(oid, shape, data)


def announce(tensor: Any) -> None:
    """``tensor`` enters this iteration's graph from outside it (a leaf, a parameter ...)."""
    data = tensor._array
    grad_fn = tensor.grad_fn
    mark = tensor.__dict__.get("_unwritten")  # made by ``empty``, unwritten since?
    unwritten = mark is not None and mark == tensor._version
    tracer.tensor(
        tensor._id, getattr(tensor, "_name", "") or "", data.shape, _dtype_name(data.dtype),
        tensor.requires_grad, getattr(tensor, "_is_param", False),
        None if tracer.stats != "full" or unwritten else tracer.summarize_array(data),
        grad_fn is None, "" if grad_fn is None else grad_fn.name(),
        UNWRITTEN if unwritten else data,
    )


def _grad_summary(g: np.ndarray) -> SummaryRow | None:
    key = id(g)
    if key in _grad_summaries:
        return _grad_summaries[key]
    summary = _grad_summaries[key] = tracer.summarize_array(g)
    _summarised.append(g)
    tracer.keep(summary)
    return summary


def _forget_grads() -> None:
    _grad_summaries.clear()
    _summarised.clear()


def backward_start(root: Any, retain_graph: bool) -> None:
    _forget_grads()
    tracer.backward_start(root._id, retain_graph)


def node_ran(node_id: int, node: Any, grad_output: np.ndarray, in_grads: Any,
             duration_ns: int) -> None:
    """The backward pass ran ``node`` (an autograd Node) on ``grad_output`` and handed
    ``in_grads`` to its inputs: ``Tracer.backward_step`` with the ids and gradients taken
    apart here, unrolled for one and two inputs (most nodes), the row built here."""
    t = tracer
    if _get_ident() != t.thread and t.other_thread():
        return
    inputs = node.inputs
    n = len(inputs)
    summ = _grad_summary if t.stats != "none" else None
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
        if summ is None:
            summaries: tuple[SummaryRow | None, ...] = (None, None)
        else:
            summaries = (None if gx is None else summ(gx), None if gy is None else summ(gy))
    elif n == 1 and type(in_grads) is tuple and len(in_grads) == 1:
        (x,) = inputs
        if x is None:
            ids, grads = (-1,), (None,)
        else:
            ids, grads = (x.out_id if type(x) is Node else x._id,), in_grads
        gx = grads[0]
        summaries = (None,) if summ is None or gx is None else (summ(gx),)
    else:
        ids = tuple([-1 if x is None else (x.out_id if type(x) is Node else x._id)
                     for x in inputs])
        grads = tuple([None if x is None else g
                       for x, g in zip(inputs, in_grads, strict=False)])
        if summ is None:
            summaries = _NONES.get(len(grads)) or (None,) * len(grads)
        else:
            summaries = tuple([None if g is None else summ(g) for g in grads])
    op = node.op
    seq = t.seq = t.seq + 1
    keep = t.keep  # (see Tracer.keep; the summaries themselves were kept when made)
    keep(ids)
    keep(summaries)
    row = ("backward_step", seq, t.iteration, node_id, op.name, op.grad_fn_name, ids,
           None if summ is None else summ(grad_output), summaries, duration_ns, node_id,
           (), (), ())  # (one node per op output: see events.BackwardStep)
    if t.array_hook is not None:
        t.array_hook("grads", node_id, (grad_output, grads))
    rows = t.rows  # ``Tracer.deliver``, inlined
    rows.append(row)
    for hook in t.hooks:
        hook(row)
    if len(rows) >= BATCH_ROWS:
        t.flush_rows()


def grad_accumulated(tensor: Any) -> None:
    grad = getattr(tensor, "_grad", None)
    if grad is None:
        grad = tensor.grad
    data = grad._array
    tracer.grad_accumulated(tensor._id, getattr(tensor, "_name", "") or "",
                            _grad_summary(data), data)


def backward_end(root: Any, duration_ns: int) -> None:
    _forget_grads()
    tracer.backward_end(root._id, duration_ns)
