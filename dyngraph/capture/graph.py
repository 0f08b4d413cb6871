"""Events -> per-iteration graphs: plain data the exporters and the UI can walk.

A ``Graph`` is one iteration's forward graph: a node per op output and per leaf, an edge
per op input. After backward, nodes carry their gradient summaries and the order in which
backward reached them. ``GraphBuilder`` grows graphs event by event, so a live debugger
can show the graph "so far" at any moment.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import events as ev
from . import structure


@dataclass(slots=True)
class GraphNode:
    """One node: an op's output (``kind="op"``) or a leaf (``"param"`` or ``"leaf"``)."""

    id: int
    kind: str
    op: str = ""
    name: str = ""
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    module: str = ""
    file: str = ""
    line: int = 0
    function: str = ""
    seq: int = 0
    requires_grad: bool = False
    grad_enabled: bool = True
    attrs: dict[str, Any] = field(default_factory=dict)
    summary: ev.Summary | None = None
    # After backward: for an op node the gradient flowing into its output, for a leaf the
    # accumulated ``.grad``; ``grad_fn`` is ``MulBackward0`` / ``AccumulateGrad``.
    grad: ev.Summary | None = None
    grad_fn: str = ""
    backward_seq: int = 0
    # How many nodes with the same (module, op or name, file:line) came before this one in
    # the iteration: with it, ``key`` matches "the same node" across iterations.
    occurrence: int = 0
    # A leaf-kind node that is really a tensor computed before this iteration (an RNN
    # hidden state carried over, a value computed under no_grad earlier ...).
    carried: bool = False
    # The module call an op ran in (``Graph.calls``); 0 at top level or when unknown.
    call: int = 0
    # A backward-graph node with several output slots (``split``'s): the gradient that
    # arrived at each (``grad`` is the first's); empty otherwise.
    grads: tuple[ev.Summary | None, ...] = ()

    @property
    def key(self) -> tuple[str, str, str, int, int]:
        return (self.module, self.op or self.name or self.kind, self.file, self.line,
                self.occurrence)

    @property
    def is_leaf(self) -> bool:
        return self.kind != "op"

    @property
    def label(self) -> str:
        """Short human label: the op name (a backward node's grad_fn), or a leaf's name."""
        if self.kind == "op" or self.kind == "backward":
            return self.op
        if self.name:
            return self.name
        if self.carried:
            return "carried"
        return "input" if not self.requires_grad else "leaf"

    @property
    def has_nonfinite(self) -> bool:
        return any(s is not None and not s.finite
                   for s in (self.summary, self.grad, *self.grads))


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """Data flows from ``src`` into input slot ``index`` of ``dst`` (both node ids)."""

    src: int
    dst: int
    index: int = 0


class GradNode(NamedTuple):
    """One node of autograd's backward graph that ran (a ``BackwardStep``), as recorded.

    ``id`` is the node's own id (``BackwardStep.grad_node``); ``node``/``op`` the forward
    op it belongs to (-1/"": none seen); ``outputs`` the forward tensor of each output
    slot with ``grads``, the gradient that arrived there (None: none); ``next`` the node
    each input slot's gradient went to (-1: none; a leaf's accumulation is the leaf's
    id), with ``inputs`` (the forward tensor) and ``grad_inputs`` aligned; ``seq`` the
    step's.
    """

    id: int
    grad_fn: str
    node: int
    op: str
    outputs: tuple[int, ...]
    grads: tuple[ev.Summary | None, ...]
    inputs: tuple[int, ...]
    next: tuple[int, ...]
    grad_inputs: tuple[ev.Summary | None, ...]
    seq: int


_grad_node = tuple.__new__  # (GradNode, fields): a NamedTuple built without its __new__


