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

from ..capture.arrays import UNWRITTEN
from ..capture.events import Summary
from ..capture.tracing import now_ns, tracer
from . import stats
from .calls import BACKWARD, EMPTY, INPLACE, ITER, PARTIAL_WRITES, SKIP, _kinds, classify
from .guard import failed
from .ids import id_of, new_id
from .stats import dtype_of, shape_of

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_seq_nr = torch._C._autograd._get_sequence_nr
_grad_enabled = torch.is_grad_enabled
_tracing_state = torch._C._get_tracing_state
_set_tracing_state = torch._C._set_tracing_state  # type: ignore[attr-defined]


def _still_unwritten(args: Sequence[Any]) -> None:
    """A part of a tensor of the ``empty`` family was written: the rest still is not data."""
    t: Any = args[0] if args else None
    mark = t.__dict__.get("_dg_unwritten") if isinstance(t, _Tensor) else None
    if mark is not None and mark[0] == id(t):
        t._dg_unwritten = (mark[0], t._version)


class ForwardCapture(TorchFunctionMode):
    """Reports ops to the tracer. ``quiet`` > 0 passes every call through unrecorded;
    ``in_step`` > 0 (an optimizer's ``step``) passes through what runs without grad."""

    def __init__(self, names: dict[int, tuple[str, bool]],
                 on_window: Callable[[int, int, int, str], None],
                 on_leaf: Callable[[_Tensor, int], None],
                 on_backward: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any],
                 on_owner: Callable[[int, int, int], None] = lambda seq, nr, tid: None,
                 on_several: Callable[[int, int, _Tensor], None] = lambda seq, nr, t: None
                 ) -> None:
        super().__init__()
        self.names = names
        self.quiet = 0
        self.in_step = 0
        self._on_window = on_window
        self._on_leaf = on_leaf
        self._on_backward = on_backward
        self._on_owner = on_owner
        self._on_several = on_several
        self.stats = ""
        self.eager = False  # statistics read per op (see ``set_stats``)
        self.buffer: Any = None  # the capture's ``deferred.StatsBuffer``
        self._summaries: Callable[[Sequence[_Tensor | None]], list[Any]] = stats.none
        self._one: Callable[[_Tensor], Any] = lambda t: None
        self._full_one: Callable[[_Tensor], Any] = _full_now

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
        if kind == EMPTY:  # (its result enters the graph as a leaf: see ``announce``)
            out = func(*args, **kwargs)
            if isinstance(out, _Tensor):
                out._dg_unwritten = (id(out), out._version)  # type: ignore[attr-defined]
            return out
        if self.in_step and not _grad_enabled():
            return func(*args, **kwargs)
        before = _version_of(args[0]) if kind == INPLACE and args else None
        s0 = _seq_nr()
        t0 = now_ns()
        out = func(*args, **kwargs)
        duration = now_ns() - t0
        if kind == ITER:  # ``for row in x``: the rows, recorded as one unbind
            out = tuple(out)
        elif kind == INPLACE and name in PARTIAL_WRITES:
            _still_unwritten(args)
        # Recording never raises into the script (``guard``), and under ``torch.jit.trace``
        # it runs with tracing off: the tracer would take dyngraph's reads (shapes,
        # statistics) into the user's graph, and the trace's own check would fail.
        try:
            tracing = _tracing_state()
            if tracing is None:
                self.record(name, kind, args, kwargs, out, s0, _seq_nr(), duration, before)
            else:
                _set_tracing_state(None)
                try:
                    self.record(name, kind, args, kwargs, out, s0, _seq_nr(), duration,
                                before)
                finally:
                    _set_tracing_state(tracing)
        except Exception as exc:  # noqa: BLE001 - dyngraph's failure, not the script's
            failed(f"the op {name}", exc)
        return iter(out) if kind == ITER else out

    def set_stats(self, mode: str) -> None:
        """Summarise at ``mode``: on the device, read once per iteration (``deferred``),
        or read per op while ``tracer.eager_stats`` (a value breakpoint of the debugger
        wants each op's numbers as it runs)."""
        eager = tracer.eager_stats or self.buffer is None
        if mode == self.stats and eager == self.eager:
            return
        self.stats, self.eager = mode, eager
        buf = self.buffer
        if eager:
            self._summaries = stats.SUMMARIZERS[mode]
            self._one = (stats.cheap_one if mode == "cheap" else _full_now if mode == "full"
                         else _no_summary)
            self._full_one = _full_now
        else:
            self._summaries = (buf.cheap if mode == "cheap" else buf.full if mode == "full"
                               else stats.none)
            self._one = (buf.cheap_one if mode == "cheap" else buf.full_one if mode == "full"
                         else _no_summary)
            self._full_one = buf.full_one

    # -- recording ---------------------------------------------------------------------
    def record(self, name: str, kind: int, args: Sequence[Any], kwargs: dict[str, Any],
               out: Any, s0: int, s1: int, duration: int, before: int | None = None) -> None:
        """Report ``out = name(*args, **kwargs)``; nodes ``[s0, s1)`` are the op's.
        ``before``: the version of ``args[0]`` before the call, for one that may change
        it in place."""
        if isinstance(out, _Tensor):
            outs: tuple[_Tensor, ...] = (out,)
        elif isinstance(out, (tuple, list)):
            outs = _flat(out)  # (nested too: an LSTM's (output, (h, c)))
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
            if not _made_in(outs[0], s0, s1):
                return  # handed its input back unchanged (x.float() on a float tensor)
            kind = INPLACE  # changed in place in the graph (a Function's ctx.mark_dirty)
        if tracer.iteration == 0 and _grad_enabled() and any(o.requires_grad for o in outs):
            tracer.end_setup()  # before its inputs are announced: they enter iteration 1
        ids, flat, attrs = self._inputs(args, kwargs, before)
        if ids is None:
            return  # no tensor went in: a creation op; its result enters as a leaf
        if tracer.stats != self.stats or tracer.eager_stats is not self.eager:
            self.set_stats(tracer.stats)
        grad_enabled = _grad_enabled()
        if len(outs) == 1:  # the usual case, without the lists
            o = outs[0]
            oid = new_id(o)
            tracer.op(name, ids, oid, shape_of(o), dtype_of(o), o.requires_grad, attrs,
                      grad_enabled, duration, self._one(o), o, flat)
            if s1 > s0:
                self._on_window(s0, s1, oid, name)
            self._own(o, oid)
            if kind == INPLACE:
                self._changed_in_place(o, oid, grad_enabled)
            return
        summaries = self._summaries(outs)
        first = 0
        oids = []
        for i, o in enumerate(outs):
            oid = new_id(o)
            oids.append(oid)
            if i == 0:
                first = oid
            tracer.op(name, ids, oid, shape_of(o), dtype_of(o), o.requires_grad,
                      attrs if i == 0 else {**attrs, "output": i}, grad_enabled,
                      duration if i == 0 else 0, summaries[i], o, flat)
        if s1 > s0:
            self._on_window(s0, s1, first, name)
        for o, oid in zip(outs, oids, strict=True):
            self._own(o, oid, several=True)

    def _own(self, t: _Tensor, tid: int, several: bool = False) -> None:
        """``t`` (recorded as ``tid``) is the output of its ``grad_fn``'s slot
        ``output_nr``: the gradient arriving there is ``t``'s. ``several``: one of an
        op's several outputs (the tensor is kept, weakly: ``backward.Siblings``)."""
        fn = grad_fn_of(t)
        if fn is not None:
            seq = fn._sequence_nr()
            self._on_owner(seq, t.output_nr, tid)
            if several:
                self._on_several(seq, t.output_nr, t)
        if t._is_view():
            _note_version(t, tid)

    def _changed_in_place(self, t: _Tensor, tid: int, grad_enabled: bool) -> None:
        """``t`` (now ``tid``) was changed in place. Through a view, its base changed too:
        the base takes a ``copy_slices`` op (autograd's ``CopySlices``), as on the numpy
        engine, so later ops on the base are wired to the changed value."""
        base = t._base if t._is_view() else None
        if base is None:
            return
        bid = id_of(base)
        if bid not in tracer.known:  # (entering now, it holds its new node already)
            self.announce(base, bid, own=False)
        oid = new_id(base)
        tracer.op("copy_slices", (bid, tid), oid, shape_of(base), dtype_of(base),
                  base.requires_grad, {}, grad_enabled, 0, self._one(base), base, (base, t))
        self._own(base, oid)

    def _inputs(self, args: Sequence[Any], kwargs: dict[str, Any], before: int | None = None
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
        for i, a in enumerate(args):
            if isinstance(a, _Tensor):
                tensors = True
                ids.append(self._current_id(a, known, before if i == 0 else None))
                flat.append(a)
            elif type(a) is float:
                ids.append(-1)
                flat.append(a)
            elif type(a) in (list, tuple) and a and isinstance(a[0], _Tensor):
                tensors = True
                for t in a:
                    if isinstance(t, _Tensor):
                        ids.append(self._current_id(t, known))
                        flat.append(t)
            else:
                consts.append(a)
        attrs: dict[str, Any] = {"args": tuple(consts)} if consts else {}
        for k, v in kwargs.items():
            if isinstance(v, _Tensor):
                tensors = True
                ids.append(self._current_id(v, known))
                flat.append(v)
            else:
                attrs[k] = v
        if not tensors:
            return None, (), attrs
        return tuple(ids), tuple(flat), attrs

    def _current_id(self, t: _Tensor, known: set[int], before: int | None = None) -> int:
        """``t``'s id, announced if the iteration does not know it yet. A view whose
        memory changed since it was recorded (its base, or another view of it, changed in
        place) is taken again from its base first (an ``as_strided`` op, as on the numpy
        engine), so the op is wired to the value it read. ``before``: ``t``'s version
        before the op ran (an in-place op changes it: that is not a change to see)."""
        tid = id_of(t)
        if tid not in known:
            # (the target of an in-place op holds its new node already: not the one of
            # the value that came in)
            self.announce(t, tid, own=before is None)
            return tid
        seen = t.__dict__.get("_dg_v")
        if seen is not None:
            now = _version_of(t) if before is None else before
            if now != seen[1] and seen[0] == tid:
                return self._view_again(t, tid)
        return tid

    def _view_again(self, t: _Tensor, tid: int) -> int:
        """Record view ``t``, whose memory changed, as read again from its base."""
        base = t._base
        if base is None:
            return tid
        bid = self._current_id(base, tracer.known)
        oid = new_id(t)
        tracer.op("as_strided", (bid,), oid, shape_of(t), dtype_of(t),
                  t.requires_grad, {}, _grad_enabled(), 0, self._one(t), t, (base,))
        self._own(t, oid)
        return oid

    def announce(self, t: _Tensor, tid: int, own: bool = True) -> None:
        """``t`` enters this iteration's graph from outside it (a leaf, a parameter ...);
        ``own``: a non-leaf's gradient is its node's (see ``_own``)."""
        name, is_param = self.names.get(tid, ("", False))
        grad_fn = grad_fn_of(t)
        # (no node is not a leaf where the node is only unreadable: a split piece whose
        # base changed in place, used under no_grad, is no leaf to hook)
        leaf = grad_fn is None and _is_leaf(t)
        if leaf and t.requires_grad:
            self._on_leaf(t, tid)
        elif grad_fn is not None and own:  # computed before: its node's slot's gradient
            self._own(t, tid)
        if tracer.stats != self.stats or tracer.eager_stats is not self.eager:
            self.set_stats(tracer.stats)
        # A tensor of the ``empty`` family not written since (its version unchanged but by
        # writes to a part of it) holds memory nobody wrote: no data, no statistics.
        mark = t.__dict__.get("_dg_unwritten")
        unwritten = mark is not None and mark == (id(t), t._version)
        tracer.tensor(
            tid, name, shape_of(t), dtype_of(t), t.requires_grad,
            is_param or isinstance(t, _Parameter),
            None if unwritten else self._full_one(t) if self.stats == "full"
            else self._one(t) if tracer.leaf_stats and self.stats == "cheap" else None,
            leaf, "" if grad_fn is None else type(grad_fn).__name__,
            UNWRITTEN if unwritten else t,
        )


def _full_now(t: _Tensor) -> Summary | None:
    return stats.full([t])[0]


def _no_summary(t: _Tensor) -> None:
    return None


def _flat(out: Sequence[Any]) -> tuple[_Tensor, ...]:
    """The tensors of a (nested) tuple or list of results, in order."""
    found: list[_Tensor] = []
    for o in out:
        if isinstance(o, _Tensor):
            found.append(o)
        elif isinstance(o, (tuple, list)):
            found.extend(_flat(o))
    return tuple(found)


def _made_in(t: _Tensor, s0: int, s1: int) -> bool:
    """Did the call that numbered autograd nodes ``[s0, s1)`` give ``t`` its node?"""
    if s1 == s0:
        return False
    fn = grad_fn_of(t)
    return fn is not None and s0 <= fn._sequence_nr() < s1


def grad_fn_of(t: _Tensor) -> Any:
    """``t.grad_fn``; None where reading it raises (an output of a multi-output view op,
    ``split``'s, whose base was changed in place: PyTorch refuses to rebuild its node)."""
    try:
        return t.grad_fn
    except RuntimeError:
        return None


def _is_leaf(t: _Tensor) -> bool:
    """``t.is_leaf``; False where reading it raises (as ``grad_fn_of``)."""
    try:
        return bool(t.is_leaf)
    except RuntimeError:
        return False


def _version_of(t: Any) -> int | None:
    """``t._version`` (None where there is none: an inference tensor, a non-tensor)."""
    try:
        return t._version  # type: ignore[no-any-return]
    except (AttributeError, RuntimeError):
        return None


def _note_version(view: _Tensor, tid: int) -> None:
    """Remember the version of the memory of view ``view``, recorded as ``tid`` (see
    ``_current_id``)."""
    version = _version_of(view)
    if version is not None:
        view._dg_v = (tid, version)  # type: ignore[attr-defined]
