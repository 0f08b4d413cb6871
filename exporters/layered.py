"""dyngraph's own layered layout: the one that cannot fail.

Graphviz draws the nicest pictures, but its time grows far faster than the graph: a deep
chain of a few thousand ops (an RNN over 300 tokens, a residual stack applied in a loop)
took it from seconds to minutes. This layout is the classic Sugiyama scheme cut down to
what runs in near-linear time on the order the trace already gives:

1. ranks by longest path from the sources (a source sits just above its first consumer:
   parameters above the op that uses them);
2. a virtual point per rank an edge crosses, so edges bend around nodes;
3. a few barycentre sweeps to untangle each rank, keeping every cluster's members
   together (clusters sort as one block, by their members' barycentre);
4. x coordinates pulled towards each node's neighbours, then spread apart just enough;
5. edges as polylines through their virtual points.

Input and output are in points (y growing upwards, as ``dot -Tplain`` gives them), so a
``Layout`` from here feeds whatever a Graphviz layout feeds.

>>> lay = layered_layout([("a", 40, 20), ("b", 40, 20)], [("a", "b")])
>>> lay.nodes["a"].y > lay.nodes["b"].y
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .render import EdgePath, Layout, NodeBox

SWEEPS = 4  # barycentre passes (down, up, down, up): most of the gain comes from the first
# Past this many virtual points per real node, the longest edges are drawn straight instead
# of bending around nodes: memory and time stay linear whatever the graph.
MAX_VIRTUAL_PER_NODE = 8


@dataclass(slots=True)
class Spacing:
    """Gaps in points: between boxes in a rank, between ranks, inside a cluster's frame."""

    nodesep: float = 14.0
    ranksep: float = 22.0
    cluster_pad: float = 8.0
    cluster_label: float = 14.0  # room above a cluster's first rank for its label


def layered_layout(nodes: Sequence[tuple[str, float, float]], edges: Sequence[tuple[str, str]],
                   chains: Sequence[tuple[str, ...]] | None = None,
                   spacing: Spacing | None = None) -> Layout:
    """Lay out ``nodes`` (name, width, height; in the order they were made) and ``edges``.

    ``chains``: per node, the clusters it sits in, outermost first; a cluster's box comes
    back in ``Layout.clusters``.
    """
    sp = spacing or Spacing()
    n = len(nodes)
    index = {name: i for i, (name, _, _) in enumerate(nodes)}
    pairs = [(index[t], index[h]) for t, h in edges if t in index and h in index and t != h]
    chain_of: list[tuple[str, ...]] = list(chains) if chains is not None else [()] * n
    rank = _ranks(n, pairs)
    order, paths = _ordering(n, pairs, rank, chain_of)
    widths = [w for _, w, _ in nodes]
    xs = _x_positions(order, pairs, paths, widths, chain_of, sp)
    return _assemble(nodes, edges, pairs, rank, xs, paths, chain_of, sp)


# -- 1. ranks ------------------------------------------------------------------------------
def _topo(n: int, pairs: list[tuple[int, int]]) -> tuple[list[int], set[int]]:
    """A topological order (ties by creation order) and the edges that close a cycle."""
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for k, (t, h) in enumerate(pairs):
        succ[t].append(k)
        indeg[h] += 1
    order: list[int] = []
    back: set[int] = set()
    ready = [i for i in range(n) if indeg[i] == 0]
    ready.reverse()
    done = [False] * n
    nxt = 0
    while len(order) < n:
        if not ready:  # a cycle (only a hand-made graph has one): cut at the oldest node
            while done[nxt]:
                nxt += 1
            ready.append(nxt)
            for k, (t, h) in enumerate(pairs):
                if h == nxt and not done[t]:
                    back.add(k)
        i = ready.pop()
        if done[i]:
            continue
        done[i] = True
        order.append(i)
        fresh = []
        for k in succ[i]:
            h = pairs[k][1]
            indeg[h] -= 1
            if indeg[h] == 0 and not done[h]:
                fresh.append(h)
        ready.extend(sorted(fresh, reverse=True))
    return order, back


def longest_path(names: Sequence[str], edges: Sequence[tuple[str, str]]) -> int:
    """Edges on the longest path (cycles cut as ``layered_layout`` cuts them)."""
    index = {name: i for i, name in enumerate(names)}
    pairs = [(index[t], index[h]) for t, h in edges if t in index and h in index and t != h]
    return max(_ranks(len(names), pairs), default=0)


