"""Graphs shared by the iterations that repeat one structure: a graph per template, built
once, and a light view per iteration that reads its own values from its rows.

Most iterations of a training run repeat the one before: the same ops from the same
lines, the same shapes, the same wiring; only ids, seqs, summaries and durations move.
``graph_of_rows`` made a node object per op and leaf of every iteration all the same
(about half of reading a trace with every graph). Here an iteration's graph is built
once, as a *template*, when its structure is seen the second time, and that iteration and
every later one whose rows are the template's with only values changed get a
``SharedGraph``:

- its structure (node kinds, ops, shapes, dtypes, modules, source lines, occurrences,
  which input of which op is an edge, which backward step reached which node) is the
  template's, one object for every iteration that follows it (``SharedGraph.template``);
- its values (ids, seqs, summaries, gradients, attributes, the backward graph's steps,
  the module calls, the structure key) are read from its own rows, where each node's values sit
  at the same place as in the template's rows: the rows are the columns;
- ``nodes`` is a mapping that makes a node object only when one is looked up (and keeps
  it): a repeated iteration that nobody looks into costs no node object at all; the
  edges, backward order, module calls and backward nodes are made when first read.

The graph is the one ``graph_of_rows`` makes of the same rows, field for field
(tests/events/test_shared_graph.py compares them on every iteration of recordings that
repeat, diverge and come back).

When do rows follow a template? Their kinds are the template's, position by position;
every field the forward graph takes as it is (an op's name, shape, dtype, module,
source line; a leaf's name and flags; a backward step's grad_fn) equals the
template's; and the ids are the template's renamed: one-to-one, -1 (none) kept, per kind
of id (tensors and backward nodes, module calls). That is exactly when the graph the
builder would make is the template's with ids renamed, since the builder only compares
ids with each other. Anything else (a branch taken, a shape that changed) is a structure
of its own: a template of its own (up to ``MAX_TEMPLATES`` per trace, then built in full).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

from .events import fast_constructor
from .graph import GradNode, Graph, GraphEdge, GraphNode
from .rows import Row, attrs_dict, summary_builder

_new = object.__new__
_grad_node = tuple.__new__  # (GradNode, fields)
_KIND = itemgetter(0)
MAX_TEMPLATES = 256  # per trace: a run whose structure never repeats makes no more
_PER_KEY = 4  # templates kept for one (length, structure key): an id pattern that varies
_SEEN = 1 << 14  # structures remembered as seen once

# Row fields the forward graph takes as they are, by kind (``rows`` layout).
_STATIC: dict[str, tuple[int, ...]] = {
    # op, shape, dtype, requires_grad, module, file, line, function, grad_enabled (not
    # attrs: an index taken, a value filled in are values; the key says which matter)
    "op": (3, 6, 7, 8, 10, 11, 12, 13, 14),
    # name, shape, dtype, requires_grad, is_param, is_leaf, grad_fn
    "tensor": (4, 5, 6, 7, 8, 10, 11),
    "backward_step": (5,),  # grad_fn
}
# Row fields holding ids the builder compares, by kind: (namespace, index, a tuple of ids).
# Tensors and backward nodes share one namespace (a backward node's ``next`` names both).
_IDS: dict[str, tuple[tuple[str, int, bool], ...]] = {
    "op": (("T", 5, False), ("T", 4, True), ("C", 17, False)),
    "tensor": (("T", 3, False),),
    "backward_step": (("T", 3, False), ("T", 11, True), ("T", 10, False)),
    "grad": (("T", 3, False),),
    "module_call": (("C", 3, False),),
}


def _rows_getter(positions: Sequence[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function of a sequence giving its items at ``positions``, as a tuple."""
    if len(positions) == 1:
        p = positions[0]
        return lambda rows: (rows[p],)
    return itemgetter(*positions)  # type: ignore[return-value]


class _KindCheck:
    """What the rows of one kind must be for an iteration to follow a template."""

    __slots__ = ("ids", "rows", "static", "expected")

    def __init__(self, kind: str, positions: list[int], rows: Sequence[Row]) -> None:
        self.rows = _rows_getter(positions)
        mine = self.rows(rows)
        fields = _STATIC.get(kind)
        self.static = None if fields is None else itemgetter(*fields)
        self.expected = None if self.static is None else list(map(self.static, mine))
        # (namespace, getter, lengths of the template's tuples or None)
        self.ids = [(ns, itemgetter(i), list(map(len, map(itemgetter(i), mine))) if flat
                     else None) for ns, i, flat in _IDS.get(kind, ())]

    def gather(self, rows: Sequence[Row], into: dict[str, list[Any]]) -> bool:
        """Add the ids of ``rows``'s rows of this kind to ``into``; False if their
        fixed fields (or the lengths of their id tuples) are not the template's."""
        mine = self.rows(rows)
        if self.static is not None and list(map(self.static, mine)) != self.expected:
            return False
        for ns, get, lengths in self.ids:
            values = list(map(get, mine))
            if lengths is not None:
                if list(map(len, values)) != lengths:
                    return False
                values = list(chain.from_iterable(values))
            into[ns].extend(values)
        return True


