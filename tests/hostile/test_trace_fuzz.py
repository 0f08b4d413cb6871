"""The fuzzer: crafted and damaged traces, made from real recordings, through every reader.

Each case must end, in every reader (read_trace and every iteration's graph, structure
key and diff; the summary; the export; the debugger's loader), in success or in the
documented one-line TraceFileError, quickly and without a memory blow-up.

    DYNGRAPH_FUZZ_CASES=10000 pytest tests/hostile/test_trace_fuzz.py    # locally

Cases are seeded: case N is the same file on every run and every machine, so a failure's
message (it names the case and the mutation) is all it takes to reproduce it.
"""

from __future__ import annotations

import resource
import shutil

import pytest
import tracefuzz as fz

CASES = fz.fuzz_cases_wanted(300)
BATCHES = 10  # cases are run in this many tests: a failure points at a smaller range
MAX_GROWTH_MB = 400  # what all cases together may add to the process's peak memory


@pytest.fixture(scope="module")
def mutators(tmp_path_factory) -> dict[str, fz.Mutator]:
    tmp = tmp_path_factory.mktemp("fuzz-base")
    return {
        "full": fz.Mutator(fz.record_tiny(tmp / "full.dgtrace", "full", "small").read_bytes(),
                           seed=1),
        "cheap": fz.Mutator(fz.record_tiny(tmp / "cheap.dgtrace", "cheap").read_bytes(),
                            seed=2),
    }


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("batch", range(BATCHES))
def test_every_reader_loads_or_refuses_in_one_line(batch, mutators, tmp_path):
    peak = _peak_mb()
    failures = []
    for case in range(batch, CASES, BATCHES):
        mutator = mutators["full" if case % 2 else "cheap"]
        data, what = mutator.make(case)
        path = fz.write(tmp_path / f"case{case}.dgtrace", data)
        out = tmp_path / f"out{case}"
        try:
            fz.exercise(path, out, limit=20.0)
        except fz.Unexpected as exc:
            failures.append(f"case {case} ({what}): {exc}")
        path.unlink()
        shutil.rmtree(out, ignore_errors=True)
    assert not failures, f"{len(failures)} cases failed:\n" + "\n".join(failures[:20])
    assert _peak_mb() - peak < MAX_GROWTH_MB


def test_the_mutations_are_deterministic(mutators):
    m = mutators["full"]
    assert [m.make(i) for i in range(30)] == [m.make(i) for i in range(30)]
    assert len({m.make(i)[0] for i in range(30)}) > 25  # and they differ


def test_most_crafted_files_pass_the_checksum(mutators, tmp_path):
    """The mutations that re-encode frames must reach the readers' own checks."""
    m = mutators["cheap"]
    checksum = 0
    for case in range(200):
        data, what = m.make(case)
        outcome = fz.exercise(fz.write(tmp_path / "c.dgtrace", data), tmp_path / "o")
        checksum += "checksum mismatch" in outcome
    assert checksum < 40


def test_a_file_that_loads_is_untouched_by_the_harness(mutators, tmp_path):
    path = fz.write(tmp_path / "good.dgtrace", mutators["full"].data)
    assert fz.exercise(path, tmp_path / "out") == "ok"
    assert (tmp_path / "out" / "index.html").exists()
