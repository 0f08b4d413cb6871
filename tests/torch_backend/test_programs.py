"""Programs in the style of real third-party PyTorch programs, run unchanged under `record`
and `check` as a user runs them: what they print is byte for byte what `python` prints, and
`check` judges what they do on purpose as meant."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from runtime_helpers import dyngraph_cli  # noqa: E402

SCRIPTS = Path(__file__).parent / "scripts"


def plain(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=120, cwd=script.parent)


def test_a_gcn_with_sparse_adjacency_runs_unchanged_under_check():
    """Issue 22: pytorch/examples gcn and gat (`torch.diag(v).to_sparse()`) crashed in the
    capture's .numpy() (and statistics: test_contract's sparse case), and `check` failed on
    `1 / degree` that the next line sets to 0 where it is Inf."""
    script = SCRIPTS / "gcn_style.py"
    expected = plain(script)
    assert expected.returncode == 0 and "accuracy" in expected.stdout
    checked = dyngraph_cli("check", str(script), timeout=180)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == expected.stdout and "ok, no NaN/Inf" in checked.stderr
    assert "could not record" not in checked.stderr
    assert "not recorded for sparse_coo tensors" in checked.stderr


def test_check_passes_infs_made_from_data_and_unwritten_memory_but_not_a_nan():
    """Issue 22: `check` failed on torch.log(torch.tril(ones)) (word_language_model's causal
    mask), on `1 / degree` (gcn, gat), and on the memory of torch.empty before it was
    written (torchdiffeq's Runge-Kutta buffer). A NaN made from data still fails; and both
    engines judge alike."""
    script = str(SCRIPTS / "data_infs.py")
    checked = dyngraph_cli("check", script, timeout=180)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[-1].startswith("2 ")
    failed = dyngraph_cli("check", script, "--nan-from-data", timeout=180)
    assert failed.returncode == 1
    line = next(i for i, text in enumerate(Path(script).read_text().splitlines(), start=1)
                if text.endswith("# @nan-from-data"))
    assert "first NaN/Inf: log -> (5, 5) at top level at " in failed.stderr
    assert f"data_infs.py:{line} (iteration 0, setup) produced 10 NaN" in failed.stderr
    assert "NaN/Inf found in iteration 0, setup: " in failed.stderr  # (before any gradient)
    ours = dyngraph_cli("check", "--backend", "dyngraph", script, "--dyngraph", timeout=120)
    assert ours.returncode == 0, ours.stderr
    unwritten = dyngraph_cli("check", "--backend", "dyngraph", script, "--dyngraph",
                             "--read-unwritten", timeout=120)
    assert unwritten.returncode == 1
    assert "first NaN/Inf: backward starts from add -> () at top level at " in unwritten.stderr
    assert "the unwritten memory of a tensor of the empty family" in unwritten.stderr
