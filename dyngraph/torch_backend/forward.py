"""The forward half of PyTorch capture: a ``TorchFunctionMode`` that reports each op.

The mode sees calls as the user wrote them (``F.linear``, ``Tensor.add``, ``x[1:3]``),
with ``grad_fn`` already attached to the result. For each op it reads autograd's sequence
number before and after the call: the backward nodes the op created are exactly those
numbered in between (``F.linear`` makes two, ``TBackward0`` and ``AddmmBackward0``), which
is how ``backward.py`` maps every backward node to its forward op. The handler runs with
the mode popped, so ops inside an op are never reported twice, and the statistics it
computes are not ops of the script.

What is not an op of the graph is not reported: calls without a tensor result (``x.dim()``,
``.item()``), calls that hand back their input (``x.float()`` on a float tensor), calls
without tensor inputs (``torch.zeros``: their results enter the graph as leaves, as on the
numpy engine), in-place changes outside any graph (an optimizer's update, weight
initialisation), and the optimizer's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..capture.events import Summary
from ..capture.tracing import now_ns, tracer
from . import stats
from .calls import BACKWARD, INPLACE, ITER, SKIP, _kinds, classify
from .ids import id_of, new_id
from .stats import dtype_name, shape_of

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_seq_nr = torch._C._autograd._get_sequence_nr
_grad_enabled = torch.is_grad_enabled


class ForwardCapture(TorchFunctionMode):
    """Reports ops to the tracer. ``quiet`` > 0 passes every call through unrecorded;
    ``in_step`` > 0 (an optimizer's ``step``) passes through what runs without grad."""

    def __init__(self, names: dict[int, tuple[str, bool]],
                 on_window: Callable[[int, int, int, str], None],
                 on_leaf: Callable[[_Tensor, int], None],
                 on_backward: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any]) -> None:
        super().__init__()
        self.names = names
        self.quiet = 0
        self.in_step = 0
        self._on_window = on_window
        self._on_leaf = on_leaf
        self._on_backward = on_backward
        self.stats = ""
        self._summaries: Callable[[Sequence[_Tensor | None]], list[Summary | None]] = stats.none
        self._one: Callable[[_Tensor], Summary | None] = lambda t: None

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        try:
            kind, name = _kinds[func]
        except (KeyError, TypeError):
            kind, name = classify(func)
        if kind == SKIP or self.quiet or not tracer.listening:
            return func(*args, **kwargs)
        if kind == BACKWARD:
            return self._on_backward(func, name, tuple(args), kwargs)
        if self.in_step and not _grad_enabled():
            return func(*args, **kwargs)
        s0 = _seq_nr()
        t0 = now_ns()
        out = func(*args, **kwargs)
        duration = now_ns() - t0
        if kind == ITER:  # ``for row in x``: the rows, recorded as one unbind
            rows = tuple(out)
            self.record(name, kind, args, kwargs, rows, s0, _seq_nr(), duration)
            return iter(rows)
        self.record(name, kind, args, kwargs, out, s0, _seq_nr(), duration)
        return out

    def set_stats(self, mode: str) -> None:
        if mode != self.stats:
            self.stats = mode
            self._summaries = stats.SUMMARIZERS[mode]
            if mode == "cheap":
                self._one = stats.cheap_one
            elif mode == "full":
                self._one = lambda t: stats.full([t])[0]
            else:
                self._one = lambda t: None

    # -- recording ---------------------------------------------------------------------
    def record(self, name: str, kind: int, args: Sequence[Any], kwargs: dict[str, Any],
               out: Any, s0: int, s1: int, duration: int) -> None:
        """Report ``out = name(*args, **kwargs)``; nodes ``[s0, s1)`` are the op's."""
        if isinstance(out, _Tensor):
            outs: tuple[_Tensor, ...] = (out,)
        elif isinstance(out, (tuple, list)):
            outs = tuple(o for o in out if isinstance(o, _Tensor))
        elif out is None and kind == INPLACE and args and isinstance(args[0], _Tensor):
            outs = (args[0],)
        else:
            return
        if not outs:
            return
        if kind == INPLACE:
            if s1 == s0:
                return  # changed in place outside any graph: not an op of it
        elif args and outs[0] is args[0]:
            return  # handed its input back unchanged (x.float() on a float tensor)
        if tracer.iteration == 0 and _grad_enabled() and any(o.requires_grad for o in outs):
            tracer.end_setup()  # before its inputs are announced: they enter iteration 1
        ids, flat, attrs = self._inputs(args, kwargs)
        if ids is None:
            return  # no tensor went in: a creation op; its result enters as a leaf
        if tracer.stats != self.stats:
            self.set_stats(tracer.stats)
        grad_enabled = _grad_enabled()
        if len(outs) == 1:  # the usual case, without the lists
            o = outs[0]
            oid = new_id(o)
            tracer.op(name, ids, oid, shape_of(o), dtype_name(o.dtype), o.requires_grad, attrs,
                      grad_enabled, duration, self._one(o), o, flat)
            if s1 > s0:
                self._on_window(s0, s1, oid, name)
            return
        summaries = self._summaries(outs)
        first = 0
        for i, o in enumerate(outs):
            oid = new_id(o)
            if i == 0:
                first = oid
            tracer.op(name, ids, oid, shape_of(o), dtype_name(o.dtype), o.requires_grad,
                      attrs if i == 0 else {**attrs, "output": i}, grad_enabled,
                      duration if i == 0 else 0, summaries[i], o, flat)
        if s1 > s0:
            self._on_window(s0, s1, first, name)

    def _inputs(self, args: Sequence[Any], kwargs: dict[str, Any]
                ) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        """(input ids, the arguments aligned with them, attrs); ids None if no tensor.

        Tensors are inputs, also inside a list (``torch.cat``); a float constant is an
        input too (-1: ``x * 0.5``, ``masked_fill(m, -inf)``); other arguments are attrs,
        positional ones under ``"args"``.
        """
        known = tracer.known
        ids: list[int] = []
        flat: list[Any] = []
        consts: list[Any] = []
        tensors = False
        for a in args:
            if isinstance(a, _Tensor):
                tensors = True
                ids.append(self._known_id(a, known))
                flat.append(a)
            elif type(a) is float:
                ids.append(-1)
                flat.append(a)
            elif type(a) in (list, tuple) and a and isinstance(a[0], _Tensor):
                tensors = True
                for t in a:
                    if isinstance(t, _Tensor):
                        ids.append(self._known_id(t, known))
                        flat.append(t)
            else:
                consts.append(a)
        attrs: dict[str, Any] = {"args": tuple(consts)} if consts else {}
        for k, v in kwargs.items():
            if isinstance(v, _Tensor):
                tensors = True
                ids.append(self._known_id(v, known))
                flat.append(v)
            else:
                attrs[k] = v
        if not tensors:
            return None, (), attrs
        return tuple(ids), tuple(flat), attrs

    def _known_id(self, t: _Tensor, known: set[int]) -> int:
        tid = id_of(t)
        if tid not in known:
            self.announce(t, tid)
        return tid

    def announce(self, t: _Tensor, tid: int) -> None:
        """``t`` enters this iteration's graph from outside it (a leaf, a parameter ...)."""
        name, is_param = self.names.get(tid, ("", False))
        grad_fn = t.grad_fn
        if grad_fn is None and t.requires_grad:
            self._on_leaf(t, tid)
        if tracer.stats != self.stats:
            self.set_stats(tracer.stats)
        tracer.tensor(
            tid, name, shape_of(t), dtype_name(t.dtype), t.requires_grad,
            is_param or isinstance(t, _Parameter),
            stats.full([t])[0] if self.stats == "full" else None, grad_fn is None,
            "" if grad_fn is None else type(grad_fn).__name__, t,
        )
