"""The backward half of PyTorch capture: node hooks, leaf hooks, and the op each node is of.

When ``backward()`` (or ``autograd.backward``/``autograd.grad``) starts, autograd's graph
is walked from its roots (``next_functions``) and every node gets one post-hook (a shared
bound method: a closure over the node would keep the graph alive through C++). Each node is
tagged, in its ``metadata``, with the forward op it belongs to (the op whose window of
autograd sequence numbers holds the node's, see ``forward.py``), its own id, and input
slot by input slot where its gradient goes: the node (``next_nodes``) and the tensor. A
node run twice (``retain_graph=True``) is hooked once.

A node has one output slot per output of its op (autograd's ``output_nr``: ``split``'s node
has one per piece). The forward capture registers, for each tensor it records, the slot
it is (``Windows.own``), so each slot's gradient is reported as that tensor's own; a slot
no recorded tensor is (``F.linear``'s ``TBackward0``) reports -1.

Leaves report their accumulated ``.grad`` through a post-accumulate-grad hook, registered
once per leaf when it first enters a graph; it stays for later steps.

The hooks run while backward runs, with the capture mode off (on CPU, backward runs in the
thread that called it, inside the mode's handler), so their statistics are not ops.
"""

from __future__ import annotations

import bisect
import functools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..capture.events import Summary
from ..capture.tracing import now_ns, tensor_ids, tracer
from . import stats
from .forward import grad_fn_of
from .guard import failed, guarded
from .ids import id_of

_current_node = torch._C._current_autograd_node
# dyngraph's own torch calls (statistics) go past every torch-function mode, the capture's
# included: nobody is to see them, and each would pay a Python call per attribute read.
_no_torch_function = torch._C.DisableTorchFunction
_AccumulateGrad: Any = torch._C._functions.AccumulateGrad  # type: ignore[attr-defined]
_TAG = "dyngraph"
_get_ident = threading.get_ident
_Tensor = torch.Tensor


class Windows:
    """Autograd sequence-number windows of recorded ops: [start, end) -> (op output, op),
    and the owners of backward nodes' output slots: (node's sequence number, output_nr)
    -> the recorded tensor whose gradient arrives there.

    Two generations: the ops since the last backward, and those before it (a graph built
    in one iteration is sometimes backwarded in the next: a hidden state carried over).
    """

    def __init__(self) -> None:
        self._gens: list[tuple[list[int], list[int], list[int], list[str]]] = [
            ([], [], [], []), ([], [], [], [])
        ]
        # (seq << _SLOT_BITS | output_nr) -> tensor id; seq -> the first tensor registered
        # for the node (its lowest slot: outputs are registered in order)
        self._owners: list[dict[int, int]] = [{}, {}]
        self._firsts: list[dict[int, int]] = [{}, {}]
        # (the same key) -> the output tensor itself, weakly: kept for nodes of several
        # outputs only (see ``Siblings``)
        self._tensors: list[dict[int, Any]] = [{}, {}]

    def add(self, start: int, end: int, output: int, op: str) -> None:
        starts, ends, outs, ops = self._gens[0]
        starts.append(start)
        ends.append(end)
        outs.append(output)
        ops.append(op)

    def own(self, seq: int, output_nr: int, tensor: int) -> None:
        """Tensor ``tensor`` is output slot ``output_nr`` of the node numbered ``seq``."""
        self._owners[0][seq << _SLOT_BITS | output_nr] = tensor
        firsts = self._firsts[0]
        if seq not in firsts:
            firsts[seq] = tensor

    def keep(self, seq: int, output_nr: int, t: _Tensor) -> None:
        """Output slot ``output_nr`` of node ``seq`` (one of several) is ``t``."""
        self._tensors[0][seq << _SLOT_BITS | output_nr] = weakref.ref(t)

    def tensor(self, seq: int, output_nr: int) -> _Tensor | None:
        """The tensor kept for that slot (None: none kept, or it is gone)."""
        key = seq << _SLOT_BITS | output_nr
        for kept in self._tensors:
            ref = kept.get(key)
            if ref is not None:
                return ref()  # type: ignore[no-any-return]
        return None

    def owner(self, seq: int, output_nr: int) -> int:
        """The tensor of output slot ``output_nr`` of node ``seq`` (-1: none recorded)."""
        key = seq << _SLOT_BITS | output_nr
        for owners in self._owners:
            tid = owners.get(key)
            if tid is not None:
                return tid
        return -1

    def first_owned(self, seq: int) -> int:
        """The first tensor recorded as an output of node ``seq`` (-1: none)."""
        for firsts in self._firsts:
            tid = firsts.get(seq)
            if tid is not None:
                return tid
        return -1

    def find(self, seq: int) -> tuple[int, str] | None:
        for starts, ends, outs, ops in self._gens:
            i = bisect.bisect_right(starts, seq) - 1
            if i >= 0 and seq < ends[i]:
                return outs[i], ops[i]
        return None

    def rotate(self) -> None:
        self._gens = [([], [], [], []), self._gens[0]]
        self._owners = [{}, self._owners[0]]
        self._firsts = [{}, self._firsts[0]]
        self._tensors = [{}, self._tensors[0]]