def _ranks(n: int, pairs: list[tuple[int, int]]) -> list[int]:
    order, back = _topo(n, pairs)
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for k, (t, h) in enumerate(pairs):
        if k not in back:
            preds[h].append(t)
            succs[t].append(h)
    rank = [0] * n
    for i in order:
        if preds[i]:
            rank[i] = max(rank[p] for p in preds[i]) + 1
    # Longest path puts everything as high as it can go: a token's embedding would sit at
    # the top with an edge 300 ranks long down to its step. So, consumers first, a node
    # with at least as many edges out as in sinks to just above its nearest consumer (a
    # weight beside its matmul); sinking shortens more edges than it stretches.
    for i in reversed(order):
        if succs[i] and len(succs[i]) >= len(preds[i]):
            rank[i] = max(min(rank[s] for s in succs[i]) - 1, rank[i])
    return rank


# -- 2, 3. virtual points and ordering -----------------------------------------------------
def _ordering(n: int, pairs: list[tuple[int, int]], rank: list[int], chains: list[tuple[str, ...]]
              ) -> tuple[list[list[int]], list[list[int]]]:
    """Per rank, its items in order (real nodes ``< n``, virtual points above); per edge,
    the items it passes through from tail to head."""
    budget = MAX_VIRTUAL_PER_NODE * max(n, 1)
    spans = sorted(range(len(pairs)), key=lambda k: abs(rank[pairs[k][1]] - rank[pairs[k][0]]))
    item_rank = list(rank)
    item_chain = list(chains)
    paths: list[list[int]] = [[] for _ in pairs]
    for k in spans:
        t, h = pairs[k]
        a, b = rank[t], rank[h]
        step = 1 if b > a else -1
        inner = list(range(a + step, b, step))
        path = [t]
        if len(inner) <= budget:
            budget -= len(inner)
            common = _common(chains[t], chains[h])
            for r in inner:
                path.append(len(item_rank))
                item_rank.append(r)
                item_chain.append(common)
        path.append(h)
        paths[k] = path
    ranks = max(item_rank, default=-1) + 1
    layers: list[list[int]] = [[] for _ in range(ranks)]
    for i, r in enumerate(item_rank):  # creation order first: a good start for the sweeps
        layers[r].append(i)
    up: list[list[int]] = [[] for _ in item_rank]
    down: list[list[int]] = [[] for _ in item_rank]
    for path in paths:
        for a, b in zip(path, path[1:], strict=False):
            if item_rank[b] == item_rank[a] + 1:
                up[b].append(a)
                down[a].append(b)
            elif item_rank[a] == item_rank[b] + 1:
                up[a].append(b)
                down[b].append(a)
    pos = [0.0] * len(item_rank)
    for layer in layers:
        for x, i in enumerate(layer):
            pos[i] = float(x)
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        seq = range(1, ranks) if downward else range(ranks - 2, -1, -1)
        for r in seq:
            layer = layers[r]
            near = up if downward else down
            bary = {}
            for i in layer:
                nb = near[i]
                bary[i] = sum(pos[j] for j in nb) / len(nb) if nb else pos[i]
            layer.sort(key=_grouped_key(layer, bary, item_chain))
            for x, i in enumerate(layer):
                pos[i] = float(x)
    return layers, paths


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return a[:k]


def _grouped_key(layer: list[int], bary: dict[int, float], chains: list[tuple[str, ...]]):  # type: ignore[no-untyped-def]
    """A sort key keeping each cluster's members of a rank together: a cluster sorts by its
    members' mean barycentre, a node inside it by its own."""
    totals: dict[tuple[str, ...], list[float]] = {}
    for i in layer:
        chain = chains[i]
        for depth in range(1, len(chain) + 1):
            acc = totals.setdefault(chain[:depth], [0.0, 0.0])
            acc[0] += bary[i]
            acc[1] += 1
    means = {c: s / k for c, (s, k) in totals.items()}

    def key(i: int) -> tuple[object, ...]:
        chain = chains[i]
        parts: list[object] = []
        for depth in range(1, len(chain) + 1):
            parts.append((means[chain[:depth]], chain[depth - 1]))
        parts.append((bary[i], ""))
        return tuple(parts)

    return key


