"""dyngraph's own layered layout: data flows down, boxes never overlap, clusters hold
their members, and any input (cycles, self-loops, unknown names) is laid out."""

from __future__ import annotations

import random

from dyngraph.exporters.layered import layered_layout, longest_path


def random_dag(n: int, seed: int) -> tuple[list[tuple[str, float, float]], list[tuple[str, str]],
                                          list[tuple[str, ...]]]:
    rng = random.Random(seed)
    nodes = [(f"v{i}", rng.uniform(20, 90), rng.choice([20.0, 32.0])) for i in range(n)]
    edges = [(f"v{rng.randrange(i)}", f"v{i}") for i in range(1, n)
             for _ in range(rng.randint(1, 2))]
    chains = [(f"c{i // 10}",) if i % 3 else () for i in range(n)]
    return nodes, edges, chains


def test_edges_run_downwards_and_boxes_do_not_overlap() -> None:
    for seed in range(5):
        nodes, edges, chains = random_dag(120, seed)
        lay = layered_layout(nodes, edges, chains)
        assert set(lay.nodes) == {name for name, _, _ in nodes}
        for t, h in edges:
            assert lay.nodes[t].y > lay.nodes[h].y, (t, h)
        rows: dict[float, list] = {}
        for box in lay.nodes.values():
            rows.setdefault(round(box.y, 3), []).append(box)
        for row in rows.values():
            row.sort(key=lambda b: b.x)
            for a, b in zip(row, row[1:], strict=False):
                assert a.x + a.width / 2 <= b.x - b.width / 2 + 1e-6
        for box in lay.nodes.values():
            assert 0 <= box.x - box.width / 2 and box.x + box.width / 2 <= lay.width
            assert 0 <= box.y - box.height / 2 and box.y + box.height / 2 <= lay.height


def test_a_parameter_sits_right_above_its_consumer() -> None:
    nodes = [("x", 40, 20), ("a", 40, 20), ("b", 40, 20), ("c", 40, 20), ("w", 40, 20),
             ("d", 40, 20)]
    edges = [("x", "a"), ("a", "b"), ("b", "c"), ("c", "d"), ("w", "d")]
    lay = layered_layout(nodes, edges)
    assert lay.nodes["w"].y == lay.nodes["c"].y  # one rank above d, not on the top rank
    assert longest_path([n for n, _, _ in nodes], edges) == 4


def test_clusters_frame_their_members() -> None:
    nodes, edges, chains = random_dag(60, 7)
    lay = layered_layout(nodes, edges, chains)
    for (name, _, _), chain in zip(nodes, chains, strict=True):
        if chain:
            x0, y0, x1, y1 = lay.clusters[chain[0]]
            box = lay.nodes[name]
            assert x0 < box.x - box.width / 2 and box.x + box.width / 2 < x1
            assert y0 < box.y - box.height / 2 and box.y + box.height / 2 < y1


def test_cycles_self_loops_and_strangers_are_laid_out() -> None:
    nodes = [("a", 30, 20), ("b", 30, 20), ("c", 30, 20)]
    lay = layered_layout(nodes, [("a", "b"), ("b", "c"), ("c", "a"), ("a", "a"), ("a", "zz")])
    assert set(lay.nodes) == {"a", "b", "c"} and len(lay.edges) == 3
    assert layered_layout([], []).nodes == {}


def test_a_deep_chain_is_fast_and_linear() -> None:
    n = 5_000
    nodes = [(f"v{i}", 50.0, 20.0) for i in range(n)]
    edges = [(f"v{i}", f"v{i + 1}") for i in range(n - 1)]
    lay = layered_layout(nodes, edges)  # would take Graphviz minutes; here about a second
    assert lay.nodes["v0"].y > lay.nodes[f"v{n - 1}"].y