_SLOT_BITS = 32  # (a node has far fewer output slots than 2^32)

# A node's tag, in its ``metadata``: where each field is.
_OUT, _OP, _INPUTS, _GID, _NEXT, _SEQ, _OUTPUTS = range(7)


class BackwardCapture:
    def __init__(self, windows: Windows, names: dict[int, tuple[str, bool]],
                 set_quiet: Callable[[int], None]) -> None:
        self.buffer: Any = None  # the capture's ``deferred.StatsBuffer``
        self.windows = windows
        self.names = names
        self._set_quiet = set_quiet
        self._leaf_hooks: dict[int, Any] = {}
        self._ran: set[int] = set()  # the nodes run in the pass going on (their ids)
        self.summaries: Callable[[Sequence[_Tensor | None]], list[Any]] = stats.none

    def remove(self) -> None:
        for handle in self._leaf_hooks.values():
            handle.remove()
        self._leaf_hooks = {}

    # -- the call --------------------------------------------------------------------------
    def run(self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``backward``/``grad`` with every node of its graph hooked."""
        try:
            roots = self._start(name, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - dyngraph's failure: the backward runs
            failed("a backward pass", exc)
            roots = []
        if not roots:
            return func(*args, **kwargs)
        start = now_ns()
        self._ran = set()
        inputs = _inputs(args, kwargs) if name == "grad" else []
        siblings = self._watch([*roots, *inputs]) if name == "grad" else None
        try:
            result = func(*args, **kwargs)
        finally:
            if siblings is not None:
                siblings.remove()
        try:
            if siblings is not None and tracer.listening:
                self._captured([*roots, *inputs], [*_seeds(roots, args, kwargs), *result],
                               siblings)
            tracer.backward_end(id_of(roots[0]), now_ns() - start)
            self.windows.rotate()
        except Exception as exc:  # noqa: BLE001
            failed("the end of a backward pass", exc)
        return result

    def _start(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
               ) -> list[_Tensor]:
        """Hook the graph and report the start; the roots (none: nothing to record)."""
        roots = _roots(name, args, kwargs)
        if not roots:
            return roots
        mode, buf = tracer.stats, self.buffer
        if mode == "none" or tracer.eager_stats or buf is None:
            self.summaries = stats.SUMMARIZERS[mode]
        else:  # on the device, read at the iteration's end (``deferred``)
            self.summaries = buf.cheap if mode == "cheap" else buf.full
        self._hook_graph(roots)
        retain = kwargs.get("retain_graph")
        if retain is None:
            retain = kwargs.get("create_graph", False)
        tracer.backward_start(id_of(roots[0]), bool(retain))
        return roots

    def _tag(self, node: Any) -> list[Any]:
        """A node's tag: [op output id (-1: no op known), op name, input ids (set when
        hooked), its own id, the ids of the nodes its inputs go to (set when hooked), its
        sequence number, its output slots' tensor ids (set when it runs)]."""
        seq = node._sequence_nr()
        windows = self.windows
        hit = windows.find(seq)
        gid = windows.first_owned(seq)
        if gid < 0:
            gid = next(tensor_ids)  # a node of no tensor dyngraph saw: an id of its own
        out, op = (-1, "") if hit is None else hit
        return [out, op, (), gid, (), seq, None]

    def _hook_graph(self, roots: list[_Tensor]) -> None:
        """One walk over autograd's graph (``next_functions``): each node is tagged when
        first seen, and hooked with its input slots known (where each slot's gradient
        goes: the tensor, and the node). A node tagged before (a retained graph) is
        hooked already."""
        owner = self.windows.owner
        hook = self._on_node
        stack: list[Any] = []
        for t in roots:
            node: Any = grad_fn_of(t)  # (unreadable: the backward raises that to the script)
            if node is not None and _TAG not in node.metadata:
                node.metadata[_TAG] = self._tag(node)
                stack.append(node)
        while stack:
            node = stack.pop()
            info = node.metadata[_TAG]
            inputs = []
            nexts = []
            for nxt, slot in node.next_functions:
                if nxt is None:
                    inputs.append(-1)
                    nexts.append(-1)
                elif type(nxt) is _AccumulateGrad:  # the leaf itself
                    tid = id_of(nxt.variable)
                    inputs.append(tid)
                    nexts.append(tid)
                else:
                    meta = nxt.metadata
                    tag = meta.get(_TAG)
                    if tag is None:  # first seen (an old tag: a retained graph, hooked)
                        tag = meta[_TAG] = self._tag(nxt)
                        stack.append(nxt)
                    # ``slot`` is the output slot of ``nxt`` this gradient arrives at
                    inputs.append(owner(tag[_SEQ], slot))
                    nexts.append(tag[_GID])
            info[_INPUTS] = tuple(inputs)
            info[_NEXT] = tuple(nexts)
            node.register_hook(hook)

    # -- hooks -------------------------------------------------------------------------------
    @guarded("a backward step")
    def _on_node(self, grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> None:
        if not tracer.listening or (_get_ident() != tracer.thread and tracer.other_thread()):
            return  # (another thread's backward through a hooked graph: not captured)
        node: Any = _current_node()
        if node is None:
            return
        self._step(node, grad_inputs, grad_outputs)

    def _watch(self, tensors: list[Any]) -> Siblings:
        """Before an ``autograd.grad`` from or to ``tensors``: a tensor hook on every other
        output of their nodes of several outputs (``Siblings``)."""
        siblings = Siblings()
        taken: dict[int, tuple[Any, set[int]]] = {}
        for t in tensors:
            fn = grad_fn_of(t) if isinstance(t, _Tensor) else None
            if fn is not None:
                taken.setdefault(id(fn), (fn, set()))[1].add(t.output_nr)
        for fn, slots in taken.values():
            n = len(fn._input_metadata)
            if n < 2:
                continue
            seq = fn._sequence_nr()
            for k in range(n):
                if k not in slots:
                    siblings.watch(seq, k, self.windows.tensor(seq, k))
        return siblings

    def _captured(self, inputs: list[Any], grads: list[Any], siblings: Siblings) -> None:
        """``autograd.grad`` hands back the gradients arriving at its inputs; autograd runs
        an input's node (or a root's) only when another input needs what it hands on. A
        node it did not run is reported as reached: its output slots' gradients (those
        ``grad`` returned, a root's seed, and the other outputs' as their tensor hooks saw
        them), and nothing handed on."""
        reached: dict[int, tuple[Any, dict[int, Any]]] = {}
        for t, g in zip(inputs, grads, strict=False):
            fn: Any = grad_fn_of(t) if isinstance(t, _Tensor) else None
            info = None if fn is None else fn.metadata.get(_TAG)
            if info is None or g is None or info[_GID] in self._ran:
                continue
            reached.setdefault(info[_GID], (fn, {}))[1][t.output_nr] = g
        for fn, slots in reached.values():
            n = len(fn._input_metadata)
            seq = fn._sequence_nr()
            grad_outputs = tuple(slots[k] if k in slots else siblings.grads.get((seq, k))
                                 for k in range(n))
            unknown = {k for k in range(n) if k not in slots and (seq, k) in siblings.unknown}
            self._step(fn, _nones(len(fn.next_functions)), grad_outputs, unknown)

    def _step(self, node: Any, grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...],
              unknown: set[int] | None = None) -> None:
        """Report that ``node`` took ``grad_outputs`` in and handed ``grad_inputs`` on.
        ``unknown``: output slots whose gradient was not seen (reported as no tensor's,
        not as one without a gradient)."""
        info = node.metadata[_TAG]
        self._ran.add(info[_GID])
        n = len(grad_outputs)
        outputs = info[_OUTPUTS]
        # (a slot with no tensor yet may have one now: a value computed in an earlier
        # iteration, used in this one, enters it and is owned then)
        if outputs is None or len(outputs) != n or -1 in outputs:
            owner, seq = self.windows.owner, info[_SEQ]
            outputs = info[_OUTPUTS] = tuple([owner(seq, k) for k in range(n)])
        if unknown:
            outputs = tuple([-1 if k in unknown else o for k, o in enumerate(outputs)])
        summaries = self.summaries
        grad_out: tuple[Summary | None, ...]
        grad_in: tuple[Summary | None, ...]
        if summaries is stats.none:
            grad_out = _nones(n)
            grad_in = _nones(len(grad_inputs))
        else:
            self._set_quiet(1)
            try:
                with _no_torch_function():  # (dyngraph's calls: not through any mode)
                    found = summaries([*grad_outputs, *grad_inputs])
            finally:
                self._set_quiet(-1)
            grad_out, grad_in = tuple(found[:n]), tuple(found[n:])
        if tracer.array_hook is not None:  # (the debugger keeps the values: see ``_aliases``)
            grad_outputs, grad_inputs = _aliases(grad_outputs), _aliases(grad_inputs)
        tracer.backward_step(info[_OUT], info[_OP], type(node).__name__, info[_INPUTS],
                             grad_out[0] if n else None, grad_in, 0,
                             grad_outputs[0] if n else None, grad_inputs, info[_GID],
                             outputs, grad_out, info[_NEXT], grad_outputs)

    def hook_leaf(self, t: _Tensor, tid: int) -> None:
        """Report ``t``'s accumulated gradient from now on (once per leaf)."""
        if tid not in self._leaf_hooks:
            self._leaf_hooks[tid] = t.register_post_accumulate_grad_hook(self._on_leaf)

    @guarded("a leaf's gradient")
    def _on_leaf(self, t: _Tensor) -> None:
        if not tracer.listening or (_get_ident() != tracer.thread and tracer.other_thread()):
            return
        tid = id_of(t)
        grad = t.grad
        if grad is None:
            return
        self._set_quiet(1)
        try:
            with _no_torch_function():
                summary = self.summaries([grad])[0]
        finally:
            self._set_quiet(-1)
        tracer.grad_accumulated(tid, self.names.get(tid, ("", False))[0], summary, grad)


