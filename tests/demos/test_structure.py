"""Define-by-run, recorded: the dynamic demos build a differently shaped graph from one
iteration to the next; the MLP builds the same graph every time."""

from __future__ import annotations

from itertools import pairwise

import pytest
from demo_helpers import load_main, record

import dyngraph

DYNAMIC = ["rnn_varlen", "tree_rnn", "dynamic_routing", "gnn"]


def test_mlp_builds_one_structure_for_every_iteration():
    rec = record("mlp", steps=6)
    assert len(rec.keys) == 6
    assert len(set(rec.keys)) == 1, rec.keys
    assert len(set(rec.op_counts)) == 1 and rec.op_counts[0] > 5


def test_transformer_batches_build_one_structure():
    # Fixed-size batches, and no op at construction time sneaking into iteration 1.
    rec = record("transformer", steps=3, sample_length=0)
    assert len(set(rec.keys)) == 1 and len(rec.keys) == 3


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_demo_changes_structure_between_iterations(name):
    rec = record(name, steps=8)
    assert len(rec.keys) == 8
    # Most iterations differ from their predecessor; a repeat now and then is fine.
    changed = sum(a != b for a, b in pairwise(rec.keys))
    assert changed >= 4, rec.keys
    assert 5 <= min(rec.op_counts) and max(rec.op_counts) <= 600, rec.op_counts


def test_rl_policy_changes_structure_exactly_when_the_episode_length_does():
    """Each move indexes the chosen action's log-probability: which action is data, not
    structure. Episodes of equal length build one structure; a shorter one is a change."""
    rec = record("rl_policy", steps=8)
    key_changed = [a != b for a, b in pairwise(rec.keys)]
    length_changed = [a != b for a, b in pairwise(rec.op_counts)]
    assert key_changed == length_changed
    assert any(key_changed) and not all(key_changed)


@pytest.mark.parametrize("name", ["rnn_varlen", "tree_rnn", "rl_policy"])
def test_graph_size_follows_the_input(name):
    """Not just reshaped: these add or drop whole ops with the sequence, tree or episode."""
    rec = record(name, steps=8)
    assert len(set(rec.op_counts)) > 1, rec.op_counts


def test_modules_are_named_readably():
    rec = record("dynamic_routing", steps=3)
    modules = {e.module for e in rec.events if getattr(e, "kind", "") == "op"}
    assert "router" in modules
    assert any(m.startswith("experts.") and m.endswith(".hidden") for m in modules), modules


def test_transformer_samples_one_character_per_iteration(capsys):
    main = load_main("transformer")
    with dyngraph.trace(stats="none") as trace:
        main(2, sample_length=5)
    sampling = [it for it in trace.iterations if not it.graph.backward_order]
    assert len(trace.iterations) == 7 and len(sampling) == 5
    # The context grows by one character each time, so each pass has its own shapes.
    assert len({it.structure_key for it in sampling}) == 5
