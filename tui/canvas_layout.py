"""Layouts for the graph canvas: canonical node order, terminal DOT, a cache and a worker.

A layout is expensive (a second at 5k nodes) and the graph on screen changes every step,
so layouts are keyed by *structure*, not by object:

- ``Canonical`` lists a Graph's nodes in creation order with a structural signature each
  (kind, op, name, shape, module, inputs as creation indices). Iterations with the same
  structure have equal signature lists, whatever their tensor ids; the graph "so far" is a
  prefix of the finished one.
- ``LayoutCache.best()`` finds the cached layout sharing the longest prefix with the graph
  on screen, so stepping through a repeated iteration never lays out again: the canvas
  draws the prefix of the cached scene (see ``raster.render_row(upto=...)``).
- A parameter, leaf or AccumulateGrad used more than once is drawn beside each user
  (``COPY_SHARED``): one weight feeding every step of a loop made dot take seconds.
- ``LayoutWorker`` lays out in a daemon thread (a blocked ``dot`` never holds up quitting),
  one job at a time, keeping only the newest request and starting at most a few per second.

Nothing here imports Textual.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dyngraph.capture.graph import Graph
from dyngraph.errors import UserError

from . import raster
from .raster import Scene, ViewCluster, ViewEdge, ViewGraph, ViewNode

# (kind, op, name, shape, module, requires_grad, inputs as creation indices, scope): scope
# is the module calls an op ran in, outermost first, as "path#k" (the k-th call of that
# module in the iteration); () at top level, for leaves, and for traces without calls.
Sig = tuple[str, str, str, tuple[int, ...], str, bool, tuple[int, ...], tuple[str, ...]]

LARGE_GRAPH = 300  # past this many nodes, deep modules start collapsed
# A parameter, leaf or AccumulateGrad with at least this many edges is drawn as one box per
# edge, beside its consumer: dot's layout time exploded on one weight feeding every step of
# a loop (60 steps: 8.2 s -> 0.05 s; bench/tui_canvas.py). 0 never copies. Two reads well
# too: a leaf used twice gets a box beside each consumer, as dot does for parameters.
COPY_SHARED = 2
_COPYABLE = ("param", "leaf", "accumulate")
FAST_LAYOUT = 1000  # past this many boxes, trade a little layout quality for speed
# Seconds Graphviz may take on the pane before dyngraph's layered layout draws it (the
# first picture of a 2,000-node iteration is due within 3 s of the key press).
GRAPHVIZ_BUDGET = 1.5


# -- canonical order ------------------------------------------------------------------------
class Canonical:
    """A Graph's nodes in creation order with their signatures; cheap to update as it grows.

    >>> canon = Canonical()
    >>> canon.update(graph)            # doctest: +SKIP
    >>> canon.ids[0], canon.sigs[0]    # doctest: +SKIP
    """

    def __init__(self) -> None:
        self.graph: Graph | None = None
        self.ids: list[int] = []
        self.index: dict[int, int] = {}
        self.sigs: list[Sig] = []
        self._edges = 0
        self._scopes: dict[int, tuple[str, ...]] = {0: ()}  # call id -> its scope
        self._calls_seen = 0
        self._call_counts: Counter[str] = Counter()

    def update(self, graph: Graph) -> bool:
        """Bring the lists up to date with ``graph``; True if anything changed."""
        if graph is self.graph and len(graph.nodes) == len(self.ids) and (
                len(graph.edges) == self._edges):
            return False
        if graph is not self.graph or not self._grow(graph):
            self._rebuild(graph)
        return True

    def _rebuild(self, graph: Graph) -> None:
        nodes = list(graph.nodes.values())
        seqs = [n.seq for n in nodes]
        if any(a > b for a, b in zip(seqs, seqs[1:], strict=False)):  # builders append in order
            nodes.sort(key=lambda n: (n.seq, n.id))
        self.graph = graph
        self._scopes, self._calls_seen, self._call_counts = {0: ()}, 0, Counter()
        self.ids = [n.id for n in nodes]
        self.index = {nid: i for i, nid in enumerate(self.ids)}
        inputs: dict[int, list[tuple[int, int]]] = {}
        for e in graph.edges:
            inputs.setdefault(e.dst, []).append((e.index, e.src))
        self.sigs = [self._sig(n, inputs.get(n.id, ())) for n in nodes]
        self._edges = len(graph.edges)

    def _grow(self, graph: Graph) -> bool:
        """Append nodes added since the last update (GraphBuilder only ever appends)."""
        n = len(self.ids)
        if len(graph.nodes) < n or len(graph.edges) < self._edges:
            return False
        new = list(graph.nodes.values())[n:] if len(graph.nodes) > n else []
        last = graph.nodes.get(self.ids[-1]) if self.ids else None
        if (self.ids and last is None) or any(
                nd.id in self.index for nd in new) or (
                last is not None and any(nd.seq < last.seq for nd in new)):
            return False
        for nd in sorted(new, key=lambda x: (x.seq, x.id)):
            self.index[nd.id] = len(self.ids)
            self.ids.append(nd.id)
            self.sigs.append(self._sig(nd, ()))
        touched: dict[int, list[tuple[int, int]]] = {}
        for e in graph.edges[self._edges:]:
            touched.setdefault(e.dst, [])
        if touched:
            for e in graph.edges:
                if e.dst in touched:
                    touched[e.dst].append((e.index, e.src))
            for dst, ins in touched.items():
                i = self.index.get(dst)
                if i is None:
                    return False
                self.sigs[i] = self._sig(graph.nodes[dst], ins)
        self._edges = len(graph.edges)
        return True

    def _sig(self, node: Any, inputs: Any) -> Sig:
        index = self.index
        if len(inputs) > 1:
            inputs = sorted(inputs)
        ins = tuple(index.get(src, -1) for _, src in inputs)
        call = getattr(node, "call", 0)
        scope = self._scopes.get(call) if call else ()
        if scope is None:
            scope = self._scope(call)
        return (node.kind, node.op, node.name, tuple(node.shape), node.module,
                bool(node.requires_grad), ins, scope)

    def _scope(self, call: int) -> tuple[str, ...]:
        """The scope of ``call``, reading the graph's calls made since the last look."""
        calls = self.graph.calls if self.graph is not None else {}
        if len(calls) > self._calls_seen:
            for cid, (path, parent) in list(calls.items())[self._calls_seen:]:
                up = self._scopes.get(parent, ())
                if path:
                    self._call_counts[path] += 1
                    up = (*up, f"{path}#{self._call_counts[path]}")
                self._scopes[cid] = up
            self._calls_seen = len(calls)
        return self._scopes.get(call, ())


