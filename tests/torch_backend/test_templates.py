"""Iteration templates (frame format 4) on PyTorch workloads recorded by the torch
backend: each event read back from a templated trace is the event recorded, as read from
a format-3 trace (the torch backend's ids, node ids and summaries move per iteration as
the numpy engine's do)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch_models import block_step, lstm_step, mlp_step  # noqa: E402

import dyngraph  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "events"))
from template_check import assert_templates_read_back_identical  # noqa: E402


@pytest.mark.parametrize("workload,stats", [("mlp", "full"), ("block", "cheap"),
                                            ("lstm", "cheap")])
def test_a_pytorch_workload_reads_back_identical_from_templated_frames(workload, stats,
                                                                       tmp_path):
    step = {"mlp": mlp_step, "block": block_step, "lstm": lstm_step}[workload]()
    with dyngraph.trace(backend="torch", stats=stats) as t:
        for k in range(4):
            step(5 + k % 2) if workload == "lstm" else step()  # (lstm: two lengths)
    assert_templates_read_back_identical(list(t.events), tmp_path, f"{workload}-{stats}")
