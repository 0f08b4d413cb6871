"""Folding runs of identical sibling modules (``layers.0`` .. ``layers.11``) into one.

Two sibling modules are identical when their subtrees hold the same ops, shapes, dtypes,
relative module paths and parameter names, wired the same way inside. A run of two or
more identical siblings, consecutive in order of execution, is drawn as its first member
labelled ``encoder.layers.0-11 ×12``; the others' nodes map onto the first one's, and the
edges that chained one block to the next are dropped.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from dyngraph.capture.graph import Graph, GraphNode


@dataclass(slots=True)
class Folds:
    representative: dict[int, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # node id -> {run number: block number within that run}; nested runs add entries.
    block_of: dict[int, dict[int, int]] = field(default_factory=dict)

    def resolve(self, node_id: int) -> int:
        """The node that draws ``node_id`` (following folds nested inside folds)."""
        rep = self.representative
        while node_id in rep:
            node_id = rep[node_id]
        return node_id

    def crosses(self, src: int, dst: int) -> bool:
        """True for an edge between two different blocks of one folded run."""
        a = self.block_of.get(src)
        b = self.block_of.get(dst)
        if not a or not b:
            return False
        return any(run in b and b[run] != block for run, block in a.items())


def _relative(path: str, base: str) -> str:
    if path == base:
        return ""
    if path.startswith(base + "."):
        return path[len(base) + 1:]
    return "\0" + path  # outside the block: keep it absolute, and distinct


def find_folds(graph: Graph, ordered: list[GraphNode], owner: dict[int, str]) -> Folds:
    subtree: dict[str, list[GraphNode]] = defaultdict(list)
    children: dict[str, list[str]] = defaultdict(list)
    for node in ordered:
        path = owner[node.id]
        while path:
            members = subtree[path]
            if not members:
                parent = path.rpartition(".")[0]
                children[parent].append(path)
            members.append(node)
            path = path.rpartition(".")[0]
    inputs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in graph.edges:
        inputs[e.dst].append((e.src, e.index))

    def signature(path: str) -> tuple[object, ...]:
        nodes = subtree[path]
        local = {n.id: i for i, n in enumerate(nodes)}
        parts: list[object] = []
        for n in nodes:
            name = _relative(n.name, path) if n.name and not n.op else ""
            parts.append((n.kind, n.op, n.shape, n.dtype, _relative(owner[n.id], path), name))
            for src, index in inputs.get(n.id, ()):
                if src in local:
                    parts.append((local[src], index))
        return tuple(parts)

    folds = Folds()
    runs = 0

    def visit(path: str) -> None:
        nonlocal runs
        kids = children.get(path, [])
        sigs = [signature(k) for k in kids]
        i = 0
        while i < len(kids):
            j = i + 1
            while j < len(kids) and sigs[j] == sigs[i]:
                j += 1
            run = kids[i:j]
            if len(run) > 1:
                runs += 1
                rep_nodes = subtree[run[0]]
                for n in rep_nodes:
                    folds.block_of.setdefault(n.id, {})[runs] = 0
                for b, kid in enumerate(run[1:], start=1):
                    for n, r in zip(subtree[kid], rep_nodes, strict=True):
                        folds.representative[n.id] = r.id
                        folds.block_of.setdefault(n.id, {})[runs] = b
                folds.labels[run[0]] = _run_label(path, run)
            visit(run[0])
            i = j

    visit("")
    return folds


def _run_label(parent: str, run: list[str]) -> str:
    names = [k.rpartition(".")[2] for k in run]
    if all(n.isdigit() for n in names) and [int(n) for n in names] == list(
        range(int(names[0]), int(names[0]) + len(names))
    ):
        base = f"{run[0]}-{names[-1]}"
    else:
        base = f"{run[0]} ... {names[-1]}"
    return f"{base} ×{len(run)}"
