"""Never hang, never swallow a Ctrl-C (issue 23).

- A finalizer that prints (or logs, or warns) while the collector runs inside one of the
  agent's flushes deadlocked ``record``, ``check`` and ``debug``, both engines: the output
  path waited for the lock the flush held, on the same thread.
- A Ctrl-C that landed in the recording's ``gc.callbacks`` function was swallowed by
  CPython ("Exception ignored in ...") and the run went on to exit status 0.

The interrupted runs are drawn at random moments, derandomized: ``DYNGRAPH_STRESS_RUNS``
runs of each kind (2 by default; the issue's count is 200:
``DYNGRAPH_STRESS_RUNS=200 pytest tests/runtime/test_hangs.py``).
"""

from __future__ import annotations

import gc
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from runtime_helpers import drive, script

import dyngraph as dg
from dyngraph.capture import events as ev

RUNS = int(os.environ.get("DYNGRAPH_STRESS_RUNS", "2"))
DEADLINE = 60.0  # a run that has not ended by then hangs
STEPS = 120


def _record(*args: str, out: Path, interrupt_after: float | None = None
            ) -> tuple[int, str, str]:
    """``dyngraph record -o out args...`` as a terminal would run it; with
    ``interrupt_after``, Ctrl-C that long after the script printed its first line."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dyngraph", "record", "-o", str(out), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # (a shell's background job starts with SIGINT ignored; a terminal's does not)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = ""
    if interrupt_after is not None:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        import time

        time.sleep(interrupt_after)
        proc.send_signal(signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"dyngraph record {' '.join(args)} hung (interrupted after "
                             f"{interrupt_after} s)") from None
    return proc.returncode, first + stdout, stderr


def _finalized(stdout: str, stderr: str, steps: int) -> None:
    """Every finalizer of every step spoke, and the script reached its end."""
    assert f"done {steps}\n" in stdout
    for i in range(steps):
        assert f"finalized {i}\n" in stdout
        assert f"finalized on stderr {i}\n" in stderr
        assert f"finalized by logging {i}\n" in stderr
        assert f"finalized with a warning {i}" in stderr
        assert f"weakref finalizer {i}\n" in stdout
    assert stderr.count("ResourceWarning") >= steps


# -- finalizers that print during flushes --------------------------------------------------
@pytest.mark.parametrize("engine", ["dyngraph", "torch"])
def test_record_with_finalizers_printing_during_flushes_ends(engine: str, tmp_path: Path):
    """The issue's reproduction: `python script.py` ends in a second, `dyngraph record`
    hung for good."""
    if engine == "torch":
        pytest.importorskip("torch")
    steps = STEPS if engine == "dyngraph" else 30  # (torch makes each collection slow)
    out = tmp_path / "run.dgtrace"
    code, stdout, stderr = _record(script("finalizers.py"), engine, str(steps), out=out)
    assert code == 0, stderr
    _finalized(stdout, stderr, steps)
    trace = dg.read_trace(out)
    assert trace.events[-1].reason == "finished"
    printed = "".join(e.text for e in trace.events if type(e) is ev.ScriptOutput)
    assert f"finalized {steps - 1}\n" in printed


def test_check_with_finalizers_printing_during_flushes_ends():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "dyngraph", "check", script("finalizers.py"),
                           "dyngraph", str(STEPS)], capture_output=True, text=True, env=env,
                          timeout=DEADLINE)
    assert proc.returncode == 0, proc.stderr
    _finalized(proc.stdout, proc.stderr, STEPS)
    assert "dyngraph check: ok" in proc.stderr


def test_debug_session_with_finalizers_printing_during_flushes_ends():
    """What `dyngraph debug` drives: every line the finalizers wrote arrives as output."""
    run = drive("finalizers.py", ["dyngraph", str(STEPS)], timeout=DEADLINE,
                breakpoints=[dg.debug.Breakpoint.at_iteration(STEPS // 2)])
    assert run.state is not None and run.state.exit_status == 0
    assert len(run.pauses) == 1
    _finalized(run.text("stdout"), run.text("stderr"), STEPS)


# -- a resume that crosses the pause ---------------------------------------------------------
def test_a_continue_sent_the_moment_the_hit_arrives_resumes_the_script():
    """One run in 20 to 40 of a value breakpoint stalled under load: the agent's pump sent
    the BreakpointHit as soon as it was queued, while the script's thread was still setting
    up its pause, and the session's continue, read before the agent counted itself paused,
    was dropped: the script waited for good. The script forces that order every time."""
    run = drive("slow_pause.py")
    assert [p.hit.reason for p in run.pauses] == ["breakpoint"]
    assert run.state is not None and run.state.exit_status == 0, run.text("stderr")
    assert "resumed 6.0 - the hit went out first: True\n" in run.text("stdout")


# -- Ctrl-C ------------------------------------------------------------------------------------
def test_no_python_function_runs_inside_the_collector_while_recording():
    """Python code the collector calls is where a Ctrl-C during a collection is raised, and
    CPython swallows what is raised there."""
    before = list(gc.callbacks)
    with dg.trace():
        y = dg.ones(3, requires_grad=True)
        (y * 2).sum().backward()
        ours = [cb for cb in gc.callbacks if cb not in before]
    assert ours == []


@pytest.mark.parametrize("run", range(RUNS))
def test_ctrl_c_during_a_collection_stops_the_recording(run: int, tmp_path: Path):
    """About 1 in 60 interrupted recordings ran to the end with status 0; with a collector
    that runs all the time, most of them did."""
    delay = random.Random(f"collector-{run}").uniform(0.05, 1.0)
    out = tmp_path / "run.dgtrace"
    code, stdout, stderr = _record(script("collector.py"), out=out, interrupt_after=delay)
    assert code == 130, (delay, stderr)
    assert "finished" not in stdout
    assert "KeyboardInterrupt" in stderr
    assert dg.read_trace(out).events[-1].reason == "KeyboardInterrupt"


@pytest.mark.parametrize("run", range(RUNS))
def test_ctrl_c_at_a_random_moment_of_a_run_full_of_finalizers_never_hangs(
        run: int, tmp_path: Path):
    rng = random.Random(f"finalizers-{run}")
    delay = rng.uniform(0.0, 1.5)
    engine = "dyngraph" if run % 2 == 0 else "torch"
    if engine == "torch" and not _torch():
        engine = "dyngraph"
    out = tmp_path / "run.dgtrace"
    steps = "2000" if engine == "dyngraph" else "300"
    code, stdout, stderr = _record(script("finalizers.py"), engine, steps, out=out,
                                   interrupt_after=delay)
    # A Ctrl-C that lands in the script's own finalizer is swallowed by CPython, as it is
    # without dyngraph: then the run goes on to its end.
    assert code in (130, 0), (delay, stderr)
    events = dg.read_trace(out).events
    # (what a rare failure under load needs to be understood: the delay, the exit, the tail)
    said = (delay, code, events[-3:], stdout[-300:], stderr[-1500:])
    assert type(events[-1]) is ev.RunEnd, said
    if code == 130:
        assert "done" not in stdout, said
        assert events[-1].reason == "KeyboardInterrupt", said


def _torch() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def test_a_ctrl_c_inside_a_flush_loses_no_row_and_breaks_no_frame(monkeypatch):
    """The rows a flush took from the queue go back when a KeyboardInterrupt stops it
    before the frame went out; a frame half sent is impossible (signals wait)."""
    from dyngraph.capture import tracefile
    from dyngraph.debug.agent import Agent
    from dyngraph.debug.channel import socket_pair

    parent, child = socket_pair()
    agent = Agent(dg.debug.channel.Channel(child))
    rows = [("output", i, 1, "stdout", f"line {i}\n") for i in range(1, 6)]
    agent._queue.extend(rows)
    real = tracefile.encode_rows
    calls = []

    def interrupted(batch):
        calls.append(len(batch))
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(batch)

    monkeypatch.setattr(tracefile, "encode_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        agent.flush()
    assert list(agent._queue) == rows
    agent.flush()
    decoder = tracefile.FrameDecoder()
    got = [e for item in decoder.feed(parent.recv(1.0) or b"") for e in item]
    assert "".join(e.text for e in got) == "".join(r[4] for r in rows)
    parent.close()
    child.close()


def test_the_pieces_print_writes_arrive_as_one_event():
    """``print("seven", 6.0)`` writes "seven", " ", "6.0" and a newline separately: no
    event holds a piece of a line (they are joined as the batch is sent, not under a lock
    the output path would share with the flush)."""
    run = drive("output.py")
    texts = [t for s, t in run.output if s == "stdout"]
    assert any("seven 6.0\n" in t for t in texts)
    assert all(t.endswith("\n") for t in texts), texts


# -- the watchdog --------------------------------------------------------------------------
def test_a_runtime_blocked_for_good_is_reported_with_its_stacks_and_ended(tmp_path: Path):
    """The parent waited in Session.poll with no timeout: one interrupted record was still
    alive 26 minutes later. Now the child's runtime says it is blocked, and is ended."""
    out = tmp_path / "run.dgtrace"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "dyngraph", "record", "--watchdog", "1.5",
                           "-o", str(out), script("stuck.py")], capture_output=True, text=True,
                          env=env, timeout=DEADLINE)
    assert proc.returncode == 128 + signal.SIGKILL
    assert "dyngraph: the script stopped answering: dyngraph's runtime in the script was " \
           "blocked" in proc.stderr
    assert "in a flush of events" in proc.stderr
    # faulthandler's dump: the main thread, waiting in the flush, under the script's line
    assert "in flush" in proc.stderr and "stuck.py" in proc.stderr
    assert "never here" not in proc.stdout
    events = dg.read_trace(out).events  # the trace keeps what came, and says how it ended
    assert events[-1].reason == "not answering"
    assert "stopped answering" in events[-2].text


