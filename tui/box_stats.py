"""Per-box facts of the graph pane: NaN/Inf, largest gradient norm, a run's strip.

A folded box stands for up to the whole graph (a run of 72 blocks, 50,000 nodes), so
asking each box in turn would cost a pass over the graph per box per frame. ``BoxStats``
works them out in one pass when the graph or its gradients change, and by difference
while a step only adds nodes (the forward pass: nothing to recount but the new node).

Nothing here imports Textual.

>>> stats = BoxStats()
>>> stats.sync(entry, graph, ids, upto)     # doctest: +SKIP
>>> stats.nonfinite(box), stats.norm(box)   # doctest: +SKIP
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from dyngraph.capture.folding import INDEX_PREFIX, RUN_PREFIX
from dyngraph.capture.graph import Graph


class BoxStats:
    """NaN/Inf flags and largest finite gradient norms per primary box of one entry.

    Kept by difference: nodes that came or went since the last ``sync`` and gradients
    that appeared or were hidden (a step back through backward) are counted in or out;
    largest norms live in a heap per box whose hidden entries are dropped when they
    reach the top. A new entry, graph or iteration counts everything once.
    """

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._reset()
        self._member_key: tuple[object, ...] | None = None
        self._member_norms: list[float | None] = []

    def _reset(self) -> None:
        self._upto = 0
        self._counted: list[int] = []  # the node ids counted in, in creation order
        self._order: list[int] = []  # the backward order counted so far
        self._values: dict[int, tuple[int, bool]] = {}  # NaN/Inf node -> (box, True)
        self._grads: dict[int, tuple[int, bool]] = {}  # node -> (box, NaN/Inf grad)
        self._bad: dict[int, int] = {}  # box -> nodes holding NaN/Inf
        self._heaps: dict[int, list[tuple[float, int]]] = {}  # box -> (-norm, node)

    def sync(self, entry: Any, graph: Graph | None, ids: list[int], upto: int,
             index: dict[int, int] | None = None) -> None:
        """Bring the tables up to ``graph`` drawn by ``entry`` up to creation index
        ``upto`` (``ids``: node ids in creation order; ``index``: id -> creation index)."""
        if entry is None or graph is None:
            self._key = None
            return
        upto = min(upto, len(entry.to_box), len(ids))
        key = (id(entry), id(graph), graph.iteration)
        if key != self._key:
            self._key = key
            self._reset()
        nodes, to_box = graph.nodes, entry.to_box
        counted = self._counted
        while len(counted) > upto:  # nodes gone (a step back)
            node_id = counted.pop()
            self._drop_grad(node_id)
            box, bad = self._values.pop(node_id, (0, False))
            if bad:
                self._less(box)
        start = len(counted)
        if upto > start:  # nodes come (a jump: 50,000 of them; only NaN/Inf is kept)
            came = ids[start:upto]
            counted += came
            get, values, per_box = nodes.get, self._values, self._bad
            for i, node in enumerate(map(get, came), start):
                s = node.summary if node is not None else None
                if s is not None and (s.nan or s.inf):
                    box = to_box[i]
                    values[node.id] = (box, True)  # type: ignore[union-attr]
                    per_box[box] = per_box.get(box, 0) + 1
        self._upto = upto
        order = graph.backward_order
        if order != self._order:
            self._regrad(entry, graph, index or {nid: i for i, nid in enumerate(ids)},
                         order)

    def _regrad(self, entry: Any, graph: Graph, index: dict[int, int],
                order: list[int]) -> None:
        """Count gradients in or out to match ``order`` (what backward reached so far)."""
        same = 0
        old = self._order
        n = min(len(old), len(order))
        while same < n and old[same] == order[same]:
            same += 1
        for node_id in old[same:]:
            self._drop_grad(node_id)
        for node_id in order[same:]:
            node = graph.nodes.get(node_id)
            g = node.grad if node is not None else None
            if g is None or node_id in self._grads:
                continue
            i = index.get(node_id)
            if i is None or i >= self._upto:
                continue
            box = entry.to_box[i]
            bad = not g.finite or (g.norm is not None and not math.isfinite(g.norm))
            self._grads[node_id] = (box, bad)
            if bad:
                self._bad[box] = self._bad.get(box, 0) + 1
            elif g.norm is not None:
                heapq.heappush(self._heaps.setdefault(box, []), (-g.norm, node_id))
        self._order = list(order)

    def _drop_grad(self, node_id: int) -> None:
        box, bad = self._grads.pop(node_id, (0, None))  # type: ignore[arg-type]
        if bad:
            self._less(box)

    def _less(self, box: int) -> None:
        left = self._bad.get(box, 0) - 1
        if left > 0:
            self._bad[box] = left
        else:
            self._bad.pop(box, None)

    def nonfinite(self, box: int) -> bool:
        return box in self._bad

    def norm(self, box: int) -> float | None:
        heap = self._heaps.get(box)
        while heap and heap[0][1] not in self._grads:
            heapq.heappop(heap)  # a gradient hidden since (or its node gone)
        return -heap[0][0] if heap else None

    # -- runs ------------------------------------------------------------------------------
    def member_norms(self, entry: Any, graph: Graph, ids: list[int], upto: int
                     ) -> list[float | None]:
        """Per node (creation order, the first ``upto``): the gradient norm a run's strip
        compares its members by. Parameters' gradients when the graph has any (a block's
        weights say whether it learns; the residual stream's norm is the same in every
        block), else every node's; inf for NaN/Inf."""
        key = (id(entry), id(graph), graph.iteration, len(graph.backward_order), upto)
        if key == self._member_key:
            return self._member_norms
        nodes = [graph.nodes.get(ids[i]) for i in range(min(upto, len(ids)))]
        params = any(n is not None and n.kind == "param" and n.grad is not None
                     for n in nodes)
        out: list[float | None] = []
        for n in nodes:
            g = n.grad if n is not None else None
            if g is None or g.norm is None or (params and n.kind != "param"):  # type: ignore[union-attr]
                out.append(None)
            else:
                out.append(g.norm if g.finite and math.isfinite(g.norm) else math.inf)
        self._member_key, self._member_norms = key, out
        return out

    def strip(self, entry: Any, graph: Graph, ids: list[int], upto: int, box: int,
              fill: Any) -> list[str | None]:
        """The colour of each cell of run box ``box``'s strip (None: no gradient; "!"
        NaN/Inf): one cell per member, neighbours sharing a cell past its width.
        ``fill(norm)`` is the colour scale."""
        node, b = entry.scene.view.nodes[box], entry.scene.boxes[box]
        cells = max(b.width - 2, 1)
        strip: list[str | None] = [None] * cells
        tree = entry.tree
        if tree is None or node.module not in tree.runs or not graph.backward_order:
            return strip  # (before backward no member has a gradient: nothing to count)
        per_member = tree.member_values(node.module,
                                        self.member_norms(entry, graph, ids, upto))
        m = len(per_member)
        for c in range(min(cells, m)):
            # Past one cell per member, neighbours share a cell (its largest norm shows).
            lo, hi = (c, c + 1) if m <= cells else (c * m // cells, (c + 1) * m // cells)
            best = max((v for v in per_member[lo:hi] if v is not None), default=None)
            if best is not None:
                strip[c] = "!" if math.isinf(best) else fill(best)
        return strip

    def unit_info(self, entry: Any, graph: Graph, ids: list[int], upto: int, box: int
                  ) -> dict[str, object]:
        """What folded box ``box`` stands for, for the inspector: label, kind, nodes, ops,
        largest gradient norm, NaN/Inf count and, for a run, each member's largest norm."""
        node_view = entry.scene.view.nodes[box]
        key = node_view.module
        upto = min(upto, len(entry.to_box), len(ids))
        nodes = ops = bad = 0
        for i in range(entry.scene.boxes[box].birth, upto):
            if entry.to_box[i] != box:
                continue
            node = graph.nodes.get(ids[i])
            if node is None:
                continue
            nodes += 1
            ops += node.kind in ("op", "backward")
            bad += node.has_nonfinite
        label = node_view.label.split(" (×")[0].rstrip()
        kind = ("run" if key.startswith(RUN_PREFIX) else "index ops"
                if key.startswith(INDEX_PREFIX) else "module call")
        info: dict[str, object] = {"label": label, "kind": kind, "nodes": nodes, "ops": ops,
                                   "norm": self.norm(box), "nonfinite": bad}
        tree = entry.tree
        if tree is not None and key in tree.runs:
            members = tree.runs[key].members
            info["members"] = tree.member_values(
                key, self.member_norms(entry, graph, ids, upto))
            info["first"], info["last"] = (tree.calls[members[0]].label,
                                           tree.calls[members[-1]].label)
        return info