@dataclass(slots=True)
class Graph:
    iteration: int
    nodes: dict[int, GraphNode] = field(default_factory=dict)
    edges: list[GraphEdge] = field(default_factory=list)
    # Node ids in the order backward reached them (op nodes, then leaves as accumulated).
    backward_order: list[int] = field(default_factory=list)
    # The module calls ops ran in: call id -> (module path, enclosing call id or 0), in
    # the order they were made. Empty for traces written before schema 2.
    calls: dict[int, tuple[str, int]] = field(default_factory=dict)
    # The backward nodes that ran, by id, in the order they first ran (autograd's own
    # graph: ``backward_graph`` draws it). Empty for traces written before schema 3.
    grad_nodes: dict[int, GradNode] = field(default_factory=dict)
    complete: bool = False
    _structure_key: str | None = None

    @property
    def structure_key(self) -> str:
        """The key IterationEnd carried; for an unfinished graph, computed from its nodes
        (``dyngraph.capture.structure``: the same signatures the diff compares)."""
        if self._structure_key is None:
            return structure.key_of(self.signatures())
        return self._structure_key

    def signatures(self) -> dict[tuple[str, str, str, int, int], tuple[Any, ...]]:
        """``node key -> structural signature`` (see ``dyngraph.capture.structure``)."""
        nodes = [(n.id, n.key, n.shape, n.dtype,
                  n.grad_enabled if n.kind == "op" else n.requires_grad, n.attrs)
                 for n in self.nodes.values()]
        return structure.signatures(nodes, ((e.src, e.dst, e.index) for e in self.edges))

    @property
    def template(self) -> Any:
        """The structure this graph shares with the iterations of a trace that repeat it
        (a ``sharedgraph.GraphTemplate``: the same object for all of them), or None: a
        graph built on its own (see ``sharedgraph.SharedGraph``)."""
        return None

    def __len__(self) -> int:
        return len(self.nodes)

    def inputs_of(self, node_id: int) -> list[int]:
        return [e.src for e in self.edges if e.dst == node_id]

    def consumers_of(self, node_id: int) -> list[int]:
        return [e.dst for e in self.edges if e.src == node_id]

    def modules(self) -> list[str]:
        """Every module path that owns a node, with all its ancestors, sorted."""
        paths: set[str] = set()
        for node in self.nodes.values():
            parts = node.module.split(".") if node.module else []
            for i in range(1, len(parts) + 1):
                paths.add(".".join(parts[:i]))
        return sorted(paths)

    def diff(self, other: Graph) -> GraphDiff:
        """What changed from ``other`` (typically the previous iteration) to this graph."""
        return diff_graphs(other, self)


@dataclass(frozen=True, slots=True)
class GraphDiff:
    """Nodes matched by ``GraphNode.key``. ``added`` are ids in the new graph, ``removed``
    ids in the old one, ``reshaped`` pairs of (old id, new id) whose shape changed, and
    ``rewired`` pairs whose shape stayed but whose inputs, dtype, grad mode or structural
    attributes (``dim``, an index's pattern, ...) changed.

    ``unchanged`` is True exactly when the two graphs' structure keys are equal: both come
    from the same node signatures (``dyngraph.capture.structure``).
    """

    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    reshaped: tuple[tuple[int, int], ...] = ()
    rewired: tuple[tuple[int, int], ...] = ()

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.removed or self.reshaped or self.rewired)


def diff_graphs(old: Graph, new: Graph) -> GraphDiff:
    old_by_key = {n.key: n for n in old.nodes.values()}
    new_by_key = {n.key: n for n in new.nodes.values()}
    old_sigs, new_sigs = old.signatures(), new.signatures()
    added = tuple(n.id for k, n in new_by_key.items() if k not in old_by_key)
    removed = tuple(n.id for k, n in old_by_key.items() if k not in new_by_key)
    reshaped: list[tuple[int, int]] = []
    rewired: list[tuple[int, int]] = []
    for k, n in new_by_key.items():
        before = old_by_key.get(k)
        if before is None or old_sigs[k] == new_sigs[k]:
            continue
        (reshaped if before.shape != n.shape else rewired).append((before.id, n.id))
    return GraphDiff(added, removed, tuple(reshaped), tuple(rewired))


_new = object.__new__
_make_edge = ev.fast_constructor(GraphEdge)
_Op, _Leaf, _Call, _Step, _Grad, _Start, _End = (
    ev.Op, ev.TensorCreated, ev.ModuleCall, ev.BackwardStep, ev.GradAccumulated,
    ev.BackwardStart, ev.IterationEnd)
# Event classes the builder knows by their exact type; a subclass of one is looked up once
# (``_base_of``) and remembered here.
_KNOWN: dict[type, type] = {cls: cls for cls in ev.EVENT_TYPES.values()}


# A node is built by storing each slot (every field of GraphNode, checked by
# tests/events/test_graph_builder.py): a few times quicker than the dataclass ``__init__``
# with keywords, and view and export build one per op and leaf of a trace.
def _op_node(e: ev.Op, occurrence: int, call: int) -> GraphNode:
    n = _new(GraphNode)
    n.id = e.output
    n.kind = "op"
    n.op = e.op
    n.name = ""
    shape = e.shape
    n.shape = shape if type(shape) is tuple else tuple(shape)
    n.dtype = e.dtype
    n.module = e.module
    n.file = e.file
    n.line = e.line
    n.function = e.function
    n.seq = e.seq
    n.requires_grad = e.requires_grad
    n.grad_enabled = e.grad_enabled
    n.attrs = e.attrs
    n.summary = e.summary
    n.grad = None
    n.grad_fn = ""
    n.backward_seq = 0
    n.occurrence = occurrence
    n.carried = False
    n.call = call
    n.grads = ()
    return n