# -- 4. x coordinates ----------------------------------------------------------------------
def _x_positions(layers: list[list[int]], pairs: list[tuple[int, int]], paths: list[list[int]],
                 widths: list[float], chains: list[tuple[str, ...]], sp: Spacing
                 ) -> list[float]:
    count = sum(len(layer) for layer in layers)
    width = list(widths) + [0.0] * (count - len(widths))
    chain = list(chains) + [()] * (count - len(chains))
    nb: list[list[int]] = [[] for _ in range(count)]
    for path in paths:
        for a, b in zip(path, path[1:], strict=False):
            nb[a].append(b)
            nb[b].append(a)
    for path in paths:  # virtual points: their chain is where the edge runs
        for v in path[1:-1]:
            chain[v] = _common(chain[path[0]], chain[path[-1]])

    def gap(a: int, b: int) -> float:
        """Centre-to-centre distance of neighbours ``a`` left of ``b`` in one rank."""
        ca, cb = chain[a], chain[b]
        shared = len(_common(ca, cb))
        frames = (len(ca) - shared) + (len(cb) - shared)  # cluster borders between them
        return (width[a] + width[b]) / 2 + sp.nodesep + frames * sp.cluster_pad

    x = [0.0] * count
    for layer in layers:
        at = 0.0
        for k, i in enumerate(layer):
            if k:
                at += gap(layer[k - 1], i)
            x[i] = at
    for sweep in range(4):
        seq = layers if sweep % 2 == 0 else list(reversed(layers))
        for layer in seq:
            want = [sum(x[j] for j in nb[i]) / len(nb[i]) if nb[i] else x[i] for i in layer]
            _place(layer, want, x, gap)
    _keep_clear(layers, x, width, chain, gap, sp)
    return x


def _keep_clear(layers: list[list[int]], x: list[float], width: list[float],
                chain: list[tuple[str, ...]], gap, sp: Spacing) -> None:  # type: ignore[no-untyped-def]
    """Move nodes out of the frames of top-level clusters they are not in.

    A frame is the box around its members on every rank it spans, so a stranger left
    inside it (on a rank where the cluster is narrow) would look like a member.
    """
    spans: dict[str, list[float]] = {}  # top cluster -> [left, right, first rank, last rank]
    for r, layer in enumerate(layers):
        for i in layer:
            if chain[i]:
                pad = sp.cluster_pad * len(chain[i])
                s = spans.setdefault(chain[i][0], [1e18, -1e18, r, r])
                s[0] = min(s[0], x[i] - width[i] / 2 - pad)
                s[1] = max(s[1], x[i] + width[i] / 2 + pad)
                s[3] = r
    crossing: dict[int, list[str]] = {}
    for c, (_, _, r0, r1) in spans.items():
        for r in range(int(r0), int(r1) + 1):
            crossing.setdefault(r, []).append(c)
    for r, clusters in crossing.items():
        layer = layers[r]
        moved = False
        for c in clusters:
            left, right = spans[c][0], spans[c][1]
            members = [k for k, i in enumerate(layer) if chain[i][:1] == (c,)]
            for k, i in enumerate(layer):
                if chain[i][:1] == (c,) or x[i] + width[i] / 2 <= left or \
                        x[i] - width[i] / 2 >= right:
                    continue
                before = members[0] > k if members else x[i] < (left + right) / 2
                x[i] = (left - sp.nodesep - width[i] / 2 if before
                        else right + sp.nodesep + width[i] / 2)
                moved = True
        if moved:  # restore the rank's order and gaps around the moved nodes
            layer.sort(key=lambda i: x[i])
            _place(layer, [x[i] for i in layer], x, gap)


def _place(layer: list[int], want: list[float], x: list[float], gap) -> None:  # type: ignore[no-untyped-def]
    """Positions as close to ``want`` as the order and gaps allow: the mean of a
    left-to-right and a right-to-left packing."""
    m = len(layer)
    if not m:
        return
    left = [0.0] * m
    for k in range(m):
        left[k] = want[k] if k == 0 else max(want[k], left[k - 1] + gap(layer[k - 1], layer[k]))
    right = [0.0] * m
    for k in range(m - 1, -1, -1):
        right[k] = want[k] if k == m - 1 else min(want[k],
                                                   right[k + 1] - gap(layer[k], layer[k + 1]))
    for k in range(m):
        x[layer[k]] = (left[k] + right[k]) / 2
    for k in range(1, m):  # the mean of two valid packings is valid, but keep it exact
        need = x[layer[k - 1]] + gap(layer[k - 1], layer[k])
        if x[layer[k]] < need:
            x[layer[k]] = need


