"""What a drawing shows: a graph reduced to visible nodes, module clusters and edges.

This is the part of ``to_dot`` that decides *what* is drawn; ``dot.py`` decides how it
looks. Steps, in order: every node gets an owning module (ops their module path,
parameters the module their qualified name lives in); identical sibling blocks are folded
into the first one when asked; modules deeper than ``depth`` collapse into one node; a
diff against another graph marks added and reshaped nodes and adds removed ones as ghosts.

Everything is ordered by sequence number, never by hash or id, so the result (and the
DOT text made from it) is the same for the same graph, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dyngraph.capture.graph import Graph, GraphNode, diff_graphs, roll_up

from .escape import sanitize_id
from .fold import find_folds
from .scopes import Scopes

OP_KINDS = ("op", "backward")
# Past this many nodes removed since the previous iteration, they are one dashed box that
# says what they were ("− 434 nodes: 60 × cell, …"), not a box each: 434 ghosts made an
# export 42,930 pt wide.
GHOSTS = 12


def counted(n: int, word: str) -> str:
    """``1 op``, ``5 ops``, ``1,024 nodes``: a box never says "×1 ops"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


@dataclass(slots=True)
class VNode:
    """One drawn node. ``members`` are the graph nodes it stands for (one unless collapsed)."""

    name: str
    kind: str  # a GraphNode kind, "module" (collapsed) or "ghost" (removed since the diff)
    lines: tuple[str, ...]
    members: list[GraphNode]
    cluster: str
    seq: int
    mark: str = ""  # "", "added", "reshaped", "changed", "removed"
    old_shape: tuple[int, ...] | None = None
    path: str = ""  # a collapsed module's path
    copy: int = 0  # > 0: the copy-th extra box of a shared leaf (see ``split_shared``)
    # A folded run of repeated calls: the node ids of each member, for its gradient strip.
    strip: tuple[tuple[int, ...], ...] = ()
    link: str = ""  # a folded box's own picture (``Box.link``)


@dataclass(frozen=True, slots=True)
class Box:
    """A folded box drawing several graph nodes (see ``build_view(units=...)``): ``key``
    names it, ``frame`` is the call id of the open call it is drawn in (0: top level),
    ``strip`` the node ids of each member of a run."""

    key: str
    label: str
    frame: int = 0
    strip: tuple[tuple[int, ...], ...] = ()
    link: str = ""  # the file of its own picture, if it has one


@dataclass(slots=True)
class VCluster:
    path: str
    name: str
    label: str
    nodes: list[VNode] = field(default_factory=list)
    children: list[VCluster] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class VEdge:
    tail: str
    head: str
    label: str = ""
    ghost: bool = False


@dataclass(slots=True)
class View:
    root: VCluster
    edges: list[VEdge]
    nodes: list[VNode]
    shape: _Shape | None = None  # set when the view is cached (or came from the cache)


_SHAPES: dict[tuple[int, ...], str] = {}


def fmt_shape(shape: tuple[int, ...]) -> str:
    """``(2, 3)``; a 1-d shape is ``(5,)`` as in Python, a scalar ``()``."""
    text = _SHAPES.get(shape)
    if text is None:
        text = repr(tuple(int(d) for d in shape))
        if len(_SHAPES) < 65536:
            _SHAPES[shape] = text
    return text


def node_lines(node: GraphNode) -> tuple[str, ...]:
    """The label of a graph node: what it is, then its shape and dtype."""
    meta = f"{fmt_shape(node.shape)} {node.dtype}"
    if node.kind == "op":
        return (node.op, meta)
    if node.kind == "backward":
        if not node.dtype:  # a node of no tensor dyngraph saw, recorded without statistics
            return (node.op or node.grad_fn or "Backward",)
        return (node.op or node.grad_fn or "Backward", meta)
    if node.kind == "accumulate":
        return ("AccumulateGrad", node.name or "leaf", meta)
    return (node.label, meta)


