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

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..capture.arrays import UNWRITTEN
from ..capture.events import Summary
from ..capture.plainvalues import plain
from ..capture.rows import summary_row
from ..capture.tracing import BATCH_ROWS, now_ns, tensor_ids, tracer
from . import stats
from .calls import BACKWARD, EMPTY, INPLACE, ITER, OP, PARTIAL_WRITES, SKIP, _kinds, classify
from .guard import failed
from .ids import id_of, new_id
from .stats import _dtype_names, dtype_of, shape_of

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_seq_nr = torch._C._autograd._get_sequence_nr
_grad_enabled = torch.is_grad_enabled
_tracing_state = torch._C._get_tracing_state
_set_tracing_state = torch._C._set_tracing_state  # type: ignore[attr-defined]
_PLAIN = frozenset((int, bool, str, type(None)))  # (attrs as they are; a float is an input)
_NO_KWARGS: dict[str, Any] = {}  # (read only)
_strided = torch.strided
_get_ident = threading.get_ident
_next_id = tensor_ids.__next__


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
        self._no_stats = True  # stats == "none"
        self._cheap = False  # stats == "cheap"
        self.buffer: Any = None  # the capture's ``deferred.StatsBuffer``
        self._summaries: Callable[[Sequence[_Tensor | None]], list[Any]] = stats.none
        self._one: Callable[[_Tensor], Any] = lambda t: None
        self._full_one: Callable[[_Tensor], Any] = _full_now
        self._late = 0  # views whose node is read after the op that rebuilds it (``_own_late``)

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = _NO_KWARGS
        try:
            kind, name = _kinds[func]
        except (KeyError, TypeError):
            kind, name = classify(func)
        if kind != OP or self.quiet or self.in_step or not tracer.listening:
            return self._call(func, kind, name, args, kwargs)
        # The usual op, with nothing to weigh first: this runs for every op.
        s0 = _seq_nr()
        t0 = now_ns()
        out = func(*args, **kwargs)
        duration = now_ns() - t0
        try:
            if _tracing_state() is not None:
                self._record_untraced(name, OP, args, kwargs, out, s0, duration, None)
            elif isinstance(out, _Tensor) and not (args and out is args[0]):
                self._record_op(name, args, kwargs, out, s0, _seq_nr(), duration)
            else:
                self.record(name, OP, args, kwargs, out, s0, _seq_nr(), duration)
        except Exception as exc:  # noqa: BLE001 - dyngraph's failure, not the script's
            failed(f"the op {name}", exc)
        return out

    def _call(self, func: Any, kind: int, name: str, args: Sequence[Any],
              kwargs: dict[str, Any]) -> Any:
        """``__torch_function__`` of every call but an op recorded as it is: noise, a
        backward, an ``empty``, an in-place change, an iteration, what runs unrecorded."""
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
        # Recording never raises into the script (``guard``).
        try:
            if _tracing_state() is None:
                self.record(name, kind, args, kwargs, out, s0, _seq_nr(), duration, before)
            else:
                self._record_untraced(name, kind, args, kwargs, out, s0, duration, before)
        except Exception as exc:  # noqa: BLE001 - dyngraph's failure, not the script's
            failed(f"the op {name}", exc)
        return iter(out) if kind == ITER else out

    def _record_untraced(self, name: str, kind: int, args: Sequence[Any],
                         kwargs: dict[str, Any], out: Any, s0: int, duration: int,
                         before: int | None) -> None:
        """``record`` under ``torch.jit.trace``, with its tracing off: it would take
        dyngraph's reads (shapes, statistics) into the user's graph, and the trace's own
        check would fail."""
        tracing = _tracing_state()
        _set_tracing_state(None)
        try:
            self.record(name, kind, args, kwargs, out, s0, _seq_nr(), duration, before)
        finally:
            _set_tracing_state(tracing)

    def set_stats(self, mode: str) -> None:
        """Summarise at ``mode``: on the device, read once per iteration (``deferred``),
        or read per op while ``tracer.eager_stats`` (a value breakpoint of the debugger
        wants each op's numbers as it runs)."""
        eager = tracer.eager_stats or self.buffer is None
        if mode == self.stats and eager == self.eager:
            return
        self.stats, self.eager = mode, eager
        self._no_stats, self._cheap = mode == "none", mode == "cheap"
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
            if kind == OP and not (args and out is args[0]):
                self._record_op(name, args, kwargs, out, s0, s1, duration)
                return
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
                if self._late:
                    self._own_late(flat)
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
                      attrs if i == 0 else tracer.shared_attrs((*attrs, ("output", i))),
                      grad_enabled,
                      duration if i == 0 else 0, summaries[i], o, flat)
        if s1 > s0:
            self._on_window(s0, s1, first, name)
            if self._late:
                self._own_late(flat)
        for o, oid in zip(outs, oids, strict=True):
            self._own(o, oid, several=True)

    def _record_op(self, name: str, args: Sequence[Any], kwargs: dict[str, Any], o: _Tensor,
                   s0: int, s1: int, duration: int) -> None:
        """``record`` of the usual call: one new tensor out, nothing changed in place.

        ``Tracer.op`` inlined, as ``engine.recording.op`` inlines it for the numpy engine
        (a chain of tiny ops pays every line of it per op): keep the three in step.
        """
        t = tracer
        if _get_ident() != t.thread and t.other_thread():
            return
        grad_enabled = _grad_enabled()
        requires_grad = o.requires_grad
        if t.iteration == 0 and grad_enabled and requires_grad:
            t.end_setup()  # before its inputs are announced: they enter iteration 1
        found = None if kwargs or len(args) != 2 else self._two_inputs(args, t.known)
        if found is None:
            found = self._inputs(args, kwargs)
        ids, flat, attrs = found
        if ids is None:
            return  # no tensor went in: a creation op; its result enters as a leaf
        if t.stats != self.stats or t.eager_stats is not self.eager:
            self.set_stats(t.stats)
        if t._pending_end:
            t.end_iteration()
        oid = _next_id()  # (``ids.new_id``)
        o._dg_id = (id(o), oid)  # type: ignore[attr-defined]
        calls = t.call_stack
        if t._announced < len(calls):
            t.announce_calls()
        file, line, function = t.source(3)  # (from record's caller: library code)
        shape = shape_of(o)
        dtype = o.dtype
        if self._no_stats:
            summary = None
        elif self._cheap and not (dtype.is_floating_point or dtype.is_complex):
            summary = stats.no_stats_row(shape, dtype)  # (index arithmetic: no norm)
        else:
            summary = summary_row(self._one(o))
            t.keep(summary)
        seq = t.seq = t.seq + 1
        t.keep(ids)
        if o.layout is _strided and not o.is_nested and not o.is_meta:  # (``dtype_of``)
            dtype_text = _dtype_names.get(dtype) or dtype_of(o)
        else:
            dtype_text = dtype_of(o)
        row = ("op", seq, t.iteration, name, ids, oid, shape, dtype_text,
               requires_grad, attrs, t.module_stack[-1], file, line, function,
               grad_enabled, duration, summary, calls[-1])
        t.known.add(oid)
        t.iteration_ops.append(row)
        if t.array_hook is not None:
            t.array_hook("op", oid, (o, flat))
        rows = t.rows  # (``Tracer.deliver``, inline)
        rows.append(row)
        for hook in t.hooks:
            hook(row)
        if len(rows) >= BATCH_ROWS:
            t.flush_rows(final=False)
        if t.values == "small":
            t.emit_values(oid, shape, o)
        if s1 > s0:
            self._on_window(s0, s1, oid, name)
            if self._late:
                self._own_late(flat)
        if requires_grad:  # (``_own``, inline: a tensor that needs no grad has no node)
            fn = grad_fn_of(o)
            if fn is not None:
                self._on_owner(fn._sequence_nr(), o.output_nr, oid)
        if o._is_view():
            try:
                o._dg_v = (oid, o._version)  # type: ignore[attr-defined]
            except RuntimeError:  # (an inference tensor: no version)
                pass

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

    def _own_later(self, t: _Tensor, tid: int) -> None:
        """``_own`` for view ``t`` after the next op that takes it into the graph.

        Autograd rebuilds the node of a view whose memory changed when the view is next
        read in the graph, and numbers it then. Read by the capture earlier (say under
        ``no_grad``), it would be rebuilt earlier, with a smaller number than in the plain
        run; backward runs nodes by their numbers, so gradients would be summed in another
        order and differ in their last bits. The op that uses the view has rebuilt it:
        its node is read after that op (``_own_late``)."""
        _note_version(t, tid)
        try:
            t._dg_late = tid  # type: ignore[attr-defined]
        except RuntimeError:
            return
        self._late += 1

    def _own_late(self, flat: Sequence[Any]) -> None:
        """Own the views in ``flat`` (the inputs of an op that just made autograd nodes:
        ``setitem``'s include the value written) whose node was left to be read after such
        an op (``_own_later``)."""
        for t in flat:
            if not isinstance(t, _Tensor):
                continue
            tid = t.__dict__.pop("_dg_late", None)
            if tid is not None:
                self._late -= 1
                if tid in tracer.known:
                    self._own(t, tid)

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
                ) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
        """(input ids, the arguments aligned with them, attrs); ids None if no tensor.

        Tensors are inputs, also inside a list (``torch.cat``); a float constant is an
        input too (-1: ``x * 0.5``, ``masked_fill(m, -inf)``); other arguments are attrs,
        positional ones under ``"args"``. The attrs are the row's items, as plain data
        (``Tracer.shared_attrs``).
        """
        known = tracer.known
        ids: list[int] = []
        flat: list[Any] = []
        consts: list[Any] = []
        tensors = False
        first = True
        for a in args:
            t = type(a)
            if t is _Tensor or isinstance(a, _Tensor):
                tensors = True
                flat.append(a)
                d = a.__dict__
                pair = d.get("_dg_id")  # (``_current_id``'s usual answer, inline)
                if (pair is not None and pair[0] == id(a) and pair[1] in known
                        and "_dg_v" not in d):
                    ids.append(pair[1])
                else:
                    ids.append(self._current_id(a, known, before if first else None))
            elif t is float:
                ids.append(-1)
                flat.append(a)
            elif t in _PLAIN:
                consts.append(a)
            elif t is slice:
                consts.append(_slice_text(a))
            elif (t is list or t is tuple) and a and isinstance(a[0], _Tensor):
                tensors = True
                self._list_ids(a, known, ids, flat)
            else:
                consts.append(plain(a))
            first = False
        if kwargs:
            return self._with_kwargs(ids, flat, consts, kwargs, known, tensors)
        if not tensors:
            return None, (), ()
        return tuple(ids), tuple(flat), _args_attrs(tuple(consts)) if consts else ()

    def _list_ids(self, tensors: Sequence[Any], known: set[int], ids: list[int],
                  flat: list[Any]) -> None:
        """Append the ids of the tensors of a list argument (``torch.stack(rows)``) to
        ``ids``, and the tensors to ``flat``."""
        add_id, add_tensor = ids.append, flat.append
        for x in tensors:
            if not isinstance(x, _Tensor):
                continue
            add_tensor(x)
            d = x.__dict__
            pair = d.get("_dg_id")  # (``_current_id``'s usual answer, inline)
            if pair is not None and pair[0] == id(x) and pair[1] in known:
                seen = d.get("_dg_v")
                if seen is None or seen[1] == x._version or seen[0] != pair[1]:
                    add_id(pair[1])
                    continue
            add_id(self._current_id(x, known))

    def _two_inputs(self, args: Sequence[Any], known: set[int]
                    ) -> tuple[tuple[int, ...], tuple[Any, ...], tuple[Any, ...]] | None:
        """``_inputs`` of the most common call, ``f(tensor, tensor)`` or ``f(tensor,
        constant)`` (``x + y``, ``x * 0.5``, ``x[a:b]``), whose tensors the iteration
        knows; None for any other."""
        a, b = args
        if type(a) is not _Tensor:
            return None
        d = a.__dict__
        pair = d.get("_dg_id")
        # (a view recorded as one: its memory may have changed since, ``_current_id`` looks)
        if pair is None or pair[0] != id(a) or pair[1] not in known or "_dg_v" in d:
            return None
        tb = type(b)
        if tb is _Tensor:
            d = b.__dict__
            other = d.get("_dg_id")
            if other is None or other[0] != id(b) or other[1] not in known or "_dg_v" in d:
                return None
            return (pair[1], other[1]), args if type(args) is tuple else tuple(args), ()
        if tb is float:
            return (pair[1], -1), args if type(args) is tuple else tuple(args), ()
        if tb is slice:
            return (pair[1],), (a,), _slice_attrs(b)
        if tb in _PLAIN:
            return (pair[1],), (a,), _args_attrs((b,))
        return None

    def _with_kwargs(self, ids: list[int], flat: list[Any], consts: list[Any],
                     kwargs: dict[str, Any], known: set[int], tensors: bool
                     ) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
        """``_inputs``' answer where keyword arguments come too."""
        items: list[tuple[str, Any]] = [("args", tuple(consts))] if consts else []
        for k, v in kwargs.items():
            if isinstance(v, _Tensor):
                tensors = True
                ids.append(self._current_id(v, known))
                flat.append(v)
            else:
                items.append((k, v if type(v) in _PLAIN else plain(v)))
        if not tensors:
            return None, (), ()
        return tuple(ids), tuple(flat), tracer.shared_attrs(tuple(items)) if items else ()

    def _current_id(self, t: _Tensor, known: set[int], before: int | None = None) -> int:
        """``t``'s id, announced if the iteration does not know it yet. A view whose
        memory changed since it was recorded (its base, or another view of it, changed in
        place) is taken again from its base first (an ``as_strided`` op, as on the numpy
        engine), so the op is wired to the value it read. ``before``: ``t``'s version
        before the op ran (an in-place op changes it: that is not a change to see)."""
        d = t.__dict__
        pair = d.get("_dg_id")  # (``ids.id_of``, inline: this runs for every input)
        if pair is None or pair[0] != id(t):
            tid = id_of(t)
        else:
            tid = pair[1]
        if tid not in known:
            # (the target of an in-place op holds its new node already: not the one of
            # the value that came in)
            self.announce(t, tid, own=before is None)
            return tid
        seen = d.get("_dg_v")
        if seen is not None and seen[0] == tid:
            now = _version_of(t) if before is None else before
            if now != seen[1]:
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
        self._own_later(t, oid)
        return oid

    def announce(self, t: _Tensor, tid: int, own: bool = True) -> None:
        """``t`` enters this iteration's graph from outside it (a leaf, a parameter ...);
        ``own``: a non-leaf's gradient is its node's (see ``_own``)."""
        name, is_param = self.names.get(tid, ("", False))
        if _rebuilt_when_read(t):  # (its node is not read now: see ``_own_later``)
            grad_fn, leaf = None, False
            if own:
                self._own_later(t, tid)
        else:
            grad_fn = grad_fn_of(t)
            # (no node is not a leaf where the node is only unreadable: a split piece
            # whose base changed in place, used under no_grad, is no leaf to hook)
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


