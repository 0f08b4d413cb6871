"""Trace files as users meet them: a recording killed midway, a bad file given to the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import dyngraph as dg
from dyngraph.cli import main

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    import dyngraph as dg
    from dyngraph.capture.tracefile import FRAME_INTERVAL

    w = dg.tensor(np.ones((3, 3), np.float32), requires_grad=True)
    with dg.record(sys.argv[1], stats="cheap"):
        for i in range(1000):
            (dg.ones(2, 3) @ w).tanh().sum().backward()
            if i == 5:
                time.sleep(2 * FRAME_INTERVAL)  # (frames come at most every FRAME_INTERVAL)
                _ = w * 2  # closes iteration 6: its frame is written
                os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_recording_leaves_a_loadable_file(tmp_path):
    path = tmp_path / "killed.dgtrace"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(script), str(path)], env=env, timeout=120,
                          capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    trace = dg.read_trace(path)  # no warning: every frame written was written whole
    complete = [it for it in trace.iterations if it.complete]
    assert [it.index for it in complete] == [1, 2, 3, 4, 5, 6]
    assert len({it.structure_key for it in complete}) == 1
    assert trace.header.script == str(script)


def test_the_cli_refuses_a_bad_trace_in_one_line(tmp_path, capsys):
    pytest.importorskip("dyngraph.debug.commands")
    bad = tmp_path / "bad.dgtrace"
    bad.write_bytes(b"PK\x03\x04 this is a zip file, not a trace")
    status = main(["summary", str(bad)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and str(bad) in err and "not a dyngraph trace" in err
    assert "Traceback" not in err
