"""Iteration templates (frame format 4) on every numpy demo: each event read back from a
templated trace is the event recorded, as read from a format-3 trace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from demo_helpers import record

from dyngraph import demos

sys.path.insert(0, str(Path(__file__).parents[1] / "events"))
from template_check import assert_templates_read_back_identical  # noqa: E402

STEPS = {"transformer": 2}
# A demo whose graph changes every iteration (a tree per sentence): no iteration repeats
# another, so every frame stays format 3.
CHANGING = {"tree_rnn"}


@pytest.mark.parametrize("name", [n for n in demos.names() if n not in demos.NEEDS_TORCH])
def test_a_demo_reads_back_identical_from_templated_frames(name, tmp_path):
    recording = record(name, STEPS.get(name, 4), stats="full" if name == "mlp" else "cheap")
    assert_templates_read_back_identical(recording.events, tmp_path, name,
                                         repeats=name not in CHANGING)
