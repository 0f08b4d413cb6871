"""PyTorch scripts under the debug runtime: NaN, breakpoints, stepping, values, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from runtime_helpers import Run, drive, dyngraph_cli  # noqa: E402

from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.debug import Breakpoint, Session  # noqa: E402

SCRIPTS = Path(__file__).parent / "scripts"
TRAIN = str(SCRIPTS / "train.py")


def line_of(name: str, marker: str) -> int:
    for number, text in enumerate((SCRIPTS / name).read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# @{marker}"):
            return number
    raise AssertionError(marker)


# train.py's two NaNs: made in the forward at step 2 (``--nan-at 2``) and made in the
# backward from a finite forward (``--bad-backward 2``), each with the statistics its test
# first used.
NANS = {"forward": (["--nan-at", "2"], "cheap"), "backward": (["--bad-backward", "2"], "none")}


@pytest.fixture(scope="module")
def nan_runs() -> dict[str, tuple[Run, subprocess.CompletedProcess[str]]]:
    """Each NaN once under the debugger with a NaN breakpoint and once under ``check``,
    for the three tests that read them (each run of train.py costs seconds of PyTorch's
    start-up; the checks run while the debugger's sessions do)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    checks = {name: subprocess.Popen([sys.executable, "-m", "dyngraph", "check", TRAIN, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
              for name, (args, _) in NANS.items()}
    runs = {}
    try:
        for name, (args, stats) in NANS.items():
            debugged = drive(TRAIN, args, breakpoints=[Breakpoint.nan()], stats=stats,
                             timeout=90)
            out, err = checks[name].communicate(timeout=120)
            runs[name] = (debugged, subprocess.CompletedProcess(args, checks[name].returncode,
                                                                out, err))
    finally:
        for proc in checks.values():
            proc.kill()
            proc.wait()
    return runs


def test_nan_is_found_at_the_op_and_line_that_made_it_forward_and_backward(nan_runs):
    pause = nan_runs["forward"][0].pauses[0]
    assert pause.hit.reason == "nan" and pause.hit.iteration == 2
    assert type(pause.at) is ev.Op and pause.at.op == "log"
    assert pause.at.line == line_of("train.py", "nan-forward")
    assert f"train.py:{line_of('train.py', 'nan-forward')}" in pause.hit.description

    pause = nan_runs["backward"][0].pauses[0]
    assert pause.hit.reason == "nan" and pause.hit.iteration == 2
    assert type(pause.at) is ev.BackwardStep and pause.at.grad_fn == "SqrtBackward0"
    assert "in backward" in pause.hit.description
    assert f"train.py:{line_of('train.py', 'nan-backward')}" in pause.hit.description


def test_check_names_the_first_nan_as_the_debugger_does_forward_and_backward(nan_runs):
    """``check`` judges when the iteration's statistics are read (issue 24: they stay on
    the device until then); the debugger with a NaN breakpoint judges per op. Both name
    the same op or node, in the same words."""
    for name, (debugged, checked) in nan_runs.items():
        assert checked.returncode == 1, checked.stderr
        hit = debugged.pauses[0].hit
        assert hit.reason == "nan" and hit.iteration == 2, name
        assert (f"FAILED, NaN/Inf found in iteration 2: {hit.description}. The run was "
                "stopped there.") in " ".join(checked.stderr.split()), (checked.stderr, hit)


def test_breakpoints_stepping_values_and_script_breakpoints_on_a_pytorch_script():
    seen: dict[str, object] = {}

    def at_loss(session: Session, run: Run) -> None:
        seen["loss"] = session.fetch_values(run.pauses[-1].at.output, timeout=20)
        seen["weight_grad"] = None
        session.finish_forward()

    def at_backward_start(session: Session, run: Run) -> None:
        session.step_op()

    def at_first_step(session: Session, run: Run) -> None:
        grad_fn = run.pauses[-1].at.grad_fn
        seen["first backward"] = grad_fn
        session.continue_()

    bps = [Breakpoint.module("fc2"), Breakpoint.at_line("train.py", line_of("train.py", "loss")),
           Breakpoint.at_iteration(3)]
    commands = [
        lambda s, r: s.step_op(),          # paused at start -> the first op
        lambda s, r: s.continue_(),        # the first op: fc1's linear -> on to module fc2
        lambda s, r: s.continue_(),        # entering fc2 -> on to the loss line
        at_loss,                           # the loss line: fetch its value, finish forward
        at_backward_start,                 # end of forward -> one backward step
        at_first_step,                     # NllLossBackward0
    ]
    run = drive(TRAIN, ["--pause"], breakpoints=bps, commands=commands, pause_at_start=True,
                stats="full", timeout=120)
    reasons = [(p.hit.reason, getattr(p.at, "op", None), p.hit.iteration) for p in run.pauses]
    # (The pause before the first op is in iteration 0: setup lasts until differentiable
    # work begins.)
    assert reasons[:6] == [("start", None, 0), ("step", "linear", 1), ("module", "linear", 1),
                           ("line", "cross_entropy", 1), ("step", None, 1),
                           ("step", "cross_entropy", 1)]
    assert run.pauses[1].at.module == "fc1" and run.pauses[2].at.module == "fc2"
    assert "end of forward" in run.pauses[4].hit.description
    assert seen["first backward"] == "NllLossBackward0"
    loss = seen["loss"]
    assert isinstance(loss, np.ndarray) and loss.shape == () and np.isfinite(loss)
    printed = float(run.text("stdout").splitlines()[0].split()[-1])
    assert float(loss) == pytest.approx(printed, abs=1e-6)
    # later: dyngraph.breakpoint() in the script, then iteration 3 begins
    later = [(p.hit.reason, p.hit.iteration) for p in run.pauses[6:]]
    assert ("breakpoint", 1) in later or ("breakpoint", 2) in later
    assert any(p.hit.reason == "breakpoint" and "before step 2" in p.hit.description
               for p in run.pauses)
    assert ("iteration", 3) in later
    assert run.state is not None and run.state.exit_status == 0