def test_a_script_holding_the_interpreter_is_reported_with_its_stacks_and_ended():
    session = dg.debug.Session.start(script("held.py"), pause_at_start=False, watchdog=1.5)
    try:
        assert session.wait(DEADLINE) is not None
        state = session.state
        assert state.reason == "not answering"
        assert "did not answer for" in session.stuck
        line = next(i for i, text in enumerate(Path(script("held.py")).read_text()
                                                .splitlines(), 1) if "@held" in text)
        assert f'held.py", line {line}' in session.stacks
        assert process_gone(session.pid)
    finally:
        session.close()


def test_sleeping_paused_and_stopped_scripts_are_not_ended():
    """The script's own time is not a hang: a pause in the debugger, a sleep, and a process
    someone stopped on purpose (SIGSTOP, a debugger attached) all outlast the limit."""
    import time

    session = dg.debug.Session.start(script("sleepy.py"), ["2.5"], pause_at_start=True,
                                     watchdog=1.0)
    try:
        deadline = time.monotonic() + DEADLINE
        while not session.state.paused:
            assert time.monotonic() < deadline and not session.state.finished
            session.poll(0.05)
        time.sleep(2.0)  # paused, twice the limit
        os.kill(session.pid, signal.SIGSTOP)
        time.sleep(2.5)  # stopped
        os.kill(session.pid, signal.SIGCONT)
        session.continue_()  # then asleep for 2.5 s
        assert session.wait(DEADLINE) == 0
        assert session.stuck == ""
        out = "".join(e.text for e in session.poll() if type(e) is ev.ScriptOutput)
        assert "done 12.0" in out
    finally:
        session.close()


def process_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True