class Siblings:
    """The gradients arriving, during one ``autograd.grad``, at the other outputs of the
    nodes of its inputs. Autograd does not run a node that only its inputs need, so no
    node hook sees what arrives there; it does call that node's tensor hooks, on every
    slot. One is added on each other output's tensor (after the script's own hooks on it:
    it sees what they hand on, as ``retain_grad`` would) and removed after the call. A
    slot whose tensor is gone is ``unknown``."""

    def __init__(self) -> None:
        self.grads: dict[tuple[int, int], Any] = {}
        self.unknown: set[tuple[int, int]] = set()
        self._handles: list[Any] = []

    def watch(self, seq: int, k: int, t: _Tensor | None) -> None:
        try:
            if t is None:
                raise RuntimeError("gone")
            self._handles.append(t.register_hook(functools.partial(self._seen, (seq, k))))
        except RuntimeError:  # (gone, or PyTorch refuses: a split piece whose base changed)
            self.unknown.add((seq, k))

    def _seen(self, key: tuple[int, int], grad: Any) -> None:
        self.grads[key] = grad

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _aliases(grads: tuple[Any, ...]) -> tuple[Any, ...]:
    """Detached aliases of gradients (the same memory, so the same values), for whoever
    keeps them (the debugger's value store): autograd hands a gradient nobody else holds
    to ``.grad`` as it is, and one kept by the store would be copied there instead."""
    return tuple([g.detach() if type(g) is _Tensor else g for g in grads])


