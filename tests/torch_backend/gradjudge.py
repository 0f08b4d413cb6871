"""Judging a recorded program against autograd itself (test_autograd_differential.py).

``judge(program)`` runs a program (gradprog.py) three times: as written (the reference
for bitwise equality: see ``run_pure``);

- plainly, the truth: ``retain_grad()`` on every intermediate as it is made; after each
  line a copy of every value; before each backward line autograd's graph as
  ``next_functions`` has it, from the line's roots; after it every ``.grad`` (the
  intermediates' then set back to None, so the next pass starts afresh);
- under ``dyngraph.trace(stats="full")``, without ``retain_grad``, noting after each line
  the id dyngraph gave each value.

and raises ``Mismatch`` (with the program as code) unless:

- the script's results are bitwise equal: every value, every leaf's ``.grad``, and the
  same exception (type and line) if one is raised;
- the capture told of no failure of its own ("dyngraph could not record ...");
- every recorded forward summary (min, max, mean, norm, NaN and Inf counts) is torch's
  on the same tensor at that moment;
- in each backward pass, the gradient recorded for every value (the output slot of its
  backward node: ``output_nr``) has the norm, min, max, mean and NaN/Inf counts of its
  ``.grad``, a value with no gradient has none recorded, and every leaf's accumulated
  ``.grad`` is the one recorded;
- (PyTorch) the recorded backward nodes are autograd's graph: from each root, node by
  node, the same ``grad_fn`` names, and input slot by input slot the same next node (or
  the same leaf, or none); every value is an output slot of the node autograd says.
"""

from __future__ import annotations

import bisect
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from gradprog import (
    Program,
    environment,
    is_leaf,
    run_line,
    tensors,
    tensors_and_parameters,
)

import dyngraph
from dyngraph.capture import backends
from dyngraph.capture import events as ev


class Mismatch(AssertionError):
    pass


