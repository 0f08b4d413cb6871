"""The graph at the cursor: an iteration's graph as it was when one of its events happened.

``graph_as_of`` builds it from scratch; ``AsOf`` refills one Graph object by what changed
since the last call (a step costs the few nodes that came or went). Both hide gradients
not computed yet by drawing gradient-free copies of those nodes (``without_grad``), made
once per node.

A big trace loads in chunks while the iteration's graph grows under it: ``AsOf.grow``
takes in only what a chunk added, so loading a 50,000-node iteration never rescans it.
"""

from __future__ import annotations

import bisect
from dataclasses import fields, replace
from itertools import islice
from operator import is_

from dyngraph.capture.graph import Graph, GraphNode

_new = object.__new__
_CLEARED = ("grad", "grad_fn", "backward_seq")


def _copy_without_grad(node: GraphNode) -> GraphNode:
    # Field by field: ``dataclasses.replace`` cost 6 us a node, most of a first picture
    # of a 50,000-node iteration (every node is stripped at the start of backward).
    c = _new(GraphNode)
    c.id = node.id
    c.kind = node.kind
    c.op = node.op
    c.name = node.name
    c.shape = node.shape
    c.dtype = node.dtype
    c.module = node.module
    c.file = node.file
    c.line = node.line
    c.function = node.function
    c.seq = node.seq
    c.requires_grad = node.requires_grad
    c.grad_enabled = node.grad_enabled
    c.attrs = node.attrs
    c.summary = node.summary
    c.grad = None
    c.grad_fn = ""
    c.backward_seq = 0
    c.occurrence = node.occurrence
    c.carried = node.carried
    c.call = node.call
    c.grads = node.grads
    return c


def _replaced(node: GraphNode) -> GraphNode:
    return replace(node, grad=None, grad_fn="", backward_seq=0)


# The copy above names every field: should GraphNode gain one, fall back to ``replace``
# (slower, never wrong) rather than drop it.
_COPIED = {"id", "kind", "op", "name", "shape", "dtype", "module", "file", "line",
           "function", "seq", "requires_grad", "grad_enabled", "attrs", "summary",
           "occurrence", "carried", "call", "grads", *_CLEARED}
without_grad = (_copy_without_grad if {f.name for f in fields(GraphNode)} == _COPIED
                else _replaced)
without_grad.__doc__ = "A copy of ``node`` without its gradient (as before backward)."


def graph_as_of(graph: Graph, seq: int, stripped: dict[int, GraphNode] | None = None,
                into: Graph | None = None) -> Graph:
    """``graph`` as it was when event ``seq`` had just happened.

    The result is ``into`` (refilled) or a new Graph; ``graph`` itself is never changed.
    Refilling one Graph object while the cursor stays in an iteration lets the graph pane
    tell "nodes were appended" or "nothing moved but gradients" from a different graph.
    ``stripped`` caches gradient-free copies of nodes between calls on the same graph.
    """
    if stripped is None:
        stripped = {}
    nodes = graph.nodes
    out = into if into is not None else Graph(iteration=graph.iteration)
    out.iteration = graph.iteration
    out.calls = graph.calls  # only ever added to; a call without ops so far draws nothing
    if nodes and all(n.seq <= seq and n.backward_seq <= seq for n in nodes.values()) and all(
            g.seq <= seq for g in graph.grad_nodes.values()):
        out.nodes = dict(nodes)
        out.edges = list(graph.edges)
        out.backward_order = list(graph.backward_order)
        out.grad_nodes = graph.grad_nodes  # (never changed: a finished iteration's)
        out.complete = graph.complete
        out._structure_key = graph._structure_key
        return out
    kept: dict[int, GraphNode] = {}
    for node_id, node in nodes.items():
        if node.seq > seq:
            continue
        if node.backward_seq > seq:
            bare = stripped.get(node_id)
            if bare is None or bare.seq != node.seq:
                bare = stripped[node_id] = without_grad(node)
            node = bare
        kept[node_id] = node
    out.nodes = kept
    out.edges = [e for e in graph.edges if e.src in kept and e.dst in kept]
    out.backward_order = [i for i in graph.backward_order if kept.get(i) is not None
                          and kept[i].backward_seq]
    out.grad_nodes = {i: g for i, g in graph.grad_nodes.items() if g.seq <= seq}
    out.complete = False
    out._structure_key = None
    return out