# -- collapsing modules ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Collapse:
    """Which modules are drawn as one box: deeper than ``depth`` (None: no limit), or named
    in ``collapsed``; ``expanded`` overrides both for the paths it names."""

    depth: int | None = None
    collapsed: frozenset[str] = frozenset()
    expanded: frozenset[str] = frozenset()

    def owner(self, module: str) -> str | None:
        """The collapsed module a node of ``module`` disappears into, if any."""
        if not module:
            return None
        parts = module.split(".")
        for k in range(1, len(parts) + 1):
            path = ".".join(parts[:k])
            if path in self.expanded:
                continue
            if path in self.collapsed or (self.depth is not None and k > self.depth):
                return path
        return None

    @property
    def user(self) -> tuple[frozenset[str], frozenset[str]]:
        return (self.collapsed, self.expanded)


def node_modules(sigs: list[Sig]) -> list[str]:
    """Each node's module; a parameter named ``enc.0.weight`` joins module ``enc.0``."""
    known = set()
    for sig in sigs:
        parts = sig[4].split(".") if sig[4] else []
        for k in range(1, len(parts) + 1):
            known.add(".".join(parts[:k]))
    out = []
    for kind, _op, name, _shape, module, *_ in sigs:
        if not module and kind in ("param", "accumulate") and "." in name:
            owner = name.rsplit(".", 1)[0]
            module = owner if owner in known else ""
        out.append(module)
    return out