# The attrs of a call with positional constants only, by those constants (as plain data):
# a call site passes the same ones over and over (``x.view(-1, 32)``, ``x[a:b]``).
_ARGS_ATTRS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_SLICES: dict[tuple[Any, Any, Any], str] = {}
_SLICE_ATTRS: dict[tuple[Any, Any, Any], tuple[Any, ...]] = {}


def _args_attrs(consts: tuple[Any, ...]) -> tuple[Any, ...]:
    """The row's attrs of positional constants ``consts`` (plain data): one shared tuple."""
    try:
        attrs = _ARGS_ATTRS.get(consts)
    except TypeError:  # (unhashable after all)
        return (("args", consts),)
    if attrs is None:
        if len(_ARGS_ATTRS) > 10_000:
            _ARGS_ATTRS.clear()
        attrs = _ARGS_ATTRS[consts] = tracer.shared_attrs((("args", consts),))
    return attrs


def _slice_text(s: slice) -> str:
    """``plain(s)``, remembered: ``"3:11"`` for ``3:11``."""
    key = (s.start, s.stop, s.step)
    try:
        text = _SLICES.get(key)
    except TypeError:  # (a bound that does not hash)
        return plain(s)  # type: ignore[no-any-return]
    if text is None:
        if len(_SLICES) > 10_000:
            _SLICES.clear()
        text = _SLICES[key] = plain(s)
    return text


def _slice_attrs(s: slice) -> tuple[Any, ...]:
    """``_args_attrs`` of ``x[s]``, remembered by the slice's bounds."""
    key = (s.start, s.stop, s.step)
    try:
        attrs = _SLICE_ATTRS.get(key)
    except TypeError:  # (a bound that does not hash)
        return _args_attrs((plain(s),))
    if attrs is None:
        if len(_SLICE_ATTRS) > 10_000:
            _SLICE_ATTRS.clear()
        attrs = _SLICE_ATTRS[key] = _args_attrs((plain(s),))
    return attrs


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


def _rebuilt_when_read(t: _Tensor) -> bool:
    """Would reading ``t.grad_fn`` now make autograd rebuild it? ``t`` is a view the
    capture has seen whose memory changed since (see ``Forward._own_later``)."""
    seen = t.__dict__.get("_dg_v")
    return seen is not None and t.requires_grad and _version_of(t) != seen[1]


def _note_version(view: _Tensor, tid: int) -> None:
    """Remember the version of the memory of view ``view``, recorded as ``tid`` (see
    ``_current_id``)."""
    version = _version_of(view)
    if version is not None:
        view._dg_v = (tid, version)  # type: ignore[attr-defined]
