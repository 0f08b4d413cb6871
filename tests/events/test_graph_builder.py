"""GraphBuilder's fast paths build the same graphs as the event-by-event ``add``."""

from __future__ import annotations

import dataclasses

import numpy as np

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture.graph import GraphBuilder, GraphNode, _node, build_graphs


def _run(stats: str = "cheap") -> list[ev.Event]:
    dg.manual_seed(0)
    model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.ReLU(), dg.nn.Linear(8, 2))
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    x = dg.tensor(np.ones((3, 4), np.float32))
    with dg.trace(stats=stats) as t:
        for _ in range(3):
            opt.zero_grad()
            loss = (model(x) * 2.0).sum()
            loss.backward()
            opt.step()
        y = model(x)  # an unfinished iteration
        _ = y
    return list(t.events)


def _slow(events: list[ev.Event]) -> list:
    builder = GraphBuilder()
    out = [g for g in map(builder.add, events) if g is not None]
    if builder.current.nodes:
        out.append(builder.current)
    return out


def test_node_builder_sets_every_field() -> None:
    names = [f.name for f in dataclasses.fields(GraphNode)]
    node = _node(7, "op", "mul", "w", (2,), "float64", "m", "f.py", 3, "fn", 9, True, False,
                 {"dim": 1}, None, "MulBackward0", 2, True, 5)
    for name in names:  # no slot left unset
        getattr(node, name)
    expected = GraphNode(id=7, kind="op", op="mul", name="w", shape=(2,), dtype="float64",
                         module="m", file="f.py", line=3, function="fn", seq=9,
                         requires_grad=True, grad_enabled=False, attrs={"dim": 1},
                         grad_fn="MulBackward0", occurrence=2, carried=True, call=5)
    assert node == expected


def test_build_graphs_and_add_all_agree_with_add() -> None:
    events = _run()
    slow = _slow(events)
    fast = list(build_graphs(events))
    assert fast == slow
    assert len(fast) == 4 and [g.complete for g in fast] == [True, True, True, False]
    builder = GraphBuilder()
    last = builder.add_all(events)
    assert last == slow[2] and builder.finished == slow[:3]
    assert builder.current == slow[3]
    assert all(g.edges and g.backward_order for g in slow[:3])


def test_subclassed_events_still_dispatch() -> None:
    class MyOp(ev.Op):
        __slots__ = ()

    op = MyOp(seq=1, iteration=1, op="mul", output=3, inputs=(-1,))
    builder = GraphBuilder()
    builder.add(op)
    assert builder.current.nodes[3].op == "mul"
