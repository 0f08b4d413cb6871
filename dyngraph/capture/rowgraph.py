"""An iteration's graph straight from its rows (``dyngraph.capture.rows``), no event
object in between: what ``Trace.iterations[i].graph`` builds, for a trace in memory or
from a file.

``GraphBuilder`` feeds on events, one at a time, for a live debugger that shows the graph
"so far". A whole iteration's rows are at hand when a trace is read, and an event object
per row (about half a microsecond each) was as much work again as the graph itself.
``graph_of_rows`` is ``GraphBuilder._feed`` written over rows: the same graph, node for
node (tests/events/test_graph_builder.py compares the two on every kind of event).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from . import structure
from .graph import GradNode, Graph, GraphEdge, GraphNode
from .rows import Row, attrs_dict, summary_builder
from .sharedgraph import GraphTemplates

_new = object.__new__
_grad_node = tuple.__new__  # (GradNode, fields): a NamedTuple built without its __new__
_Building = type("_BuildingEdge", (GraphEdge,), {"__slots__": (),
                                                 "__setattr__": object.__setattr__,
                                                 "__delattr__": object.__delattr__})


def _edge(src: int, dst: int, index: int) -> GraphEdge:
    e: Any = _new(_Building)
    e.src = src
    e.dst = dst
    e.index = index
    e.__class__ = GraphEdge
    return e  # type: ignore[no-any-return]


def graph_of_rows(rows: Iterable[Row], iteration: int) -> Graph:
    """The graph ``GraphBuilder`` makes of the events of ``rows`` (one iteration's): the
    last graph an iteration end completed, else the one in progress."""
    graph = Graph(iteration=iteration)
    done: Graph | None = None
    nodes, edges, calls = graph.nodes, graph.edges, graph.calls
    occurrences: dict[tuple[str, str, str, int], int] = {}
    stepped: set[int] = set()
    S = summary_builder()  # (summaries shared by rows stay shared by nodes)
    new, make_edge, leaf_label = _new, _edge, structure.leaf_label
    for r in rows:
        kind = r[0]
        if r[2] != graph.iteration and not nodes:
            graph.iteration = r[2]
        if kind == "op":
            module, op, file, line, output = r[10], r[3], r[11], r[12], r[5]
            k = (module, op, file, line)
            count = occurrences.get(k, 0)
            occurrences[k] = count + 1
            call = r[17]
            n = new(GraphNode)
            n.id = output
            n.kind = "op"
            n.op = op
            n.name = ""
            n.shape = r[6]
            n.dtype = r[7]
            n.module = module
            n.file = file
            n.line = line
            n.function = r[13]
            n.seq = r[1]
            n.requires_grad = r[8]
            n.grad_enabled = r[14]
            n.attrs = attrs_dict(r[9])
            n.summary = S(r[16])
            n.grad = None
            n.grad_fn = ""
            n.backward_seq = 0
            n.occurrence = count
            n.carried = False
            n.call = call if call in calls else 0
            n.grads = ()
            nodes[output] = n
            index = 0
            for src in r[4]:
                if src >= 0 and src in nodes:
                    edges.append(make_edge(src, output, index))
                index += 1
        elif kind == "backward_step":
            outputs = r[11]
            grad_output = S(r[7])
            if not outputs:  # (see GraphBuilder._feed: one node per op output)
                node = nodes.get(r[3])
                if node is not None and node.id not in stepped:
                    stepped.add(node.id)
                    node.grad = grad_output
                    node.grad_fn = r[5]
                    node.backward_seq = r[1]
                    graph.backward_order.append(node.id)
                grads: tuple[Any, ...] = (grad_output,)
            else:  # each output slot's gradient is its own tensor's
                grads = (grad_output, *map(S, r[12][1:]))
                for oid, g in zip(outputs, grads, strict=False):
                    node = nodes.get(oid)
                    if node is not None and oid not in stepped:
                        stepped.add(oid)
                        node.grad = g
                        node.grad_fn = r[5]
                        node.backward_seq = r[1]
                        graph.backward_order.append(oid)
            gid = r[10]
            if gid >= 0:
                graph.grad_nodes[gid] = _grad_node(
                    GradNode, (gid, r[5], r[3], r[4], outputs or (r[3],), grads, r[6],
                               r[13] or r[6], tuple(map(S, r[8])), r[1]))
        elif kind == "grad":
            node = nodes.get(r[3])
            if node is not None:
                node.grad = S(r[5])
                node.grad_fn = "AccumulateGrad"
                node.backward_seq = r[1]
                graph.backward_order.append(node.id)
        elif kind == "tensor":
            name, is_param = r[4], r[8]
            k = ("", leaf_label(name, is_param), "", 0)
            count = occurrences.get(k, 0)
            occurrences[k] = count + 1
            n = new(GraphNode)
            n.id = r[3]
            n.kind = "param" if is_param else "leaf"
            n.op = ""
            n.name = name
            n.shape = r[5]
            n.dtype = r[6]
            n.module = ""
            n.file = ""
            n.line = 0
            n.function = ""
            n.seq = r[1]
            n.requires_grad = r[7]
            n.grad_enabled = True
            n.attrs = {}
            n.summary = S(r[9])
            n.grad = None
            n.grad_fn = r[11]
            n.backward_seq = 0
            n.occurrence = count
            n.carried = not r[10]
            n.call = 0
            n.grads = ()
            nodes[r[3]] = n
        elif kind == "module_call":
            calls[r[3]] = (r[5], r[4])
        elif kind == "backward_start":
            stepped = set()
        elif kind == "iteration_end":
            graph._structure_key = r[4]
            graph.complete = True
            done = graph
            graph = Graph(iteration=r[2] + 1)
            nodes, edges, calls = graph.nodes, graph.edges, graph.calls
            occurrences = {}
    return done if done is not None else graph


# -- graphs built when first looked at ------------------------------------------------------
_FIELDS = ("iteration", "nodes", "edges", "backward_order", "calls", "grad_nodes", "complete",
           "_structure_key")
_SLOT = {name: Graph.__dict__[name] for name in _FIELDS}  # Graph's own slot descriptors
_PENDING = _SLOT["nodes"]  # holds the rows until the graph is built
# (a UI may look at a graph from a worker while drawing; reentrant: a finalizer run by a
# collection while a graph is built may look at another)
_building = threading.RLock()


def _build(g: Any) -> None:
    """Build ``g`` from its rows, in place: from then on it is a plain ``Graph`` (its
    class is switched: the layout is Graph's), its fields read without a detour."""
    with _building:
        if type(g) is not PendingGraph:
            return  # (built meanwhile by another thread)
        try:
            pending = _PENDING.__get__(g)
        except AttributeError:  # (made empty, as copy.copy does before setting fields)
            pending = None
        cls: Any = Graph
        if type(pending) is tuple:  # (rows, iteration, templates)
            rows, iteration, templates = pending
            built = graph_of_rows(rows, iteration) if templates is None else \
                templates.graph_of(rows, iteration, graph_of_rows)
            for slot in _SLOT.values():
                slot.__set__(g, slot.__get__(built))
            cls = type(built)  # (a SharedGraph: one iteration of a template)
        g.__class__ = cls


def _field(name: str) -> property:
    # (once built, ``self`` is a Graph or a SharedGraph: its own class reads the field)
    def get(self: Graph) -> Any:
        _build(self)
        return getattr(self, name)

    def set_(self: Graph, value: Any) -> None:
        _build(self)
        setattr(self, name, value)

    def del_(self: Graph) -> None:
        _build(self)
        delattr(self, name)

    return property(get, set_, del_)


class PendingGraph(Graph):
    """A ``Graph`` whose nodes are built from its rows when any field is first read or
    set (it then becomes a plain ``Graph``, or a ``SharedGraph``: same object, same
    fields)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        _build(self)
        if type(other) is PendingGraph:
            _build(other)
        return self == other  # (as the class it became)

    def __repr__(self) -> str:
        _build(self)
        return Graph.__repr__(self)


for _name in _FIELDS:
    setattr(PendingGraph, _name, _field(_name))


def pending_graph(rows: Sequence[Row], iteration: int,
                  templates: GraphTemplates | None = None) -> Graph:
    """``graph_of_rows(rows, iteration)``, built when first looked at. ``rows`` must not
    change meanwhile (a file's, or a list of a recording's: rows are tuples). Kept as
    a tuple (of tuples), a graph not looked into is no work for the cyclic collector.

    ``templates``: the trace's graph templates (``sharedgraph``): an iteration that
    repeats one gets a ``SharedGraph``, which makes no node until one is looked up."""
    g: Any = _new(PendingGraph)
    _PENDING.__set__(g, (rows, iteration, templates))
    return g  # type: ignore[no-any-return]
