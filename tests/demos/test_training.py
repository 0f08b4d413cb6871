"""Each demo, run for a few steps, learns: its loss at the end is clearly below the start."""

from __future__ import annotations

import math

import numpy as np
import pytest
from demo_helpers import load_main

# name -> (steps, the most the late mean loss may be as a fraction of the early mean)
CASES = {
    "mlp": (100, 0.5),
    "rnn_varlen": (150, 0.3),
    "tree_rnn": (150, 0.6),
    "dynamic_routing": (100, 0.7),
    "gnn": (100, 0.6),
    "transformer": (100, 0.8),
    "rl_policy": (150, 0.6),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_falls(name, capsys):
    steps, ratio = CASES[name]
    kwargs = {"sample_length": 20} if name == "transformer" else {}
    losses = load_main(name)(steps, **kwargs)
    printed = capsys.readouterr().out

    assert len(losses) == steps and all(math.isfinite(v) for v in losses)
    window = max(5, steps // 5)
    early, late = np.mean(losses[:window]), np.mean(losses[-window:])
    assert late < ratio * early, f"{name}: loss {early:.4f} -> {late:.4f}"
    assert "loss" in printed  # it shows its progress
    if name == "transformer":
        assert "sample:" in printed


def test_nan_hunt_learns_before_it_breaks(capsys):
    losses = load_main("nan_hunt")(50)
    assert all(math.isfinite(v) for v in losses)  # the NaN comes later
    assert np.mean(losses[-10:]) < 0.2 * np.mean(losses[:10])
