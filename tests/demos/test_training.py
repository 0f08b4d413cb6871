"""Each demo, run for a few steps, learns: its loss at the end is clearly below the start."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from demo_helpers import load_main, run_script, train

from dyngraph import demos

# name -> (steps, the most the late mean loss may be as a fraction of the early mean).
# None runs the demo's default length: these are cheap, and it is what a user sees.
CASES = {
    "mlp": (None, 0.2),
    "rnn_varlen": (None, 0.3),
    "tree_rnn": (None, 0.4),
    "dynamic_routing": (None, 0.6),
    "gnn": (None, 0.5),
    "rl_policy": (None, 0.5),  # its "loss" is the episode length: fewer moves to the goal
    "transformer": (150, 0.8),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_falls(name):
    steps, ratio = CASES[name]
    kwargs = {"sample_length": 20} if name == "transformer" else {}
    losses, printed = train(name, steps, **kwargs)

    assert len(losses) == (steps or load_main(name).__defaults__[0])
    assert all(math.isfinite(v) for v in losses)
    window = max(5, len(losses) // 5)
    early, late = np.mean(losses[:window]), np.mean(losses[-window:])
    assert late < ratio * early, f"{name}: loss {early:.4f} -> {late:.4f}"
    # ... and shows it: the loss it prints last is below the one it printed first.
    shown = [float(v) for v in re.findall(r"\bloss(?: \([a-z ]+\))? ([0-9.]+)", printed)]
    assert len(shown) >= 5 and shown[-1] < ratio * shown[0], printed
    if name == "transformer":
        assert "sample:" in printed


def test_nan_hunt_learns_before_it_breaks():
    losses = load_main("nan_hunt")(50)
    assert all(math.isfinite(v) for v in losses)  # the NaN comes later
    assert np.mean(losses[-10:]) < 0.2 * np.mean(losses[:10])


@pytest.mark.parametrize("name", sorted(demos.DEMOS))
def test_runs_as_a_script_with_steps(name):
    """`python demos/NAME.py --steps N` is how users (and `dyngraph debug`) run it."""
    if name in demos.NEEDS_TORCH:
        pytest.importorskip("torch")
    result = run_script(str(demos.path(name)), "--steps", "3")
    assert result.returncode == 0, result.stderr
    assert len(re.findall(r"\bloss\b", result.stdout)) >= 1, result.stdout
    assert "Traceback" not in result.stderr