def _leaf_node(e: ev.TensorCreated, occurrence: int) -> GraphNode:
    n = _new(GraphNode)
    n.id = e.tensor
    n.kind = "param" if e.is_param else "leaf"
    n.op = ""
    n.name = e.name
    shape = e.shape
    n.shape = shape if type(shape) is tuple else tuple(shape)
    n.dtype = e.dtype
    n.module = ""
    n.file = ""
    n.line = 0
    n.function = ""
    n.seq = e.seq
    n.requires_grad = e.requires_grad
    n.grad_enabled = True
    n.attrs = {}
    n.summary = e.summary
    n.grad = None
    n.grad_fn = e.grad_fn
    n.backward_seq = 0
    n.occurrence = occurrence
    n.carried = not e.is_leaf
    n.call = 0
    n.grads = ()
    return n


def _base_of(cls: type) -> type:
    """The event class the builder treats ``cls`` as (itself for a foreign type, which
    then changes no graph)."""
    base = next((k for k in ev.EVENT_TYPES.values() if issubclass(cls, k)), cls)
    _KNOWN[cls] = base
    return base


class GraphBuilder:
    """Feeds on events; holds the graph of the iteration in progress and the finished ones.

    >>> builder = GraphBuilder()
    >>> for event in events: builder.add(event)    # doctest: +SKIP
    >>> builder.current.nodes                      # doctest: +SKIP

    ``add``, ``add_all`` and ``build_graphs`` share one loop (``_feed``), written for speed
    since view and export feed it every event of a trace.
    """

    def __init__(self) -> None:
        self.finished: list[Graph] = []
        self.current = Graph(iteration=1)
        # (module, op or leaf label, file, line) -> nodes of that key so far this iteration
        self._occurrences: dict[tuple[str, str, str, int], int] = {}
        self._stepped: set[int] = set()  # op nodes already reached by this backward pass

    def add(self, event: ev.Event) -> Graph | None:
        """Apply one event; returns the graph it completed, if it ended an iteration."""
        done = self._feed((event,))
        if done is not None:
            self.finished.append(done)
        return done

    def add_all(self, events: Iterable[ev.Event]) -> Graph | None:
        """``add`` every event in turn (the same, with less overhead per event); returns
        the last graph completed, if any."""
        pending = iter(events)
        last = None
        while (done := self._feed(pending)) is not None:
            self.finished.append(done)
            last = done
        return last

    def _feed(self, events: Iterable[ev.Event]) -> Graph | None:
        """Apply events from ``events`` until one ends an iteration, and return that
        iteration's graph; None once ``events`` runs out first (given an iterator, the
        next call goes on where this one stopped).

        One loop over the event's exact type with the handlers inline and the graph's
        parts in locals, so an event costs no call of its own. What outlives the loop (the
        current graph, occurrences, backward's visited set) is kept on ``self`` as it
        changes.
        """
        graph = self.current
        nodes, edges, calls = graph.nodes, graph.edges, graph.calls
        occurrences, stepped, known = self._occurrences, self._stepped, _KNOWN
        e: Any  # (each branch below knows its event's type; mypy cannot follow ``t``)
        for e in events:
            t = known.get(type(e)) or _base_of(type(e))
            if e.iteration != graph.iteration and not nodes:
                graph.iteration = e.iteration
            if t is _Op:
                k = (e.module, e.op, e.file, e.line)
                n = occurrences.get(k, 0)
                occurrences[k] = n + 1
                call = e.call
                output = e.output
                nodes[output] = _op_node(e, n, call if call in calls else 0)
                index = 0
                for src in e.inputs:
                    if src >= 0 and src in nodes:
                        edges.append(_make_edge(src, output, index))
                    index += 1
            elif t is _Step:
                outputs = e.outputs
                if not outputs:  # one node per op output (the numpy engine, old traces)
                    node = nodes.get(e.node)
                    # (Old PyTorch traces: one forward op may own several backward nodes,
                    # F.linear's AddmmBackward0, then TBackward0; the first to run is the
                    # op's own output's, whose incoming gradient flows into the op.)
                    if node is not None and node.id not in stepped:
                        stepped.add(node.id)
                        node.grad = e.grad_output
                        node.grad_fn = e.grad_fn
                        node.backward_seq = e.seq
                        graph.backward_order.append(node.id)
                else:  # each output slot's gradient is its own tensor's (output_nr)
                    for oid, g in zip(outputs, e.grad_outputs, strict=False):
                        node = nodes.get(oid)
                        if node is not None and oid not in stepped:
                            stepped.add(oid)
                            node.grad = g
                            node.grad_fn = e.grad_fn
                            node.backward_seq = e.seq
                            graph.backward_order.append(oid)
                gid = e.grad_node
                if gid >= 0:
                    graph.grad_nodes[gid] = _grad_node(
                        GradNode, (gid, e.grad_fn, e.node, e.op, outputs or (e.node,),
                                   e.grad_outputs or (e.grad_output,), e.inputs,
                                   e.next_nodes or e.inputs, e.grad_inputs, e.seq))
            elif t is _Grad:
                node = nodes.get(e.tensor)
                if node is not None:
                    node.grad = e.summary
                    node.grad_fn = "AccumulateGrad"
                    node.backward_seq = e.seq
                    graph.backward_order.append(node.id)
            elif t is _Leaf:
                k = ("", structure.leaf_label(e.name, e.is_param), "", 0)
                n = occurrences.get(k, 0)
                occurrences[k] = n + 1
                nodes[e.tensor] = _leaf_node(e, n)
            elif t is _Call:
                calls[e.call] = (e.module, e.parent)
            elif t is _Start:
                stepped = self._stepped = set()
            elif t is _End:
                graph._structure_key = e.structure_key
                graph.complete = True
                self.current = Graph(iteration=e.iteration + 1)
                self._occurrences = {}
                return graph
        return None


