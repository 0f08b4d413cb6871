"""``Trace.iterations[i].graph`` is built when first looked into (``rowgraph.pending_graph``):
whatever touches it first, it is the graph ``graph_of_rows`` builds, and then a plain Graph."""

from __future__ import annotations

import copy
import dataclasses
import gc
import sys
import threading

import numpy as np
import pytest
from pausing_thread import pause_on_a_thread

import dyngraph as dg
from dyngraph.capture.graph import Graph
from dyngraph.capture.rowgraph import PendingGraph, graph_of_rows, pending_graph
from dyngraph.capture.sharedgraph import SharedGraph


def _trace(tmp_path):
    dg.manual_seed(0)
    model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.ReLU(), dg.nn.Linear(8, 2))
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    x = dg.tensor(np.ones((3, 4), np.float32))
    with dg.trace(stats="full") as t:
        for _ in range(3):
            opt.zero_grad()
            (model(x) * 2.0).sum().backward()
            opt.step()
    path = tmp_path / "t.dgtrace"
    t.save(path)
    return t, dg.read_trace(path)


def _rows(trace, index: int = 2):
    return trace._iteration_rows(index)


# Each way a consumer may first touch a graph, and what it should then see.
FIRST_TOUCHES = {
    "nodes": lambda g: len(g.nodes),
    "edges": lambda g: list(g.edges),
    "iteration": lambda g: g.iteration,
    "complete": lambda g: g.complete,
    "structure_key": lambda g: g.structure_key,
    "len": len,
    "repr": repr,
    "signatures": lambda g: g.signatures(),
    "fields": dataclasses.asdict,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "replace": lambda g: dataclasses.replace(g, complete=g.complete),
}


@pytest.mark.parametrize("touch", sorted(FIRST_TOUCHES))
def test_any_first_touch_builds_the_graph_of_the_rows(tmp_path, touch) -> None:
    memory, read = _trace(tmp_path)
    for trace in (memory, read):
        rows = _rows(trace)
        g = pending_graph(rows, 2)
        assert type(g) is PendingGraph and isinstance(g, Graph)
        result = FIRST_TOUCHES[touch](g)
        assert type(g) is Graph
        assert g == graph_of_rows(rows, 2)
        if isinstance(result, Graph):  # (a copy, or a replaced one)
            assert type(result) is Graph and result == g


def test_equality_and_setting_a_field_first(tmp_path) -> None:
    _, read = _trace(tmp_path)
    rows = _rows(read)
    eager = graph_of_rows(rows, 2)
    assert eager == pending_graph(rows, 2) and pending_graph(rows, 2) == eager
    assert pending_graph(rows, 2) == pending_graph(rows, 2)
    assert pending_graph(_rows(read, 1), 1) != eager
    g = pending_graph(rows, 2)
    g.iteration = 7  # (set before anything was read: built first, then changed)
    assert type(g) is Graph and g.iteration == 7 and g.nodes == eager.nodes
    h = pending_graph(rows, 2)
    del h._structure_key
    assert h.edges == eager.edges


def test_iteration_graph_is_one_object_built_once(tmp_path) -> None:
    _, read = _trace(tmp_path)
    it = read.iterations[1]
    g = it.graph
    assert it.graph is g
    nodes = g.nodes
    # (built: a plain Graph, or a SharedGraph when its structure repeats)
    assert it.graph is g and g.nodes is nodes and type(g) in (Graph, SharedGraph)


def test_threads_building_one_graph_see_the_same_nodes(tmp_path) -> None:
    _, read = _trace(tmp_path)
    rows = _rows(read)
    for _ in range(20):
        g = pending_graph(rows, 2)
        seen: list[object] = []

        def look(g=g, seen=seen) -> None:
            seen.append(g.nodes)

        threads = [threading.Thread(target=look) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(s is seen[0] for s in seen) and seen[0] is g.nodes


def _tracked_rows(trace) -> list:
    rows = [r for it in trace.iterations for r in trace._iteration_rows(it.index)]
    return [r for r in rows if gc.is_tracked(r)]


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's collector")
@pytest.mark.parametrize("stats", ["cheap", "full"])
def test_rows_read_from_a_file_are_no_work_for_the_collector(tmp_path, stats) -> None:
    # Rows of plain values (summaries, shapes, attribute items, update pairs inside) are
    # untracked by the collection that follows their frame's decoding, not one level per
    # collection: kept by pending graphs, they would make full collections frequent.
    path = _saved_training(tmp_path, stats)
    read = dg.read_trace(path)
    kinds = {r[0] for it in read.iterations for r in read._iteration_rows(it.index)}
    assert {"op", "backward_step", "grad", "optimizer_step"} <= kinds
    assert any(r[9] for it in read.iterations for r in read._iteration_rows(it.index)
               if r[0] == "op")  # (attribute items: two levels of tuples)
    assert _tracked_rows(read) == []
    gc.disable()
    try:  # with the collector off, reading collects nothing
        before = gc.get_count()[1]
        again = dg.read_trace(path)
        assert len(_tracked_rows(again)) > 0 and gc.get_count()[1] == before
    finally:
        gc.enable()


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's collector")
def test_rows_read_while_another_thread_pauses_the_collector_are_still_settled(tmp_path):
    # The debugger's trace loader, the outbox and the exporters pause the collector from
    # their own threads; a frame decoded meanwhile took that pause for the program's own
    # gc.disable() and left its rows tracked (seen when an earlier test in the same
    # worker left such a thread running).
    path = _saved_training(tmp_path, "full")
    done, other = pause_on_a_thread()
    try:
        assert not gc.isenabled()
        read = dg.read_trace(path)
        assert _tracked_rows(read) == []
        assert not gc.isenabled()  # (the other thread's pause is still on)
    finally:
        done.set()
        other.join()
    assert gc.isenabled()


def _saved_training(tmp_path, stats: str):
    dg.manual_seed(0)
    model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.ReLU(), dg.nn.Linear(8, 2))
    opt = dg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dg.trace(stats=stats) as t:
        for _ in range(3):
            opt.zero_grad()
            dg.nn.functional.cross_entropy(model(dg.randn(3, 4)), dg.tensor([0, 1, 1])
                                           ).backward()
            opt.step()
    path = tmp_path / "t.dgtrace"
    t.save(path)
    return path
