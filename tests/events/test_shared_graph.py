"""Iterations that repeat a structure share one graph (``capture.sharedgraph``): built once
from a template, each iteration's values read from its own rows, no node object made until
one is looked up; and every such graph is the one ``graph_of_rows`` (and the
``GraphBuilder``, from events) makes of the same iteration."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.capture.graph import Graph, GraphBuilder
from dyngraph.capture.rowgraph import graph_of_rows
from dyngraph.capture.sharedgraph import GraphTemplates, SharedGraph

sys.path.insert(0, str(Path(__file__).parent))


def _mlp(batches: list[int], stats: str = "full") -> dg.Trace:
    dg.manual_seed(0)
    model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.ReLU(), dg.nn.Linear(8, 2))
    opt = dg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dg.trace(stats=stats) as t:
        for n in batches:
            opt.zero_grad()
            loss = dg.nn.functional.cross_entropy(model(dg.randn(n, 4)),
                                                  dg.tensor(np.arange(n) % 2))
            loss.backward()
            opt.step()
    return t


def _graph(it) -> Graph:
    """``it.graph``, built (it is made when first looked into, in the order looked at)."""
    g = it.graph
    _ = g.complete
    return g


def _in_memory_and_read_back(t: dg.Trace, tmp_path: Path) -> list[dg.Trace]:
    path = tmp_path / "t.dgtrace"
    t.save(path)
    return [t, dg.read_trace(path)]


def _built_from_events(it) -> Graph:
    builder = GraphBuilder()
    builder.current.iteration = it.index
    done = builder.add_all(it.events)
    return done if done is not None else builder.current


def assert_graphs_are_the_builders(trace: dg.Trace) -> int:
    """Every iteration's graph, shared or not, is the one built from its rows and from
    its events, node by node; returns how many were shared."""
    shared = 0
    for it in trace.iterations:
        g = _graph(it)
        rows = trace._iteration_rows(it.index)
        assert g == graph_of_rows(rows, it.index), it.index
        expected = _built_from_events(it)
        assert g == expected and expected == g, it.index
        assert list(g.nodes) == list(expected.nodes)
        for node_id, node in expected.nodes.items():
            assert g.nodes[node_id] == node, (it.index, node_id)
        shared += type(g) is SharedGraph
    return shared


def test_two_iterations_of_one_template_share_one_graph_structure(tmp_path) -> None:
    for trace in _in_memory_and_read_back(_mlp([3] * 5), tmp_path):
        its = trace.iterations
        graphs = [_graph(it) for it in its]
        # (the first is built on its own: a structure seen once may never come again)
        assert type(graphs.pop(0)) is Graph
        assert all(type(g) is SharedGraph for g in graphs)
        # One structure object for all of them, not equal copies.
        assert all(g.template is graphs[0].template for g in graphs)
        assert graphs[0].template.graph.nodes  # (the prototypes: built once)
        # Counting, listing and testing ids makes no node object.
        g = graphs[1]
        assert len(g.nodes) == len(graphs[0].template.nodes) > 5
        ids = list(g.nodes)
        assert ids[0] in g.nodes and -5 not in g.nodes
        assert g.nodes._made == {}
        assert g.nodes[ids[3]] is g.nodes[ids[3]]  # (made when looked up, then kept)
        assert list(g.nodes._made) == [3]


def test_shared_graphs_hold_each_iteration_s_own_values_as_recorded(tmp_path) -> None:
    for trace in _in_memory_and_read_back(_mlp([3] * 4), tmp_path):
        its = trace.iterations
        _graph(its[0])
        a, b = _graph(its[1]), _graph(its[2])
        assert a.template is b.template
        for it in its[1:]:
            g = it.graph
            for e in it.events:
                if e.kind == "op":
                    node = g.nodes[e.output]
                    assert (node.seq, node.summary, node.shape) == (e.seq, e.summary, e.shape)
                elif e.kind == "grad":
                    node = g.nodes[e.tensor]
                    assert (node.grad, node.backward_seq) == (e.summary, e.seq)
            assert g.structure_key == it.events[-1].structure_key
        # The ops' outputs are new tensors every iteration; the parameters stay.
        ops_a = [n for n in a.nodes.values() if n.kind == "op"]
        ops_b = [n for n in b.nodes.values() if n.kind == "op"]
        assert not {n.id for n in ops_a} & {n.id for n in ops_b}
        params = {n.id for n in a.nodes.values() if n.kind == "param"}
        assert len(params) == 4 and params == \
            {n.id for n in b.nodes.values() if n.kind == "param"}
        # Values as recorded differ from one iteration to the next.
        assert [n.summary for n in ops_a] != [n.summary for n in ops_b]
        assert [n.seq for n in ops_a] != [n.seq for n in ops_b]
        assert a.edges != b.edges and len(a.edges) == len(b.edges)
        assert a.grad_nodes.keys() != b.grad_nodes.keys()
        assert assert_graphs_are_the_builders(trace) == len(its) - 1


def test_an_iteration_diverging_from_its_template_gets_its_own_graph(tmp_path) -> None:
    # The third iteration's batch is bigger: every shape moves, so it is built in full
    # (and becomes a template of its own); the fourth goes back to the first structure.
    for trace in _in_memory_and_read_back(_mlp([3, 3, 5, 3, 5]), tmp_path):
        its = trace.iterations
        first, same, other, back, again = (_graph(it) for it in its)
        assert type(first) is Graph and type(other) is Graph  # (each structure's first)
        assert first.template is None and other.template is None
        assert type(same) is SharedGraph and same.template is back.template
        assert (5, 4) in {n.shape for n in other.nodes.values()} - \
            {n.shape for n in same.nodes.values()}
        assert type(again) is SharedGraph and again.template is not same.template
        assert [n.shape for n in other.nodes.values()] == \
            [n.shape for n in again.nodes.values()]
        assert assert_graphs_are_the_builders(trace) == 3


def _two_iterations() -> tuple[GraphTemplates, tuple, int, object]:
    """Templates made of a run's first iteration, the second's rows (which follow it),
    its index, and the template."""
    trace = _mlp([3, 3, 3])
    templates = GraphTemplates()
    assert templates.graph_of(trace._iteration_rows(1), 1, graph_of_rows).template is None
    template = templates.graph_of(trace._iteration_rows(2), 2, graph_of_rows).template
    rows = trace._iteration_rows(3)
    assert templates.graph_of(rows, 3, graph_of_rows).template is template is not None
    return templates, rows, 3, template


def _changed(rows: tuple, at: int, field: int, value) -> tuple:
    row = rows[at]
    return (*rows[:at], (*row[:field], value, *row[field + 1:]), *rows[at + 1:])


def _ops(rows: tuple) -> list[int]:
    return [k for k, r in enumerate(rows) if r[0] == "op"]


@pytest.mark.parametrize("change", ["output collides", "input rewired", "line moved",
                                    "shape changed", "input added", "call renamed"])
def test_rows_that_are_not_the_template_s_renamed_get_their_own_graph(change) -> None:
    templates, rows, index, template = _two_iterations()
    ops = _ops(rows)
    first, second, last = rows[ops[0]], rows[ops[1]], rows[ops[-1]]
    leaf = next(r[3] for r in rows if r[0] == "grad")
    if change == "output collides":  # two ops write one id: the first node is replaced
        rows = _changed(rows, ops[1], 5, first[5])
    elif change == "input rewired":  # an input that was an op's output is a parameter
        k = next(k for k in ops if any(s == first[5] for s in rows[k][4]))
        rows = _changed(rows, k, 4, tuple(leaf if s == first[5] else s for s in rows[k][4]))
    elif change == "line moved":
        rows = _changed(rows, ops[1], 12, second[12] + 1)
    elif change == "shape changed":
        rows = _changed(rows, ops[-1], 6, (*last[6], 1))
    elif change == "input added":
        rows = _changed(rows, ops[1], 4, (*second[4], first[5]))
    else:  # an op said to run in a module call that is not the iteration's
        rows = _changed(rows, ops[0], 17, 10**9)
    g = templates.graph_of(rows, index, graph_of_rows)
    # (the rows still say the template's structure key: a structure seen before, so one
    # of its own is made of them)
    assert g.template is not template
    assert g == graph_of_rows(rows, index)


def test_a_renamed_copy_of_the_template_is_shared_and_renamed() -> None:
    # Ids renamed one to one (as a later iteration's are): the same structure, the ids
    # (and everything keyed by them) the copy's own.
    templates, rows, index, template = _two_iterations()
    shift = {}
    for r in rows:
        if r[0] == "op":
            shift[r[5]] = r[5] + 1000

    def rename(v):
        return shift.get(v, v)

    renamed = []
    for r in rows:
        if r[0] == "op":
            r = (*r[:4], tuple(map(rename, r[4])), rename(r[5]), *r[6:])
        elif r[0] == "backward_step":
            r = (*r[:3], rename(r[3]), *r[4:6], tuple(map(rename, r[6])), *r[7:10],
                 rename(r[10]), tuple(map(rename, r[11])), r[12], tuple(map(rename, r[13])))
        renamed.append(r)
    renamed = tuple(renamed)
    g = templates.graph_of(renamed, index, graph_of_rows)
    assert type(g) is SharedGraph and g.template is template
    assert g == graph_of_rows(renamed, index)
    assert set(g.nodes) & set(shift.values())


def test_changing_a_shared_graph_s_nodes_keeps_the_template_as_it_was(tmp_path) -> None:
    trace = _mlp([3] * 4)
    its = trace.iterations
    _graph(its[0])
    a, b = _graph(its[1]), _graph(its[3])
    node_id = next(iter(b.nodes))
    before = a.nodes[next(iter(a.nodes))].summary
    b.nodes[node_id].summary = None
    del b.nodes[next(k for k in b.nodes if k != node_id)]
    b.nodes[-7] = b.nodes[node_id]
    assert len(b.nodes) == len(a.nodes) and -7 in b.nodes
    assert a.nodes[next(iter(a.nodes))].summary == before
    assert its[3].graph is b and _graph(its[2]).template is a.template


def test_any_first_touch_of_a_shared_graph_sees_the_graph_of_its_rows(tmp_path) -> None:
    from test_pending_graph import FIRST_TOUCHES

    for trace in _in_memory_and_read_back(_mlp([3] * 3), tmp_path):
        _graph(trace.iterations[0])
        _graph(trace.iterations[1])  # (the template)
        rows = trace._iteration_rows(3)
        expected = graph_of_rows(rows, 3)
        for name, touch in FIRST_TOUCHES.items():
            trace._iterations.pop(3, None)  # (a fresh Iteration: its graph not made yet)
            g = trace.iterations[2].graph
            result = touch(g)
            assert type(g) is SharedGraph and g == expected, name
            if isinstance(result, Graph):  # (a copy, or a replaced one)
                assert result == expected and expected == result, name
            if name == "fields":  # (the nodes as a mapping of nodes: asdict converts
                # dicts, and a shared graph's nodes are a mapping made when looked into)
                plain = dataclasses.asdict(expected)
                assert {k: v for k, v in result.items() if k != "nodes"} == \
                    {k: v for k, v in plain.items() if k != "nodes"}
                assert dict(result["nodes"]) == expected.nodes