def build_graphs(events: Iterable[ev.Event]) -> Iterator[Graph]:
    """Yield each finished iteration's graph, then the unfinished one if it has nodes.

    The graphs are not kept (``GraphBuilder.finished`` stays empty): a caller that walks a
    long trace holds only the graphs it keeps itself. Keeping them all made the cyclic
    collector walk every earlier graph again and again, which cost more than building.
    """
    builder = GraphBuilder()
    pending = iter(events)
    while (done := builder._feed(pending)) is not None:
        yield done
    if builder.current.nodes:
        yield builder.current


def backward_graph(forward: Graph) -> Graph:
    """The gradient-flow graph of a forward graph: autograd's own graph, as it ran.

    One node per backward node that ran (``Graph.grad_nodes``; ``op`` its grad_fn name
    such as ``MulBackward0``, ``kind="backward"``), with the id of the first forward
    tensor it owns (so a node keeps its id from one pane to the other) or its own; one
    ``"accumulate"`` node per leaf a gradient went to, with the leaf's id. Nodes that
    belong to no forward op dyngraph saw (a checkpoint's, a hook's, a custom
    ``autograd.Function``'s inner ones) are drawn as what they are, by their grad_fn.
    Edges run the way gradients flow, from a node to the node each of its input slots
    hands a gradient to (``index``: the slot, as in autograd's ``next_functions``).

    A graph recorded before schema 3 (no ``grad_nodes``) is drawn from the forward edges
    reversed, one backward node per forward node that backward reached.
    """
    if not forward.grad_nodes:
        return _reversed(forward)
    out = Graph(iteration=forward.iteration, complete=forward.complete,
                calls=forward.calls, grad_nodes=forward.grad_nodes)
    out._structure_key = forward.structure_key
    nodes = forward.nodes
    made: list[GraphNode] = []
    for gn in forward.grad_nodes.values():
        made.append(_backward_node(gn, nodes))
    targets: set[int] = set()
    for gn in forward.grad_nodes.values():
        targets.update(gn.next)
    for node_id, node in nodes.items():
        if node.is_leaf and not node.carried and (
                node_id in targets or (node.grad_fn == "AccumulateGrad" and node.backward_seq)):
            if node_id not in forward.grad_nodes:
                made.append(_accumulate_node(node))
    # In the order backward reached them (a leaf no gradient reached: last, by id).
    made.sort(key=lambda n: (n.backward_seq or 1 << 62, n.id))
    occurrences: dict[tuple[str, str, str, int], int] = {}
    for n in made:
        k = (n.module, n.op or n.name or n.kind, n.file, n.line)
        n.occurrence = occurrences.get(k, 0)
        occurrences[k] = n.occurrence + 1
        out.nodes[n.id] = n
        if n.backward_seq:
            out.backward_order.append(n.id)
    for gn in forward.grad_nodes.values():
        for index, nxt in enumerate(gn.next):
            if nxt >= 0 and nxt in out.nodes:
                out.edges.append(GraphEdge(gn.id, nxt, index))
    return out


