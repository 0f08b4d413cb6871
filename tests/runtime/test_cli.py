"""``dyngraph record``, ``check`` and ``summary`` as a user (or CI) runs them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from runtime_helpers import dyngraph_cli, line_of, script

import dyngraph
from dyngraph.capture import events as ev


def one_clean_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# -- record -----------------------------------------------------------------------------------
def test_record_writes_the_trace_and_passes_output_through(tmp_path):
    out = tmp_path / "run.dgtrace"
    done = dyngraph_cli("record", "-o", str(out), script("simple.py"), "--flag", "x")
    assert done.returncode == 0, done.stderr
    # not a terminal: the script's output and nothing else
    assert done.stdout == "args: ['--flag', 'x']\nstep 0 6.0\nstep 1 6.0\n"
    assert done.stderr == ""
    trace = dyngraph.read_trace(out)
    assert trace.header.argv == ("--flag", "x") and trace.header.stats == "cheap"
    assert [it.index for it in trace.iterations] == [1, 2]
    assert [n.op for n in trace.iterations[1].graph.nodes.values() if n.kind == "op"] == [
        "matmul", "relu", "sum"]
    assert type(trace.events[-1]) is ev.RunEnd and trace.events[-1].status == 0


def test_record_with_values_keeps_small_tensors(tmp_path):
    out = tmp_path / "v.dgtrace"
    done = dyngraph_cli("record", "-o", str(out), "--values", "small", "--stats", "full",
                        script("simple.py"))
    assert done.returncode == 0, done.stderr
    trace = dyngraph.read_trace(out)
    relu = next(e for e in trace.events if type(e) is ev.Op and e.op == "relu")
    np.testing.assert_allclose(trace.values(relu.output), [[0.3, 0.5, 0.7]] * 4, rtol=1e-6)


@pytest.mark.parametrize("args, status", [(["exit", "3"], 3), (["segv"], 139),
                                          (["osexit", "4"], 4)])
def test_record_exits_with_the_scripts_status(tmp_path, args, status):
    out = tmp_path / "x.dgtrace"
    done = dyngraph_cli("record", "-o", str(out), script("exits.py"), *args)
    assert done.returncode == status
    assert done.stdout.startswith("before\n")
    ops = [e.op for e in dyngraph.read_trace(out).events if type(e) is ev.Op]
    assert ops == ["mul", "sum"]


def test_record_reports_an_exception_with_op_module_iteration_and_line(tmp_path):
    done = dyngraph_cli("record", "-o", str(tmp_path / "r.dgtrace"), script("raises.py"))
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr  # the script's own, as Python
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("dyngraph record: the script raised RuntimeError")
    assert "in op matmul" in last and "(module 1, a Bad)" in last and "iteration 1" in last
    assert f"raises.py:{line_of('raises.py', 'raise')}" in last


def test_check_names_the_failing_call_its_module_and_line():
    """A shape check raises before any op ran: the message names the call (linear), the
    module that ran it and the user's line, not only the op before it."""
    done = dyngraph_cli("check", script("raises_in_call.py"))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("dyngraph check: the script raised RuntimeError: mat1 and mat2")
    assert "in linear() (module 2, a Linear), after op relu, iteration 1" in last
    assert f"raises_in_call.py:{line_of('raises_in_call.py', 'raise')}" in last