def auto_depth(sigs: list[Sig], budget: int = LARGE_GRAPH) -> int | None:
    """The deepest module depth whose collapsed view stays near ``budget`` boxes.

    None (collapse nothing) for graphs that are small already.
    """
    if len(sigs) <= budget:
        return None
    modules = Counter(node_modules(sigs))
    deepest = max((m.count(".") + 1 for m in modules if m), default=0)

    def size(depth: int) -> int:
        shown = sum(n for m, n in modules.items() if not m or m.count(".") < depth)
        boxes = {".".join(m.split(".")[:depth + 1]) for m in modules
                 if m and m.count(".") >= depth}
        return shown + len(boxes)

    for depth in range(deepest, -1, -1):
        if size(depth) <= budget:
            # One box for a whole model says nothing: rather a long row of its blocks.
            if size(depth) < 30 and depth < deepest:
                return depth + 1
            return depth
    return 0


# -- the view and its DOT -------------------------------------------------------------------
def shape_text(shape: tuple[int, ...]) -> str:
    return "×".join(str(d) for d in shape) if shape else "scalar"


def node_label(sig: Sig, compact: bool) -> str:
    kind, op, name, shape, _module, requires_grad = sig[:6]
    if kind in ("op", "backward"):
        text = op if compact else f"{op} {shape_text(shape)}"
    elif name:
        text = name.rsplit(".", 1)[-1] if compact else name
    else:
        what = {"param": "param", "accumulate": "AccumulateGrad"}.get(
            kind, "leaf" if requires_grad else "input")
        text = what if compact else f"{what} {shape_text(shape)}"
    return raster.fit(text, raster.COMPACT_LABEL if compact else raster.MAX_LABEL)


def build_view(sigs: list[Sig], rule: Collapse, compact: bool,
               copy_shared: int | None = None) -> tuple[ViewGraph, list[int]]:
    """The boxes to draw for ``sigs`` under ``rule``; also creation index -> view node.

    Clusters are module *calls* when the trace records them (each call of a shared block
    is its own frame, so data flows down the page), else modules; a collapsed module is
    one box per call. A parameter/leaf/AccumulateGrad box with ``copy_shared`` (None:
    ``COPY_SHARED``; 0: never) or more edges is split into one copy per edge
    (``ViewNode.copy_of``); creation indices map to the first copy.
    """
    view = ViewGraph(compact=compact)
    clusters: dict[str, int] = {}
    boxes: dict[str, int] = {}
    box_owner: dict[int, str] = {}
    op_count: Counter[str] = Counter()
    modules = node_modules(sigs)
    scopes = _leaf_scopes(sigs, modules)
    calls_per_path = Counter(k.rpartition("#")[0] for scope in scopes for k in set(scope))

    def cluster_of(key: str, birth: int, parent: int | None, depth: int) -> int:
        ci = clusters.get(key)
        if ci is None:
            path, _, k = key.rpartition("#") if "#" in key else (key, "", "")
            label = f"{path} #{k}" if k and calls_per_path[path] > 1 else path
            ci = clusters[key] = len(view.clusters)
            view.clusters.append(ViewCluster(path, label, parent, birth, depth))
        return ci

    def chain_cluster(chain: tuple[str, ...], birth: int) -> int | None:
        ci = None
        for depth, key in enumerate(chain, 1):
            ci = cluster_of(key, birth, ci, depth)
        return ci

    def path_chain(path: str) -> tuple[str, ...]:
        parts = path.split(".") if path else []
        return tuple(".".join(parts[:k]) for k in range(1, len(parts) + 1))

    owners: dict[str, str | None] = {}
    to_view: list[int] = []
    for i, (sig, module) in enumerate(zip(sigs, modules, strict=True)):
        chain = scopes[i] if scopes[i] or calls_per_path else path_chain(module)
        if module not in owners:
            owners[module] = rule.owner(module)
        owner = owners[module]
        if owner is None:
            to_view.append(len(view.nodes))
            view.nodes.append(ViewNode(f"n{i}", sig[0], node_label(sig, compact), i,
                                       chain_cluster(chain, i)))
            continue
        # One box per call of the collapsed module (per module without calls).
        at = next((k for k, key in enumerate(chain) if key.rpartition("#")[0] == owner), None)
        box = chain[at] if at is not None else owner
        if sig[0] in ("op", "backward"):
            op_count[box] += 1
        vi = boxes.get(box)
        if vi is None:
            vi = boxes[box] = len(view.nodes)
            box_owner[vi] = owner
            outer = chain[:at] if at is not None else path_chain(owner)[:-1]
            view.nodes.append(ViewNode(f"m{len(boxes) - 1}", "module", owner, i,
                                       chain_cluster(outer, i), module=owner))
        to_view.append(vi)
    for box, vi in boxes.items():
        owner = box_owner[vi]
        count = sum(1 for v in box_owner.values() if v == owner)
        short = ".".join(owner.split(".")[-2:])  # "layers.3", not a bare "3"
        nth = f" #{box.rpartition('#')[2]}" if "#" in box and count > 1 else ""
        ops = op_count[box]
        text = f"{short}{nth} ×{ops}" if compact else f"{owner}{nth} (×{ops} ops)"
        view.nodes[vi].label = raster.fit(text, raster.COMPACT_LABEL + 4 if compact
                                          else raster.MAX_LABEL + 12)
    edges: dict[tuple[int, int], int] = {}
    for i, sig in enumerate(sigs):
        dst = to_view[i]
        for j in sig[6]:
            if 0 <= j < len(to_view) and to_view[j] != dst:
                src = to_view[j]
                if sigs[j][0] in _COPYABLE and src in box_owner and (
                        box_owner.get(dst) == box_owner[src]):
                    continue  # a weight inside every call's box: no edge between them
                key = (src, dst)
                if key not in edges:
                    edges[key] = max(i, j)
    view.edges = [ViewEdge(s, d, b) for (s, d), b in edges.items()]
    least = COPY_SHARED if copy_shared is None else copy_shared
    if least > 0:
        _copy_shared(view, least)
    return view, to_view


