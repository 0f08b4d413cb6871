"""The backward half of PyTorch capture: node hooks, leaf hooks, and the op each node is of.

When ``backward()`` (or ``autograd.backward``/``autograd.grad``) starts, the graph is
walked from its roots and every node gets one post-hook (a shared bound method: a closure
over the node would keep the graph alive through C++). Each node is tagged, in its
``metadata``, with the forward op it belongs to: the op whose window of autograd sequence
numbers holds the node's (see ``forward.py``), and with the ids its gradients flow to. A
node run twice (``retain_graph=True``) is hooked once.

Leaves report their accumulated ``.grad`` through a post-accumulate-grad hook, registered
once per leaf when it first enters a graph; it stays for later steps.

The hooks run while backward runs, with the capture mode off (on CPU, backward runs in the
thread that called it, inside the mode's handler), so their statistics are not ops.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..capture.events import Summary
from ..capture.tracing import now_ns, tracer
from . import stats
from .guard import failed, guarded
from .ids import id_of

_current_node = torch._C._current_autograd_node
_AccumulateGrad: Any = torch._C._functions.AccumulateGrad  # type: ignore[attr-defined]
_TAG = "dyngraph"
_get_ident = threading.get_ident
_Tensor = torch.Tensor


class Windows:
    """Autograd sequence-number windows of recorded ops: [start, end) -> (op output, op).

    Two generations: the ops since the last backward, and those before it (a graph built
    in one iteration is sometimes backwarded in the next: a hidden state carried over).
    """

    def __init__(self) -> None:
        self._gens: list[tuple[list[int], list[int], list[int], list[str]]] = [
            ([], [], [], []), ([], [], [], [])
        ]

    def add(self, start: int, end: int, output: int, op: str) -> None:
        starts, ends, outs, ops = self._gens[0]
        starts.append(start)
        ends.append(end)
        outs.append(output)
        ops.append(op)

    def find(self, seq: int) -> tuple[int, str] | None:
        for starts, ends, outs, ops in self._gens:
            i = bisect.bisect_right(starts, seq) - 1
            if i >= 0 and seq < ends[i]:
                return outs[i], ops[i]
        return None

    def rotate(self) -> None:
        self._gens = [([], [], [], []), self._gens[0]]


class BackwardCapture:
    def __init__(self, windows: Windows, names: dict[int, tuple[str, bool]],
                 set_quiet: Callable[[int], None]) -> None:
        self.windows = windows
        self.names = names
        self._set_quiet = set_quiet
        self._leaf_hooks: dict[int, Any] = {}
        self.summaries: Callable[[Sequence[_Tensor | None]], list[Summary | None]] = stats.none

    def remove(self) -> None:
        for handle in self._leaf_hooks.values():
            handle.remove()
        self._leaf_hooks = {}

    # -- the call --------------------------------------------------------------------------
    def run(self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``backward``/``grad`` with every node of its graph hooked."""
        try:
            root = self._start(name, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - dyngraph's failure: the backward runs
            failed("a backward pass", exc)
            root = None
        if root is None:
            return func(*args, **kwargs)
        start = now_ns()
        result = func(*args, **kwargs)
        try:
            tracer.backward_end(root, now_ns() - start)
            self.windows.rotate()
        except Exception as exc:  # noqa: BLE001
            failed("the end of a backward pass", exc)
        return result

    def _start(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
        """Hook the graph and report the start; the root's id (None: nothing to record)."""
        roots = _roots(name, args, kwargs)
        if not roots:
            return None
        self.summaries = stats.SUMMARIZERS[tracer.stats]
        self._hook_graph(roots)
        root = id_of(roots[0])
        retain = kwargs.get("retain_graph")
        if retain is None:
            retain = kwargs.get("create_graph", False)
        tracer.backward_start(root, bool(retain))
        return root

    def _hook_graph(self, roots: list[_Tensor]) -> None:
        """One walk: each node is tagged ``[op output id, op name, input ids]`` when first
        seen, and hooked when its inputs are known (its children tagged)."""
        find = self.windows.find
        hook = self._on_node
        stack: list[Any] = []
        for t in roots:
            node: Any = t.grad_fn
            if node is not None and _TAG not in node.metadata:
                node.metadata[_TAG] = _tag(find, node)
                stack.append(node)
        while stack:
            node = stack.pop()
            info = node.metadata[_TAG]
            inputs = []
            for nxt, _ in node.next_functions:
                if nxt is None:
                    inputs.append(-1)
                elif type(nxt) is _AccumulateGrad:  # the leaf itself
                    inputs.append(id_of(nxt.variable))
                else:
                    meta = nxt.metadata
                    tag = meta.get(_TAG)
                    if tag is None:  # first seen (an old tag: a retained graph, hooked)
                        tag = meta[_TAG] = _tag(find, nxt)
                        stack.append(nxt)
                    inputs.append(tag[0])
            info[2] = tuple(inputs)
            node.register_hook(hook)

    # -- hooks -------------------------------------------------------------------------------
    @guarded("a backward step")
    def _on_node(self, grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> None:
        if not tracer.listening or (_get_ident() != tracer.thread and tracer.other_thread()):
            return  # (another thread's backward through a hooked graph: not captured)
        node: Any = _current_node()
        if node is None:
            return
        out, op, inputs = node.metadata[_TAG]
        first = None
        for g in grad_outputs:
            if g is not None:
                first = g
                break
        summaries = self.summaries
        grad_output: Summary | None = None
        grad_in: tuple[Summary | None, ...]
        if summaries is stats.none:
            grad_in = _nones(len(grad_inputs))
        else:
            self._set_quiet(1)
            try:
                outs = [g for g in grad_outputs if g is not None]
                found = summaries([first, *grad_inputs])
                grad_output = _combined(summaries(outs)) if len(outs) > 1 else found[0]
                grad_in = tuple(found[1:])
            finally:
                self._set_quiet(-1)
        tracer.backward_step(out, op, type(node).__name__, inputs, grad_output, grad_in, 0,
                             first, grad_inputs)

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
            summary = self.summaries([grad])[0]
        finally:
            self._set_quiet(-1)
        tracer.grad_accumulated(tid, self.names.get(tid, ("", False))[0], summary, grad)


def _tag(find: Callable[[int], tuple[int, str] | None], node: Any) -> list[Any]:
    """[forward op output id (-1: none known), op name, input ids (set when hooked)]."""
    hit = find(node._sequence_nr())
    return [-1, "", ()] if hit is None else [hit[0], hit[1], ()]


_NONES: dict[int, tuple[None, ...]] = {}


def _nones(n: int) -> tuple[None, ...]:
    nones = _NONES.get(n)
    if nones is None:
        nones = _NONES[n] = (None,) * n
    return nones


def _roots(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[_Tensor]:
    """The tensors backward starts from: ``t.backward()``'s ``t``; autograd.backward's
    ``tensors``, autograd.grad's ``outputs``."""
    first = args[0] if args else kwargs.get("tensors" if name == "backward" else "outputs")
    if isinstance(first, _Tensor):
        return [first]
    if isinstance(first, (list, tuple)):
        return [t for t in first if isinstance(t, _Tensor)]
    return []


def _combined(parts: list[Summary | None]) -> Summary | None:
    """One summary for the gradients into a node with several outputs (``split``)."""
    present = [s for s in parts if s is not None]
    if not present:
        return None
    sq = sum((s.norm or 0.0) ** 2 for s in present)
    return Summary.cheap(present[0].shape, present[0].dtype, sq ** 0.5,
                         sum(s.nan for s in present), sum(s.inf for s in present), False)