# -- check ------------------------------------------------------------------------------------
def test_check_passes_a_clean_run():
    done = dyngraph_cli("check", "--max-grad-norm", "1e6", script("simple.py"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "dyngraph check: ok, no NaN/Inf and every gradient norm <= 1e+06 (6 ops, 2 iteration(s))\n")


def test_check_fails_at_the_first_nan_naming_op_module_iteration_and_line():
    done = dyngraph_cli("check", script("nan_forward.py"))
    assert done.returncode == 1
    paragraph = one_clean_line(done.stderr)
    assert "NaN/Inf found in iteration 1" in paragraph
    assert "log -> (3,) at top level" in paragraph
    assert f"nan_forward.py:{line_of('nan_forward.py', 'log')}" in paragraph
    assert "loss" not in done.stdout  # stopped there: the script did not go on


def test_check_without_nan_lets_the_run_finish():
    done = dyngraph_cli("check", "--no-nan", script("nan_forward.py"))
    assert done.returncode == 0 and "loss nan" in done.stdout


def test_check_fails_on_a_large_gradient():
    done = dyngraph_cli("check", "--max-grad-norm", "1000", script("grads.py"))
    assert done.returncode == 1
    paragraph = one_clean_line(done.stderr)
    assert "gradient norm too large in iteration 1" in paragraph
    assert "mul -> (3,)" in paragraph and f"grads.py:{line_of('grads.py', 'scale')}" in paragraph


def test_check_names_the_module_of_the_op():
    done = dyngraph_cli("check", script("nan_module.py"))
    assert done.returncode == 1
    paragraph = one_clean_line(done.stderr)
    assert "log -> (2, 2) in module 1" in paragraph
    assert f"nan_module.py:{line_of('nan_module.py', 'log')}" in paragraph


def test_check_reports_a_parameter_gone_nan_at_its_first_use():
    done = dyngraph_cli("check", script("nan_module.py"), "param")
    assert done.returncode == 1
    paragraph = one_clean_line(done.stderr)
    assert "NaN/Inf found in iteration 2" in paragraph
    assert "parameter weight (2, 3) holds 1 NaN as it enters iteration 2" in paragraph
    assert "first used by linear -> (1, 2) at top level at " in paragraph
    assert f"nan_module.py:{line_of('nan_module.py', 'use')}" in paragraph


# -- summary ----------------------------------------------------------------------------------
def test_summary_tabulates_iterations(tmp_path):
    out = tmp_path / "net.dgtrace"
    assert dyngraph_cli("record", "-o", str(out), script("net.py")).returncode == 0
    done = dyngraph_cli("summary", str(out))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "iterations" in text and "max grad norm" in text
    assert "2 iteration(s)" in text and "1 distinct graph structure(s)" in text
    assert "exit status 0" in text


def test_summary_shows_the_loss_of_each_iteration(tmp_path):
    """The loss is the scalar backward() was called on, as the script printed it."""
    from dyngraph.debug.commands import summarize_trace

    out = tmp_path / "mb.dgtrace"
    done = dyngraph_cli("record", "-o", str(out), "--stats", "cheap",
                        str(Path(__file__).parents[1] / "tui" / "scripts" / "minibatch.py"))
    assert done.returncode == 0, done.stderr
    printed = [float(line.split()[-1]) for line in done.stdout.splitlines()]
    rows, _ = summarize_trace(dyngraph.read_trace(out).events)
    assert rows[0]["iteration"] == 0 and rows[0]["loss"] is None  # setup: no backward
    losses = [r["loss"] for r in rows[1:]]
    assert len(losses) == 12 and all(v is not None for v in losses)
    # each epoch prints the loss of its last minibatch (iterations 4, 8 and 12)
    assert [round(losses[i], 4) for i in (3, 7, 11)] == printed
    table = dyngraph_cli("summary", str(out)).stdout
    assert "loss" in table and f"{losses[0]:.5g}" in table


# -- bad input --------------------------------------------------------------------------------
def test_bad_input_gives_one_line_and_a_non_zero_status(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\ndef f(:\n    pass\n")
    not_trace = tmp_path / "notes.dgtrace"
    not_trace.write_text("hello, I am not a trace\n")
    cases = [
        (("record", "-o", str(tmp_path / "a.dgtrace"), str(tmp_path / "missing.py")),
         "no such script"),
        (("check", str(tmp_path)), "is a directory"),
        (("check", str(broken)), "line 2: SyntaxError"),
        (("record", "-o", str(tmp_path), script("simple.py")), "is a directory"),
        (("record", "-o", str(tmp_path / "nodir" / "a.dgtrace"), script("simple.py")),
         "does not exist"),
        (("summary", str(not_trace)), "not a dyngraph trace"),
        (("summary", str(tmp_path)), "is a directory"),
        (("summary", str(tmp_path / "missing.dgtrace")), "no such trace file"),
        (("check", "--max-grad-norm", "-1", script("simple.py")), "must be a positive"),
    ]
    for argv, message in cases:
        done = dyngraph_cli(*argv)
        assert done.returncode != 0, argv
        line = one_clean_line(done.stderr)
        assert message in line, (argv, line)
        assert line.startswith(f"dyngraph {argv[0]}: error:")


def test_headless_runs_pass_over_dyngraph_breakpoint_calls(tmp_path):
    done = dyngraph_cli("record", "-o", str(tmp_path / "b.dgtrace"), script("bp_call.py"),
                        timeout=30)
    assert done.returncode == 0 and done.stdout == "done\n"
    done = dyngraph_cli("check", script("bp_call.py"), timeout=30)
    assert done.returncode == 0 and done.stdout == "done\n"


def test_ctrl_c_during_record_interrupts_the_script_and_keeps_the_trace(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "i.dgtrace"
    proc = subprocess.Popen([sys.executable, "-m", "dyngraph", "record", "-o", str(out),
                             script("long.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not (out.exists() and out.stat().st_size > 10_000):  # the run is under way
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at the terminal sends
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "KeyboardInterrupt" in stderr
    trace = dyngraph.read_trace(out)
    assert type(trace.events[-1]) is ev.RunEnd and trace.events[-1].status == -2


def test_ctrl_c_while_driving_goes_to_the_script_never_to_dyngraph():
    """Headless commands never take a KeyboardInterrupt themselves (one landing between
    receiving events and writing them lost or duplicated a frame): the first Ctrl-C
    interrupts the script, the second kills it."""
    import os
    import signal

    from dyngraph.debug.commands import _ctrl_c_forwarded

    class FakeSession:
        def __init__(self):
            self.calls = []

        def interrupt(self):
            self.calls.append("interrupt")

        def abort(self):
            self.calls.append("abort")

    session = FakeSession()
    before = signal.getsignal(signal.SIGINT)
    with _ctrl_c_forwarded(session):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
    assert session.calls == ["interrupt", "abort"]
    assert signal.getsignal(signal.SIGINT) is before


def test_summary_counts_nan_and_inf_events_apart(tmp_path):
    from dyngraph.debug.commands import summarize_trace

    out = tmp_path / "nf.dgtrace"
    assert dyngraph_cli("record", "-o", str(out), script("nan_forward.py")).returncode == 0
    rows, totals = summarize_trace(dyngraph.read_trace(out).events)
    # log makes the NaN; the mul and the sum after it carry it
    assert [(r["iteration"], r["ops"], r["nan"], r["inf"]) for r in rows] == [(1, 4, 3, 0)]
    assert totals["nan"] == 3 and totals["status"] == 0
    done = dyngraph_cli("summary", str(out))
    assert "3 / 0" in done.stdout and "events with NaN: 3, with Inf: 0" in done.stdout
