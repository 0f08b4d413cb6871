"""What the graph pane draws: the graph's nodes folded into boxes by module call.

The folding itself (which calls, which runs of repeated siblings, what is open) is
``dyngraph.capture.folding``, shared with the exporters; this module turns its boxes into
the pane's ``ViewGraph``: an open call is a frame, a folded call, run or index group one
box, and only those boxes are laid out. A run's box is wide enough for a gradient-norm
strip (one cell per member, drawn by the canvas), and an open run frames its members.

Everything that depends on the graph's structure alone (scopes, the module tree) is worked
out once per structure (``Prepared``), so opening or closing a module costs a fold and a
layout of what is shown, never a pass over the tree again.

Nothing here imports Textual.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from dyngraph.capture import folding as fd

from . import raster
from .numbers import plural
from .raster import ViewCluster, ViewEdge, ViewGraph, ViewNode

# (kind, op, name, shape, module, requires_grad, inputs as creation indices, scope, dtype):
# scope is the module calls an op ran in, outermost first, as "path#k" (the k-th call of
# that module in the iteration); () at top level, for leaves, and for traces without calls.
Sig = tuple[Any, ...]

# A parameter, leaf or AccumulateGrad with at least this many edges is drawn as one box per
# edge, beside its consumer: dot's layout time exploded on one weight feeding every step of
# a loop (60 steps: 8.2 s -> 0.05 s; bench/tui_canvas.py). 0 never copies. A weight used
# twice (nanoGPT's embedding tied to its output layer) stays one box: one parameter is one
# node, and one long edge costs the layout little.
COPY_SHARED = 3
_COPYABLE = ("param", "leaf", "accumulate")
STRIP_CELLS = 48  # the most cells a run's gradient strip takes (members share cells beyond)
UNIT_KIND = "module"  # the ViewNode kind of a folded call, run or index group


@dataclass(frozen=True, slots=True)
class Collapse:
    """What is open: with ``fold`` the module-level picture of a big graph
    (``folding.auto_expanded``), else everything; modules deeper than ``depth`` closed;
    then ``collapsed`` closes and ``expanded`` opens the call keys (``enc#1``), run keys,
    index keys or module paths (``enc``: every call of it) they name."""

    depth: int | None = None
    collapsed: frozenset[str] = frozenset()
    expanded: frozenset[str] = frozenset()
    fold: bool = False

    @property
    def user(self) -> tuple[frozenset[str], frozenset[str]]:
        return (self.collapsed, self.expanded)

    def owner(self, module: str) -> str | None:
        """The closed module a node of ``module`` disappears into, if any (by path; graphs
        with calls fold per call, see ``build_view``)."""
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


def node_modules(sigs: list[Sig]) -> list[str]:
    """Each node's module; a parameter named ``enc.0.weight`` joins module ``enc.0``, or the
    nearest module holding it that ran ops (MultiheadAttention's ``out_proj.weight`` joins
    the attention: ``out_proj`` is never called)."""
    out = [sig[4] for sig in sigs]
    known: set[str] = set()
    for path in set(out):  # (each distinct path once: 50,000 nodes, 12,000 paths)
        while path and path not in known:  # it and the modules around it
            known.add(path)
            path = path.rpartition(".")[0]
    for i, sig in enumerate(sigs):
        if not out[i] and sig[0] in ("param", "accumulate") and "." in sig[2]:
            owner = sig[2].rsplit(".", 1)[0]
            while owner and owner not in known:
                owner = owner.rpartition(".")[0]
            out[i] = owner
    return out


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


# -- per structure -----------------------------------------------------------------------
class Prepared:
    """What folding needs of a structure, worked out once: scopes and the module tree."""

    def __init__(self, sigs: list[Sig]) -> None:
        self.sigs = sigs
        modules = node_modules(sigs)
        scopes = _leaf_scopes(sigs, modules)
        self.per_call = any(scopes)
        if not self.per_call:  # a trace without calls: nest by module path
            scopes = [_path_chain(m) for m in modules]
        self.modules = modules
        self.scopes = scopes
        # The signatures' fields as columns, in one pass (signatures made by
        # ``Canonical`` have all nine fields; a few tests give six: no dtype).
        if sigs and all(len(s) == 9 for s in sigs):
            kinds, ops, names, shapes, _, grads, inputs, _, dtypes = zip(*sigs, strict=True)
        else:
            kinds, ops, names, shapes, grads, inputs = (
                tuple(s[k] for s in sigs) for k in (0, 1, 2, 3, 5, 6))
            dtypes = tuple(s[8] if len(s) > 8 else "" for s in sigs)
        self.tree = fd.ModuleTree.build(
            scopes, inputs, list(zip(kinds, ops, shapes, dtypes, grads, strict=True)),
            [n if k in _COPYABLE else "" for k, n in zip(kinds, names, strict=True)])
        # Once per (kind, dtype, requires_grad): a graph has a handful of them.
        keys = list(zip(kinds, dtypes, grads, strict=True))
        known = {key: fd.is_bookkeeping(*key) for key in set(keys)}
        self.bookkeeping = [known[key] for key in keys]


_prepared: tuple[list[Sig], Prepared] | None = None
_prepared_lock = threading.Lock()


def prepare(sigs: list[Sig]) -> Prepared:
    """``Prepared(sigs)``, reusing the last one for the same structure (an expand or a
    collapse lays out the same graph again)."""
    global _prepared
    with _prepared_lock:
        last = _prepared
    if last is not None and (last[0] is sigs or (len(last[0]) == len(sigs)
                                                 and last[0] == sigs)):
        return last[1]
    prepared = Prepared(sigs)
    with _prepared_lock:
        _prepared = (sigs, prepared)
    return prepared


def opened(prepared: Prepared, rule: Collapse) -> frozenset[str]:
    """The open keys under ``rule`` (see ``folding.open_set``)."""
    return fd.open_set(prepared.tree, auto=_auto(prepared, rule), depth=rule.depth,
                       expand=rule.expanded, collapse=rule.collapsed)


def _auto(prepared: Prepared, rule: Collapse) -> bool:
    """Does the picture start from the module-level one (a big graph, folding on)?"""
    return rule.fold and prepared.tree.n > fd.FOLD_ABOVE


# -- the view ------------------------------------------------------------------------------
def build_view(sigs: list[Sig], rule: Collapse, compact: bool,
               copy_shared: int | None = None) -> tuple[ViewGraph, list[int]]:
    """The boxes to draw for ``sigs`` under ``rule``; also creation index -> view node.

    Frames are module *calls* when the trace records them (each call of a shared block
    is its own frame, so data flows down the page), else modules; a closed call is one
    box, a closed run of repeated calls one box, a group of integer index ops one box.
    A parameter/leaf/AccumulateGrad box with ``copy_shared`` (None: ``COPY_SHARED``; 0:
    never) or more edges is split into one copy per edge (``ViewNode.copy_of``); creation
    indices map to the first copy.
    """
    prepared = prepare(sigs)
    tree = prepared.tree
    folding = fd.fold(tree, opened(prepared, rule), prepared.bookkeeping)
    # An open run frames its members when it was folded to begin with (a big graph) or
    # the user opened it; a small graph's repeated blocks draw as they always did.
    framed = set(rule.expanded) if not _auto(prepared, rule) else set(tree.runs)
    view = ViewGraph(compact=compact)
    clusters: dict[str, int] = {}

    def cluster_of(key: str, birth: int, parent: int | None, depth: int) -> int:
        ci = clusters.get(key)
        if ci is None:
            if key in tree.runs:
                path, label = "", tree.runs[key].label
            else:
                call = tree.calls[key]
                path, label = call.path, call.label
            ci = clusters[key] = len(view.clusters)
            view.clusters.append(ViewCluster(path, label, parent, birth, depth, key=key))
        return ci

    def frame_of(frame: str, birth: int, member: str = "") -> int | None:
        """The cluster of open call ``frame`` (runs it is a member of framed too)."""
        keys: list[str] = []
        for key in (*tree.chain(frame), member) if frame or member else ():
            if not key:
                continue
            run = tree.calls[key].run
            if run and run in folding.expanded and run in framed:
                keys.append(run)
            if key != member:
                keys.append(key)
        ci = None
        for depth, key in enumerate(keys, 1):
            ci = cluster_of(key, birth, ci, depth)
        return ci

    unit_view: list[int] = []
    counts = _op_counts(sigs, folding)
    for u, unit in enumerate(folding.units):
        unit_view.append(len(view.nodes))
        if unit.kind == "node":
            i = unit.first
            view.nodes.append(ViewNode(f"n{i}", sigs[i][0], node_label(sigs[i], compact), i,
                                       frame_of(unit.parent, i)))
            continue
        member = unit.key if unit.kind == "call" and tree.calls[unit.key].run else ""
        cluster = frame_of(unit.parent, unit.first, member)
        members = len(tree.runs[unit.key].members) if unit.kind == "run" else 0
        view.nodes.append(ViewNode(f"m{u}", UNIT_KIND,
                                   _unit_label(unit, counts[u], compact, members),
                                   unit.first, cluster, module=unit.key, members=members))
    to_view = [unit_view[u] for u in folding.unit_of]
    _add_edges(view, sigs, folding, unit_view, tree)
    least = COPY_SHARED if copy_shared is None else copy_shared
    if least > 0:
        _copy_shared(view, least)
    return view, to_view


def _op_counts(sigs: list[Sig], folding: fd.Folding) -> list[int]:
    counts = [0] * len(folding.units)
    for i, u in enumerate(folding.unit_of):
        if sigs[i][0] in ("op", "backward"):
            counts[u] += 1
    return counts


def _unit_label(unit: fd.Unit, ops: int, compact: bool, members: int) -> str:
    if unit.kind == "run":
        first = fd.path_of(unit.key[len(fd.RUN_PREFIX):])
        text = unit.label if not compact else (
            f"{'.'.join(first.split('.')[-2:])}… ×{members}")
        label = raster.fit(text, raster.COMPACT_LABEL + 8 if compact else raster.MAX_LABEL + 12)
        if not compact:  # room for the strip: one cell per member, up to STRIP_CELLS
            label = label.ljust(min(members, STRIP_CELLS) - 2)
        return label
    if unit.kind == "index":
        return raster.fit(unit.label if not compact else f"index ×{unit.size}",
                          raster.COMPACT_LABEL + 4 if compact else raster.MAX_LABEL)
    short = ".".join(unit.label.split(".")[-2:])  # "layers.3", not a bare "3"
    text = f"{short} ×{ops}" if compact else f"{unit.label} (×{plural(ops, 'op')})"
    return raster.fit(text, raster.COMPACT_LABEL + 4 if compact else raster.MAX_LABEL + 12)


def _add_edges(view: ViewGraph, sigs: list[Sig], folding: fd.Folding, unit_view: list[int],
               tree: fd.ModuleTree) -> None:
    """Edges between boxes; a weight inside one closed call of a module feeding another
    call of that module is inside both boxes: no edge between them."""
    units = folding.units
    candidates = {(src, dst) for src, dst in folding.edges
                  if units[src].kind in ("call", "run") and units[dst].kind in ("call", "run")
                  and _same_module(units[src], units[dst], tree)}
    if candidates:
        candidates -= _data_edges(sigs, folding.unit_of, candidates)
    view.edges = [ViewEdge(unit_view[src], unit_view[dst], birth)
                  for (src, dst), birth in zip(folding.edges, folding.edge_birth, strict=True)
                  if (src, dst) not in candidates]


def _same_module(a: fd.Unit, b: fd.Unit, tree: fd.ModuleTree) -> bool:
    def path(u: fd.Unit) -> str:
        key = tree.runs[u.key].members[0] if u.kind == "run" else u.key
        return tree.calls[key].path
    return path(a) == path(b)


def _data_edges(sigs: list[Sig], unit_of: list[int], pairs: set[tuple[int, int]]
                ) -> set[tuple[int, int]]:
    """The box pairs among ``pairs`` that some op's output (not only a leaf) connects."""
    found: set[tuple[int, int]] = set()
    n = len(unit_of)
    for i, sig in enumerate(sigs):
        dst = unit_of[i]
        for j in sig[6]:
            if 0 <= j < n and (unit_of[j], dst) in pairs and sigs[j][0] not in _COPYABLE:
                found.add((unit_of[j], dst))
    return found


def _path_chain(path: str) -> tuple[str, ...]:
    parts = path.split(".") if path else []
    return tuple(".".join(parts[:k]) for k in range(1, len(parts) + 1))


def _leaf_scopes(sigs: list[Sig], modules: list[str]) -> list[tuple[str, ...]]:
    """Each node's scope; a leaf takes its first user's, cut at the call of the leaf's own
    module or of one holding it (``folding.leaf_scope``), or () if that user is not in it."""
    scopes = [s[7] if len(s) > 7 else () for s in sigs]
    if not any(scopes):
        return scopes
    first: dict[int, int] = {}  # node -> its first user (last written, going back)
    for i in range(len(sigs) - 1, -1, -1):
        for j in sigs[i][6]:
            first[j] = i
    cut: dict[tuple[str, int], tuple[str, ...]] = {}  # (a weight used by 96 blocks alike)
    for i, sig in enumerate(sigs):
        if sig[0] in _COPYABLE and modules[i] and i in first:
            user = scopes[first[i]]
            key = (modules[i], id(user))
            got = cut.get(key)
            if got is None:
                got = cut[key] = fd.leaf_scope(modules[i], user)
            scopes[i] = got
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


def calls_per_path(sigs: list[Sig]) -> Counter[str]:
    """How many calls each module path has (for tests and labels)."""
    return Counter(k.rpartition("#")[0] for s in sigs for k in set(s[7] if len(s) > 7 else ()))
