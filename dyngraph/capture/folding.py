"""Module folding: which boxes a big graph is drawn as. Plain data in, plain data out.

A graph of thousands of nodes is read the way Model Explorer users read one: one box per
module call, labelled with its path (``transformer.h.17``); a run of repeated sibling
calls (``transformer.h.0 … h.71``) as one box; a module opened in place when asked. This
module decides *what* is shown; the terminal canvas (``tui/canvas_layout.py``), the
exporters (``exporters/modular.py``) and a browser viewer draw it, each its own way.

Three steps, each a pure function of plain data (lists, tuples, strings, ints):

1. ``ModuleTree.build(scopes, inputs, sigs, names)`` (or ``ModuleTree.from_graph``) finds
   the module calls and the runs of identical sibling calls. Input, one entry per graph
   node in creation order:

   - ``scopes[i]``: the module calls node ``i`` ran in, outermost first, each as a key
     ``"path#k"`` (the k-th call of module ``path`` in the iteration, counted from 1):
     ``("transformer.h.3#1", "transformer.h.3.attn#1")``; ``()`` at top level. A leaf
     (parameter, input) takes the scope of the call that uses it.
   - ``inputs[i]``: indices of the nodes it reads (earlier entries).
   - ``sigs[i]``: anything hashable saying what the node is, without ids or module
     paths (``("op", "matmul", (4, 32), "float32")``): two calls are repeats of one
     another when their nodes' signatures, wiring and relative module paths agree.
   - ``names[i]``: a leaf's name (``transformer.h.3.ln_1.weight``), compared relative to
     the call (``ln_1.weight``); "" for ops.

2. ``auto_expanded(tree)`` picks what is open at first: nothing below ``FOLD_ABOVE``
   nodes is folded; above it, calls are opened largest first while the picture stays
   within ``BUDGET`` boxes (runs stay folded unless they fit too).

3. ``fold(tree, expanded, bookkeeping)`` maps every node to the box (``Unit``) that draws
   it under an ``expanded`` set of call and run keys, with the edges between boxes. Only
   those boxes are ever laid out. ``bookkeeping[i]`` marks a non-differentiable integer
   node (index arithmetic: ``unbind``, 0-d ``add``, ``getitem``, ``stack`` of int64): a
   connected group of at least ``INDEX_GROUP`` of them in one frame is one box
   (``index ops ×26``), opened by its key like a call.

``Folding.to_dict()`` / ``ModuleTree.to_dict()`` give JSON-ready dicts (a viewer page
reads them as they are).

>>> tree = ModuleTree.build([(), ("a#1",), ("a#1",), ("b#1",)], [(), (0,), (1,), (2,)],
...                         ["x", "op", "op", "op"], ["", "", "", ""])
>>> folded = fold(tree, frozenset())
>>> [u.label or u.kind for u in folded.units], folded.unit_of
(['node', 'a', 'b'], [0, 1, 1, 2])
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import groupby
from typing import Any

FOLD_ABOVE = 300  # graphs with more nodes open folded by module
BUDGET = 60  # boxes the first, module-level picture aims at
INDEX_GROUP = 4  # integer index nodes that fold into one box
RUN_PREFIX = "run:"
INDEX_PREFIX = "index:"


def path_of(key: str) -> str:
    """The module path of a call key: ``"enc.0#2"`` -> ``"enc.0"``."""
    return key.rpartition("#")[0] if "#" in key else key


@dataclass(slots=True)
class Call:
    """One module call: ``key`` is ``path#k``; ``parent`` the enclosing call's key."""

    key: str
    path: str
    parent: str
    first: int  # its first node
    size: int = 0  # nodes inside it, those of nested calls included
    direct: int = 0  # nodes directly inside it (not in a nested call)
    children: list[str] = field(default_factory=list)
    run: str = ""  # the run it belongs to, if any
    label: str = ""