def _leaf_scopes(sigs: list[Sig], modules: list[str]) -> list[tuple[str, ...]]:
    """Each node's scope; a leaf takes its first user's, cut at the call of the leaf's own
    module (a weight is drawn in the call that uses it), or () if that user is not in it."""
    scopes = [s[7] if len(s) > 7 else () for s in sigs]
    if not any(scopes):
        return scopes
    first: dict[int, int] = {}
    for i, sig in enumerate(sigs):
        for j in sig[6]:
            if 0 <= j < len(sigs) and j not in first:
                first[j] = i
    for i, sig in enumerate(sigs):
        if sig[0] in _COPYABLE and modules[i] and i in first:
            user = scopes[first[i]]
            keys = [k for k, key in enumerate(user) if key.rpartition("#")[0] == modules[i]]
            scopes[i] = user[:keys[-1] + 1] if keys else ()
    return scopes


def _copy_shared(view: ViewGraph, least: int) -> None:
    """Give each use of a much-used leaf its own box, born with the edge it draws.

    The first edge keeps the original box (born with the leaf, so ``to_view`` still finds
    it); copies are appended with keys ``n<i>_<k>`` and are drawn once their consumer is.
    """
    uses: dict[int, list[int]] = {}
    for ei, e in enumerate(view.edges):
        for vi in (e.src, e.dst):
            if view.nodes[vi].kind in _COPYABLE:
                uses.setdefault(vi, []).append(ei)
    for vi, eis in uses.items():
        if len(eis) < max(least, 2):  # a box with one edge is its own copy
            continue
        node = view.nodes[vi]
        node.copy_of = vi
        home = view.clusters[node.cluster].path if node.cluster is not None else None
        for k, ei in enumerate(eis[1:], 1):
            e = view.edges[ei]
            ci = len(view.nodes)
            other = view.nodes[e.dst if e.src == vi else e.src].cluster
            view.nodes.append(ViewNode(f"{node.key}_{k}", node.kind, node.label, e.birth,
                                       _call_of(view, other, home, node.cluster),
                                       node.module, copy_of=vi))
            view.edges[ei] = ViewEdge(ci if e.src == vi else e.src,
                                      ci if e.dst == vi else e.dst, e.birth)


def _call_of(view: ViewGraph, cluster: int | None, path: str | None,
             default: int | None) -> int | None:
    """The cluster of module ``path`` around ``cluster`` (a copy of a weight goes into the
    call that uses it), else ``default``."""
    while path is not None and cluster is not None:
        if view.clusters[cluster].path == path:
            return cluster
        cluster = view.clusters[cluster].parent
    return default