def test_check_record_summary_and_export_from_the_command_line(tmp_path, nan_runs):
    """One recording of train.py serves the summary and the export (a run of the script
    costs seconds of PyTorch start-up; what each command shows is checked as before)."""
    clean = dyngraph_cli("check", TRAIN, timeout=120)
    assert clean.returncode == 0 and "ok, no NaN/Inf" in clean.stderr, clean.stderr
    assert clean.stdout.count("loss") == 3  # the script's own output, unchanged
    bad = nan_runs["forward"][1]  # check TRAIN --nan-at 2
    assert bad.returncode == 1
    assert "log" in bad.stderr and f"train.py:{line_of('train.py', 'nan-forward')}" in bad.stderr

    trace = tmp_path / "run.dgtrace"
    recorded = dyngraph_cli("record", "-o", str(trace), TRAIN, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    # the summary's loss column: the value backward() was called on, as the script printed it
    printed = [line.split()[-1] for line in recorded.stdout.splitlines() if " loss " in line]
    summary = dyngraph_cli("summary", str(trace))
    assert summary.returncode == 0, summary.stderr
    rows = [line.split() for line in summary.stdout.splitlines()
            if line.strip()[:1].isdigit()]
    assert len(printed) == 3 and len(rows) >= 3
    for row, value in zip(rows, printed, strict=False):
        assert abs(float(row[1]) - float(value)) <= 1e-3 * abs(float(value)), (row, value)

    out = tmp_path / "graphs"
    exported = dyngraph_cli("export", "-o", str(out), "--graph", "both", str(trace), timeout=180)
    assert exported.returncode == 0, exported.stderr
    assert {p.name for p in out.glob("*.svg")} == {f"iter-000{i}.svg" for i in (1, 2, 3)}
    dot = (out / "iter-0001.dot").read_text()
    assert "linear" in dot and "fc2" in dot and "cross_entropy" in dot
    assert "AddmmBackward0" in dot and "NllLossBackward0" in dot  # the backward graph too


def test_backend_torch_without_torch_is_one_line():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from dyngraph.cli import main\n"
            f"sys.exit(main(['record', '--backend', 'torch', {TRAIN!r}]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "PyTorch is not installed" in lines[0]


def test_a_pytorch_examples_style_script_runs_as_its_user_expects(tmp_path):
    """mnist-style: record (its output unchanged), then summary and export of the trace;
    word-language-model style: check."""
    script = str(SCRIPTS / "mnist_style.py")
    plain = subprocess.run([sys.executable, script], capture_output=True, text=True,
                           timeout=120)
    trace = tmp_path / "mnist.dgtrace"
    recorded = dyngraph_cli("record", "-o", str(trace), script, timeout=180)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == plain.stdout and "Test set" in plain.stdout
    summary = dyngraph_cli("summary", str(trace))
    assert summary.returncode == 0 and "conv2d" not in summary.stderr
    exported = dyngraph_cli("export", str(trace), "-o", str(tmp_path / "svg"), "--format", "dot")
    assert exported.returncode == 0, exported.stderr
    dot = (tmp_path / "svg" / "iter-0001.dot").read_text()
    assert "conv2d" in dot and "conv1" in dot and "max_pool2d" in dot

    checked = dyngraph_cli("check", str(SCRIPTS / "word_lm_style.py"), timeout=180)
    assert checked.returncode == 0 and "ok, no NaN/Inf" in checked.stderr, checked.stderr
    assert checked.stdout.count("| batch") == 6
