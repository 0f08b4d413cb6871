"""Whole jobs: ``dyngraph record|check|debug --nproc N`` through torchrun, gloo on CPU.

Each job starts N ranks (and torchrun): seconds each. One job runs by default (the demo's
divergence, recorded on 2 ranks: per-rank files, collectives in order, the divergence named
before the collective timeout, the job's summary); the rest (4 ranks, a healthy check, the
losses against a run without dyngraph, a killed rank, ``debug --rank 1``) run with
``DYNGRAPH_RANK_JOBS=all``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

import dyngraph  # noqa: E402
from dyngraph import demos  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.ranks import jobtrace  # noqa: E402

DEMO = demos.path("torch_ddp_divergence")
SCRIPTS = Path(__file__).parent / "scripts"
ALL = os.environ.get("DYNGRAPH_RANK_JOBS", "") == "all"
heavy = pytest.mark.skipif(not ALL, reason="a job of its own: DYNGRAPH_RANK_JOBS=all")


def dyngraph_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dyngraph", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout)


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def collectives(path: Path) -> list[ev.Collective]:
    return [e for e in dyngraph.read_trace(path).events if type(e) is ev.Collective]


@pytest.fixture(scope="module")
def demo_job(tmp_path_factory):
    """The demo recorded on 2 ranks, its process groups timing out after 30 s."""
    where = tmp_path_factory.mktemp("demo")
    run = dyngraph_cli("record", "--nproc", "2", "-o", "demo.dgtrace", str(DEMO),
                       "--timeout", "30", cwd=where)
    return where, run


def test_each_rank_writes_its_own_trace_and_names_itself(demo_job):
    where, run = demo_job
    files = sorted(p.name for p in where.glob("*.dgtrace"))
    assert files == ["demo.rank0.dgtrace", "demo.rank1.dgtrace"], run.stderr
    headers = [dyngraph.read_trace(where / f).header for f in files]
    assert [(h.rank, h.world_size) for h in headers] == [(0, 2), (1, 2)]
    assert headers[0].run_id == headers[1].run_id != ""


def test_collectives_are_recorded_in_order_on_each_rank(demo_job):
    where, _ = demo_job
    seen = [collectives(where / f"demo.rank{r}.dgtrace") for r in (0, 1)]
    for events in seen:
        for group in {e.group for e in events}:
            seqs = [e.group_seq for e in events if e.group == group]
            assert seqs == sorted(set(seqs)) and seqs[0] >= 1  # each once, in order
    # the same collectives on both ranks until the glitch: the script's centring all-reduce
    # (its call site) and DDP's bucketed all-reduce in backward (made from C++)
    before = [[(e.op, e.group, e.group_seq, e.shape, e.line) for e in events
               if e.iteration < 7] for events in seen]
    assert before[0] == before[1]
    mine = [e for e in seen[0] if e.iteration == 2]
    assert [(e.op, e.line, e.attrs.get("by", "")) for e in mine if e.op == "all_reduce"] == [
        ("all_reduce", line_of(DEMO, "dist.all_reduce(mean"), ""),
        ("all_reduce", 0, "DistributedDataParallel")]
    assert mine[0].summary is not None and mine[0].result is not None  # what went in, out


def test_the_divergence_is_named_at_its_iteration_and_line_before_the_timeout(demo_job):
    where, run = demo_job
    assert run.returncode == 1, run.stderr
    clamp = line_of(DEMO, "h.clamp(")
    assert "ranks diverged at iteration 7: rank 1 ran clamp [module] at " in run.stderr
    assert f"torch_ddp_divergence.py:{clamp}" in run.stderr
    # no rank's script died of the collective's timeout (30 s): dyngraph stopped it first
    assert "Timed out" not in run.stderr + run.stdout
    for r in (0, 1):
        events = dyngraph.read_trace(where / f"demo.rank{r}.dgtrace").events
        assert not any(type(e) is ev.ExceptionRaised for e in events)
    job = jobtrace.read(str(where / "demo.dgtrace"))
    assert job.divergence[0] == 7 and f":{clamp}" in job.divergence[1]
    assert all(job.gradients(i) == (True, "") for i in range(1, 7))


def test_summary_takes_every_rank(demo_job):
    where, _ = demo_job
    run = dyngraph_cli("summary", "demo.rank1.dgtrace", cwd=where)
    assert run.returncode == 0, run.stderr
    assert "a job of 2 ranks" in run.stdout and "◆ iteration 7" in run.stdout
    assert "agree across ranks in all 6 iteration(s)" in run.stdout


@heavy
def test_four_ranks_name_the_one_that_diverged(tmp_path):
    run = dyngraph_cli("record", "--nproc", "4", "-o", "four.dgtrace", str(DEMO),
                       "--timeout", "60", cwd=tmp_path)
    assert run.returncode == 1
    assert "ranks diverged at iteration 7: rank 1 ran clamp" in run.stderr
    assert "where rank 0 ran detach [module.center]" in run.stderr
    assert len(list(tmp_path.glob("four.rank*.dgtrace"))) == 4
    orders = [[(e.op, e.group, e.group_seq) for e in collectives(p) if e.iteration < 7]
              for p in sorted(tmp_path.glob("four.rank*.dgtrace"))]
    assert all(o == orders[0] for o in orders) and len(orders[0]) >= 12


@heavy
def test_a_healthy_job_passes_check_and_computes_what_it_computes_alone(tmp_path):
    script = SCRIPTS / "ddp_steps.py"
    check = dyngraph_cli("check", "--nproc", "2", str(script), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "dyngraph check (rank 1 of 2): ok" in check.stderr
    assert "every rank in step with the others" in check.stderr
    # each rank its own batch size: other shapes, the same parameters, no divergence
    varlen = dyngraph_cli("check", "--nproc", "2", str(script), "--varlen", cwd=tmp_path)
    assert varlen.returncode == 0, varlen.stderr
    torchrun = shutil.which("torchrun") or "torchrun"
    plain = subprocess.run([torchrun, "--standalone", "--nproc-per-node", "2", str(script)],
                           cwd=tmp_path, text=True, capture_output=True, timeout=300)
    record = dyngraph_cli("record", "--nproc", "2", "-o", "h.dgtrace", str(script),
                          cwd=tmp_path)
    losses = [re.findall(r"^step .*$", r.stdout, re.M) for r in (plain, check, record)]
    assert len(losses[0]) == 5 and losses[0] == losses[1] == losses[2]  # repr: bitwise


@heavy
def test_a_backward_that_misses_a_parameter_is_named_before_ddp_waits_for_it(tmp_path):
    script = SCRIPTS / "ddp_unused.py"
    run = dyngraph_cli("check", "--nproc", "2", str(script), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "ranks diverged at iteration 3: rank 1 ran pow at " in run.stderr
    assert (f"where rank 0 ran linear [module.aux] at "
            f"{script}:{line_of(script, '0.1 * self.aux(h)')}") in run.stderr
    assert ("rank 0's backward() reaches module.aux.bias, module.aux.weight, which rank 1's "
            "does not") in run.stderr


@heavy
def test_killing_one_rank_leaves_every_other_ranks_trace_readable(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dyngraph", "record", "--nproc", "2", "-o", "k.dgtrace",
         str(SCRIPTS / "ddp_steps.py"), "--steps", "200", "--pause", "0.1", "--pids",
         str(pids)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (pids / "rank1").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3)  # a few steps in
    _, recorder = map(int, (pids / "rank1").read_text().split())
    os.kill(recorder, signal.SIGKILL)  # rank 1's `dyngraph record`, as the OOM killer would
    proc.communicate(timeout=120)
    for rank in (0, 1):
        trace = dyngraph.read_trace(tmp_path / f"k.rank{rank}.dgtrace")
        assert any(type(e) is ev.Collective for e in trace.events)
    survivor = dyngraph.read_trace(tmp_path / "k.rank0.dgtrace")
    assert type(survivor.events[-1]) is ev.RunEnd  # closed whole, not cut short
    assert dyngraph_cli("summary", "k.rank0.dgtrace", cwd=tmp_path).returncode == 0


def _screen(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], text=True,
                          capture_output=True).stdout


def _wait_for(session: str, text: str, seconds: float = 120) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        screen = _screen(session)
        if text in screen:
            return screen
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never showed:\n{_screen(session)}")


@heavy
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_debug_rank_1_pauses_while_rank_0_waits_without_timing_out(tmp_path):
    """The debugger on rank 1, paused at iteration 3 for twice the process group's timeout
    (5 s): rank 0, headless, waits in the store, and the job ends well."""
    session = f"dyngraph-ranks-{os.getpid()}"
    command = (f"{sys.executable} -m dyngraph debug --nproc 2 --rank 1 --break iter:3 "
               f"{SCRIPTS / 'ddp_steps.py'} --timeout 5 --done {tmp_path}; "
               f"echo EXIT $? > {tmp_path / 'exit'}; sleep 30")
    subprocess.run(["tmux", "new", "-d", "-s", session, "-x", "160", "-y", "45", command],
                   check=True, cwd=tmp_path)
    try:
        screen = _wait_for(session, "held at its first checkpoint")
        assert "rank 1 of 2" in screen and "PAUSED held" in " ".join(screen.split())
        subprocess.run(["tmux", "send-keys", "-t", session, "c"], check=True)
        _wait_for(session, "iteration 3 begins")
        time.sleep(10)  # twice the timeout: rank 0 would have failed inside a collective
        subprocess.run(["tmux", "send-keys", "-t", session, "c"], check=True)
        _wait_for(session, "FINISHED")
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 180  # (torchrun ends the job: slow on a busy machine)
        while not (tmp_path / "exit").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert (tmp_path / "exit").read_text().strip() == "EXIT 0"
        assert (tmp_path / "rank0").read_text() == (tmp_path / "rank1").read_text() == (
            "5 steps\n")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


@heavy
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_debug_shows_the_demos_divergence_and_quitting_there_ends_the_job(tmp_path):
    """The debugger on rank 1 of the demo pauses at the divergence (iteration 7, the line
    of the branch, in the status line) with its process groups' timeout (20 s) long past;
    q there ends the whole job (the rank fails, so torchrun stops the paused rank 0)."""
    session = f"dyngraph-ranks-demo-{os.getpid()}"
    command = (f"{sys.executable} -m dyngraph debug --nproc 2 --rank 1 {DEMO} --timeout 20; "
               f"echo EXIT $? > {tmp_path / 'exit'}; sleep 30")
    subprocess.run(["tmux", "new", "-d", "-s", session, "-x", "200", "-y", "50", command],
                   check=True, cwd=tmp_path)
    try:
        _wait_for(session, "held at its first checkpoint")
        subprocess.run(["tmux", "send-keys", "-t", session, "c"], check=True)
        screen = _wait_for(session, "ranks diverged at iteration 7")
        named = f"rank 1 ran clamp [module] at {DEMO}:{line_of(DEMO, 'h.clamp(')}"
        words = " ".join(screen.split())  # (the status line wraps between words)
        assert named in words and "PAUSED divergence" in words, screen
        time.sleep(25)  # past the timeout: rank 0 waits in the store, not in a collective
        assert "ranks diverged at iteration 7" in _screen(session)
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 120
        while not (tmp_path / "exit").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert (tmp_path / "exit").read_text().strip() == "EXIT 1"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