def terminal_dot(view: ViewGraph) -> str:
    """Compact DOT for the terminal: unlabeled fixed-size boxes measured in cells.

    Labels never go into the DOT (the canvas draws them), so no user text needs escaping
    here and node names are ``n<creation index>`` / ``m<k>`` for collapsed modules.
    """
    depth = max((c.depth for c in view.clusters), default=0)
    channel = 4 if depth >= 2 else 3  # rows between ranks: room for nested frames
    box_rows = 1 if view.compact else 3
    head = [
        "digraph G {",
        f"graph [rankdir=TB, nodesep={2 * raster.COL_PT / 72:.3g}, "
        f"ranksep={channel * raster.ROW_PT / 72:.3g}"
        + (", nslimit=1, mclimit=0.1" if len(view.nodes) > FAST_LAYOUT else "") + "];",
        f'node [shape=box, fixedsize=true, label="", height={box_rows * raster.ROW_PT / 72:.3g}];',
        "edge [arrowhead=none];",
    ]
    children: dict[int | None, list[int]] = {}
    for ci, c in enumerate(view.clusters):
        children.setdefault(c.parent, []).append(ci)
    members: dict[int | None, list[int]] = {}
    for vi, node in enumerate(view.nodes):
        members.setdefault(node.cluster, []).append(vi)
    margin = raster.FRAME_PAD_X * raster.COL_PT
    body: list[str] = []

    def emit(ci: int | None) -> None:
        for vi in members.get(ci, ()):
            node = view.nodes[vi]
            cols, _ = raster.box_size(node.label, view.compact)
            body.append(f"{node.key} [width={cols * raster.COL_PT / 72:.4g}];")
        for child in children.get(ci, ()):
            body.append(f'subgraph cluster_{child} {{ margin="{margin:g},{raster.ROW_PT:g}";')
            emit(child)
            body.append("}")

    emit(None)
    # Every edge is an ordinary one: a parameter (or its copy) sits on the rank above the
    # op that uses it, so its edge runs straight down. On the consumer's own rank
    # (minlen=0) the edge had to hook up and over into the top of the op.
    tail = [f"{view.nodes[e.src].key} -> {view.nodes[e.dst].key};" for e in view.edges]
    return "\n".join(head + body + tail + ["}"])


# -- cache ----------------------------------------------------------------------------------
@dataclass(slots=True)
class Entry:
    """One finished layout: the scene and how creation indices map onto its boxes."""

    sigs: list[Sig]
    rule: Collapse
    compact: bool
    scene: Scene
    to_box: list[int]
    layout_seconds: float = 0.0
    raster_seconds: float = 0.0
    used: float = field(default_factory=time.monotonic)
    note: str = ""  # why dyngraph's layered layout drew it ("": Graphviz did)


