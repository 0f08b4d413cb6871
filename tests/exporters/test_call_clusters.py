"""One cluster per module call: repeated calls of a block sit along the data flow."""

from __future__ import annotations

import re

from dyngraph.exporters import build_dot, to_dot

import dyngraph
import dyngraph.nn as nn


def shared_loop(repeats: int = 3) -> dyngraph.capture.graph.Graph:
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(2)])
    with dyngraph.trace() as t:
        h = dyngraph.randn(2, 4)
        for _ in range(repeats):
            for block in blocks:
                h = h + block(h)
        h.sum().backward()
    return t.iterations[0].graph


def clusters(dot: str) -> list[str]:
    return re.findall(r'label="([^"]*)"; labelloc=t', dot)


def test_each_call_of_a_block_is_its_own_cluster() -> None:
    dot = to_dot(shared_loop(3))
    labels = clusters(dot)
    for block in ("0", "1"):  # each block called three times, back to back with the other
        assert [lb for lb in labels if lb.startswith(f"{block} #")] == [
            f"{block} #1", f"{block} #2", f"{block} #3"]
        assert [lb for lb in labels if lb.startswith(f"{block}.0 #")] == [
            f"{block}.0 #1", f"{block}.0 #2", f"{block}.0 #3"]
    # each call's Linear has its own copy of the weight beside it
    doc = build_dot(shared_loop(3))
    stack = [doc.root]
    while stack:
        c = stack.pop()
        stack.extend(c.children)
        if c.label.startswith("0.0 #"):
            assert sorted(n.lines[0] for n in c.nodes) == ["0.0.bias", "0.0.weight", "linear"]


def test_collapsing_draws_one_box_per_call_without_edges_between_calls() -> None:
    doc = build_dot(shared_loop(3), depth=0)
    boxes = [n for n in doc.nodes() if n.name.startswith("m_")]
    assert len(boxes) == 6
    names = {n.name for n in boxes}
    # data flows from call to call through the top-level adds, never box to box
    assert not [e for e in doc.edges if e.tail in names and e.head in names]
