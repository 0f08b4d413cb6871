"""What the viewer page is fed: a trace's iterations as JSON-ready plain data.

The three doors (``export``'s ``index.html``, the notebook widget, ``view --web``) feed
the page the same data; only the transport differs (embedded in the page, a widget's
model state, or fetched part by part from the web server). The parts:

- ``meta()``: the iterations (index, structure id, setup or not, structure changed since
  the iteration before, node count, NaN/Inf count), the first NaN/Inf of the run and the
  gradient-norm range the colours span. Iteration 0 is the run's *setup* (the work before
  the first differentiable op): shown, but nobody's baseline, so neither it nor the
  iteration after it is ever "changed" (as in ``dyngraph summary``);
- ``structure(s)``: what iterations of one structure share: the nodes (op, name, module,
  shape, source line, stable key, structural signature), their inputs, and the module
  folding model of ``dyngraph.capture.folding`` (``ModuleTree.to_dict()``, the calls open
  at first, the index-arithmetic flags) that the page folds with;
- ``values(p)``: iteration ``p``'s summaries (value and gradient), per node of its structure;
- ``history(key)``: one node's gradient norm in every iteration (the sparkline).

Columns, not records: a 50,000-node structure is a few arrays, and repeated strings
(modules, files, dtypes) are indexes into a table. Floats that JSON cannot spell (NaN,
Infinity) travel as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

>>> data = ViewerData.from_trace(trace)                       # doctest: +SKIP
>>> data.meta()["iterations"][0]["nodes"]                     # doctest: +SKIP
42
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dyngraph.capture import folding as fd
from dyngraph.capture.graph import Graph, GraphNode, backward_graph

GRAPH_KINDS = ("forward", "backward")
SCHEMA = 1
# Past this many nodes a node's value preview is left out of the page (the statistics stay).
PREVIEW_NODES = 5000


@dataclass(slots=True)
class _Item:
    index: int
    get: Callable[[], Graph]
    key: Callable[[], str]
    files: tuple[str, ...] = ()  # what an export wrote for it
    pages: tuple[tuple[str, str], ...] = ()  # (module label, file) of its module pages


class ViewerData:
    """A run's iterations, turned into the page's parts on demand (see the module doc).

    ``items``: ``(iteration index, graph getter, structure-key getter)`` in order;
    ``from_trace`` and ``from_graphs`` make them. ``meta()`` walks every graph once; the
    other parts are built when first asked and kept.
    """

    def __init__(self, items: Sequence[_Item], *, graph_kind: str = "forward",
                 title: str = "") -> None:
        if graph_kind not in GRAPH_KINDS:
            raise ValueError(f"unknown graph kind {graph_kind!r}: choose from "
                             f"{', '.join(GRAPH_KINDS)}")
        self.items = [it for it in items]
        self.graph_kind = graph_kind
        self.title = title
        self.notes: list[str] = []  # what choosing the iterations noted (a range cut short)
        self._meta: dict[str, Any] | None = None
        self._structure_of: list[int] = []
        self._structures: list[_Structure] = []
        self._structure_dicts: dict[int, dict[str, Any]] = {}
        self._values: dict[int, dict[str, Any]] = {}
        self._ordered: dict[int, list[GraphNode]] = {}  # p -> its nodes in creation order

    # -- making ----------------------------------------------------------------------------
    @classmethod
    def from_trace(cls, trace: Any, *, graph_kind: str = "forward",
                   iterations: Iterable[int] | None = None, title: str = "") -> ViewerData:
        """The iterations of a ``dyngraph.Trace`` (``iterations``: which indexes; all by
        default) that have a graph."""
        wanted = None if iterations is None else set(iterations)
        items = []
        for it in trace.iterations:
            if wanted is not None and it.index not in wanted:
                continue
            items.append(_Item(it.index, _getter(it, graph_kind), _key_getter(it)))
        return cls(items, graph_kind=graph_kind, title=title)

    @classmethod
    def from_graphs(cls, graphs: Sequence[Graph], *, graph_kind: str = "forward",
                    files: Sequence[Sequence[str]] | None = None,
                    pages: Sequence[Sequence[tuple[str, str]]] | None = None,
                    title: str = "") -> ViewerData:
        """Forward graphs already built (one per iteration; with ``graph_kind="backward"``
        their backward graphs are shown). ``files``, ``pages``: what an export wrote for
        each (its files; its module pages as (label, file))."""
        items = []
        for k, g in enumerate(graphs):
            get = _same(g) if graph_kind == "forward" else _backward_of(g)
            items.append(_Item(g.iteration, get, _key_getter(g),
                               tuple(files[k]) if files is not None else (),
                               tuple((p[0], p[1]) for p in pages[k]) if pages else ()))
        return cls(items, graph_kind=graph_kind, title=title)

    # -- the parts -------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        if self._meta is None:
            self._meta = self._build_meta()
        return self._meta

    def structure(self, s: int) -> dict[str, Any]:
        self.meta()
        got = self._structure_dicts.get(s)
        if got is None:
            got = self._structure_dicts[s] = self._structures[s].to_dict()
        return got

    def values(self, p: int) -> dict[str, Any]:
        self.meta()
        got = self._values.get(p)
        if got is None:
            got = self._values[p] = _values(self.ordered(p))
        return got

    def history(self, key: str) -> list[Any]:
        """Node ``key``'s gradient norm per iteration (None where absent or no gradient)."""
        self.meta()
        out: list[Any] = []
        for p in range(len(self.items)):
            structure = self._structures[self._structure_of[p]]
            i = structure.position.get(key)
            if i is None:
                out.append(None)
                continue
            out.append(_norm(self.ordered(p)[i].grad))
        return out

    def everything(self) -> dict[str, Any]:
        """Every part, for a page that carries its data inside."""
        meta = self.meta()
        return {"meta": meta,
                "structures": [self.structure(s) for s in range(len(self._structures))],
                "values": [self.values(p) for p in range(len(self.items))]}

    # -- building ----------------------------------------------------------------------------
    def _graph(self, p: int) -> Graph:
        return self.items[p].get()

    def ordered(self, p: int) -> list[GraphNode]:
        """Iteration ``p``'s nodes in creation order: the order of its structure's columns."""
        got = self._ordered.get(p)
        if got is None:
            got = self._ordered[p] = _ordered(self._graph(p))
        return got

    def _build_meta(self) -> dict[str, Any]:
        by_key: dict[str, list[int]] = {}
        iterations = []
        first_nan = None
        lo, hi = math.inf, 0.0
        previous_key = None  # the baseline's structure key (None: no baseline)
        for p, item in enumerate(self.items):
            graph = item.get()
            key = item.key()
            s = self._structure_for(p, key, by_key)
            self._structure_of.append(s)
            nan_nodes = 0
            for node in graph.nodes.values():
                if node.has_nonfinite:
                    nan_nodes += 1
                n = _norm(node.grad)
                if isinstance(n, float) and 0 < n < math.inf:
                    lo, hi = min(lo, n), max(hi, n)
            if first_nan is None and nan_nodes:
                first_nan = self._first_nan(p, graph, s)
            setup = item.index == 0
            iterations.append({
                "index": item.index, "structure": s, "key": key, "setup": setup,
                "changed": previous_key is not None and key != previous_key,
                "nodes": len(graph.nodes),
                "complete": bool(graph.complete), "nan": nan_nodes,
                "files": list(item.files), "pages": [list(p) for p in item.pages]})
            # Setup (iteration 0: loading data, an evaluation ...) is nobody's baseline,
            # as in `dyngraph summary` and the debugger: iteration 1 is not "changed".
            previous_key = None if setup else key
        return {"schema": SCHEMA, "title": self.title, "graph": self.graph_kind,
                "iterations": iterations, "firstNaN": first_nan,
                "gradRange": [lo, hi] if lo <= hi else None,
                "structures": len(self._structures)}

    def _structure_for(self, p: int, key: str, by_key: dict[str, list[int]]) -> int:
        """The id of iteration ``p``'s structure: one seen before with the same key and the
        same nodes in the same order, else a new one."""
        ordered = self.ordered(p)
        for s in by_key.get(key, ()):
            if self._structures[s].matches(ordered):
                return s
        self._structures.append(_Structure(self._graph(p)))
        s = len(self._structures) - 1
        by_key.setdefault(key, []).append(s)
        return s

    def _first_nan(self, p: int, graph: Graph, s: int) -> dict[str, Any]:
        """The first NaN/Inf in time: a forward value (earliest op), else a gradient
        (earliest backward step)."""
        values = [n for n in graph.nodes.values()
                  if n.summary is not None and not n.summary.finite]
        if values:
            node, where = min(values, key=lambda n: n.seq), "value"
        else:
            grads = [n for n in graph.nodes.values() if n.grad is not None and not n.grad.finite]
            node, where = min(grads, key=lambda n: (n.backward_seq, n.seq)), "gradient"
        structure = self._structures[s]
        return {"iteration": p, "node": structure.position[_key_text(node)],
                "where": where, "label": node.label, "module": node.module,
                "index": self.items[p].index}


