"""A job as a whole: the rank x iteration grid behind summary, export and view."""

from __future__ import annotations

import os

from rank_traces import write_job

from dyngraph.cli import main
from dyngraph.ranks import jobtrace


def test_a_healthy_job_agrees_everywhere(tmp_path):
    job = jobtrace.read(str(write_job(tmp_path, 2)))
    assert job.world_size == 2 and job.iterations == [1, 2, 3]
    assert [job.cell(1, i).loss for i in (1, 2, 3)] == [1.0, 0.5, 0.25]
    assert all(job.odd(i) == [] for i in job.iterations) and job.divergence is None
    assert all(job.gradients(i) == (True, "") for i in job.iterations)
    # each rank's own gradient before the all-reduce, the reduced one after
    assert job.cell(1, 2).local_norm == 2.0 and job.cell(1, 2).reduced_norm == 1.0


def test_the_odd_rank_and_the_gradients_that_disagree_are_named(tmp_path):
    given = write_job(tmp_path, 4, r2={"losses": [1.0, 0.5, 0.25], "odd_at": 2},
                      r3={"losses": [1.0, 0.5, 0.25], "grads": [1.0, 1.0, 1.5]})
    job = jobtrace.read(str(given))
    assert job.odd(2) == [2] and job.odd(1) == [] and job.odd(3) == []
    assert job.gradients(3) == (False, "w: rank 0 1, rank 3 1.5")


def test_summary_of_a_job_shows_every_rank_and_the_divergence(tmp_path, capsys):
    given = write_job(tmp_path, 2, r1={"losses": [1.0, 0.5, 0.25], "diverged_at": 3,
                                       "end": False})
    assert main(["summary", str(tmp_path / "run.rank1.dgtrace")]) == 0
    out = capsys.readouterr().out
    assert "a job of 2 ranks" in out and "rank 0" in out and "rank 1" in out
    assert "◆ iteration 3: ranks diverged at iteration 3" in out
    assert "rank 1: " in out and "no end: the recording was cut short" in out
    assert "agree across ranks" in out
    assert main(["summary", str(given)]) == 0  # the name given to -o works as well


def test_export_of_a_job_writes_a_folder_per_rank(tmp_path, capsys):
    given = write_job(tmp_path, 2)
    out = tmp_path / "out"
    assert main(["export", str(given), "-o", str(out), "--format", "dot"]) == 0
    for rank in (0, 1):
        assert sorted(os.listdir(out / f"rank{rank}"))[:3] == ["index.html", "iter-0001.dot",
                                                                "iter-0002.dot"]