class _Names:
    """Unique, sanitised DOT names for module paths (``a.b`` and ``a_b`` must not clash)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._by_path: dict[str, str] = {}
        self._taken: set[str] = set()

    def __call__(self, path: str) -> str:
        name = self._by_path.get(path)
        if name is None:
            base = self.prefix + sanitize_id(path)
            name, n = base, 1
            while name in self._taken:
                n += 1
                name = f"{base}_{n}"
            self._taken.add(name)
            self._by_path[path] = name
        return name


def owners(graph: Graph) -> dict[int, str]:
    """The module each node is drawn in: parameters join the module named in their name."""
    modules = set(graph.modules())
    out: dict[int, str] = {}
    for node in graph.nodes.values():
        if node.kind in OP_KINDS:
            out[node.id] = node.module
        else:
            prefix = node.name.rpartition(".")[0] if node.name else ""
            out[node.id] = prefix if prefix in modules else node.module
    return out


def _ancestor(path: str, depth: int) -> str:
    """The first ``depth + 1`` components of a path (the module that collapses)."""
    return ".".join(path.split(".")[: depth + 1])


def _depth(path: str) -> int:
    return path.count(".") + 1 if path else 0


def build_view(
    graph: Graph,
    *,
    depth: int | None = None,
    fold_repeats: bool = False,
    diff_against: Graph | None = None,
    show_shapes: bool = False,
    prefix: str = "n",
    cluster_prefix: str = "cluster_",
    cache: ViewCache | None = None,
    copy_shared: bool = True,
    units: Mapping[int, Box] | None = None,
) -> View:
    """Reduce ``graph`` to what will be drawn. ``prefix`` names nodes (``n12``).

    ``copy_shared``: a leaf (parameter, input, constant) with several edges is drawn once
    per edge, beside its consumer (see ``split_shared``). ``units``: node id -> the folded
    box that draws it (``exporters.modular``: module calls, runs, index groups); it
    replaces ``depth``.

    With a ``cache``, a graph whose structure (everything but ids and values) was seen
    before reuses that view's shape instead of working it out again.
    """
    ordered = seq_order(graph)
    diff = diff_graphs(diff_against, graph) if diff_against is not None else None
    sig = None
    if cache is not None and units is None and (diff is None or diff.unchanged):
        sig = signature(graph, ordered, depth, fold_repeats, show_shapes, prefix,
                        cluster_prefix, copy_shared)
        shape = cache.get(sig)
        if shape is not None:
            return shape.bind(ordered, prefix)
    owner = owners(graph)
    folds = find_folds(graph, ordered, owner) if fold_repeats else None
    fold_of = folds.representative if folds else {}
    cluster_names = _Names(cluster_prefix)
    module_names = _Names("m" + ("_" if prefix == "n" else prefix + "_"))

    marks: dict[int, str] = {}
    old_shapes: dict[int, tuple[int, ...]] = {}
    if diff is not None and diff_against is not None:
        marks.update((i, "added") for i in diff.added)
        for old_id, new_id in diff.reshaped:
            marks[new_id] = "reshaped"
            old_shapes[new_id] = diff_against.nodes[old_id].shape
        marks.update((new_id, "changed") for _, new_id in diff.rewired)

    scopes = Scopes(graph)
    home = _homes(graph, ordered, owner, scopes)
    visible: dict[int, VNode] = {}  # graph node id -> the VNode drawing it
    vnodes: list[VNode] = []
    collapsed: dict[str, VNode] = {}
    absorbed: dict[int, str] = {}  # a leaf drawn inside a collapsed call -> that module
    for node in ordered:
        rep = fold_of.get(node.id, node.id)
        if rep != node.id:
            continue  # drawn by its block's representative (mapped below)
        key = home[node.id]
        box = units.get(node.id) if units is not None else None
        if box is not None:
            v = collapsed.get(box.key)
            if v is None:
                v = VNode(module_names(box.key), "module", (box.label,), [],
                          scopes.call_key.get(box.frame, ""), node.seq, path=box.label,
                          strip=box.strip, link=box.link)
                collapsed[box.key] = v
                vnodes.append(v)
            v.members.append(node)
            if node.id in marks:
                v.mark = "changed"
            visible[node.id] = v
            continue
        target = scopes.collapse_target(key, depth) if depth is not None else None
        if target is not None:
            v = collapsed.get(target)
            if v is None:
                v = VNode(module_names(target), "module", (), [], scopes.parent(target),
                          node.seq, path=scopes.path(target))
                collapsed[target] = v
                vnodes.append(v)
            v.members.append(node)
            if node.id in marks:
                v.mark = "changed"
            if node.kind not in OP_KINDS and scopes.per_call:
                absorbed[node.id] = v.path
        else:
            v = VNode(f"{prefix}{node.id}", node.kind, node_lines(node), [node], key,
                      node.seq, marks.get(node.id, ""), old_shapes.get(node.id))
            vnodes.append(v)
        visible[node.id] = v
    if folds is not None:
        for node_id in fold_of:
            visible[node_id] = visible[folds.resolve(node_id)]
    for target, v in collapsed.items():
        if units is not None and v.lines:
            v.lines = _unit_label(v)
            continue
        v.lines = (_collapsed_label(v, scopes.label(target), folds.labels if folds else {}),)

    edges: list[VEdge] = []
    seen: set[tuple[str, str]] = set()
    for e in graph.edges:
        if folds is not None and folds.crosses(e.src, e.dst):
            continue
        src, dst = visible[e.src], visible[e.dst]
        if absorbed and _inside_other_call(absorbed, e.src, dst, e.dst, src):
            continue
        t, h = src.name, dst.name
        if t == h or (t, h) in seen:
            continue
        seen.add((t, h))
        label = fmt_shape(graph.nodes[e.src].shape) if show_shapes else ""
        edges.append(VEdge(t, h, label))

    if diff is not None and diff_against is not None and diff.removed:
        _add_ghosts(graph, diff_against, diff.removed, visible, vnodes, edges, seen,
                    depth, collapsed, prefix, module_names)

    if copy_shared:
        split_shared(vnodes, edges, _placer(owner, scopes))
    root = _clusters(vnodes, cluster_names, scopes, folds.labels if folds else {})
    view = View(root, edges, vnodes)
    if sig is not None and cache is not None:
        view.shape = _Shape.capture(view, ordered)
        cache.put(sig, view.shape)
    return view


def seq_order(graph: Graph) -> list[GraphNode]:
    """The graph's nodes in the order they were made (the order everything is drawn in)."""
    return sorted(graph.nodes.values(), key=lambda n: (n.seq, n.id))