def _getter(iteration: Any, graph_kind: str) -> Callable[[], Graph]:
    if graph_kind == "forward":
        return lambda: iteration.graph
    return lambda: iteration.backward_graph


def _key_getter(iteration_or_graph: Any) -> Callable[[], str]:
    return lambda: iteration_or_graph.structure_key


def _same(graph: Graph) -> Callable[[], Graph]:
    return lambda: graph


def _backward_of(graph: Graph) -> Callable[[], Graph]:
    made: list[Graph] = []

    def get() -> Graph:
        if not made:
            made.append(backward_graph(graph))
        return made[0]

    return get


class _Structure:
    """Nodes, wiring and module tree shared by the iterations of one structure."""

    def __init__(self, graph: Graph) -> None:
        scopes, inputs, sigs, names, ids = fd.graph_records(graph)
        self.ids = ids
        self.nodes = [graph.nodes[i] for i in ids]
        self.keys = [_key_text(n) for n in self.nodes]
        self.position = {k: i for i, k in enumerate(self.keys)}
        self.inputs = inputs
        self.tree = fd.ModuleTree.build(scopes, inputs, sigs, names)
        self.signatures = graph.signatures()

    def matches(self, ordered: list[GraphNode]) -> bool:
        if len(ordered) != len(self.ids):
            return False
        return [_key_text(n) for n in ordered] == self.keys

    def to_dict(self) -> dict[str, Any]:
        nodes = self.nodes
        tables: dict[str, dict[str, int]] = {}

        def column(name: str, values: Iterable[str]) -> list[int]:
            table = tables.setdefault(name, {})
            return [table.setdefault(v, len(table)) for v in values]

        starts: list[int] = [0]  # every node's inputs, one after another in flat
        flat: list[int] = []
        for ins in self.inputs:
            flat.extend(ins)
            starts.append(len(flat))
        book = [fd.is_bookkeeping(n.kind, n.dtype, n.requires_grad) for n in nodes]
        out: dict[str, Any] = {
            "n": len(nodes), "id": self.ids,
            "kind": column("kind", (n.kind for n in nodes)),
            "op": column("op", (n.op for n in nodes)),
            "name": [n.name for n in nodes],
            "label": column("label", (n.label for n in nodes)),
            "shape": column("shape", (_shape(n.shape) for n in nodes)),
            "dtype": column("dtype", (n.dtype for n in nodes)),
            "module": column("module", (n.module for n in nodes)),
            "file": column("file", (n.file for n in nodes)),
            "fn": column("fn", (n.function for n in nodes)),
            "line": [n.line for n in nodes],
            "grad": [1 if n.requires_grad else 0 for n in nodes],
            "attrs": [_attrs(n) for n in nodes],
            "key": self.keys,
            "sig": [_sig(self.signatures.get(n.key)) for n in nodes],
            "inStart": starts, "inFlat": flat,
            "book": [1 if b else 0 for b in book],
            "tree": _tree_dict(self.tree),
            "open": sorted(fd.auto_expanded(self.tree)),
        }
        out["tables"] = {name: list(table) for name, table in tables.items()}
        return out


