"""nan_hunt goes non-finite at a known iteration, in the gradient of its ``log`` line, and
``dyngraph check`` says so."""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess

import pytest
from demo_helpers import record, run_script

from dyngraph import demos
from dyngraph.capture import events as ev

SCRIPT = demos.path("nan_hunt")
LOG_LINE = next(i for i, text in enumerate(SCRIPT.read_text().splitlines(), 1)
                if "torch.log(" in text)
# The script's docstring tells the reader which iteration breaks; the tests hold it to that.
PROMISED = int(re.search(r"in iteration (\d+)", SCRIPT.read_text()).group(1))
STEPS = PROMISED + 5


def first_nonfinite(events) -> tuple[int, str, int, str]:
    """(iteration, op, line, where) of the first non-finite forward value or gradient."""
    first_iteration = next(e.iteration for e in events if isinstance(e, ev.Op))
    ops: dict[int, ev.Op] = {}
    for e in events:
        if isinstance(e, ev.Op):
            ops[e.output] = e
            if e.summary is not None and not e.summary.finite:
                return e.iteration - first_iteration + 1, e.op, e.line, "forward"
        elif isinstance(e, ev.BackwardStep):
            summaries = (e.grad_output, *e.grad_inputs)
            if any(s is not None and not s.finite for s in summaries):
                op = ops[e.node]
                return e.iteration - first_iteration + 1, op.op, op.line, "gradient"
    raise AssertionError("no NaN/Inf anywhere in the run")


@pytest.fixture(scope="module")
def recording():
    return record("nan_hunt", steps=STEPS, stats="cheap")


def test_losses_fall_then_turn_nan(recording):
    losses = recording.losses
    assert losses[-1] != losses[-1]  # NaN
    broken = next(i for i, v in enumerate(losses) if not math.isfinite(v))
    assert broken >= PROMISED - 1 and min(losses[:broken]) < 0.1 * losses[0]


def test_first_nonfinite_is_in_the_log_line(recording):
    iteration, op, line, where = first_nonfinite(recording.events)
    assert (op, line) == ("log", LOG_LINE), (iteration, op, line, where)
    assert iteration == PROMISED
    # ... and again: seeded, so every run breaks at the same place.
    assert first_nonfinite(record("nan_hunt", STEPS, stats="cheap").events)[:3] == (
        iteration, op, line)


needs_check = pytest.mark.skipif(
    importlib.util.find_spec("dyngraph.debug.commands") is None,
    reason="`dyngraph check` (dyngraph.debug.commands) is not built yet",
)


def _check(*args: str) -> subprocess.CompletedProcess:
    return run_script("-m", "dyngraph", "check", *args)


@needs_check
def test_check_fails_naming_the_op_and_line():
    result = _check(str(SCRIPT))
    output = result.stdout + result.stderr
    assert result.returncode not in (0, 2), output  # 2 is a usage error, not a finding
    assert re.search(r"\blog\b", output), output
    assert re.search(rf"nan_hunt\.py:{LOG_LINE}\b|\bline {LOG_LINE}\b", output), output
    assert re.search(rf"iteration\s*{PROMISED}\b", output), output


@needs_check
def test_check_passes_a_healthy_demo():
    result = _check(str(demos.path("mlp")), "--steps", "20")
    assert result.returncode == 0, result.stdout + result.stderr
