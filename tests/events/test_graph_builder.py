"""GraphBuilder's fast paths build the same graphs as the event-by-event ``add``."""

from __future__ import annotations

import dataclasses

import numpy as np

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture.graph import GraphBuilder, GraphNode, _leaf_node, _op_node, build_graphs


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


def test_node_builders_set_every_field() -> None:
    names = [f.name for f in dataclasses.fields(GraphNode)]
    op = ev.Op(seq=9, iteration=1, op="mul", inputs=(1, -1), output=7, shape=[2],
               dtype="float64", requires_grad=True, attrs={"dim": 1}, module="m", file="f.py",
               line=3, function="fn", grad_enabled=False, call=5)
    leaf = ev.TensorCreated(seq=4, iteration=1, tensor=8, name="w", shape=(3,),
                            requires_grad=True, is_param=True, is_leaf=False, grad_fn="TBackward0")
    built = [_op_node(op, 2, 5), _leaf_node(leaf, 1)]
    for node in built:
        for name in names:  # no slot left unset
            getattr(node, name)
    assert built == [
        GraphNode(id=7, kind="op", op="mul", shape=(2,), dtype="float64", module="m",
                  file="f.py", line=3, function="fn", seq=9, requires_grad=True,
                  grad_enabled=False, attrs={"dim": 1}, occurrence=2, call=5),
        GraphNode(id=8, kind="param", name="w", shape=(3,), seq=4, requires_grad=True,
                  grad_fn="TBackward0", occurrence=1, carried=True),
    ]


def _keyword_node(e: ev.Event, graph_node: GraphNode) -> GraphNode:
    """The node of event ``e`` built the plain way, with what only the builder knows
    (occurrence, call, backward's fields) taken from ``graph_node``."""
    known = {f: getattr(graph_node, f) for f in
             ("occurrence", "call", "grad", "grad_fn", "backward_seq")}
    if type(e) is ev.Op:
        return GraphNode(id=e.output, kind="op", op=e.op, shape=tuple(e.shape), dtype=e.dtype,
                         module=e.module, file=e.file, line=e.line, function=e.function,
                         seq=e.seq, requires_grad=e.requires_grad, grad_enabled=e.grad_enabled,
                         attrs=e.attrs, summary=e.summary, **known)
    assert type(e) is ev.TensorCreated
    return GraphNode(id=e.tensor, kind="param" if e.is_param else "leaf", name=e.name,
                     shape=tuple(e.shape), dtype=e.dtype, seq=e.seq,
                     requires_grad=e.requires_grad, summary=e.summary, carried=not e.is_leaf,
                     **known)


def test_built_nodes_equal_keyword_built_ones_on_a_real_trace() -> None:
    events = _run("full")
    graphs = list(build_graphs(events))
    by_output = {(e.iteration, e.output if type(e) is ev.Op else e.tensor): e
                 for e in events if type(e) in (ev.Op, ev.TensorCreated)}
    checked = 0
    for graph in graphs:
        for node in graph.nodes.values():
            assert node == _keyword_node(by_output[graph.iteration, node.id], node)
            checked += 1
    assert checked > 20 and any(n.grad is not None for n in graphs[0].nodes.values())


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


def test_feeding_in_pieces_builds_the_same_graphs() -> None:
    # The loop keeps the graph's parts in locals: what outlives one call (the current
    # graph, occurrences, backward's visited nodes) must be on the builder at every split.
    events = _run()
    whole = _slow(events)
    for split in range(0, len(events), 7):
        builder = GraphBuilder()
        builder.add_all(events[:split])
        builder.add_all(iter(events[split:split + 3]))
        for e in events[split + 3:]:
            builder.add(e)
        assert builder.finished == whole[:3] and builder.current == whole[3]


def test_build_graphs_keeps_no_graph() -> None:
    events = _run()
    graphs = build_graphs(events)
    first = next(graphs)
    builder = graphs.gi_frame.f_locals["builder"]
    assert builder.finished == [] and first.complete


def _graph_facts(g) -> tuple:
    """Everything a Graph holds, nodes field by field, in order."""
    nodes = [(k, *(getattr(n, f.name) for f in dataclasses.fields(GraphNode)))
             for k, n in g.nodes.items()]
    return (g.iteration, nodes, list(g.edges), list(g.backward_order), dict(g.calls),
            g.complete, g.structure_key)


def _rows_case(tmp_path, stats: str):
    """A recording with module calls, leaves carried over, two backward passes in one
    iteration and an explicit iteration: in memory and read back from its file."""
    nn = dg.nn
    dg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    h = dg.zeros(5, 2)
    with dg.trace(stats=stats) as t:
        for i in range(3):
            x = dg.randn(5, 3)
            out = model(x) + h.detach() * 0.5
            h = out
            loss = (out * out).mean()
            opt.zero_grad()
            loss.backward(retain_graph=True)
            if i == 1:
                out.sum().backward()  # a second backward pass in the same iteration
            opt.step()
        with dg.iteration():
            _ = model(dg.ones(1, 3)).sum()
    path = tmp_path / f"rows-{stats}.dgtrace"
    t.save(path)
    return t, dg.read_trace(path)


def test_graphs_built_from_rows_are_the_builders_graphs(tmp_path) -> None:
    for stats in ("none", "cheap", "full"):
        memory, read = _rows_case(tmp_path, stats)
        events = list(memory.events)
        by_builder = {}
        for g in build_graphs(events[1:]):
            by_builder[g.iteration] = _graph_facts(g)
        for trace in (memory, read):
            graphs = {it.index: _graph_facts(it.graph) for it in trace.iterations}
            assert graphs == by_builder, stats