class _Namespace:
    """The template's ids of one namespace, in the order ``_KindCheck.gather`` lists them:
    another iteration's list must rename them one to one, negative ids (none) kept."""

    __slots__ = ("count", "distinct", "negative", "kept", "others")

    def __init__(self, values: list[Any]) -> None:
        self.count = len(values)
        self.distinct = len(set(values))
        neg = [i for i, v in enumerate(values) if v < 0]
        pos = [i for i, v in enumerate(values) if v >= 0]
        self.negative = _rows_getter(neg) if neg else None
        self.kept = [values[i] for i in neg]
        self.others = _rows_getter(pos) if pos else None

    def renames(self, template: list[Any], values: list[Any]) -> bool:
        if len(values) != self.count:
            return False
        if len(set(zip(template, values, strict=True))) != self.distinct or \
                len(set(values)) != self.distinct:
            return False
        if self.negative is not None and list(self.negative(values)) != self.kept:
            return False
        return self.others is None or min(self.others(values)) >= 0


class GraphTemplate:
    """One iteration's graph, built once, with where each of its values sits in the rows
    of any iteration that repeats it. Shared by all of them (``SharedGraph.template``)."""

    def __init__(self, rows: Sequence[Row], graph: Graph) -> None:
        """``graph``: the graph of ``rows`` with each row's seq replaced by its position
        + 1 (so a node's ``seq`` and ``backward_seq`` say which rows made it)."""
        self.kinds = list(map(_KIND, rows))
        self.length = len(rows)
        self.graph = graph  # the prototypes of the nodes (their values are positions)
        by_kind: dict[str, list[int]] = {}
        for p, kind in enumerate(self.kinds):
            by_kind.setdefault(kind, []).append(p)
        self._checks = [_KindCheck(k, ps, rows) for k, ps in by_kind.items()
                        if k in _STATIC or k in _IDS]
        ids = self._gather(rows)
        assert ids is not None
        self._ids = ids
        self._namespaces = {ns: _Namespace(v) for ns, v in ids.items()}
        nodes = list(graph.nodes.values())
        self.node_ids = [n.id for n in nodes]  # the template's own
        self.index = {node_id: k for k, node_id in enumerate(self.node_ids)}
        self.nodes = nodes
        # per node: (row, its id's field, its summary's field, the row that last set its
        # gradient or -1, that gradient's field, slot (-1: the field itself), call kept)
        self.places = [self._place(rows, n, graph.calls) for n in nodes]
        self.fixed = list(map(_fixed_of, nodes))
        # per edge: (the op's row, the input slot)
        self.edges = [(e.dst_row, e.index) for e in _edge_rows(rows)]
        self.backward_order = [self.index[i] for i in graph.backward_order]
        self.grad_rows = [gn.seq - 1 for gn in graph.grad_nodes.values()]
        calls: dict[Any, int] = {}
        for p, kind in enumerate(self.kinds):
            if kind == "module_call":
                calls[rows[p][3]] = p
        self.call_rows = list(calls.values())
        self._check_places(rows, graph)

    def _gather(self, rows: Sequence[Row]) -> dict[str, list[Any]] | None:
        into: dict[str, list[Any]] = {"T": [], "C": []}
        for check in self._checks:
            if not check.gather(rows, into):
                return None
        return into

    def follows(self, rows: Sequence[Row]) -> bool:
        """Are ``rows`` this template's, values aside (see the module's docstring)?"""
        if len(rows) != self.length or list(map(_KIND, rows)) != self.kinds:
            return False
        ids = self._gather(rows)
        if ids is None:
            return False
        return all(space.renames(self._ids[ns], ids[ns])
                   for ns, space in self._namespaces.items())

    @staticmethod
    def _place(rows: Sequence[Row], n: GraphNode, calls: Mapping[int, Any]
               ) -> tuple[int, int, int, int, int, int, bool]:
        p = n.seq - 1
        id_field, summary_field = (5, 16) if n.kind == "op" else (3, 9)
        g, field, slot = n.backward_seq - 1, -1, -1
        if g >= 0:
            r = rows[g]
            if r[0] == "grad":
                field = 5
            elif not r[11]:
                field = 7
            else:
                k = r[11].index(n.id)
                field, slot = (7, -1) if k == 0 else (12, k)
        # (the op's call kept only if it was one of the iteration's: a renamed id then)
        call = n.kind == "op" and rows[p][17] in calls
        return (p, id_field, summary_field, g, field, slot, call)

    def _check_places(self, rows: Sequence[Row], graph: Graph) -> None:
        """The places found say what the builder did (else this is no template)."""
        ids = [rows[p][f] for p, f, *_ in self.places]
        if ids != self.node_ids:
            raise ValueError("node places")
        edges = [(rows[p][4][i], rows[p][5], i) for p, i in self.edges]
        if edges != [(e.src, e.dst, e.index) for e in graph.edges]:
            raise ValueError("edge places")


