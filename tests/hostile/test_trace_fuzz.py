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

import columnfuzz as cf
import pytest
import tracefuzz as fz

from dyngraph.capture import tracefile as tf

CASES = fz.fuzz_cases_wanted(300)
BATCHES = 10  # cases are run in this many tests: a failure points at a smaller range
MAX_GROWTH_MB = 400  # what all cases together may add to the process's peak memory


@pytest.fixture(scope="module")
def mutators(tmp_path_factory) -> dict[str, fz.Mutator]:
    tmp = tmp_path_factory.mktemp("fuzz-base")
    v2 = tf.FORMAT_VERSION
    return {
        "full": fz.Mutator(fz.record_tiny(tmp / "full.dgtrace", "full", "small").read_bytes(),
                           seed=1),
        "cheap": fz.Mutator(fz.record_tiny(tmp / "cheap.dgtrace", "cheap").read_bytes(),
                            seed=2),
        # frame format 2 (columns), what dyngraph writes now
        "full2": cf.ColumnMutator(fz.record_tiny(tmp / "full2.dgtrace", "full", "small",
                                                 version=v2).read_bytes(), seed=3),
        "cheap2": cf.ColumnMutator(fz.record_tiny(tmp / "cheap2.dgtrace", "cheap",
                                                  version=v2).read_bytes(), seed=4),
    }


def _mutator(mutators: dict[str, fz.Mutator], case: int) -> fz.Mutator:
    """Cases take turns: format 1 full and cheap, format 2 full and cheap."""
    return mutators[("cheap", "full", "cheap2", "full2")[case % 4]]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("batch", range(BATCHES))
def test_every_reader_loads_or_refuses_in_one_line(batch, mutators, tmp_path):
    peak = _peak_mb()
    failures = []
    for case in range(batch, CASES, BATCHES):
        mutator = _mutator(mutators, case)
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


@pytest.mark.parametrize("name", ["full", "full2"])
def test_the_mutations_are_deterministic(mutators, name):
    m = mutators[name]
    assert [m.make(i) for i in range(30)] == [m.make(i) for i in range(30)]
    assert len({m.make(i)[0] for i in range(30)}) > 25  # and they differ


@pytest.mark.parametrize("name", ["cheap", "cheap2"])
def test_most_crafted_files_pass_the_checksum(mutators, tmp_path, name):
    """The mutations that re-encode frames must reach the readers' own checks."""
    m = mutators[name]
    checksum = 0
    for case in range(200):
        data, what = m.make(case)
        outcome = fz.exercise(fz.write(tmp_path / "c.dgtrace", data), tmp_path / "o")
        checksum += "checksum mismatch" in outcome
    assert checksum < 40


@pytest.mark.parametrize("name", ["full", "full2"])
def test_a_file_that_loads_is_untouched_by_the_harness(mutators, tmp_path, name):
    path = fz.write(tmp_path / "good.dgtrace", mutators[name].data)
    assert fz.exercise(path, tmp_path / "out") == "ok"
    assert (tmp_path / "out" / "index.html").exists()