@dataclass(slots=True)
class Run:
    """Consecutive sibling calls that compute the same thing (``h.0 … h.71``)."""

    key: str  # RUN_PREFIX + its first member's key
    parent: str
    members: list[str]
    label: str
    first: int
    size: int


class ModuleTree:
    """Module calls and runs of one graph (see the module docstring); build with ``build``."""

    def __init__(self, n: int, calls: dict[str, Call], runs: dict[str, Run],
                 top: list[str], scope_of: list[str], inputs: Sequence[Sequence[int]]) -> None:
        self.n = n
        self.calls = calls
        self.runs = runs
        self.top = top  # calls at top level, in order
        self.scope_of = scope_of  # node -> its innermost call's key ("" at top level)
        self.inputs = inputs

    # -- building ------------------------------------------------------------------------
    @classmethod
    def build(cls, scopes: Sequence[Sequence[str]], inputs: Sequence[Sequence[int]],
              sigs: Sequence[Hashable], names: Sequence[str] | None = None) -> ModuleTree:
        calls: dict[str, Call] = {}
        top: list[str] = []
        scope_of = [chain[-1] if chain else "" for chain in scopes]
        members: dict[str, list[int]] = {}
        # Consecutive nodes of one call share their scope: taken a stretch at a time
        # (a 50,000-node graph has a few thousand stretches).
        i = 0
        for chain, stretch in groupby(scopes):
            j = i + len(list(stretch))
            parent = ""
            for key in chain:
                call = calls.get(key)
                if call is None:
                    call = calls[key] = Call(key, path_of(key), parent, i)
                    (calls[parent].children if parent else top).append(key)
                    members[key] = []
                call.size += j - i
                members[key].extend(range(i, j))
                parent = key
            if chain:
                calls[chain[-1]].direct += j - i
            i = j
        _label_calls(calls)
        tree = cls(len(scope_of), calls, {}, top, scope_of, inputs)
        tree._find_runs(members, scopes, sigs, names or [""] * len(scope_of))
        return tree

    @classmethod
    def from_graph(cls, graph: Any) -> ModuleTree:
        """The tree of a ``dyngraph.capture.graph.Graph`` (nodes in creation order)."""
        scopes, inputs, sigs, names, _ = graph_records(graph)
        return cls.build(scopes, inputs, sigs, names)

    def _find_runs(self, members: dict[str, list[int]], scopes: Sequence[Sequence[str]],
                   sigs: Sequence[Hashable], names: Sequence[str]) -> None:
        cache: dict[str, Hashable] = {}

        def signature(key: str) -> Hashable:
            sig = cache.get(key)
            if sig is None:
                sig = cache[key] = _call_signature(self.calls[key], members[key], scopes,
                                                   self.inputs, sigs, names)
            return sig

        stack = [("", self.top)]
        while stack:
            parent, kids = stack.pop()
            i = 0
            while i < len(kids):
                j = i + 1
                first = self.calls[kids[i]]
                while j < len(kids) and self.calls[kids[j]].size == first.size and (
                        signature(kids[j]) == signature(kids[i])):
                    j += 1
                if j - i > 1:
                    run = kids[i:j]
                    key = RUN_PREFIX + run[0]
                    self.runs[key] = Run(key, parent, run, _run_label(run), first.first,
                                         sum(self.calls[k].size for k in run))
                    for k in run:
                        self.calls[k].run = key
                i = j
            for key in kids:
                call = self.calls[key]
                # A run's later members repeat its first one: nothing new inside them.
                if call.children and (not call.run or self.runs[call.run].members[0] == key):
                    stack.append((key, call.children))

    # -- questions -----------------------------------------------------------------------
    def chain(self, key: str) -> list[str]:
        """Call keys from the outermost down to ``key`` ([] for the top level)."""
        out = []
        while key:
            out.append(key)
            key = self.calls[key].parent
        out.reverse()
        return out

    def run_members(self, run_key: str) -> list[str]:
        return self.runs[run_key].members

    def member_values(self, run_key: str, values: Sequence[float | None]
                      ) -> list[float | None]:
        """The largest of ``values`` (one per node, None: none) in each member of a run:
        what a run's gradient-norm strip shows, one cell per member. ``values`` may be
        shorter than the graph (the graph so far): the nodes it lacks count as None."""
        members = self.runs[run_key].members
        index = {k: m for m, k in enumerate(members)}
        best: list[float | None] = [None] * len(members)
        calls = self.calls
        for i, key in enumerate(self.scope_of[:len(values)]):
            while key and key not in index:
                key = calls[key].parent
            if key:
                v = values[i]
                m = index[key]
                if v is not None and (best[m] is None or v > best[m]):  # type: ignore[operator]
                    best[m] = v
        return best

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "top": self.top, "scope_of": self.scope_of,
                "calls": [asdict(c) for c in self.calls.values()],
                "runs": [asdict(r) for r in self.runs.values()]}


