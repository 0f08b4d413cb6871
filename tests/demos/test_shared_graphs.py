"""Graphs shared by repeated iterations (``capture.sharedgraph``) on every numpy demo: each
iteration's graph, read from a file, is the one the ``GraphBuilder`` makes
of its events; an iteration that repeats an earlier one (its events' kinds and its
structure key) shares that one's graph structure, one of another structure does not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from demo_helpers import record

import dyngraph as dg
from dyngraph import demos

sys.path.insert(0, str(Path(__file__).parents[1] / "events"))
from test_shared_graph import assert_graphs_are_the_builders  # noqa: E402

from dyngraph.capture.graph import Graph  # noqa: E402
from dyngraph.capture.sharedgraph import SharedGraph  # noqa: E402

STEPS = {"transformer": 3}
# Demos whose graph changes every iteration of these first steps (a tree per sentence, a
# molecule per step, a routing by the data): nothing repeats, nothing is shared.
CHANGING = {"tree_rnn", "dynamic_routing", "gnn"}


@pytest.mark.parametrize("name", [n for n in demos.names() if n not in demos.NEEDS_TORCH])
def test_a_demo_s_graphs_are_the_builder_s_shared_or_not(name, tmp_path):
    recording = record(name, STEPS.get(name, 4), stats="full" if name == "mlp" else "cheap")
    path = tmp_path / f"{name}.dgtrace"
    dg.Trace(recording.events).save(path)
    trace = dg.read_trace(path)
    assert_graphs_are_the_builders(trace)
    seen: dict = {}  # structure -> its template (None: seen once)
    for it in trace.iterations:
        rows = trace._iteration_rows(it.index)
        structure = (tuple(r[0] for r in rows), rows[-1][4])
        template = it.graph.template
        if structure not in seen:  # (its first: built on its own)
            assert type(it.graph) is Graph and template is None, (name, it.index)
        else:
            assert type(it.graph) is SharedGraph, (name, it.index)
            assert seen[structure] in (None, template), (name, it.index)
        seen[structure] = template
    assert (len(seen) == len(trace.iterations)) == (name in CHANGING), (name, len(seen))