def _backward_node(gn: GradNode, nodes: dict[int, GraphNode]) -> GraphNode:
    """The drawn node of backward node ``gn``: placed (module, source line) where its
    forward op is; shaped as the first forward tensor it owns, else as its gradient."""
    owned = next((nodes[o] for o in gn.outputs if o in nodes), None)
    where = owned if owned is not None else nodes.get(gn.node)
    grad = gn.grads[0] if gn.grads else None
    if owned is not None:
        shape, dtype = owned.shape, owned.dtype
    elif grad is not None:
        shape, dtype = grad.shape, grad.dtype
    else:
        shape, dtype = (), ""  # unknown (no forward tensor, no statistics)
    return GraphNode(
        id=gn.id, kind="backward", op=gn.grad_fn, name="", shape=shape, dtype=dtype,
        module=where.module if where else "", file=where.file if where else "",
        line=where.line if where else 0, function=where.function if where else "",
        seq=gn.seq, requires_grad=True, summary=grad, grad=grad, grad_fn=gn.grad_fn,
        backward_seq=gn.seq, call=where.call if where else 0,
        grads=gn.grads if len(gn.grads) > 1 else (),
    )


def _accumulate_node(node: GraphNode) -> GraphNode:
    return GraphNode(
        id=node.id, kind="accumulate", op="AccumulateGrad", name=node.name,
        shape=node.shape, dtype=node.dtype, seq=node.backward_seq, requires_grad=True,
        summary=node.grad, grad=node.grad, grad_fn="AccumulateGrad",
        backward_seq=node.backward_seq,
    )


def _reversed(forward: Graph) -> Graph:
    """``backward_graph`` of a graph recorded before schema 3: the forward graph reversed."""
    out = Graph(iteration=forward.iteration, complete=forward.complete,
                backward_order=list(forward.backward_order), calls=forward.calls)
    out._structure_key = forward.structure_key
    for node_id in forward.backward_order:
        node = forward.nodes[node_id]
        out.nodes[node_id] = GraphNode(
            id=node.id, kind="accumulate" if node.is_leaf else "backward", op=node.grad_fn,
            name=node.name, shape=node.shape, dtype=node.dtype, module=node.module,
            file=node.file, line=node.line, function=node.function, seq=node.backward_seq,
            requires_grad=True, summary=node.grad, grad=node.grad, grad_fn=node.grad_fn,
            backward_seq=node.backward_seq, occurrence=node.occurrence, call=node.call,
        )
    for edge in forward.edges:
        if edge.src in out.nodes and edge.dst in out.nodes:
            out.edges.append(GraphEdge(edge.dst, edge.src, edge.index))
    return out


def roll_up(graph: Graph, node_ids: Iterable[int], limit: int = 4) -> str:
    """Many nodes said in one line, by what they were part of: ``"80 nodes: 5 × cell,
    12 × add, 3 × leaf, …"``. Nodes inside module calls count as the calls of the
    outermost module (``5 × cell``), the others by op name (leaves as such), most first.

    >>> roll_up(graph, diff.removed)   # doctest: +SKIP
    '434 nodes: 60 × cell, 60 × add, 60 × mul, 2 × leaf, …'
    """
    ids = [i for i in node_ids if i in graph.nodes]
    calls: dict[str, set[int]] = {}
    ops: dict[str, int] = {}
    for node_id in ids:
        node = graph.nodes[node_id]
        outer, call = 0, node.call
        while call and call in graph.calls:
            path, parent = graph.calls[call]
            if path:
                outer = call
            call = parent
        if outer:
            calls.setdefault(graph.calls[outer][0], set()).add(outer)
        else:
            name = node.op or ("leaf" if node.is_leaf else node.kind)
            ops[name] = ops.get(name, 0) + 1
    counts = [(len(v), k) for k, v in calls.items()] + [(n, k) for k, n in ops.items()]
    counts.sort(key=lambda c: (-c[0], c[1]))
    parts = [f"{n} × {k}" for n, k in counts[:limit]]
    more = ", …" if len(counts) > limit else ""
    return f"{len(ids)} node{'s' * (len(ids) != 1)}: {', '.join(parts)}{more}"
