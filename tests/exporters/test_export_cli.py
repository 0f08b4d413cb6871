"""``dyngraph export``: from a trace file, from a script (recorded first), and bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import dyngraph
from dyngraph.cli import main

SCRIPT = textwrap.dedent("""
    import sys
    import dyngraph as torch
    import dyngraph.nn as nn
    torch.manual_seed(0)
    steps = int(sys.argv[1])
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    for i in range(steps):
        x = torch.randn(2 + i % 2, 4)
        model(x).pow(2).mean().backward()
""")


@pytest.fixture(autouse=True)
def no_system_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DYNGRAPH_DOT", raising=False)


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.dgtrace"
    with dyngraph.record(path, stats="cheap"):
        w = dyngraph.randn(3, 2, requires_grad=True)
        for i in range(4):
            x = dyngraph.randn(2 + i % 2, 3)
            x.matmul(w).relu().sum().backward()
    return path


def test_export_a_trace(trace_file: Path, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["export", str(trace_file), "-o", str(out), "--iterations", "changed",
                 "--graph", "backward", "--diff"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "index.html", *[f"iter-000{i}.{e}" for i in range(1, 5) for e in ("dot", "svg")]]
    assert "BackwardStep" not in (out / "iter-0001.dot").read_text()
    assert "MmBackward0" in (out / "iter-0001.dot").read_text()
    stdout = capsys.readouterr().out
    assert "exported 4 iterations, 2 layouts" in stdout


def test_export_selected_iterations_as_dot_only(trace_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["export", str(trace_file), "-o", str(out), "--format", "dot",
                 "--iterations", "2-3", "--depth", "0"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "iter-0002.dot",
                                                    "iter-0003.dot"]


@pytest.mark.slow
def test_export_a_script_records_it_first(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    assert main(["export", str(script), "-o", str(out), "--", "3"]) == 0
    assert sorted(p.name for p in out.glob("*.svg")) == [f"iter-000{i}.svg" for i in (1, 2, 3)]
    assert "linear" in (out / "iter-0001.dot").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--format", "png"], "unknown --format 'png'"),
    (["--iterations", "0"], "numbered from 1"),
    (["--iterations", "9"], "no iteration 9"),
    (["--depth", "-1"], "--depth must be 0 or more"),
    (["--dot", "/nonexistent/dot"], "not found"),
])
def test_bad_input_is_one_line(trace_file: Path, tmp_path: Path, extra: list[str], message: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(trace_file), "-o", str(tmp_path / "out"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("dyngraph export: error:")
    assert not (tmp_path / "out").exists()


def test_missing_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path / "nope.dgtrace"), "-o", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_damaged_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.dgtrace"
    bad.write_bytes(b"not a trace at all")
    assert main(["export", str(bad), "-o", str(tmp_path / "o")]) == 2
    assert "bad.dgtrace" in capsys.readouterr().err


def test_a_script_that_fails_early(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "boom.py"
    script.write_text("raise SystemExit('no data here')\n")
    assert main(["export", "-o", str(tmp_path / "out"), str(script)]) == 2
    err = capsys.readouterr().err
    assert "nothing to export" in err or "recording" in err
    assert not (tmp_path / "out").exists()
