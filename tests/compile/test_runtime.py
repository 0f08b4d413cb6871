"""The compile lane under the debug runtime: ``dyngraph check --max-recompiles`` passes and
fails as it should, and ``compile:`` breakpoints pause once the compiled call returns."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from dyngraph import demos  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.debug import Breakpoint, Session  # noqa: E402

DEMO = str(demos.path("torch_compile_varlen"))


def check(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "dyngraph", "check", *args], text=True,
                          capture_output=True, timeout=300, env=env)


@pytest.mark.parametrize("limit", [1, 0])
def test_check_max_recompiles_passes_and_fails_as_it_should(limit):
    # lengths 5, 5, 7: train_step recompiles once, at iteration 3
    done = check("--max-recompiles", str(limit), DEMO, "--steps", "3")
    if limit == 1:
        assert done.returncode == 0, done.stderr
        assert "at most 1 recompile(s) per compiled function (1 in all)" in done.stderr
        assert "step 3 " in done.stdout  # the script ran to its end
    else:
        assert done.returncode == 1, done.stderr
        line = next(x for x in done.stderr.splitlines() if "FAILED" in x)
        assert "recompile storm: train_step (torch_compile_varlen.py:50) recompiled 1 time (> " \
               "--max-recompiles 0), the last in iteration 3" in line
        assert "guard failed on input x: tensor 'x' size mismatch at index 1. expected 5, " \
               "actual 7" in line
        assert "step 3 " not in done.stdout  # stopped there


def test_compile_breakpoints_pause_after_the_compiled_call_at_the_break_and_the_recompile():
    bps = [Breakpoint.parse("compile:break"), Breakpoint.parse("compile:recompile")]
    session = Session.start(DEMO, ["--steps", "3"], breakpoints=bps, pause_at_start=False,
                            stats="none")
    events: list[ev.Event] = []
    pauses: list[ev.BreakpointHit] = []
    deadline = time.monotonic() + 600
    try:
        while not session.state.finished:
            assert time.monotonic() < deadline, (session.state, [
                (e.kind, getattr(e, "what", ""), getattr(e, "text", "")[-200:])
                for e in events[-12:]])
            events += session.poll(0.1)
            hits = [e for e in events if type(e) is ev.BreakpointHit]
            if session.state.paused and len(hits) > len(pauses):
                pauses.append(hits[-1])
                session.continue_()
        events += session.poll()
    finally:
        session.close()
    assert [(p.reason, p.iteration) for p in pauses] == [("compile", 1), ("compile", 3)]
    by_seq = {e.seq: e for e in events}
    first, second = (by_seq[p.at_seq] for p in pauses)
    assert (first.what, first.line) == ("break", 52)  # the .item() branch
    assert "graph break in train_step at torch_compile_varlen.py:52" in pauses[0].description
    assert (second.what, second.input) == ("recompile", "x")
    assert "expected 5, actual 7" in pauses[1].description
    # Each pause came after the compile's own events: back in the script, not mid-compile.
    for pause, event in zip(pauses, (first, second), strict=True):
        ends = [e for e in events if type(e) is ev.CompileEvent and e.what == "end"
                and e.compile_id == event.compile_id]
        assert ends and ends[0].seq < pause.seq
    assert session.state.exit_status == 0
