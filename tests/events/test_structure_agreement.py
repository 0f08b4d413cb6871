"""The structure key and the diff always agree: equal keys exactly when the diff is empty.

Both come from one definition (``dyngraph.capture.structure``); these tests hold it to that
over every recorded demo (every pair of iterations, keys from the run and recomputed from
the graph and from a trace file) and over generated programs whose data-only attributes
(slice offsets, index values, dropout probabilities) vary while their structure may not.
"""

from __future__ import annotations

import itertools
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyngraph as dg
import dyngraph.nn.functional as F
from dyngraph import demos
from dyngraph.capture import structure
from dyngraph.capture.graph import diff_graphs
from dyngraph.capture.tracing import module_scope

DEMO_STEPS = {"mlp": 3, "rnn_varlen": 6, "tree_rnn": 6, "dynamic_routing": 5, "gnn": 5,
              "rl_policy": 6, "nan_hunt": 3, "transformer": 2}


def assert_agree(graphs) -> None:
    for old, new in itertools.combinations(graphs, 2):
        same_key = old.structure_key == new.structure_key
        diff = diff_graphs(old, new)
        assert same_key == diff.unchanged, (old.iteration, new.iteration, diff)
        assert diff_graphs(new, old).unchanged == diff.unchanged


@pytest.mark.parametrize("name", sorted(DEMO_STEPS))
def test_key_and_diff_agree_on_every_demo(name, tmp_path):
    main = runpy.run_path(str(demos.path(name)), run_name=f"dyngraph_demo_{name}")["main"]
    kwargs = {"sample_length": 2} if name == "transformer" else {}
    with dg.trace(stats="none") as trace:
        main(DEMO_STEPS[name], **kwargs)
    graphs = [it.graph for it in trace.iterations if it.graph.complete]
    assert len(graphs) >= 2
    # The key the run carried is the key of the graph the events build.
    for graph in graphs:
        assert structure.key_of(graph.signatures()) == graph.structure_key
    assert_agree(graphs)
    # ... and of the graph a trace file gives back (attributes come back as lists there).
    path = tmp_path / "run.dgtrace"
    trace.save(path)
    loaded = [it.graph for it in dg.read_trace(path).iterations if it.graph.complete]
    assert [structure.key_of(g.signatures()) for g in loaded] == \
        [g.structure_key for g in graphs]


def _program(w: dg.Tensor, x: dg.Tensor, spec: dict) -> None:
    """One iteration whose structure depends on some of ``spec`` and not on the rest. It
    begins with a differentiable op, so that no setup (iteration 0) takes the first
    program's batch slicing away from its iteration."""
    w = w * 1.0
    batch = x[spec["offset"]: spec["offset"] + spec["size"]]  # offset: data, size: shape
    with module_scope("enc"):
        h = (batch @ w).tanh()
        if spec["dropout"]:
            h = F.dropout(h, p=spec["p"])  # p: data
    picked = h[spec["row"]] if spec["index_row"] else h[:, spec["col"]]  # which axis: structure
    for _ in range(spec["depth"]):  # topology
        picked = picked * 2
    total = picked.sum(dim=0) if spec["reduce_dim"] and picked.ndim > 1 else picked.sum()
    if spec["l2"]:
        total = total + (w * w).sum()
    total.sum().backward()


SPECS = st.fixed_dictionaries({
    "offset": st.integers(0, 8), "size": st.sampled_from([4, 4, 4, 6]),
    "dropout": st.booleans(), "p": st.floats(0.1, 0.9),
    "index_row": st.booleans(), "row": st.integers(0, 3), "col": st.integers(0, 2),
    "depth": st.integers(0, 2), "reduce_dim": st.booleans(), "l2": st.booleans(),
})
STRUCTURAL = ("size", "dropout", "index_row", "depth", "reduce_dim", "l2")


@settings(max_examples=40, deadline=None)
@given(st.lists(SPECS, min_size=2, max_size=4))
def test_key_and_diff_agree_on_generated_programs(specs):
    rng = np.random.default_rng(0)
    w = dg.tensor(rng.standard_normal((3, 3)).astype(np.float32), requires_grad=True)
    w._name = "w"
    x = dg.tensor(rng.standard_normal((16, 3)).astype(np.float32))
    with dg.trace(stats="none") as trace:
        for spec in specs:
            _program(w, x, spec)
    graphs = [it.graph for it in trace.iterations]
    assert len(graphs) == len(specs)
    assert_agree(graphs)
    # Data-only differences never change the structure.
    for (a, ga), (b, gb) in itertools.combinations(zip(specs, graphs, strict=True), 2):
        if all(a[k] == b[k] for k in STRUCTURAL):
            assert ga.structure_key == gb.structure_key, (a, b)


def test_a_minibatch_loop_keeps_one_structure_until_the_l2_term_arrives():
    script = Path(__file__).parents[1] / "tui" / "scripts" / "minibatch.py"
    argv = sys.argv
    sys.argv = [str(script)]
    try:
        with dg.trace(stats="none") as trace:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
    # Iteration 0 is setup: the first minibatch's slicing, which comes before the first
    # differentiable op (docs/events.md); iteration 1 takes that batch as carried inputs,
    # so from iteration 2 on every minibatch slices its own and compares equal.
    assert [it.index for it in trace.iterations] == list(range(13))
    keys = [it.structure_key for it in trace.iterations[2:]]
    changes = [i + 3 for i, (a, b) in enumerate(itertools.pairwise(keys)) if a != b]
    assert changes == [9]  # epoch 3 starts at iteration 9
    d = trace.iterations[9].diff(trace.iterations[8])
    assert d.added and not d.removed and not d.reshaped


def test_the_tracers_remembered_keys_are_the_keys_of_the_events():
    """IterationEnd's key comes from a memo keyed by a fingerprint: it must be the key
    ``structure.structure_key`` gives the iteration's events, through repeats, changes
    (a shape, an attribute, a wiring, a grad mode) and alternations."""
    w = dg.tensor(np.ones((3, 3), np.float32), requires_grad=True)
    plans = [(4, 0, False, True), (4, 0, False, True), (5, 0, False, True),
             (4, 1, False, True), (4, 0, True, True), (4, 0, False, False),
             (4, 0, False, True), (5, 0, False, True)]
    with dg.trace(stats="none") as trace:
        for rows, dim, swap, grad in plans:
            with dg.iteration():
                x = dg.tensor(np.ones((rows, 3), np.float32))
                with dg.set_grad_enabled(grad):
                    h = x @ w
                    y = (w.sum(dim) * h) if swap else (h * w.sum(dim))
                    y.sum()
    its = trace.iterations
    assert len(its) == len(plans)
    for it in its:
        ops = [e for e in it.events if e.kind in ("op", "tensor")]
        end = it.events[-1]
        assert end.kind == "iteration_end"
        assert end.structure_key == structure.structure_key(ops)
    keys = [it.events[-1].structure_key for it in its]
    assert keys[0] == keys[1] == keys[6] and keys[2] == keys[7]
    assert len(set(keys[1:6])) == 5
