"""Big graphs exported by module: a module-level picture, and one picture per module.

Past ``FOLD_ABOVE`` nodes one SVG of every op is a wall nobody reads (and past 32,767
pixels one no rasteriser opens). The iteration's page then shows it folded by module as
the debugger does (``dyngraph.capture.folding``: one box per module call, a run of
repeated blocks as one box with a gradient strip, index arithmetic as one box), and each
folded box links to a page of its own: the call's ops, with small "from …" and "to …"
boxes where data comes in and goes out. A run's page shows its first member (the others
compute the same). A module still too big for one page is folded the same way, and so on
down.

>>> for page in pages(graph, "iter-0002"):    # doctest: +SKIP
...     print(page.stem, page.label, len(page.graph.nodes))
iter-0002  2211
iter-0002--transformer.h.0  transformer.h.0 … h.71 ×72  30
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dyngraph.capture import folding as fd
from dyngraph.capture.graph import Graph, GraphEdge, GraphNode

from .view import Box

FOLD_ABOVE = 1000  # nodes: past this an export is drawn by module
PAGE_AT_LEAST = 4  # nodes: a folded box smaller than this gets no page of its own


@dataclass(slots=True)
class Page:
    """One picture: ``stem`` is its file name without extension; ``units`` folds nodes
    into boxes (None: every node drawn); ``label`` says what it shows ("" for the
    iteration's own page)."""

    stem: str
    label: str
    graph: Graph
    units: dict[int, Box] | None = None
    children: list[Page] = field(default_factory=list)


def pages(graph: Graph, stem: str, above: int | None = None) -> list[Page]:
    """The iteration's page and every module page below it, parents first; just the one
    page when ``graph`` has at most ``above`` (default ``FOLD_ABOVE``) nodes."""
    top = _page(graph, stem, "", FOLD_ABOVE if above is None else above, set())
    out: list[Page] = []
    stack = [top]
    while stack:
        page = stack.pop(0)
        out.append(page)
        stack.extend(page.children)
    return out


def _page(graph: Graph, stem: str, label: str, above: int, taken: set[str]) -> Page:
    taken.add(stem)
    page = Page(stem, label, graph)
    if len(graph.nodes) <= above:
        return page
    scopes, inputs, sigs, names, ids = fd.graph_records(graph)
    tree = fd.ModuleTree.build(scopes, inputs, sigs, names)
    nodes = [graph.nodes[i] for i in ids]
    bookkeeping = [fd.is_bookkeeping(n.kind, n.dtype, n.requires_grad) for n in nodes]
    folding = fd.fold(tree, fd.auto_expanded(tree, above=above), bookkeeping)
    call_ids = _call_ids(graph)
    labels = {u: unit.label for u, unit in enumerate(folding.units)}
    groups: dict[int, list[int]] = {}
    for i, u in enumerate(folding.unit_of):
        groups.setdefault(u, []).append(i)
    page.units = {}
    for u, unit in enumerate(folding.units):
        if unit.kind == "node":
            continue
        members = groups[u]
        strip: tuple[tuple[int, ...], ...] = ()
        link = ""
        if unit.kind == "run":
            strip = _members(tree, unit.key, ids, scopes)
        if unit.kind in ("call", "run") and unit.size >= PAGE_AT_LEAST:
            call = tree.runs[unit.key].members[0] if unit.kind == "run" else unit.key
            sub = subgraph(graph, [ids[i] for i in range(len(ids)) if call in scopes[i]],
                           ids, folding, labels, tree, scopes)
            child = _page(sub, _stem(stem, tree.calls[call].path, taken), unit.label, above,
                          taken)
            page.children.append(child)
            link = child.stem + ".svg"
        box = Box(unit.key, unit.label, call_ids.get(unit.parent, 0), strip, link)
        for i in members:
            page.units[ids[i]] = box
    return page


def _call_ids(graph: Graph) -> dict[str, int]:
    """The model's call key (``path#k``) -> the call's id in ``graph.calls``."""
    counts: dict[str, int] = {}
    out: dict[str, int] = {}
    for call, (path, _parent) in graph.calls.items():
        if path:
            counts[path] = counts.get(path, 0) + 1
            out[f"{path}#{counts[path]}"] = call
    return out


def _members(tree: fd.ModuleTree, run: str, ids: list[int], scopes: list[tuple[str, ...]]
             ) -> tuple[tuple[int, ...], ...]:
    """The node ids of each member of a run, in order."""
    index = {k: m for m, k in enumerate(tree.runs[run].members)}
    out: list[list[int]] = [[] for _ in index]
    for i, chain in enumerate(scopes):
        for key in chain:
            m = index.get(key)
            if m is not None:
                out[m].append(ids[i])
                break
    return tuple(tuple(m) for m in out)


def _stem(parent: str, path: str, taken: set[str]) -> str:
    """``iter-0002--transformer.h.0``: a file name safe on every system, unique."""
    top = parent.split("--", 1)[0]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", path)[:80].strip("._") or "module"
    stem, n = f"{top}--{safe}", 1
    while stem in taken:
        n += 1
        stem = f"{top}--{safe}_{n}"
    return stem


def subgraph(graph: Graph, inside: list[int], ids: list[int], folding: fd.Folding,
             labels: dict[int, str], tree: fd.ModuleTree | None = None,
             scopes: list[tuple[str, ...]] | None = None) -> Graph:
    """The nodes ``inside`` (ids) as a graph of their own, with one leaf-shaped stand-in
    per box outside that feeds them ("from …") or that they feed ("to …"), named by the
    box that draws it on the page above (a run's member by its own name)."""
    keep = set(inside)
    position = {nid: k for k, nid in enumerate(ids)}
    out = Graph(iteration=graph.iteration, calls=graph.calls, complete=graph.complete)
    for nid in inside:
        out.nodes[nid] = graph.nodes[nid]
    stubs: dict[tuple[bool, str], GraphNode] = {}

    def where(nid: int) -> str:
        node = graph.nodes[nid]
        p = position[nid]
        u = folding.unit_of[p]
        unit = folding.units[u]
        if unit.kind == "run" and tree is not None and scopes is not None:
            members = set(tree.runs[unit.key].members)
            member = next((k for k in scopes[p] if k in members), "")
            if member:
                return tree.calls[member].label
        return labels.get(u, "") if unit.kind != "node" else (node.op or node.label)

    for e in graph.edges:
        src_in, dst_in = e.src in keep, e.dst in keep
        if src_in == dst_in:
            if src_in:
                out.edges.append(e)
            continue
        outside = e.dst if src_in else e.src
        name = f"{'to' if src_in else 'from'} {where(outside)}"
        stub = stubs.get((src_in, name))
        if stub is None:
            node = graph.nodes[outside]
            stub = stubs[(src_in, name)] = GraphNode(
                outside, "leaf", name=name, shape=node.shape, dtype=node.dtype,
                seq=node.seq, requires_grad=node.requires_grad, summary=node.summary,
                grad=node.grad)
        if src_in:
            out.edges.append(GraphEdge(e.src, stub.id, e.index))
        else:
            out.edges.append(GraphEdge(stub.id, e.dst, e.index))
    for stub in stubs.values():
        out.nodes[stub.id] = stub
    seen: set[tuple[int, int, int]] = set()
    out.edges = [e for e in out.edges if (e.src, e.dst, e.index) not in seen
                 and not seen.add((e.src, e.dst, e.index))]  # type: ignore[func-returns-value]
    out.backward_order = [i for i in graph.backward_order if i in out.nodes]
    return out


def index_units(graph: Graph) -> dict[int, Box] | None:
    """Each node of a connected group of integer index arithmetic (``folding``'s
    ``index ops ×N``) -> the one box that draws the group, in a graph drawn whole; None
    when it has no such group (most graphs: they keep the export's fast path)."""
    nodes = sorted(graph.nodes.values(), key=lambda n: (n.seq, n.id))
    bookkeeping = [fd.is_bookkeeping(n.kind, n.dtype, n.requires_grad) for n in nodes]
    if sum(bookkeeping) < fd.INDEX_GROUP:
        return None
    scopes, inputs, sigs, names, ids = fd.graph_records(graph)
    tree = fd.ModuleTree.build(scopes, inputs, sigs, names)
    folding = fd.fold(tree, fd.open_set(tree, auto=False), bookkeeping)
    call_ids = _call_ids(graph)
    out: dict[int, Box] = {}
    for i, u in enumerate(folding.unit_of):
        unit = folding.units[u]
        if unit.kind == "index":
            out[ids[i]] = Box(unit.key, unit.label, call_ids.get(unit.parent, 0))
    return out or None