def signature(graph: Graph, ordered: list[GraphNode], depth: int | None, fold_repeats: bool,
              show_shapes: bool, prefix: str = "n", cluster_prefix: str = "cluster_",
              copy_shared: bool = True) -> tuple[object, ...]:
    """Everything a view depends on except node ids and values (``ordered``: seq order)."""
    options = (depth, fold_repeats, show_shapes, prefix, cluster_prefix, copy_shared)
    pos = {n.id: i for i, n in enumerate(ordered)}
    call_pos = {c: i for i, c in enumerate(graph.calls)}
    calls = tuple((path, call_pos.get(parent, -1)) for path, parent in graph.calls.values())
    nodes = tuple((n.kind, n.op, n.name, n.shape, n.dtype, n.module, n.file, n.line,
                   n.function, n.grad_fn, call_pos.get(n.call, -1)) for n in ordered)
    return (options, calls, nodes,
            tuple((pos[e.src], pos[e.dst], e.index) for e in graph.edges))


@dataclass(slots=True)
class _Shape:
    """A view with graph nodes replaced by their positions in seq order."""

    # per VNode: (fixed name or "" for "prefix + id", kind, lines, cluster, path, positions,
    # copy number)
    vnodes: list[tuple[str, str, tuple[str, ...], str, str, list[int], int]]
    tree: tuple[object, ...]  # (path, name, label, [vnode index], [subtrees])
    edges: list[tuple[int, int, str]]
    # Whatever a consumer derives from the shape alone (DotDoc keeps its layout key here).
    memo: dict[str, str] = field(default_factory=dict)

    @classmethod
    def capture(cls, view: View, ordered: list[GraphNode]) -> _Shape:
        pos = {n.id: i for i, n in enumerate(ordered)}
        index = {v.name: i for i, v in enumerate(view.nodes)}
        vnodes = [(v.name if v.path else "", v.kind, v.lines, v.cluster, v.path,
                   [pos[m.id] for m in v.members], v.copy) for v in view.nodes]

        def tree(c: VCluster) -> tuple[object, ...]:
            return (c.path, c.name, c.label, [index[v.name] for v in c.nodes],
                    [tree(child) for child in c.children])

        edges = [(index[e.tail], index[e.head], e.label) for e in view.edges]
        return cls(vnodes, tree(view.root), edges)

    def bind(self, ordered: list[GraphNode], prefix: str) -> View:
        """The view of another graph with this shape (its nodes in seq order)."""
        vnodes = []
        for name, kind, lines, cluster, path, positions, copy in self.vnodes:
            members = [ordered[p] for p in positions]
            first = members[0]
            vnodes.append(VNode(name or copy_name(f"{prefix}{first.id}", copy), kind, lines,
                                members, cluster, first.seq, path=path, copy=copy))

        def tree(t: tuple) -> VCluster:  # type: ignore[type-arg]
            path, name, label, nodes, children = t
            return VCluster(path, name, label, [vnodes[i] for i in nodes],
                            [tree(child) for child in children])

        edges = [VEdge(vnodes[t].name, vnodes[h].name, label) for t, h, label in self.edges]
        return View(tree(self.tree), edges, vnodes, self)


