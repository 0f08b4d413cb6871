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
- What is drawn (module calls folded into boxes, runs of repeated blocks, a parameter
  used many times copied beside each user) is ``canvas_fold.build_view``.
- ``LayoutWorker`` lays out in a daemon thread (a blocked ``dot`` never holds up quitting),
  one job at a time, keeping only the newest request and starting at most a few per second.

Nothing here imports Textual.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dyngraph.capture.folding import FOLD_ABOVE, ModuleTree
from dyngraph.capture.graph import Graph
from dyngraph.errors import UserError

from . import collector, raster
from .canvas_fold import (  # noqa: F401 - the canvas's names, re-exported
    COPY_SHARED,
    UNIT_KIND,
    Collapse,
    Sig,
    build_view,
    node_label,
    node_modules,
    prepare,
    shape_text,
)
from .raster import Scene, ViewGraph

LARGE_GRAPH = FOLD_ABOVE  # past this many nodes, the pane opens folded by module
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
        self._call_counts: dict[str, int] = {}  # module path -> its calls so far
        # A Canonical of a whole forward pass made ahead (``forward_of``, on the layout
        # worker while a trace loads): a graph whose nodes are a prefix of it takes a
        # prefix of its lists instead of a pass over every node.
        self.whole: Canonical | None = None
        self._edge_ends: list[int] = []  # (a whole one's) edges into nodes[:k], per k

    @classmethod
    def forward_of(cls, nodes: list[Any], edges: list[Any], calls: dict[int, Any],
                   iteration: int, seq: int) -> Canonical:
        """The Canonical of the graph made of ``nodes`` created by event ``seq`` (the
        forward pass, when ``seq`` is its backward's start) and the edges between them.
        Takes copies of a graph's lists (made on the UI thread), so it may run on
        another thread while the graph grows."""
        kept = {n.id: n for n in nodes if n.seq <= seq}
        graph = Graph(iteration=iteration, nodes=kept,
                      edges=[e for e in edges if e.dst in kept], calls=calls)
        canon = cls()
        canon.update(graph)
        index = canon.index
        counts = [0] * (len(canon.ids) + 1)
        for e in graph.edges:
            counts[index[e.dst] + 1] += 1
        for k in range(1, len(counts)):
            counts[k] += counts[k - 1]
        canon._edge_ends = counts
        return canon

    def update(self, graph: Graph) -> bool:
        """Bring the lists up to date with ``graph``; True if anything changed."""
        if graph is self.graph and len(graph.nodes) == len(self.ids) and (
                len(graph.edges) == self._edges):
            return False
        if graph is not self.graph or not (self._shrink(graph) or self._grow(graph)):
            if not self._adopt(graph):
                self._rebuild(graph)
        return True

    def _adopt(self, graph: Graph) -> bool:
        """Take the lists of ``whole`` cut to ``graph`` when ``graph`` is a prefix of it
        (the same nodes in the same order, and as many edges between them): a jump to
        the end of a 50,000-node forward pass costs a comparison of ids, not 50,000
        signatures. Signatures only name earlier nodes, so a prefix keeps them."""
        whole = self.whole
        m = len(graph.nodes)
        if whole is None or whole.graph is None or m > len(whole.ids) or (
                graph.iteration != whole.graph.iteration
                or len(graph.edges) != whole._edge_ends[m]):
            return False
        ids = whole.ids if m == len(whole.ids) else whole.ids[:m]
        if list(graph.nodes) != ids:
            return False
        self.graph = graph
        self.ids = list(ids)
        self.index = dict(whole.index) if m == len(whole.ids) else {
            nid: i for i, nid in enumerate(self.ids)}
        self.sigs = whole.sigs[:m]
        self._scopes = dict(whole._scopes)
        self._calls_seen = whole._calls_seen
        self._call_counts = dict(whole._call_counts)
        self._edges = len(graph.edges)
        return True

    def _shrink(self, graph: Graph) -> bool:
        """Drop nodes the graph lost from its end (a step back): the rest keep their
        signatures, which only ever name earlier nodes."""
        m = len(graph.nodes)
        if m >= len(self.ids) or list(graph.nodes) != self.ids[:m]:
            return False
        for node_id in self.ids[m:]:
            del self.index[node_id]
        del self.ids[m:]
        del self.sigs[m:]
        self._edges = len(graph.edges)
        return True

    def _rebuild(self, graph: Graph) -> None:
        nodes = list(graph.nodes.values())
        seqs = [n.seq for n in nodes]
        if any(a > b for a, b in zip(seqs, seqs[1:], strict=False)):  # builders append in order
            nodes.sort(key=lambda n: (n.seq, n.id))
        self.graph = graph
        self._scopes, self._calls_seen, self._call_counts = {0: ()}, 0, {}
        self.ids = [n.id for n in nodes]
        self.index = dict(zip(self.ids, range(len(self.ids)), strict=True))
        inputs: dict[int, list[tuple[int, int]]] = {}
        for e in graph.edges:
            got = inputs.get(e.dst)
            if got is None:
                inputs[e.dst] = [(e.index, e.src)]
            else:
                got.append((e.index, e.src))
        self.sigs = self._sigs(nodes, inputs)
        self._edges = len(graph.edges)

    def _sigs(self, nodes: list[Any], inputs: dict[int, list[tuple[int, int]]]) -> list[Sig]:
        """``_sig`` of every node, inline: a 50,000-node iteration's first picture pays
        this once per node."""
        index, scopes, scope_of = self.index, self._scopes, self._scope
        out: list[Sig] = []
        append = out.append
        inputs_of, at = inputs.get, index.get
        for n in nodes:
            got = inputs_of(n.id)
            if got is None:
                ins: tuple[int, ...] = ()
            elif len(got) == 1:  # (most ops: no list to sort or build)
                ins = (at(got[0][1], -1),)
            else:
                got.sort()
                ins = tuple([at(src, -1) for _, src in got])
            call = getattr(n, "call", 0)
            scope = scopes.get(call) if call else ()
            if scope is None:
                scope = scope_of(call)
            shape = n.shape
            append((n.kind, n.op, n.name, shape if type(shape) is tuple else tuple(shape),
                    n.module, bool(n.requires_grad), ins, scope, n.dtype))
        return out

    def _grow(self, graph: Graph) -> bool:
        """Append nodes added since the last update (GraphBuilder only ever appends)."""
        n = len(self.ids)
        if len(graph.nodes) < n or len(graph.edges) < self._edges:
            return False
        if len(graph.nodes) > 2 * n + 64:  # a jump (to the end of a big forward pass):
            return False  # one pass over everything beats patching most of it twice
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
                bool(node.requires_grad), ins, scope, node.dtype)

    def _scope(self, call: int) -> tuple[str, ...]:
        """The scope of ``call``, reading the graph's calls made since the last look."""
        calls = self.graph.calls if self.graph is not None else {}
        if len(calls) > self._calls_seen:
            scopes, counts = self._scopes, self._call_counts
            for cid, (path, parent) in list(calls.items())[self._calls_seen:]:
                up = scopes.get(parent, ())
                if path:
                    counts[path] = k = counts.get(path, 0) + 1
                    up = (*up, f"{path}#{k}")
                scopes[cid] = up
            self._calls_seen = len(calls)
        return self._scopes.get(call, ())


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
    # The module tree the boxes were folded from (``dyngraph.capture.folding``): a run's
    # members, for its gradient strip.
    tree: ModuleTree | None = None


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
    return Entry(sigs, rule, compact, scene, to_view, t1 - t0, t2 - t1, note=note,
                 tree=prepare(sigs).tree)


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
    urgent: bool = False  # the user asked for it (a module opened): start it at once
    # A layout made ahead of need: makes the Canonical (and so ``sigs``) in the worker,
    # kept in ``made`` for the canvas (``GraphCanvas.prefetch_forward``).
    canon: Callable[[], Canonical] | None = None
    made: Canonical | None = None
    after: Callable[[], None] | None = None  # more work ahead, once the layout is made


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
            # A layout made ahead that never started is said to be done (without an
            # entry): whoever waits for it goes on without.
            dropped = self._pending if self._pending is not None and (
                self._pending.canon is not None) else None
            self._pending = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="graph-canvas-layout",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        if dropped is not None:
            self.on_done(dropped, None, None)

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
                # Throttle: a fast-growing graph lays out a few times a second.
                pending = self._pending
                if wait > 0 and pending is not None and not pending.urgent:
                    self._cond.wait(wait)
                    continue
                job, self._pending = self._pending, None
                assert job is not None  # (the wait above ends with one pending)
                self._busy = True
                self._last_start = time.monotonic()
            entry, error = None, None
            try:
                rule = Collapse(collapsed=job.user[0], expanded=job.user[1], fold=job.auto)
                with collector.paused():
                    if job.canon is not None:
                        job.made = job.canon()
                        job.sigs = job.made.sigs
                    # A layout made ahead may already draw all of it (the canvas asked
                    # while that one ran): no second one.
                    entry, n = self.cache.best(job.sigs, job.compact, job.user)
                    if entry is None or n < len(job.sigs) or not job.sigs:
                        entry = compute_entry(job.sigs, rule, job.compact, self.layout_fn)
                        self.cache.add(entry)
                    if job.after is not None:
                        job.after()
            except Exception as exc:  # a layout failure must never take the UI down
                text = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
                error = (text.splitlines() or [""])[0]
            with self._cond:
                self._busy = False
            if not self._closed:
                self.on_done(job, entry, error)