# -- the two runs --------------------------------------------------------------------------------
@dataclass
class Pass:
    line: int
    grads: dict[str, Any]  # intermediate -> its .grad (None: none)
    leaf_grads: dict[str, Any]  # leaf -> its .grad after the pass
    # leaf -> its .grad just before the pass (a name is a tensor's only from the line that
    # binds it: ``v5 = x1.flatten()`` of a 1-D leaf *is* x1, whose .grad an earlier pass
    # filled while the name v5 did not exist yet)
    leaf_grads_before: dict[str, Any] = field(default_factory=dict)
    graph: Any = None  # (torch) autograd's graph from the roots, before the pass
    # value -> the gradient its node before a rebuild got in this pass (None: not run):
    # see ``Run.rebuilt``
    old_grads: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    env: dict[str, Any]
    error: tuple[int, type] | None = None
    values: list[dict[str, Any]] = field(default_factory=list)  # after each line
    passes: list[Pass] = field(default_factory=list)
    ids: list[dict[str, int | None]] = field(default_factory=list)  # after each line
    events: list[ev.Event] = field(default_factory=list)
    # after each line: how many events the trace held then (the captured run)
    marks: list[int] = field(default_factory=list)
    # values whose retained .grad PyTorch gets wrong (see ``_siblings_changed``)
    unreliable: set[str] = field(default_factory=set)
    # per line: the values outside any graph (no grad) it changed in place: no op records
    # that, so a record of theirs made earlier in the line holds the value before
    outside: list[set[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the capture told (captured run)
    # value -> the lines that changed it in place (run as written: ``run_pure``'s)
    changes: dict[str, list[int]] = field(default_factory=dict)
    # value -> the line after which its node was rebuilt: a view changed in place outside
    # autograd (``with no_grad(): v4.add_(1)``) gets a new node when its ``grad_fn`` is
    # next read, and PyTorch moves its retained ``.grad`` there; the ops that used it
    # before the change still hand their gradient to the old node (seen by a hook). The
    # capture names the changed value anew when it is next used: until then the name's
    # id is the value before the change, under which each node that ran records its own.
    rebuilt: dict[str, int] = field(default_factory=dict)


def _lib(program: Program) -> Any:
    return dyngraph if program.library == "dyngraph" else torch


def _copy(t: Any) -> Any:
    return None if t is None else t.detach().clone()


def _version(t: Any) -> Any:
    try:
        return t._version
    except (AttributeError, RuntimeError):
        return None


def run_plain(program: Program, changes: dict[str, list[int]] | None = None) -> Run:
    """``changes``: the lines that change each value in place (``run_pure``'s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (.grad of a name whose tensor is no longer retained)
        return _run_plain(program, changes or {})


def _run_plain(program: Program, changes: dict[str, list[int]]) -> Run:
    lib = _lib(program)
    env = environment(program, lib)
    run = Run(env, changes=changes)
    retained: set[str] = set()
    old_grads: dict[str, Any] = {}  # (filled by hooks on rebuilt views' old nodes)
    for i, (line, kind) in enumerate(zip(program.lines, program.kinds, strict=True)):
        graph = None
        if kind == "backward" and lib is torch:
            graph = autograd_graph(env, program.roots[i])
        nodes = _nodes_of(env) if lib is torch else {}
        objects = tensors(env)
        versions = {n: _version(t) for n, t in objects.items()}
        before = _leaf_grads(env) if kind == "backward" else {}
        err = run_line(line, env)
        if err is not None:
            run.error = (i, type(err))
            break
        now = tensors(env)
        if lib is torch:
            run.unreliable |= _siblings_changed(nodes, now)
            _hook_rebuilt(run, nodes, objects, now, i, old_grads)
        for n, t in now.items():
            if n not in retained and t.requires_grad and not is_leaf(t) and not (
                    lib is torch and _later(changes, n, i) and _several_outputs(t)):
                t.retain_grad()
                retained.add(n)
        run.values.append({n: _copy(t) for n, t in tensors_and_parameters(env).items()})
        run.outside.append({n for n, t in now.items() if not t.requires_grad
                            and _version(t) != versions.get(n, _version(t))})
        if kind == "backward":
            grads = {n: _copy(now[n].grad) for n in retained if n not in run.unreliable}
            for n in retained:  # (two names may hold one tensor: all read, then cleared)
                now[n].grad = None
            run.passes.append(Pass(i, grads, _leaf_grads(env), before, graph,
                                   {n: old_grads.pop(n, None) for n in run.rebuilt}))
    return run


def _leaf_grads(env: dict[str, Any]) -> dict[str, Any]:
    return {n: _copy(t.grad) for n, t in tensors_and_parameters(env).items()
            if is_leaf(t) and t.requires_grad}


def _nodes_of(env: dict[str, Any]) -> dict[str, tuple[Any, int]]:
    """Each value's (node, output slot), before a line runs."""
    found = {}
    for n, t in tensors(env).items():
        fn = _grad_fn(t) if t.requires_grad else None
        if fn is not None:
            found[n] = (fn, t.output_nr)
    return found


def _several_outputs(t: Any) -> bool:
    """Is ``t`` an output of a node with several (``std_mean``'s)? PyTorch 2.13 cannot
    retain the ``.grad`` of one that is changed in place later: an internal assert
    ("out != nullptr") at the change, a segfault in backward if it is changed through a
    view (``a, b = torch.std_mean(x, 0); b.retain_grad(); b[:1].mul_(-1.0)``). The truth
    retains it after the change (its gradient before the change is not judged). (Not a
    view, ``split``'s piece: it is never changed in place, its base may be, and PyTorch
    retains it, and refuses to read its node once the base changed.)"""
    fn = _grad_fn(t)
    return fn is not None and len(fn._input_metadata) >= 2 and not t._is_view()


def _hook_rebuilt(run: Run, nodes: dict[str, tuple[Any, int]], before: dict[str, Any],
                  now: dict[str, Any], line: int, into: dict[str, Any]) -> None:
    """Views a line changed in place whose node that rebuilt (see ``Run.rebuilt``): a hook
    on the old node notes the gradient it gets, into ``into``. (``nodes``, ``before``:
    each value's node and tensor before the line.)"""
    for n, (fn, slot) in nodes.items():
        t = now.get(n)
        if t is None or t is not before.get(n) or not t._is_view() or _grad_fn(t) is fn:
            continue
        run.rebuilt[n] = line

        def seen(grad_inputs: Any, grad_outputs: Any, n: str = n, slot: int = slot) -> None:
            into[n] = _copy(grad_outputs[slot])
        fn.register_hook(seen)


def _siblings_changed(before: dict[str, tuple[Any, int]], now: dict[str, Any]) -> set[str]:
    """The other outputs of a node with several (``var_mean``'s) one of which a line changed
    in place: PyTorch 2.13 then fills their retained ``.grad`` with the changed output's
    gradient (``v8, v9 = torch.var_mean(x, 1); v8.retain_grad(); v9.mul_(3)``: ``v8.grad``
    is wrong, a hook on ``v8`` sees the right one). The truth is not to be had from them."""
    out: set[str] = set()
    for n, (fn, _) in before.items():
        t = now.get(n)
        if t is None or _grad_fn(t) is fn or len(fn._input_metadata) < 2:
            continue
        out.update(m for m, (other, _) in before.items() if other is fn and m != n)
    return out


def _current_id(t: Any) -> int | None:
    if isinstance(t, torch.Tensor):
        pair = t.__dict__.get("_dg_id")
        return pair[1] if pair is not None and pair[0] == id(t) else None
    return getattr(t, "_id", None)


def run_captured(program: Program) -> Run:
    lib = _lib(program)
    env = environment(program, lib)
    run = Run(env)
    with backends.on_note(run.notes.append), \
            dyngraph.trace(stats="full", backend=program.library) as trace:
        for i, line in enumerate(program.lines):
            err = run_line(line, env)
            if err is not None:
                run.error = (i, type(err))
                break
            run.ids.append({n: _current_id(t) for n, t in tensors_and_parameters(env).items()})
            if lib is dyngraph:  # (on PyTorch reading the events reads the statistics)
                run.marks.append(len(trace.events))
    run.events = list(trace.events)
    return run


# -- autograd's graph, as the truth ---------------------------------------------------------------
@dataclass
class Node:
    name: str
    # per input slot: ("none",), ("leaf", variable name), ("node", index, output slot)
    next: list[tuple[Any, ...]]


@dataclass
class AutogradGraph:
    nodes: list[Node]
    roots: list[int]
    owners: dict[str, tuple[int, int]]  # value -> (its node, its output slot)


def autograd_graph(env: dict[str, Any], roots: list[str]) -> AutogradGraph:
    values = tensors(env)
    by_object = {id(t): n for n, t in tensors_and_parameters(env).items()}
    index: dict[int, int] = {}
    nodes: list[Node] = []
    stack: list[Any] = []

    def visit(fn: Any) -> int:
        key = id(fn)
        if key not in index:
            index[key] = len(nodes)
            nodes.append(Node(type(fn).__name__, []))
            stack.append(fn)
        return index[key]

    graph_roots = [visit(env[r].grad_fn) for r in roots if _grad_fn(env[r]) is not None]
    keep = []  # the nodes stay alive (and their ids theirs) while the walk goes on
    while stack:
        fn = stack.pop()
        keep.append(fn)
        out = nodes[index[id(fn)]].next
        for nxt, slot in fn.next_functions:
            if nxt is None:
                out.append(("none",))
            elif type(nxt).__name__ == "AccumulateGrad":
                out.append(("leaf", by_object.get(id(nxt.variable), "?")))
            else:
                out.append(("node", visit(nxt), slot))
    owners = {}
    for n, t in values.items():
        fn = _grad_fn(t)
        if t.requires_grad and fn is not None:
            i = index.get(id(fn))
            if i is not None:
                owners[n] = (i, t.output_nr)
    return AutogradGraph(nodes, graph_roots, owners)


def _grad_fn(t: Any) -> Any:
    try:  # (a multi-output view whose base changed in place refuses to rebuild its node)
        return t.grad_fn
    except RuntimeError:
        return None


# -- judging --------------------------------------------------------------------------------------
def run_pure(program: Program) -> Run:
    """The program as its author wrote it, nothing looked at in between: what a captured
    run must equal bit for bit. (The truth's looks are not free: reading ``grad_fn`` of a
    view whose base changed builds its node then, and the order autograd runs nodes in,
    hence the order a leaf's gradients are summed in, follows when nodes were made.)"""
    env = environment(program, _lib(program))
    run = Run(env)
    for i, line in enumerate(program.lines):
        versions = {n: (t, _version(t)) for n, t in tensors(env).items()}
        err = run_line(line, env)
        if err is not None:
            run.error = (i, type(err))
            break
        for n, t in tensors(env).items():  # (the version only: reading it changes nothing)
            if n in versions and versions[n][0] is t and versions[n][1] != _version(t):
                run.changes.setdefault(n, []).append(i)
    return run


def judge(program: Program) -> None:
    pure = run_pure(program)
    plain = run_plain(program, pure.changes)
    captured = run_captured(program)
    problems = compare(program, plain, captured, pure)
    if problems:
        raise Mismatch("\n".join(problems[:8]) + f"\n\nprogram ({program.family}; L = "
                       f"{program.library}):\n{program.source()}")


def compare(program: Program, plain: Run, captured: Run, pure: Run | None = None
            ) -> list[str]:
    problems = _bitwise(plain if pure is None else pure, captured)
    if problems:
        return problems  # the rest compares two runs that must be the same run
    # (dyngraph's own failure is told in a note and the script goes on: the trace lacks
    # what failed, which the comparisons below may not notice)
    problems += [f"the capture told: {n}" for n in captured.notes if "could not record" in n]
    problems += _forward(program, plain, captured)
    problems += _backward(program, plain, captured)
    return problems


def _bits(t: Any) -> bytes:
    return np.ascontiguousarray(t.detach().numpy() if hasattr(t, "detach") else t.numpy()
                                ).tobytes()


def _bitwise(plain: Run, captured: Run) -> list[str]:
    out = []
    if plain.error != captured.error:
        out.append(f"the script raised {plain.error} plainly, {captured.error} captured")
    a, b = tensors(plain.env), tensors(captured.env)
    for n, t in a.items():
        u = b.get(n)
        if u is None or _bits(t) != _bits(u):
            out.append(f"{n}: values differ with and without capture")
        elif is_leaf(t) and t.requires_grad and (t.grad is None) != (u.grad is None) or (
                is_leaf(t) and t.grad is not None and u.grad is not None
                and _bits(t.grad) != _bits(u.grad)):
            out.append(f"{n}.grad differs with and without capture")
    return out


def _line_of(run: Run, event: ev.Event) -> int:
    """The line during which ``event`` reached the trace (by the events after each line)."""
    if not run.marks:  # (PyTorch capture: an id is given as a value enters)
        return -1
    at = next(k for k, e in enumerate(run.events) if e is event)
    return bisect.bisect_right(run.marks, at)


def _ops_by_output(events: list[ev.Event]) -> dict[int, ev.Event]:
    found: dict[int, ev.Event] = {}
    for e in events:
        if type(e) is ev.Op:
            found[e.output] = e
        elif type(e) is ev.TensorCreated and e.tensor not in found:
            found[e.tensor] = e
    return found


def _forward(program: Program, plain: Run, captured: Run) -> list[str]:
    out = []
    recorded = _ops_by_output(captured.events)
    seen: set[int | None] = set()
    for i, ids in enumerate(captured.ids):
        for n, rid in ids.items():
            # A value recorded by this line (a name that only holds a value recorded
            # before holds what it was then: changed under no_grad, it is no op of the
            # graph, as on the numpy engine).
            if rid is None or rid in seen or rid not in recorded or n in plain.outside[i]:
                continue
            e = recorded[rid]
            if type(e) is ev.TensorCreated and not e.is_leaf:
                continue  # (a value computed before: summarised when it entered)
            problem = summary_problem(e.summary, plain.values[i][n],
                                      bound=_later(plain.changes, n, i))
            entered = _line_of(captured, e)
            if problem and type(e) is ev.TensorCreated and entered > i and any(
                    summary_problem(e.summary, plain.values[j][n]) is None
                    for j in (entered - 1, entered) if n in plain.values[j]):
                # (the numpy engine numbers a value when it is made, ``g5`` of an
                # ``autograd.grad``; it enters the graph later, holding its value then)
                problem = None
            if problem and i and i in plain.changes.get(n, ()) and summary_problem(
                    e.summary, plain.values[i - 1][n], bound=True) is None:
                # (read again earlier in the line, then changed in place through another
                # view of its memory: ``v4[:1].mul_(3.0)`` reads v4 again when another
                # view changed it before, and the record is of that read; its next use
                # reads it again)
                problem = None
            if problem:
                out.append(f"line {i} ({program.lines[i]}): recorded value of {n} "
                           f"(t{rid}): {problem}")
        seen.update(ids.values())
    return out


def _passes(events: list[ev.Event]) -> list[tuple[list[ev.Event], set[int]]]:
    """Each backward pass's events, with the ids of its iteration's graph nodes (a pass
    is drawn on its iteration's graph: what backward reached of earlier iterations'
    tensors is not in it)."""
    found: list[tuple[list[ev.Event], set[int]]] = []
    nodes: dict[int, set[int]] = {}
    current: list[ev.Event] | None = None
    for e in events:
        if type(e) is ev.Op:
            nodes.setdefault(e.iteration, set()).add(e.output)
        elif type(e) is ev.TensorCreated:
            nodes.setdefault(e.iteration, set()).add(e.tensor)
        elif type(e) is ev.BackwardStart:
            current = []
            found.append((current, nodes.setdefault(e.iteration, set())))
        elif type(e) is ev.BackwardEnd:
            current = None
        elif current is not None:
            current.append(e)
    return found


def _backward(program: Program, plain: Run, captured: Run) -> list[str]:
    out: list[str] = []
    recorded = _passes(captured.events)
    if len(recorded) != len(plain.passes):
        return [f"{len(plain.passes)} backward passes ran, {len(recorded)} were recorded"]
    for p, (steps, graph) in zip(plain.passes, recorded, strict=True):
        every = captured.ids[p.line - 1] if p.line else {}
        ids = {n: i for n, i in every.items() if i in graph}
        where = f"pass at line {p.line} ({program.lines[p.line]})"
        grads: dict[int, Any] = {}
        every_slot: dict[int, list[Any]] = {}  # (a value may be the output of two nodes)
        leaf_grads: dict[int, Any] = {}
        for e in steps:
            if type(e) is ev.BackwardStep:
                for oid, s in e.slots:
                    if oid >= 0 and oid not in grads:
                        grads[oid] = s
                    if oid >= 0 and s is not None:
                        every_slot.setdefault(oid, []).append(s)
            elif type(e) is ev.GradAccumulated:
                leaf_grads[e.tensor] = e.summary
        line = program.lines[p.line]
        for n, truth in p.grads.items():
            rid = ids.get(n)
            if rid is None:
                continue  # not drawn on this pass's graph (made in an earlier iteration)
            changed_at = plain.rebuilt.get(n)
            if n in p.old_grads and changed_at and captured.ids[changed_at - 1].get(n) == rid:
                # Changed outside autograd: one id, two nodes (before and after the change),
                # each recording what autograd hands it, the old one seen by a hook.
                truths = [g for g in (p.old_grads[n], truth) if g is not None]
                out += [f"{where}: {n} (t{rid}): {m}" for m in
                        _each_node(truths, every_slot.get(rid, []))]
                continue
            got = grads.get(rid)
            if got is None and rid not in grads and "autograd.grad(" in line and \
                    not re.search(rf"\b{n}\b", line):
                # autograd.grad runs only the nodes its inputs need: a node it reached but
                # did not run shows the gradients it hands back (its inputs' and roots'),
                # not those of its other outputs (only a tensor hook would see them).
                continue
            if truth is None:
                if got is not None:
                    out.append(f"{where}: {n} (t{rid}) has no gradient, one was recorded")
                continue
            problem = summary_problem(got, truth)
            if problem:
                out.append(f"{where}: gradient of {n} (t{rid}): {problem}")
        for n, truth in p.leaf_grads.items():
            rid = every.get(n)  # (a leaf's .grad is reported whether or not it is drawn)
            # (judged against the .grad this tensor held just before the pass, not against
            # what the name held after the previous one: see ``Pass.leaf_grads_before``)
            was = p.leaf_grads_before.get(n)
            changed = truth is not None and (was is None or _bits(truth) != _bits(was))
            if changed:
                problem = summary_problem(leaf_grads.get(rid), truth)
                if problem:
                    out.append(f"{where}: .grad of leaf {n} (t{rid}): {problem}")
            elif rid in leaf_grads:  # (a gradient of zeros leaves .grad as it was)
                problem = summary_problem(leaf_grads[rid], truth) if truth is not None \
                    else "recorded, but the leaf has no .grad"
                if problem:
                    out.append(f"{where}: .grad of leaf {n} (t{rid}): {problem}")
        if p.graph is not None:
            out += [f"{where}: {m}" for m in _same_graph(p.graph, steps, ids, every)]
    return out


def _each_node(truths: list[Any], recorded: list[Any]) -> list[str]:
    """Problems unless each gradient in ``truths`` is one of ``recorded``, one for one."""
    left = list(recorded)
    for truth in truths:
        match = next((r for r in left if summary_problem(r, truth) is None), None)
        if match is None:
            return [f"gradients {[_norm(t) for t in truths]} expected, recorded "
                    f"{[r.norm for r in recorded]}"]
        left.remove(match)
    return [f"recorded gradients {[r.norm for r in left]} no node had"] if left else []


def _norm(t: Any) -> float:
    return float(t.double().norm())


def _same_graph(truth: Any, steps: list[ev.Event], ids: dict[str, int | None],
                every: dict[str, int | None]) -> list[str]:
    """The recorded nodes of one pass against autograd's graph, paired from the roots
    (``ids``: the values drawn on the pass's graph; ``every``: all, leaves included)."""
    ran = {e.gid: e for e in steps if type(e) is ev.BackwardStep}
    owned = {}
    for e in ran.values():
        for k, (oid, _) in enumerate(e.slots):
            if oid >= 0:
                owned[oid] = (e.gid, k)
    pairs: dict[int, int] = {}  # truth node -> recorded node id
    out = []
    todo = []
    for r in truth.roots:
        first = next((e for e in steps if type(e) is ev.BackwardStep
                      and e.grad_fn == truth.nodes[r].name and e.gid not in pairs.values()),
                     None)
        if first is None:
            return [f"root {truth.nodes[r].name} was not recorded"]
        pairs[r] = first.gid
        todo.append(r)
    while todo:
        t = todo.pop()
        gid = pairs[t]
        node = truth.nodes[t]
        step = ran.get(gid)
        if step is None:
            continue  # not run in this pass (autograd.grad runs what its inputs need)
        if step.grad_fn != node.name:
            out.append(f"node {gid} is {step.grad_fn}, autograd's is {node.name}")
            continue
        nexts = step.next_ids
        if len(nexts) != len(node.next):
            out.append(f"{node.name} (node {gid}) has {len(nexts)} input slots recorded, "
                       f"{len(node.next)} in autograd")
            continue
        for slot, (want, got) in enumerate(zip(node.next, nexts, strict=True)):
            if want[0] == "none":
                if got != -1:
                    out.append(f"{node.name} input {slot}: autograd has none, recorded {got}")
            elif want[0] == "leaf":
                if got != every.get(want[1]):
                    out.append(f"{node.name} input {slot}: autograd's goes to leaf {want[1]} "
                               f"(t{every.get(want[1])}), recorded {got}")
            else:
                child = want[1]
                if child in pairs:
                    if pairs[child] != got:
                        out.append(f"{node.name} input {slot}: to node {got}, but that "
                                   f"autograd node was paired with {pairs[child]}")
                else:
                    pairs[child] = got
                    todo.append(child)
    for n, (t, k) in truth.owners.items():
        rid = ids.get(n)
        if t not in pairs or rid is None or pairs[t] not in ran:
            continue
        got = owned.get(rid)
        if got != (pairs[t], k):
            out.append(f"{n} (t{rid}) is output {k} of {truth.nodes[t].name} (node "
                       f"{pairs[t]}) in autograd; recorded as {got}")
    missing = [i for i in pairs if pairs[i] not in ran]
    del missing  # (nodes autograd.grad did not need: not run, not recorded)
    return out


# -- summaries ----------------------------------------------------------------------------------
def _later(changes: dict[str, list[int]], n: str, i: int) -> bool:
    """Is value ``n`` changed in place after line ``i``?"""
    return any(j > i for j in changes.get(n, ()))


def _lower_bound(summary: Any, nan: int, inf: int) -> bool:
    """Are ``summary``'s NaN/Inf counts the lower bound PyTorch capture records for a
    tensor whose norm came out non-finite and that was changed in place before the
    statistics were read on the device (the counts are taken from the tensor at the
    read: deferred.py; docs/cli.md, "one changed in place since gets a lower bound,
    marked sampled")? At least one NaN or Inf, none the tensor did not have."""
    return 1 <= summary.nan + summary.inf and summary.nan <= nan and summary.inf <= inf


def _close(got: float | None, want: float, scale: float) -> bool:
    if got is None:
        return True  # (not recorded in this mode)
    return math.isclose(got, want, rel_tol=2e-4, abs_tol=1e-5 * max(1.0, scale))


def summary_problem(summary: Any, value: Any, bound: bool = False) -> str | None:
    """What in ``summary`` is not ``value``'s (None: it all is). ``bound``: the tensor is
    changed in place later, maybe before its statistics are read on the device (see
    ``_lower_bound``)."""
    if summary is None:
        return "none recorded"
    a = value.detach().numpy() if hasattr(value, "detach") else value.numpy()
    if tuple(summary.shape) != tuple(a.shape):
        return f"shape {summary.shape}, the tensor's is {a.shape}"
    f = np.asarray(a, dtype=np.float64).reshape(-1)
    nan, inf = int(np.isnan(f).sum()), int(np.isinf(f).sum())
    if bound and summary.sampled and _lower_bound(summary, nan, inf):
        pass
    elif (summary.nan, summary.inf) != (nan, inf):
        return f"NaN/Inf {summary.nan}/{summary.inf}, the tensor's {nan}/{inf}"
    finite = f[np.isfinite(f)]
    if not finite.size:
        return None
    scale = float(np.abs(finite).max())
    want = {"norm": float(np.sqrt((finite * finite).sum())), "min": float(finite.min()),
            "max": float(finite.max()), "mean": float(finite.mean())}
    for k, v in want.items():
        if not _close(getattr(summary, k), v, scale):
            return f"{k} {getattr(summary, k)!r}, the tensor's {v!r}"
    return None