class ViewCache:
    """The last few view shapes, by structure (pass one to ``to_dot`` calls in a loop)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: dict[tuple[object, ...], _Shape] = {}

    def get(self, sig: tuple[object, ...]) -> _Shape | None:
        shape = self._entries.pop(sig, None)
        if shape is not None:
            self._entries[sig] = shape  # most recently used last
        return shape

    def put(self, sig: tuple[object, ...], shape: _Shape) -> None:
        self._entries[sig] = shape
        while len(self._entries) > self.size:
            del self._entries[next(iter(self._entries))]


def copy_name(name: str, copy: int) -> str:
    """The DOT name of a shared leaf's ``copy``-th extra box (``n12_3``; the first is n12)."""
    return f"{name}_{copy}" if copy else name


SHARED_KINDS = ("param", "leaf", "accumulate")
# A leaf with at least this many edges gets a box per edge. Fewer stay one box: one
# parameter is one node (nanoGPT's embedding, tied to its output layer, was drawn twice),
# and a second edge costs the layout little.
SHARED_COPIES = 3


def split_shared(vnodes: list[VNode], edges: list[VEdge],
                 place: Callable[[VNode, VNode], str] | None = None) -> None:
    """Give every edge of a shared leaf its own box, in the cluster ``place(leaf, other
    end)`` names (by default: the other end's, when the leaf's own cluster holds it).

    A parameter feeding every step of a loop otherwise pulls 60 long edges across the
    whole depth of the drawing: a layered layout pays for each rank they cross (1,939
    nodes: Graphviz over 120 s; copied, 2,900 boxes in 1.5 s). Copies keep the leaf's
    members, so they carry its colour and tooltip; the first edge keeps the original box.
    """
    by_name = {v.name: v for v in vnodes}
    before: dict[str, list[VNode]] = {}  # copies, by the node written right after them
    uses: dict[str, list[int]] = {}
    for i, e in enumerate(edges):
        if e.ghost:
            continue
        for end in (e.tail, e.head):
            v = by_name[end]
            if v.kind in SHARED_KINDS and not v.path:
                uses.setdefault(end, []).append(i)
    for name, used in uses.items():
        if len(used) < SHARED_COPIES:
            continue
        v = by_name[name]
        for k, i in enumerate(used[1:], 1):
            e = edges[i]
            other = by_name[e.head if e.tail == name else e.tail]
            if place is not None:
                cluster = place(v, other)
            else:
                inside = not v.cluster or other.cluster == v.cluster or \
                    other.cluster.startswith(v.cluster + ".")
                cluster = other.cluster if inside else v.cluster
            copy = VNode(copy_name(name, k), v.kind, v.lines, v.members, cluster, other.seq,
                         v.mark, v.old_shape, copy=k)
            before.setdefault(other.name, []).append(copy)
            edges[i] = VEdge(copy.name if e.tail == name else e.tail,
                             copy.name if e.head == name else e.head, e.label, e.ghost)
    if before:  # Graphviz starts from the order nodes are written in: copies beside users
        placed = [c for v in vnodes for c in (*before.get(v.name, ()), v)]
        vnodes[:] = placed