class _EdgeRow:
    __slots__ = ("dst_row", "index")

    def __init__(self, dst_row: int, index: int) -> None:
        self.dst_row, self.index = dst_row, index


def _edge_rows(rows: Sequence[Row]) -> list[_EdgeRow]:
    """The rows and slots ``graph_of_rows`` makes its edges of, in its order (a single
    iteration's rows: ``_eligible``)."""
    seen: set[Any] = set()
    out = []
    for p, r in enumerate(rows):
        kind = r[0]
        if kind == "op":
            seen.add(r[5])
            for i, src in enumerate(r[4]):
                if src >= 0 and src in seen:
                    out.append(_EdgeRow(p, i))
        elif kind == "tensor":
            seen.add(r[3])
    return out


# -- the graph of an iteration that follows a template ---------------------------------------
# A node is made by storing each slot, the iteration's values first (see graph._op_node).
_NODE_VALUES = ("id", "seq", "summary", "grad", "backward_seq", "call", "attrs")
_NODE_FIXED = ("kind", "op", "name", "shape", "dtype", "module", "file", "line", "function",
               "requires_grad", "grad_enabled", "grad_fn", "occurrence", "carried", "grads")
_make_node = fast_constructor(GraphNode, _NODE_VALUES + _NODE_FIXED)
_fixed_of = attrgetter(*_NODE_FIXED)


def _node(place: tuple[int, int, int, int, int, int, bool], fixed: tuple[Any, ...],
          rows: Sequence[Row], S: Callable[[Any], Any]) -> GraphNode:
    """The node at ``place`` (``GraphTemplate.places``) of ``rows``, ``fixed`` its
    template's fields that are not values."""
    p, id_field, summary_field, g, field, slot, call = place
    r = rows[p]
    if g >= 0:
        gr = rows[g]
        grad, backward_seq = S(gr[field] if slot < 0 else gr[field][slot]), gr[1]
    else:
        grad, backward_seq = None, 0
    return _make_node(r[id_field], r[1], S(r[summary_field]), grad, backward_seq,  # type: ignore[no-any-return]
                      r[17] if call else 0, attrs_dict(r[9]) if id_field == 5 else {},
                      *fixed)