def _label_calls(calls: dict[str, Call]) -> None:
    counts: dict[str, int] = {}
    for call in calls.values():
        counts[call.path] = counts.get(call.path, 0) + 1
    for call in calls.values():
        k = call.key.rpartition("#")[2] if "#" in call.key else ""
        call.label = f"{call.path} #{k}" if k and counts[call.path] > 1 else call.path


def _relative(path: str, base: str) -> str:
    if path == base:
        return ""
    if path.startswith(base + "."):
        return path[len(base) + 1:]
    return "\0" + path


def _call_signature(call: Call, nodes: list[int], scopes: Sequence[Sequence[str]],
                    inputs: Sequence[Sequence[int]], sigs: Sequence[Hashable],
                    names: Sequence[str]) -> Hashable:
    """What a call computes, without ids or its own path: repeats compare equal."""
    local = dict(zip(nodes, range(len(nodes)), strict=True))
    depth = list(scopes[nodes[0]]).index(call.key) if nodes else 0
    parts: list[Hashable] = []
    append = parts.append
    # The scopes below the call, relative to it, once per scope object (consecutive
    # nodes of a nested call share theirs).
    inner_of: dict[int, tuple[str, ...]] = {}
    base = call.path
    get = local.get
    for i in nodes:  # (a 50,000-node graph: twice over each node)
        chain = scopes[i]
        inner = inner_of.get(id(chain))
        if inner is None:
            inner = inner_of[id(chain)] = tuple(
                [_relative(path_of(k), base) for k in chain[depth + 1:]])
        name = names[i]
        if name:
            name = _relative(name, base)
        ins = inputs[i]
        if len(ins) == 1:  # (most ops)
            ins = (get(ins[0], -1),)
        elif ins:
            ins = tuple([get(j, -1) for j in ins])
        else:
            ins = ()
        append((sigs[i], inner, name, ins))
    return hash(tuple(parts)), len(parts)


def _run_label(run: list[str]) -> str:
    first, last = path_of(run[0]), path_of(run[-1])
    n = len(run)
    if first == last:  # calls of one module: "cell #1 … #60"
        return f"{first} #{run[0].rpartition('#')[2]} … #{run[-1].rpartition('#')[2]} ×{n}"
    head, _, tail = last.rpartition(".")
    prefix = first.rpartition(".")[0]
    short = last if head != prefix else (
        f"{prefix.rpartition('.')[2]}.{tail}" if prefix else tail)
    return f"{first} … {short} ×{n}"