def _unit_label(v: VNode) -> tuple[str, ...]:
    """A folded box's label: a run's ops per member and a blank line its gradient strip
    is drawn on, a module call's ops, an index group as it is (its label counts them)."""
    ops = sum(1 for m in v.members if m.kind in OP_KINDS)
    if v.strip:
        return (v.path, f"{counted(ops // max(len(v.strip), 1), 'op')} each", " ")
    if v.path.startswith("index ops"):
        return (v.path,)
    return (f"{v.path} (×{counted(ops, 'op')})",)


def _collapsed_label(v: VNode, label: str, fold_labels: dict[str, str]) -> str:
    ops = sum(1 for m in v.members if m.kind in OP_KINDS)
    what = f"×{counted(ops, 'op')}" if ops else f"×{counted(len(v.members), 'node')}"
    if v.path in fold_labels:
        return f"{fold_labels[v.path]} ({what} each)"
    return f"{label} ({what})"


def _homes(graph: Graph, ordered: list[GraphNode], owner: dict[int, str], scopes: Scopes
           ) -> dict[int, str]:
    """The cluster each node is drawn in. Ops: their call's (or module's). A leaf: in a
    graph with calls, the call of its module that its first neighbour runs in (a weight
    beside the matmul of the call that uses it), else the top level; without calls, its
    module's cluster."""
    home: dict[int, str] = {}
    for node in ordered:
        if node.kind in OP_KINDS:
            home[node.id] = scopes.of_op(node)
        elif not scopes.per_call:
            home[node.id] = scopes.of_path(owner[node.id])
    if scopes.per_call:
        first: dict[int, int] = {}
        for e in graph.edges:
            for leaf, other in ((e.src, e.dst), (e.dst, e.src)):
                if leaf not in home and leaf not in first:
                    first[leaf] = other
        for node in ordered:
            if node.id not in home:
                path, near = owner[node.id], first.get(node.id)
                found = scopes.within(home.get(near, ""), path) if path and near else None
                home[node.id] = found or ""
    return home


def _placer(owner: dict[int, str], scopes: Scopes) -> Callable[[VNode, VNode], str]:
    """Where a copy of a shared leaf goes: the call of the leaf's module around the copy's
    consumer, else the leaf's own cluster (top level for inputs and constants)."""
    def place(leaf: VNode, other: VNode) -> str:
        path = owner.get(leaf.members[0].id, "")
        if path and other.cluster in scopes.info:
            found = scopes.within(other.cluster, path)
            if found is not None:
                return found
        return leaf.cluster

    return place


