"""Which rank this is (torchrun's environment) and where each rank's trace is found."""

from __future__ import annotations

import pytest
from rank_traces import write_job, write_rank

from dyngraph.errors import UserError
from dyngraph.ranks.job import from_env, rank_path, read_job, sibling_paths


def test_a_torchrun_environment_names_the_rank():
    job = from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
                    "TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "2"})
    assert (job.rank, job.world_size, job.local_rank, job.run_id) == (3, 4, 1, "abc")
    assert job.prefix == "dyngraph/abc/2/"  # a restarted job never reads its earlier keys


def test_no_rank_variables_is_no_job_and_bad_ones_are_one_line_errors():
    assert from_env({"WORLD_SIZE": "2"}) is None
    with pytest.raises(UserError, match="RANK='x' is not a number"):
        from_env({"RANK": "x", "WORLD_SIZE": "2"})
    with pytest.raises(UserError, match="do not name a rank"):
        from_env({"RANK": "2", "WORLD_SIZE": "2"})


def test_without_torchrun_the_rendezvous_address_names_the_run():
    job = from_env({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "29500"})
    assert job.run_id == "h:29500"


def test_each_rank_writes_beside_the_name_given():
    assert rank_path("run.dgtrace", 0) == "run.rank0.dgtrace"
    assert rank_path("out/run", 12) == "out/run.rank12.dgtrace"


def test_the_job_is_found_from_any_rank_file_the_o_name_or_its_folder(tmp_path):
    given = write_job(tmp_path, 4)
    expected = [str(tmp_path / f"run.rank{r}.dgtrace") for r in range(4)]
    for name in (str(given), expected[2], str(tmp_path)):
        files = read_job(name)
        assert files is not None and list(files.paths) == expected
        assert files.run_id == "run-1" and files.world_size == 4


def test_a_stale_rank_file_of_an_earlier_larger_job_is_left_out(tmp_path):
    write_rank(tmp_path / "run.rank3.dgtrace", 3, 4, "old-run", [1.0])
    write_job(tmp_path, 2, run_id="new-run")
    files = read_job(str(tmp_path / "run.rank0.dgtrace"))
    assert files.world_size == 2 and files.run_id == "new-run"
    assert files.left_out == (str(tmp_path / "run.rank3.dgtrace"),)


def test_a_missing_rank_is_a_hole_not_an_error(tmp_path):
    write_rank(tmp_path / "run.rank1.dgtrace", 1, 3, "r", [1.0])
    files = read_job(str(tmp_path / "run.rank1.dgtrace"))
    assert files.paths == (None, str(tmp_path / "run.rank1.dgtrace"), None)


def test_a_single_process_trace_is_no_job(tmp_path):
    import dyngraph

    x = dyngraph.tensor([1.0], requires_grad=True)
    with dyngraph.record(tmp_path / "run.dgtrace"):
        (x * 2).sum().backward()
    assert sibling_paths(str(tmp_path / "run.dgtrace")) == []
    assert read_job(str(tmp_path / "run.dgtrace")) is None


def test_a_folder_of_two_jobs_asks_for_one_of_them(tmp_path):
    write_rank(tmp_path / "a.rank0.dgtrace", 0, 1, "a", [1.0])
    write_rank(tmp_path / "b.rank0.dgtrace", 0, 1, "b", [1.0])
    with pytest.raises(UserError, match="several jobs"):
        read_job(str(tmp_path))