# -- what is open --------------------------------------------------------------------------
def auto_expanded(tree: ModuleTree, budget: int = BUDGET, above: int = FOLD_ABOVE
                  ) -> frozenset[str]:
    """The calls (and runs) open in the first picture.

    Everything when the graph has at most ``above`` nodes (nothing is folded). Else calls
    open largest first, each only if the picture stays within ``budget`` boxes; runs stay
    folded (one box, its strip telling the members apart) until asked.
    """
    if tree.n <= above:
        return frozenset(tree.calls) | frozenset(tree.runs)
    opened: set[str] = set()
    shown = _level_boxes(tree, "", tree.top)
    heap: list[tuple[int, int, str]] = []

    def offer(parent_kids: list[str]) -> None:
        for key in parent_kids:
            call = tree.calls[key]
            if not call.run and (call.children or call.direct > 1):
                heapq.heappush(heap, (-call.size, call.first, key))

    offer(tree.top)
    while heap:
        _, _, key = heapq.heappop(heap)
        call = tree.calls[key]
        gain = _level_boxes(tree, key, call.children) + call.direct - 1
        if shown + gain <= budget:
            opened.add(key)
            shown += gain
            offer(call.children)
    return frozenset(opened)


def _level_boxes(tree: ModuleTree, parent: str, kids: list[str]) -> int:
    """Boxes a level shows with its calls folded: its own nodes, one per call or run."""
    own = sum(1 for s in tree.scope_of if s == parent) if not parent else 0
    runs = {tree.calls[k].run for k in kids if tree.calls[k].run}
    return own + sum(1 for k in kids if not tree.calls[k].run) + len(runs)


# -- folding -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Unit:
    """One box: a node (``kind="node"``), a folded call, a folded run or an index group.

    ``key`` is what ``expanded`` names to open it ("" for a node); ``parent`` the key of
    the open call whose frame it is drawn in ("" at top level); ``first`` its first node
    (creation index); ``size`` the nodes it stands for.
    """

    kind: str
    key: str
    label: str
    parent: str
    first: int
    size: int


@dataclass(slots=True)
class Folding:
    """Every node's box under one ``expanded`` set (see ``fold``)."""

    units: list[Unit]
    unit_of: list[int]  # node index -> index into ``units``
    edges: list[tuple[int, int]]  # (unit, unit), each once, in order of first appearance
    expanded: frozenset[str]
    # The node whose input first drew each edge (a prefix of the graph draws only the
    # edges born before its end).
    edge_birth: list[int] = field(default_factory=list)

    def folded(self) -> bool:
        """True when some box stands for more than one node."""
        return any(u.kind != "node" for u in self.units)

    def to_dict(self) -> dict[str, Any]:
        return {"units": [asdict(u) for u in self.units], "unit_of": self.unit_of,
                "edges": self.edges, "edge_birth": self.edge_birth,
                "expanded": sorted(self.expanded)}


def fold(tree: ModuleTree, expanded: Iterable[str],
         bookkeeping: Sequence[bool] | None = None) -> Folding:
    """Map each node to its box under ``expanded`` (call keys, run keys, index keys; a
    module path opens every call of that module). ``bookkeeping[i]``: node ``i`` is
    integer index arithmetic that may fold with its neighbours (see the module doc)."""
    opened = frozenset(expanded)
    calls, runs = tree.calls, tree.runs
    paths = {p for p in opened if "#" not in p and not p.startswith((RUN_PREFIX,
                                                                      INDEX_PREFIX))}

    def is_open(key: str) -> bool:
        return key in opened or (bool(paths) and calls[key].path in paths)

    # The box each call's nodes go to: the call itself (open), or the first closed
    # call/run around it, found once per call.
    target: dict[str, tuple[str, str]] = {}  # call -> (unit key or "", frame key)

    def resolve(key: str) -> tuple[str, str]:
        got = target.get(key)
        if got is not None:
            return got
        call = calls[key]
        up_unit, up_frame = resolve(call.parent) if call.parent else ("", "")
        if up_unit:
            got = (up_unit, up_frame)
        elif call.run and call.run not in opened:
            got = (call.run, call.parent)
        elif not is_open(key):
            got = (key, call.parent)
        else:
            got = ("", key)
        target[key] = got
        return got

    units: list[Unit] = []
    index: dict[str, int] = {}
    unit_of: list[int] = []
    pending: list[int] = []  # bookkeeping nodes shown as themselves, grouped below
    last_scope, found = "", ("", "")
    for i, scope in enumerate(tree.scope_of):
        if scope != last_scope:  # (consecutive nodes mostly share their call)
            last_scope, found = scope, resolve(scope) if scope else ("", "")
        unit_key, frame = found
        if unit_key:
            u = index.get(unit_key)
            if u is None:
                u = index[unit_key] = len(units)
                if unit_key.startswith(RUN_PREFIX):
                    run = runs[unit_key]
                    units.append(Unit("run", unit_key, run.label, run.parent, i, run.size))
                else:
                    call = calls[unit_key]
                    units.append(Unit("call", unit_key, call.label, call.parent, i,
                                      call.size))
            unit_of.append(u)
            continue
        if bookkeeping is not None and bookkeeping[i]:
            pending.append(i)
        unit_of.append(len(units))
        units.append(Unit("node", "", "", frame, i, 1))
    if pending:
        units, unit_of = _group_index_nodes(tree, units, unit_of, pending, opened)
    edges, births = _unit_edges(tree.inputs, unit_of)
    return Folding(units, unit_of, edges, opened, births)