def _tree_dict(tree: fd.ModuleTree) -> dict[str, Any]:
    """``ModuleTree.to_dict()``, the same fields, without ``dataclasses.asdict``'s deep
    copies (a fifth of a 50,000-node page's making)."""
    calls = [{"key": c.key, "path": c.path, "parent": c.parent, "first": c.first,
              "size": c.size, "direct": c.direct, "children": c.children, "run": c.run,
              "label": c.label} for c in tree.calls.values()]
    runs = [{"key": r.key, "parent": r.parent, "members": r.members, "label": r.label,
             "first": r.first, "size": r.size} for r in tree.runs.values()]
    return {"n": tree.n, "top": tree.top, "scope_of": tree.scope_of, "calls": calls,
            "runs": runs}


def _ordered(graph: Graph) -> list[GraphNode]:
    """A graph's nodes in creation order: the order of its structure's columns."""
    return sorted(graph.nodes.values(), key=lambda n: (n.seq, n.id))


def _key_text(node: GraphNode) -> str:
    module, what, file, line, occurrence = node.key
    return f"{module}\t{what}\t{file}:{line}\t{occurrence}"


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _attrs(node: GraphNode) -> str:
    if not node.attrs:
        return ""
    text = ", ".join(f"{k}={v!r}" for k, v in sorted(node.attrs.items()))
    return text if len(text) <= 200 else text[:199] + "…"