# -- 5. coordinates and edges ----------------------------------------------------------------
def _assemble(nodes: Sequence[tuple[str, float, float]], edges: Sequence[tuple[str, str]],
              pairs: list[tuple[int, int]], rank: list[int], x: list[float],
              paths: list[list[int]], chains: list[tuple[str, ...]], sp: Spacing) -> Layout:
    n = len(nodes)
    ranks = max(rank, default=-1) + 1
    tall = [0.0] * ranks
    for i, (_, _, h) in enumerate(nodes):
        tall[rank[i]] = max(tall[rank[i]], h)
    # A rank where a cluster starts needs room for the cluster's label and frame.
    extra = [0.0] * ranks
    first: dict[tuple[str, ...], int] = {}
    for i in range(n):
        for d in range(1, len(chains[i]) + 1):
            c = chains[i][:d]
            if c not in first or rank[i] < first[c]:
                first[c] = rank[i]
    opened: dict[int, int] = {}
    for c, r in first.items():
        opened[r] = max(opened.get(r, 0), len(c))
    for r, depth in opened.items():
        extra[r] = depth * (sp.cluster_pad + sp.cluster_label) / 2 + sp.cluster_label / 2
    ys = [0.0] * ranks
    y = 0.0
    for r in range(ranks - 1, -1, -1):  # y grows upwards: the last rank at the bottom
        y += tall[r] / 2
        ys[r] = y
        y += tall[r] / 2 + sp.ranksep + extra[r]
    lo = min((x[i] - nodes[i][1] / 2 for i in range(n)), default=0.0)
    margin = sp.cluster_pad * (1 + max((len(c) for c in chains), default=0))
    shift = margin - lo
    lay = Layout(0.0, 0.0)
    for i, (name, w, h) in enumerate(nodes):
        lay.nodes[name] = NodeBox(name, x[i] + shift, ys[rank[i]] + margin, w, h)
    mid_rank = _virtual_ranks(paths, rank)
    for (t, h), path in zip(pairs, paths, strict=True):
        a, b = lay.nodes[nodes[t][0]], lay.nodes[nodes[h][0]]
        down = a.y >= b.y
        pts = [(a.x, a.y - a.height / 2 if down else a.y + a.height / 2)]
        for v in path[1:-1]:
            pts.append((x[v] + shift, ys[mid_rank[v]] + margin))
        pts.append((b.x, b.y + b.height / 2 if down else b.y - b.height / 2))
        lay.edges.append(EdgePath(nodes[t][0], nodes[h][0], pts))
    _cluster_boxes(lay, nodes, chains, sp)
    right = max((b.x + b.width / 2 for b in lay.nodes.values()), default=0.0)
    top = max((b.y + b.height / 2 for b in lay.nodes.values()), default=0.0)
    for _x0, _y0, x1, y1 in lay.clusters.values():
        right, top = max(right, x1), max(top, y1)
    lay.width, lay.height = right + margin, top + margin
    return lay


def _virtual_ranks(paths: list[list[int]], rank: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for path in paths:
        if len(path) <= 2:
            continue
        a, b = rank[path[0]], rank[path[-1]]
        step = 1 if b > a else -1
        for k, v in enumerate(path[1:-1], 1):
            out[v] = a + step * k
    return out


def _cluster_boxes(lay: Layout, nodes: Sequence[tuple[str, float, float]],
                   chains: list[tuple[str, ...]], sp: Spacing) -> None:
    """Each cluster's frame: around its members and its nested clusters' frames."""
    boxes: dict[tuple[str, ...], list[float]] = {}
    for i, (name, _, _) in enumerate(nodes):
        b = lay.nodes[name]
        chain = chains[i]
        for d in range(1, len(chain) + 1):
            pad = sp.cluster_pad * (len(chain) - d + 1)
            box = boxes.setdefault(chain[:d], [1e18, 1e18, -1e18, -1e18])
            box[0] = min(box[0], b.x - b.width / 2 - pad)
            box[1] = min(box[1], b.y - b.height / 2 - pad)
            box[2] = max(box[2], b.x + b.width / 2 + pad)
            box[3] = max(box[3], b.y + b.height / 2 + pad + sp.cluster_label)
    for chain in sorted(boxes, key=len, reverse=True):  # a frame holds its children's
        if len(chain) > 1:
            parent = boxes[chain[:-1]]
            child = boxes[chain]
            parent[0] = min(parent[0], child[0] - sp.cluster_pad)
            parent[1] = min(parent[1], child[1] - sp.cluster_pad)
            parent[2] = max(parent[2], child[2] + sp.cluster_pad)
            parent[3] = max(parent[3], child[3] + sp.cluster_label)
    for chain, (x0, y0, x1, y1) in boxes.items():
        lay.clusters[chain[-1]] = (x0, y0, x1, y1)