def _inside_other_call(absorbed: dict[int, str], src: int, dst_v: VNode, dst: int,
                       src_v: VNode) -> bool:
    """An edge from a leaf drawn inside one collapsed call of a module into another call
    of that module: inside the box both times, so not drawn (no edge across the page)."""
    if src in absorbed and dst_v.kind == "module" and dst_v.path == absorbed[src]:
        return True
    return dst in absorbed and src_v.kind == "module" and src_v.path == absorbed[dst]


def _add_ghosts(graph: Graph, old: Graph, removed: tuple[int, ...], visible: dict[int, VNode],
                vnodes: list[VNode], edges: list[VEdge], seen: set[tuple[str, str]],
                depth: int | None, collapsed: dict[str, VNode], prefix: str,
                module_names: _Names) -> None:
    """Draw nodes that ``old`` had and ``graph`` lacks, dashed, joined to their neighbours;
    past ``GHOSTS`` of them, one dashed box that says them in a line (``roll_up``)."""
    if len(removed) > GHOSTS:
        ordered = sorted(removed, key=lambda i: (old.nodes[i].seq, i))
        v = VNode(f"x{prefix}rollup", "ghost", (f"− {roll_up(old, ordered)}",),
                  [old.nodes[i] for i in ordered], "", old.nodes[ordered[0]].seq,
                  "removed", path="removed")
        vnodes.append(v)
        return
    new_by_key = {n.key: n.id for n in graph.nodes.values()}
    old_owner = owners(old)
    ghosts: dict[int, str] = {}
    for old_id in sorted(removed, key=lambda i: (old.nodes[i].seq, i)):
        node = old.nodes[old_id]
        path = old_owner[old_id]
        if depth is not None and _depth(path) > depth:
            top = _ancestor(path, depth)
            v = collapsed.get(top)
            if v is None:  # the whole module is gone: one ghost for it
                parent = _ancestor(path, depth - 1) if depth > 0 else ""
                v = VNode("x" + module_names(top), "ghost", (), [], parent, node.seq,
                          "removed", path=top)
                collapsed[top] = v
                vnodes.append(v)
            elif v.kind != "ghost":
                v.mark = "changed"
            if v.kind == "ghost":
                v.members.append(node)
                v.lines = (f"{top} (×{counted(len(v.members), 'node')})",)
            ghosts[old_id] = v.name
            continue
        name = f"x{prefix}{old_id}" if prefix != "n" else f"x{old_id}"
        v = VNode(name, "ghost", node_lines(node), [node], path, node.seq, "removed")
        vnodes.append(v)
        ghosts[old_id] = name
    for e in old.edges:
        if e.src not in ghosts and e.dst not in ghosts:
            continue
        ends = []
        for end in (e.src, e.dst):
            if end in ghosts:
                ends.append(ghosts[end])
            else:
                match = new_by_key.get(old.nodes[end].key)
                ends.append(visible[match].name if match in visible else "")
        t, h = ends
        if t and h and t != h and (t, h) not in seen:
            seen.add((t, h))
            edges.append(VEdge(t, h, "", ghost=True))


def _clusters(vnodes: list[VNode], names: _Names, scopes: Scopes,
              fold_labels: dict[str, str]) -> VCluster:
    """Nest nodes into their clusters (see ``Scopes``), in order of first appearance."""
    root = VCluster("", "", "")
    by_key: dict[str, VCluster] = {"": root}

    def cluster(key: str) -> VCluster:
        c = by_key.get(key)
        if c is None:
            if key not in scopes.info:  # a ghost's module path
                scopes.of_path(key)
            parent = cluster(scopes.parent(key))
            path = scopes.path(key)
            c = VCluster(path, names(key), fold_labels.get(path, scopes.label(key)))
            parent.children.append(c)
            by_key[key] = c
        return c

    for v in vnodes:
        cluster(v.cluster).nodes.append(v)
    return root