class SharedNodes(MutableMapping[int, GraphNode]):
    """A ``SharedGraph``'s nodes by id: each made from its template's prototype and the
    iteration's rows when first looked up, then kept. (Changed by anyone, it becomes a
    plain dict of every node inside.)"""

    __slots__ = ("_template", "_rows", "_S", "_made", "_ids", "_index", "_all")

    def __init__(self, template: GraphTemplate, rows: Sequence[Row]) -> None:
        self._template = template
        self._rows = rows
        self._S = summary_builder()
        self._made: dict[int, GraphNode] = {}  # by position in the template
        self._ids: list[int] | None = None
        self._index: dict[int, int] | None = None
        self._all: dict[int, GraphNode] | None = None  # (once changed)

    def ids(self) -> list[int]:
        if self._ids is None:
            rows = self._rows
            self._ids = [rows[p][f] for p, f, *_ in self._template.places]
        return self._ids

    def _where(self) -> dict[int, int]:
        if self._index is None:
            self._index = {node_id: k for k, node_id in enumerate(self.ids())}
        return self._index

    def node(self, k: int) -> GraphNode:
        """The node at position ``k`` of the template's order."""
        n = self._made.get(k)
        if n is None:  # (two threads may make one: both get the first kept)
            n = self._made.setdefault(k, self._make(k))
        return n

    def _make(self, k: int) -> GraphNode:
        return _node(self._template.places[k], self._template.fixed[k], self._rows, self._S)

    def _make_all(self) -> list[GraphNode]:
        """Every node, in the template's order (those made already kept)."""
        made, rows, S, make, attrs = self._made, self._rows, self._S, _make_node, attrs_dict
        if made:  # (some looked up already: those kept)
            keep, node = made.setdefault, _node
            return [made.get(k) or keep(k, node(place, fixed, rows, S)) for k, (place, fixed)
                    in enumerate(zip(self._template.places, self._template.fixed,
                                     strict=True))]
        out = []
        for (p, id_field, summary_field, g, field, slot, call), fixed in zip(
                self._template.places, self._template.fixed, strict=True):
            r = rows[p]
            if g < 0:
                grad, backward_seq = None, 0
            else:
                gr = rows[g]
                grad, backward_seq = S(gr[field] if slot < 0 else gr[field][slot]), gr[1]
            out.append(make(r[id_field], r[1], S(r[summary_field]), grad, backward_seq,
                            r[17] if call else 0, attrs(r[9]) if id_field == 5 else {},
                            *fixed))
        for k, n in enumerate(out):  # (another thread may have made some meanwhile)
            out[k] = made.setdefault(k, n)
        return out

    def _changed(self) -> dict[int, GraphNode]:
        if self._all is None:
            self._all = {i: self.node(k) for k, i in enumerate(self.ids())}
        return self._all

    def __getitem__(self, key: int) -> GraphNode:
        if self._all is not None:
            return self._all[key]
        return self.node(self._where()[key])

    def get(self, key: int, default: Any = None) -> Any:
        if self._all is not None:
            return self._all.get(key, default)
        k = self._where().get(key)
        return default if k is None else self.node(k)

    def __contains__(self, key: object) -> bool:
        return key in (self._all if self._all is not None else self._where())

    def __iter__(self) -> Iterator[int]:
        return iter(self._all if self._all is not None else self.ids())

    def __len__(self) -> int:
        return len(self._all) if self._all is not None else len(self._template.nodes)

    def values(self) -> Any:
        if self._all is not None:
            return self._all.values()
        return self._make_all()

    def items(self) -> Any:
        if self._all is not None:
            return self._all.items()
        return list(zip(self.ids(), self.values(), strict=True))

    def __setitem__(self, key: int, value: GraphNode) -> None:
        self._changed()[key] = value

    def __delitem__(self, key: int) -> None:
        del self._changed()[key]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self.items()))


_LAZY: Any = object()  # a SharedGraph field not made yet
_FIELDS = ("iteration", "nodes", "edges", "backward_order", "calls", "grad_nodes", "complete",
           "_structure_key")
_SLOT = {name: Graph.__dict__[name] for name in _FIELDS}  # Graph's own slot descriptors
_making = threading.RLock()  # (a UI may read a graph from a worker while drawing)


def _lazy_field(name: str, make: Callable[[SharedNodes], Any]) -> property:
    slot, nodes_slot = _SLOT[name], _SLOT["nodes"]

    def get(self: Graph) -> Any:
        value = slot.__get__(self)
        if value is _LAZY:
            with _making:
                value = slot.__get__(self)
                if value is _LAZY:
                    value = make(nodes_slot.__get__(self))
                    slot.__set__(self, value)
        return value

    def set_(self: Graph, value: Any) -> None:
        slot.__set__(self, value)

    def del_(self: Graph) -> None:
        slot.__delete__(self)

    return property(get, set_, del_)


def _edges(nodes: SharedNodes) -> list[GraphEdge]:
    rows = nodes._rows
    out = []
    for p, i in nodes._template.edges:
        r = rows[p]
        e: Any = _new(_BuildingEdge)
        e.src = r[4][i]
        e.dst = r[5]
        e.index = i
        e.__class__ = GraphEdge
        out.append(e)
    return out


_BuildingEdge = type("_BuildingEdge", (GraphEdge,), {"__slots__": (),
                                                      "__setattr__": object.__setattr__,
                                                      "__delattr__": object.__delattr__})


def _backward_order(nodes: SharedNodes) -> list[int]:
    ids = nodes.ids()
    return [ids[k] for k in nodes._template.backward_order]


def _calls(nodes: SharedNodes) -> dict[int, tuple[str, int]]:
    rows = nodes._rows
    return {rows[p][3]: (rows[p][5], rows[p][4]) for p in nodes._template.call_rows}