def _sig(sig: Hashable | None) -> int:
    """A number standing for a node's structural signature (equal signatures, equal
    numbers, within one process: all parts of a page are made in one)."""
    if sig is None:
        return 0
    try:
        return hash(sig) & 0x1F_FFFF_FFFF_FFFF  # within JavaScript's exact integers
    except TypeError:
        return hash(repr(sig)) & 0x1F_FFFF_FFFF_FFFF


def _num(v: float | None) -> float | str | None:
    if v is None:
        return None
    v = float(v)
    if math.isfinite(v):
        return float(f"{v:.6g}")  # what the page shows (4 digits) and a little more
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")


def _norm(summary: Any) -> float | str | None:
    """A gradient's norm for colours and sparklines: NaN when it holds NaN/Inf."""
    if summary is None:
        return None
    if not summary.finite:
        return "NaN"
    return _num(summary.norm)


_STATS = ("norm", "min", "max", "mean", "std")


def _values(ordered: list[GraphNode]) -> dict[str, Any]:
    """Columns of value and gradient statistics, in the structure's node order. Columns
    with nothing in them (no NaN anywhere, statistics not recorded) are left out."""
    n = len(ordered)
    cols: dict[str, list[Any]] = {"id": [node.id for node in ordered]}  # (per iteration)
    for prefix, field in (("v", "summary"), ("g", "grad")):
        summaries = [getattr(node, field) for node in ordered]
        if not any(x is not None for x in summaries):
            continue
        for stat in _STATS:
            cols[prefix + stat] = [None if x is None else _num(getattr(x, stat))
                                   for x in summaries]
        for stat in ("nan", "inf"):
            cols[prefix + stat] = [None if x is None else getattr(x, stat) for x in summaries]
        cols[prefix + "sampled"] = [None if x is None else int(x.sampled) for x in summaries]
    if n <= PREVIEW_NODES:
        cols["vpreview"] = [[_num(v) for v in node.summary.preview[:8]]
                            if node.summary is not None and node.summary.preview else None
                            for node in ordered]
    fns: dict[str, int] = {}
    cols["gfn"] = [fns.setdefault(node.grad_fn, len(fns)) for node in ordered]
    out = {k: v for k, v in cols.items() if any(x for x in v)}
    out["id"] = cols["id"]
    if "gfn" in out:
        out["gfnTable"] = list(fns)
    return out
