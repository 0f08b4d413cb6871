"""``--iterations``: ranges checked against the trace before anything is made of them, open
ends, ranges past the end cut with a note (issues 23 and 27), one parser for every command
that takes them (``export``, ``summary``)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

import dyngraph
from dyngraph.cli import main
from dyngraph.errors import UserError
from dyngraph.iterspec import describe, parse, resolve


@pytest.fixture(autouse=True)
def no_system_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DYNGRAPH_DOT", raising=False)


@pytest.fixture
def two_iterations(tmp_path: Path) -> Path:
    path = tmp_path / "run.dgtrace"
    with dyngraph.record(path, stats="cheap"):
        w = dyngraph.randn(3, 2, requires_grad=True)
        for _ in range(2):
            dyngraph.randn(2, 3).matmul(w).relu().sum().backward()
    return path


def _export(trace: Path, out: Path, spec: str) -> int:
    return main(["export", str(trace), "-o", str(out), "--format", "dot", "--iterations",
                 spec])


def _exported(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.dot"))


# -- the issues' reproductions ----------------------------------------------------------------
def test_a_huge_range_is_checked_against_the_trace_before_it_is_made(
        two_iterations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`export --iterations 1-30000000` allocated the 30 million numbers (1.45 GB), then
    said "no iteration 4"."""
    tracemalloc.start()
    try:
        assert _export(two_iterations, tmp_path / "out", "1-30000000") == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
    assert _exported(tmp_path / "out") == ["iter-0001.dot", "iter-0002.dot"]
    err = capsys.readouterr().err
    assert "--iterations 1-30000000: the trace ends at iteration 2; took 1-2" in err


def test_a_range_past_any_machine_integer_is_one_note_not_a_traceback(
        two_iterations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`1-99999999999999999999` was an OverflowError traceback."""
    assert _export(two_iterations, tmp_path / "out", "1-99999999999999999999") == 0
    assert _exported(tmp_path / "out") == ["iter-0001.dot", "iter-0002.dot"]
    assert "Traceback" not in capsys.readouterr().err
    assert _export(two_iterations, tmp_path / "o2", "99999999999999999999") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dyngraph export: error: no iteration 999") and "\n" not in err


def test_a_range_that_runs_past_the_end_is_cut_with_a_note(
        two_iterations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 27: `export --iterations 1-3` on a 2-iteration trace was an error."""
    assert _export(two_iterations, tmp_path / "out", "1-3") == 0
    assert _exported(tmp_path / "out") == ["iter-0001.dot", "iter-0002.dot"]
    captured = capsys.readouterr()
    assert "note: --iterations 1-3: the trace ends at iteration 2; took 1-2" in captured.err
    assert "exported 2 iterations" in captured.out


@pytest.mark.parametrize("spec, files", [
    ("2-", ["iter-0002.dot"]), ("-1", ["iter-0001.dot"]), ("last", ["iter-0002.dot"]),
    ("1-last", ["iter-0001.dot", "iter-0002.dot"]), ("1,last", ["iter-0001.dot",
                                                                "iter-0002.dot"]),
])
def test_open_ranges(two_iterations: Path, tmp_path: Path, spec: str, files: list[str]) -> None:
    assert _export(two_iterations, tmp_path / "out", spec) == 0
    assert _exported(tmp_path / "out") == files


@pytest.mark.parametrize("spec, message", [
    ("3", "no iteration 3 in this trace (it has 1-2)"),
    ("5-", "no iteration in --iterations 5- (the trace has 1-2)"),
    ("0", "numbered from 1"),
    ("2-1", "2-1 goes down"),
    ("1-x", "bad --iterations '1-x'"),
    ("last-2", "a range cannot begin at last"),
])
def test_bad_ranges_are_one_line(two_iterations: Path, tmp_path: Path, spec: str, message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _export(two_iterations, tmp_path / "out", spec) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("dyngraph export: error:")
    assert not (tmp_path / "out").exists()


def test_a_bad_spec_is_refused_before_a_script_is_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text("open('ran', 'w').close()\n")
    assert main(["export", str(script), "-o", str(tmp_path / "out"), "--iterations",
                 "1-x"]) == 2
    assert not (tmp_path / "ran").exists()
    assert "bad --iterations" in capsys.readouterr().err


# -- summary takes the same specs -------------------------------------------------------------
def test_summary_lists_the_iterations_asked_for(
        two_iterations: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(two_iterations), "--iterations", "2-9"]) == 0
    captured = capsys.readouterr()
    rows = [line.split()[0] for line in captured.out.splitlines()
            if line.strip()[:1].isdigit() and "ops" not in line]
    assert rows == ["2"]
    assert "note: --iterations 2-9: the trace ends at iteration 2; took 2" in captured.err
    assert main(["summary", str(two_iterations), "--iterations", "7"]) == 2
    assert "no iteration 7" in capsys.readouterr().err


# -- the parser ---------------------------------------------------------------------------------
def test_the_parser_reads_every_form_and_spells_out_nothing() -> None:
    have = [1, 2, 3, 5, 8, 9]
    assert resolve(parse("2-5, 9"), have) == ([2, 3, 5, 9], [])
    assert resolve(parse("4-"), have) == ([5, 8, 9], [])
    assert resolve(parse("-3"), have) == ([1, 2, 3], [])
    assert resolve(parse("last,1"), have) == ([1, 9], [])
    assert resolve(parse(f"1-{10**30}"), have)[0] == have
    with pytest.raises(UserError, match="no iteration 4"):
        resolve(parse("4"), have)
    assert describe(have) == "1-3, 5, 8-9"
    assert describe(list(range(1, 40, 2))).endswith(", …")


def test_summary_of_changed_iterations_keeps_the_first_after_setup(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Setup (iteration 0) is nobody's baseline, so iteration 1 is never 'changed': it is
    listed as the first iteration is, and an unchanged iteration 2 is not."""
    path = tmp_path / "run.dgtrace"
    with dyngraph.record(path, stats="cheap"):
        data = dyngraph.randn(2, 3) * 2  # setup: preparing the data
        w = dyngraph.randn(3, 2, requires_grad=True)
        for _ in range(2):
            data.matmul(w).relu().sum().backward()
    assert main(["summary", str(path), "--iterations", "changed"]) == 0
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines()
            if line.strip()[:1].isdigit() and "ops" not in line]
    assert [r[0] for r in rows] == ["0", "1"] and rows[0][1] == "setup"
