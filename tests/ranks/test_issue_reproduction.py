"""Issue 26's reproduction, as it was filed:

    torchrun --nproc_per_node 2 -m dyngraph record -o run.dgtrace ddp.py

with ``ddp.py`` an ordinary gloo DDP script (``scripts/ddp.py``: its training loop, then
one of each collective the issue names). Both ranks wrote the same ``run.dgtrace`` (one
rank's trace was lost) and no collective was recorded. One job (torchrun's own ``-m``
form, not ``--nproc``): a few seconds.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

import dyngraph  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402

SCRIPT = Path(__file__).parent / "scripts" / "ddp.py"


def line_of(text: str) -> int:
    lines = SCRIPT.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    where = tmp_path_factory.mktemp("repro")
    started = time.time()
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
         "2", "-m", "dyngraph", "record", "-o", "run.dgtrace", str(SCRIPT)],
        cwd=where, text=True, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return where, run, started


def test_torchrun_m_dyngraph_record_writes_one_trace_per_rank(job):
    where, run, _ = job
    assert sorted(p.name for p in where.iterdir()) == ["run.rank0.dgtrace", "run.rank1.dgtrace"]
    traces = [dyngraph.read_trace(where / f"run.rank{r}.dgtrace") for r in (0, 1)]
    assert [(t.header.rank, t.header.world_size) for t in traces] == [(0, 2), (1, 2)]
    assert traces[0].header.run_id == traces[1].header.run_id != ""
    # each rank's trace is its own run: its own losses (each rank its own batches), the
    # ones the script printed
    for rank, trace in enumerate(traces):
        printed = re.findall(rf"^rank {rank} step \d loss (\S+)$", run.stdout, re.M)
        losses = [e.summary.max for e in trace.events
                  if type(e) is ev.Op and e.op == "mean" and e.line == line_of(".mean()")]
        assert [repr(v) for v in losses] == printed and len(printed) == 3
    assert traces[0].events != traces[1].events


def test_the_collectives_the_issue_names_are_recorded_on_each_rank(job):
    where, _, started = job
    seen = []
    for rank in (0, 1):
        events = [e for e in dyngraph.read_trace(where / f"run.rank{rank}.dgtrace").events
                  if type(e) is ev.Collective]
        assert all(e.rank == rank and e.group == "w" for e in events)
        seqs = [e.group_seq for e in events]
        assert seqs == sorted(set(seqs))  # in order, each once
        assert all(started <= e.time <= time.time() for e in events)
        # DDP's bucketed all-reduce in every backward (made by PyTorch, from C++)
        ddp = [e.iteration for e in events if e.attrs.get("by") == "DistributedDataParallel"]
        assert ddp == [1, 2, 3]
        assert all(e.op == "all_reduce" and e.shape == (10,) and e.dtype == "float32"
                   for e in events if e.attrs.get("by") == "DistributedDataParallel")
        mine = [e for e in events if e.line]
        assert [(e.op, e.line, e.shape, e.dtype) for e in mine] == [
            ("all_reduce", line_of("dist.all_reduce"), (4,), "float32"),
            ("broadcast", line_of("dist.broadcast"), (4,), "float32"),
            ("all_gather", line_of("dist.all_gather"), (4,), "float32"),
            ("reduce_scatter", line_of("dist.reduce_scatter"), (2,), "float32"),
            ("barrier", line_of("dist.barrier"), (), "")]
        assert mine[1].attrs["src"] == 0
        # what went in and what came out (the recording's cheap statistics: the norm):
        # arange(4) + rank, summed over both ranks
        reduce = mine[0]
        assert reduce.summary.norm == pytest.approx(math.hypot(*(i + rank for i in range(4))))
        assert reduce.result.norm == pytest.approx(math.hypot(1, 3, 5, 7))
        assert mine[3].result.norm == pytest.approx(math.hypot(2 * rank, 2 * rank))
        seen.append([(e.op, e.group_seq) for e in events])
    assert seen[0] == seen[1]  # the same collectives, the same sequence numbers