class AsOf:
    """``graph_as_of`` for one graph, paid by what changed since the last call.

    A graph's nodes are created in seq order, its edges appended as their consumer is
    created and its backward order as backward reaches nodes: the graph at any seq keeps
    a prefix of each. A step moves the cursor by one event, so refilling the view costs
    the few nodes that came or went (and the gradients that did), not a pass over a
    50,000-node iteration. ``of`` returns None for a graph not built that way.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes: list[GraphNode] = []
        self.seqs: list[int] = []
        self.position: dict[int, int] = {}  # node id -> its place in ``nodes``
        self.edge_end: list[int] = []  # edges kept with the first k+1 nodes
        self.back_seqs: list[int] = []  # the seq at which backward reached order[k]
        self._edges = 0  # graph.edges[:_edges] are accounted for in edge_end
        self._last = -1  # the place of the last of those edges' consumer
        self._listed: set[int] = set()  # nodes in backward_order[:len(back_seqs)]
        # Nodes backward reached since the last fill: the view may hold them as they
        # were (the builder sets a gradient on the node itself), to be shown again.
        self._regrad: list[int] = []
        self._view: Graph | None = None
        self._kept = 0  # nodes[:kept] are in the view
        self._reached = 0  # backward_order[:reached] counts as reached

    @classmethod
    def of(cls, graph: Graph) -> AsOf | None:
        as_of = cls(graph)
        return as_of if as_of.grow() else None

    def stale(self) -> bool:
        """Has the graph grown since (a live run's open iteration, a trace loading)?"""
        graph = self.graph
        return (len(graph.nodes) != len(self.nodes) or len(graph.backward_order) != len(
            self.back_seqs) or len(graph.edges) != self._edges)

    def grow(self) -> bool:
        """Take in the nodes, edges and backward steps the graph gained since the last
        look; False if it changed otherwise (then ``of`` the graph again, or give up)."""
        graph = self.graph
        nodes, seqs, position = self.nodes, self.seqs, self.position
        k0 = len(nodes)
        if len(graph.nodes) < k0 or not all(map(is_, map(graph.nodes.get, position), nodes)):
            return False
        new = list(islice(graph.nodes.values(), k0, None))
        new_seqs = [n.seq for n in new]
        both = seqs[-1:] + new_seqs
        if any(a > b for a, b in zip(both, both[1:], strict=False)):
            return False
        for k, node in enumerate(new, k0):
            position[node.id] = k
        nodes += new
        seqs += new_seqs
        return self._grow_edges() and self._grow_backward()

    def _grow_edges(self) -> bool:
        edges, edge_end, position = self.graph.edges, self.edge_end, self.position
        edge_end += [0] * (len(self.nodes) - len(edge_end))
        last = self._last
        for e in range(self._edges, len(edges)):
            k = position.get(edges[e].dst, -1)
            if k < last or k < 0:
                return False
            for j in range(last + 1, k):
                edge_end[j] = e
            last = k
            edge_end[k] = e + 1
        self._last, self._edges = last, len(edges)
        for j in range(last + 1, len(edge_end)):  # no edge into them (yet): all before
            edge_end[j] = len(edges)
        return True

    def _grow_backward(self) -> bool:
        graph, back, listed = self.graph, self.back_seqs, self._listed
        for node_id in graph.backward_order[len(back):]:
            # A leaf accumulated twice is listed twice but keeps its last seq: order by
            # the seq of each listing is what matters, and a repeat breaks it.
            if node_id in listed:
                return False
            listed.add(node_id)
            self._regrad.append(node_id)
            node = graph.nodes.get(node_id)
            seq = node.backward_seq if node is not None else 0
            if back and back[-1] > seq:
                return False
            back.append(seq)
        return True

    def fill(self, seq: int, into: Graph, stripped: dict[int, GraphNode]) -> Graph:
        """``graph_as_of(self.graph, seq, stripped, into)``, by difference when ``into``
        was filled by this object last time."""
        graph = self.graph
        kept = bisect.bisect_right(self.seqs, seq)
        reached = bisect.bisect_right(self.back_seqs, seq)
        if self._view is not into:
            into.nodes = {}
            self._kept = self._reached = 0
        self._view = into
        nodes = into.nodes
        order = graph.backward_order

        def shown(node: GraphNode) -> GraphNode:
            if node.backward_seq <= seq:
                return node
            bare = stripped.get(node.id)
            if bare is None or bare.seq != node.seq:
                bare = stripped[node.id] = without_grad(node)
            return bare

        if kept < self._kept:
            for node in self.nodes[kept:self._kept]:
                nodes.pop(node.id, None)
        # Gradients that came or went since last time, on nodes that stay.
        lo, hi = sorted((reached, self._reached))
        for node_id in (*order[lo:hi], *self._regrad):
            if node_id in nodes:
                nodes[node_id] = shown(graph.nodes[node_id])
        self._regrad = []
        for node in self.nodes[self._kept:kept]:
            nodes[node.id] = shown(node)
        self._kept, self._reached = kept, reached
        into.iteration = graph.iteration
        into.calls = graph.calls
        into.edges = graph.edges[:self.edge_end[kept - 1]] if kept else []
        into.backward_order = [i for i in order[:reached] if i in nodes]
        whole = kept == len(self.nodes) and reached == len(order)
        into.complete = graph.complete if whole else False
        into._structure_key = graph._structure_key if whole else None
        return into