def _grad_nodes(nodes: SharedNodes) -> dict[int, GradNode]:
    rows, S = nodes._rows, nodes._S
    out: dict[int, GradNode] = {}
    for p in nodes._template.grad_rows:
        r = rows[p]
        outputs = r[11]
        grad_output = S(r[7])
        grads = (grad_output, *map(S, r[12][1:])) if outputs else (grad_output,)
        out[r[10]] = _grad_node(GradNode, (r[10], r[5], r[3], r[4], outputs or (r[3],),
                                           grads, r[6], r[13] or r[6], tuple(map(S, r[8])),
                                           r[1]))
    return out


class SharedGraph(Graph):
    """The graph of an iteration that follows a template (``GraphTemplate``): a ``Graph``
    whose nodes, edges and backward steps are made from the template and the iteration's
    rows when first read (see the module's docstring)."""

    __slots__ = ()

    edges = _lazy_field("edges", _edges)
    backward_order = _lazy_field("backward_order", _backward_order)
    calls = _lazy_field("calls", _calls)
    grad_nodes = _lazy_field("grad_nodes", _grad_nodes)

    @property
    def template(self) -> GraphTemplate | None:
        """The structure this graph shares with every iteration that repeats it (None
        once its nodes were replaced by others)."""
        nodes = _SLOT["nodes"].__get__(self)
        return nodes._template if type(nodes) is SharedNodes else None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]


def shared_graph(template: GraphTemplate, rows: Sequence[Row]) -> SharedGraph:
    """The graph of ``rows``, which follow ``template`` (``GraphTemplate.follows``)."""
    g: Any = _new(SharedGraph)
    _SLOT["iteration"].__set__(g, rows[0][2])
    _SLOT["nodes"].__set__(g, SharedNodes(template, rows))
    for name in ("edges", "backward_order", "calls", "grad_nodes"):
        _SLOT[name].__set__(g, _LAZY)
    _SLOT["complete"].__set__(g, True)
    _SLOT["_structure_key"].__set__(g, rows[-1][4])
    return g  # type: ignore[no-any-return]


# -- a trace's templates ------------------------------------------------------------------------
def _eligible(rows: Sequence[Row]) -> bool:
    """Can ``rows`` be a template? One whole iteration: its end last and only there."""
    return (len(rows) > 1 and rows[-1][0] == "iteration_end"
            and rows[0][2] == rows[-1][2] and "iteration_end" not in
            map(_KIND, rows[:-1]))


class GraphTemplates:
    """The templates of one trace: ``graph_of(rows, iteration)`` is ``graph_of_rows``,
    shared with the iterations before it that had the same structure.

    A structure seen once is built in full, as before: making a template costs a few
    full builds, which a run whose graph changes every iteration (a tree per sentence)
    would pay for nothing. The second iteration of a structure makes its template."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[int, Any], list[GraphTemplate]] = {}
        self._seen: set[tuple[int, Any]] = set()  # structures seen once (bounded)
        self._refused: set[tuple[int, Any]] = set()  # rows no template could be made of
        self.count = 0
        self._lock = threading.Lock()

    def graph_of(self, rows: Sequence[Row], iteration: int,
                 build: Callable[[Sequence[Row], int], Graph]) -> Graph:
        """The graph of one iteration's ``rows``; ``build`` makes one in full."""
        if not rows or rows[-1][0] != "iteration_end" or rows[0][2] != iteration:
            return build(rows, iteration)
        key = (len(rows), rows[-1][4])
        for t in self._by_key.get(key, ()):
            if t.follows(rows):
                return shared_graph(t, rows)
        if self.count < MAX_TEMPLATES and key not in self._refused and _eligible(rows):
            if key in self._seen:
                template = self._add(key, rows, build)
                if template is not None:
                    return shared_graph(template, rows)
                self._refused.add(key)
            else:
                if len(self._seen) >= _SEEN:
                    self._seen.clear()
                self._seen.add(key)
        return build(rows, iteration)

    def _add(self, key: tuple[int, Any], rows: Sequence[Row],
             build: Callable[[Sequence[Row], int], Graph]) -> GraphTemplate | None:
        """A template made of ``rows`` (None if they make none) and kept."""
        numbered = tuple([(r[0], p + 1, *r[2:]) for p, r in enumerate(rows)])
        try:
            template = GraphTemplate(numbered, build(numbered, rows[0][2]))
        except (ValueError, TypeError, IndexError, AttributeError, KeyError):
            return None  # (rows the template code cannot place: built in full each time)
        if not template.follows(rows):
            return None
        with self._lock:
            kept = self._by_key.setdefault(key, [])
            kept.insert(0, template)
            del kept[_PER_KEY:]
            self.count += 1
        return template