def _group_index_nodes(tree: ModuleTree, units: list[Unit], unit_of: list[int],
                       pending: list[int], opened: frozenset[str]
                       ) -> tuple[list[Unit], list[int]]:
    """Connected groups of bookkeeping nodes in one frame become one box each."""
    flagged = set(pending)
    parent = {i: i for i in pending}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in pending:
        for j in tree.inputs[i]:
            if j in flagged and units[unit_of[j]].parent == units[unit_of[i]].parent:
                a, b = find(i), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in pending:
        groups.setdefault(find(i), []).append(i)
    merged: dict[int, int] = {}  # old unit -> the group's unit (old index, reused)
    for root, members in groups.items():
        key = f"{INDEX_PREFIX}{root}"
        if len(members) < INDEX_GROUP or key in opened:
            continue
        first = units[unit_of[root]]
        units[unit_of[root]] = Unit("index", key, f"index ops ×{len(members)}", first.parent,
                                    root, len(members))
        for i in members:
            merged[unit_of[i]] = unit_of[root]
    if not merged:
        return units, unit_of
    keep = [u for u in range(len(units)) if merged.get(u, u) == u]
    renumber = {u: k for k, u in enumerate(keep)}
    new_units = [units[u] for u in keep]
    new_of = [renumber[merged.get(u, u)] for u in unit_of]
    return new_units, new_of


def _unit_edges(inputs: Sequence[Sequence[int]], unit_of: list[int]
                ) -> tuple[list[tuple[int, int]], list[int]]:
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    births: list[int] = []
    n = len(unit_of)
    for i, ins in enumerate(inputs):
        dst = unit_of[i]
        for j in ins:
            if 0 <= j < n:
                edge = (unit_of[j], dst)
                if edge[0] != dst and edge not in seen:
                    seen.add(edge)
                    out.append(edge)
                    births.append(i)
    return out, births


# -- from a Graph ----------------------------------------------------------------------------
INT_DTYPES = ("int", "uint", "bool", "long", "short", "byte")


def is_bookkeeping(kind: str, dtype: str, requires_grad: bool) -> bool:
    """An integer (or bool) tensor no gradient flows through: index arithmetic."""
    return kind in ("op", "leaf") and not requires_grad and dtype.startswith(INT_DTYPES)