def common_prefix(a: list[Sig], b: list[Sig]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class LayoutCache:
    """The last few layouts; ``best()`` picks the one sharing the longest prefix."""

    def __init__(self, size: int = 12) -> None:
        self.size = size
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._next = 0
        self._lock = threading.Lock()

    def add(self, entry: Entry) -> None:
        with self._lock:
            self._entries[self._next] = entry
            self._next += 1
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def best(self, sigs: list[Sig], compact: bool,
             user: tuple[frozenset[str], frozenset[str]]) -> tuple[Entry | None, int]:
        """The entry drawing the longest prefix of ``sigs`` and that prefix's length."""
        with self._lock:
            entries = list(self._entries.values())
        found, length = None, -1
        for entry in reversed(entries):  # newest first: it wins ties
            if entry.compact != compact or entry.rule.user != user:
                continue
            n = common_prefix(entry.sigs, sigs)
            if n > length:
                found, length = entry, n
            if n == len(sigs):
                break
        if found is not None:
            found.used = time.monotonic()
        return found, max(length, 0)

    def __len__(self) -> int:
        return len(self._entries)


def compute_entry(sigs: list[Sig], rule: Collapse, compact: bool,
                  layout_fn: Callable[[str], Any],
                  copy_shared: int | None = None) -> Entry:
    """Build the view, lay it out and place it on the grid (the worker's whole job);
    ``copy_shared`` as in ``build_view``."""
    view, to_view = build_view(sigs, rule, compact, copy_shared)
    t0 = time.perf_counter()
    lay, note = lay_out(view, layout_fn)
    t1 = time.perf_counter()
    scene = raster.build_scene(view, lay)
    t2 = time.perf_counter()
    return Entry(sigs, rule, compact, scene, to_view, t1 - t0, t2 - t1, note=note)


def lay_out(view: ViewGraph, layout_fn: Callable[[str], Any],
            budget: float = GRAPHVIZ_BUDGET) -> tuple[Any, str]:
    """The view's layout and a note ("" if Graphviz drew it; else why the layered one did).

    The exporters' policy (``dyngraph.exporters.pipeline.choose``): too deep a graph, or a
    ``layout_fn`` that fails or runs past its budget, is laid out by ``layered_layout``
    with the same box sizes and gaps, so the pane always has a picture.
    """
    from dyngraph.exporters.layered import Spacing, layered_layout  # lazy: an optional edge
    from dyngraph.exporters.pipeline import choose
    from dyngraph.exporters.render import GraphvizError

    keys = [n.key for n in view.nodes]
    edges = [(keys[e.src], keys[e.dst]) for e in view.edges]

    def graphviz() -> Any:
        try:
            return layout_fn(terminal_dot(view))
        except GraphvizError:
            raise
        except Exception as exc:  # any layout_fn: its failure is a reason, not a crash
            text = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            raise GraphvizError((text.splitlines() or [""])[0]) from None

    def layered(_note: str) -> Any:
        rows = 1 if view.compact else 3
        sizes = [(n.key, raster.box_size(n.label, view.compact)[0] * raster.COL_PT,
                  rows * raster.ROW_PT) for n in view.nodes]
        chains = [_chain(view, n.cluster) for n in view.nodes]
        channel = 4 if max((c.depth for c in view.clusters), default=0) >= 2 else 3
        spacing = Spacing(nodesep=2 * raster.COL_PT, ranksep=channel * raster.ROW_PT,
                          cluster_pad=raster.FRAME_PAD_X * raster.COL_PT,
                          cluster_label=raster.ROW_PT)
        return layered_layout(sizes, edges, chains, spacing)

    return choose(keys, edges, graphviz, layered, budget)


def _chain(view: ViewGraph, cluster: int | None) -> tuple[str, ...]:
    """The clusters around a node, outermost first, by index."""
    out: list[str] = []
    while cluster is not None:
        out.append(str(cluster))
        cluster = view.clusters[cluster].parent
    return tuple(reversed(out))


def default_layout(dot_text: str) -> Any:
    from dyngraph.exporters import layout  # lazy: the exporters are an optional edge

    return layout(dot_text, timeout=GRAPHVIZ_BUDGET)


# -- worker ---------------------------------------------------------------------------------
@dataclass(slots=True)
class Job:
    sigs: list[Sig]
    compact: bool
    user: tuple[frozenset[str], frozenset[str]]
    auto: bool = True
    token: int = 0


Done = Callable[[Job, "Entry | None", "str | None"], None]


class LayoutWorker:
    """Runs jobs in one daemon thread; a newer job replaces one not yet started.

    ``on_done(job, entry, error)`` is called *in the worker thread*: post a message from it.
    """

    def __init__(self, on_done: Done, cache: LayoutCache, *,
                 layout_fn: Callable[[str], Any] | None = None,
                 min_interval: float = 0.3) -> None:
        self.on_done = on_done
        self.cache = cache
        self.layout_fn = layout_fn or default_layout
        self.min_interval = min_interval
        self._pending: Job | None = None
        self._busy = False
        self._closed = False
        self._last_start = 0.0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._busy or self._pending is not None

    def submit(self, job: Job) -> None:
        with self._cond:
            if self._closed:
                return
            self._pending = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="graph-canvas-layout",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._pending = None
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                wait = self._last_start + self.min_interval - time.monotonic()
                if wait > 0:  # throttle: a fast-growing graph lays out a few times a second
                    self._cond.wait(wait)
                    continue
                job, self._pending = self._pending, None
                self._busy = True
                self._last_start = time.monotonic()
            entry, error = None, None
            try:
                depth = auto_depth(job.sigs) if job.auto else None
                rule = Collapse(depth, *job.user)
                entry = compute_entry(job.sigs, rule, job.compact, self.layout_fn)
                self.cache.add(entry)
            except Exception as exc:  # a layout failure must never take the UI down
                text = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
                error = (text.splitlines() or [""])[0]
            with self._cond:
                self._busy = False
            if not self._closed:
                self.on_done(job, entry, error)