_NONES: dict[int, tuple[None, ...]] = {}


def _nones(n: int) -> tuple[None, ...]:
    nones = _NONES.get(n)
    if nones is None:
        nones = _NONES[n] = (None,) * n
    return nones


def _seeds(roots: list[_Tensor], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The gradient autograd.grad starts from at each root (``grad_outputs``, or ones)."""
    given = args[2] if len(args) > 2 else kwargs.get("grad_outputs")
    if isinstance(given, _Tensor):
        given = [given]
    if not isinstance(given, (list, tuple)):
        given = [None] * len(roots)
    return [torch.ones_like(t) if g is None else g
            for t, g in zip(roots, given, strict=False)]


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """autograd.grad's ``inputs``, as a list."""
    found = args[1] if len(args) > 1 else kwargs.get("inputs")
    if isinstance(found, _Tensor):
        return [found]
    return list(found) if isinstance(found, (list, tuple)) else []


def _roots(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[_Tensor]:
    """The tensors backward starts from: ``t.backward()``'s ``t``; autograd.backward's
    ``tensors``, autograd.grad's ``outputs``."""
    first = args[0] if args else kwargs.get("tensors" if name == "backward" else "outputs")
    if isinstance(first, _Tensor):
        return [first]
    if isinstance(first, (list, tuple)):
        return [t for t in first if isinstance(t, _Tensor)]
    return []