def graph_records(graph: Any) -> tuple[list[tuple[str, ...]], list[tuple[int, ...]],
                                       list[Hashable], list[str], list[int]]:
    """(scopes, inputs, sigs, names, node ids) of a Graph's nodes in creation order.

    Scopes follow ``Graph.calls`` (a call of the root module, path "", is no scope); a
    leaf takes the scope of its first consumer, cut at the call of the module its name
    belongs to or of the nearest module holding that one (a weight is drawn in the call
    that uses it), or the top level (a tied weight used by another module).
    """
    nodes = sorted(graph.nodes.values(), key=lambda n: (n.seq, n.id))
    ids = [n.id for n in nodes]
    pos = {nid: k for k, nid in enumerate(ids)}
    keys: dict[int, tuple[str, ...]] = {0: ()}
    counts: dict[str, int] = {}
    for call, (path, parent) in graph.calls.items():
        up = keys.get(parent, ())
        if path:
            counts[path] = counts.get(path, 0) + 1
            up = (*up, f"{path}#{counts[path]}")
        keys[call] = up
    ins: list[list[tuple[int, int]]] = [[] for _ in ids]
    first_user: dict[int, int] = {}
    for e in graph.edges:
        if e.src in pos and e.dst in pos:
            ins[pos[e.dst]].append((e.index, pos[e.src]))
            first_user.setdefault(pos[e.src], pos[e.dst])
    scopes: list[tuple[str, ...]] = []
    for n in nodes:
        scopes.append(keys.get(n.call, ()) if n.kind in ("op", "backward") else ())
    for k, n in enumerate(nodes):
        if n.kind not in ("op", "backward") and k in first_user:
            owner = n.name.rpartition(".")[0] if n.name else ""
            scopes[k] = leaf_scope(owner, scopes[first_user[k]])
    inputs = [tuple(src for _, src in sorted(i)) for i in ins]
    sigs: list[Hashable] = [(n.kind, n.op, tuple(n.shape), n.dtype) for n in nodes]
    names = [n.name if n.kind not in ("op", "backward") else "" for n in nodes]
    return scopes, inputs, sigs, names, ids


def leaf_scope(owner: str, user: Sequence[str]) -> tuple[str, ...]:
    """The scope of a leaf of module ``owner`` (a weight) whose first user ran in ``user``:
    cut at the deepest call of ``owner`` or of a module holding it (MultiheadAttention uses
    ``out_proj.weight`` in its own call; ``out_proj`` is never called), else top level."""
    if not owner:
        return ()
    cut = [d for d, key in enumerate(user)
           if owner == path_of(key) or owner.startswith(path_of(key) + ".")]
    return tuple(user[:cut[-1] + 1]) if cut else ()


def open_set(tree: ModuleTree, *, auto: bool = True, depth: int | None = None,
             expand: Iterable[str] = (), collapse: Iterable[str] = ()) -> frozenset[str]:
    """What is open: ``auto_expanded`` (or, with ``auto=False``, everything), less the calls
    of modules nested deeper than ``depth``; then ``collapse`` closes and ``expand``
    opens the keys (or module paths: every call of it) they name. Opening a call opens
    everything around it, so it shows.
    """
    opened = set(auto_expanded(tree) if auto else set(tree.calls) | set(tree.runs))
    if depth is not None:
        opened -= {k for k, c in tree.calls.items() if c.path.count(".") + 1 > depth}
    by_path: dict[str, list[str]] = {}
    for key, call in tree.calls.items():
        by_path.setdefault(call.path, []).append(key)
    for key in collapse:
        opened.discard(key)
        opened.difference_update(by_path.get(key, ()) if key not in tree.calls else ())
    for key in expand:
        keys = [key] if key in tree.calls or key.startswith(
            (RUN_PREFIX, INDEX_PREFIX)) else by_path.get(key, [])
        for k in keys:
            opened.add(k)
            chain = tree.chain(k) if k in tree.calls else (
                tree.chain(tree.runs[k].parent) if k in tree.runs else [])
            for up in chain:
                if up != k:
                    opened.add(up)
                run = tree.calls[up].run
                if run:
                    opened.add(run)
    return frozenset(opened)
