"""End to end in a real terminal: tmux runs ``dyngraph debug``, we type keys and read the
screen with ``capture-pane``. Skipped where tmux is missing; every wait has a timeout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import TINY
from dyngraph.tui.app import CTRL_C_AGAIN

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10)


def screen(name: str) -> str:
    return tmux("capture-pane", "-t", name, "-p").stdout


def wait_screen(name: str, *words: str, timeout: float = 20.0,
                last_line: tuple[str, ...] = ()) -> str:
    """The screen once it shows every one of ``words`` (and ``last_line``'s words on its
    last line, spaces ignored). A capture can land mid-paint, so a test waits for all it
    reads rather than reading what one early capture holds."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen(name)
        bottom = text.rstrip().splitlines()[-1].replace(" ", "") if text.strip() else ""
        if all(w in text for w in words) and all(w in bottom for w in last_line):
            return text
        time.sleep(0.1)
    raise AssertionError(f"never saw {words} (last line: {last_line}) on the screen:\n{text}")


def processes_running(marker: str) -> list[int]:
    """Pids whose command line mentions ``marker`` (a unique file name of this test)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        # The tmux server keeps the argv it was started with: not one of ours.
        if marker.encode() in cmd and state != "Z" and b"tmux" not in cmd.split(b"\0")[0]:
            pids.append(int(entry))
    return pids


def test_debug_in_tmux_steps_stops_at_nan_and_quits_cleanly(tmp_path):
    script = tmp_path / f"e2e_{uuid.uuid4().hex[:8]}.py"
    script.write_text(TINY.read_text())
    name = f"dyngraph-e2e-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m dyngraph debug {script} --nan-at 2; sleep 30"
    # unset: pytest loads readline, which exports COLUMNS=80 LINES=24 to children;
    # Textual would trust them over the real pane size.
    env_cmd = f"cd {tmp_path} && unset COLUMNS LINES && TERM=xterm-256color {command}"
    assert tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "45", env_cmd).returncode == 0
    try:
        wait_screen(name, "PAUSED", "start", "live")
        tmux("send-keys", "-t", name, "n")
        # (the pause's state may reach the screen a moment before its op: wait for both)
        wait_screen(name, "step", "matmul", f"{script.name}:", "iter 1/1")
        tmux("send-keys", "-t", name, "x")
        time.sleep(0.3)
        tmux("send-keys", "-t", name, "c")
        wait_screen(name, "nan", "log", "iter 2/")
        tmux("send-keys", "-t", name, "Left")
        wait_screen(name, "history")
        assert processes_running(script.name), "the child should still be paused"
        tmux("send-keys", "-t", name, "q")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and processes_running(script.name):
            time.sleep(0.1)
        assert not processes_running(script.name), "quitting left the script running"
    finally:
        tmux("kill-session", "-t", name)
    assert not Path(tmp_path / "dyngraph-export").exists()


def watch_row(text: str, expression: str) -> str:
    """The value shown on the variables pane's row of a watch expression."""
    for line in text.splitlines():
        if f"│ {expression} " in line and " watch " in line:
            return line.split(" watch ", 1)[1].split("│")[0].strip()
    raise AssertionError(f"no watch row for {expression}:\n{text}")


def test_variables_console_and_watch_in_tmux(tmp_path):
    frames = Path(__file__).parents[1] / "runtime" / "scripts" / "frames.py"
    script = tmp_path / f"e2e_{uuid.uuid4().hex[:8]}.py"
    script.write_text(frames.read_text())
    name = f"dyngraph-e2e-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m dyngraph debug {script}; sleep 30"
    # unset: pytest loads readline, which exports COLUMNS=80 LINES=24 to children;
    # Textual would trust them over the real pane size.
    env_cmd = f"cd {tmp_path} && unset COLUMNS LINES && TERM=xterm-256color {command}"
    assert tmux("new-session", "-d", "-s", name, "-x", "180", "-y", "50", env_cmd).returncode == 0

    def keys(*sent: str) -> None:
        for key in sent:  # one at a time: a burst of keys reads as a paste
            tmux("send-keys", "-t", name, key)
            time.sleep(0.05)

    try:
        wait_screen(name, "PAUSED", "start", "live")
        keys("n", "n")  # the fc's linear, then the tanh: inside Net.forward, h is a local
        # (h's row is read whole: a capture can land while the row is half painted)
        text = wait_screen(name, "variables · forward", "│ h ", "tanh", "(3, 8) float32")
        h_row = next(line for line in text.splitlines() if "│ h " in line)
        assert "Tensor" in h_row and "(3, 8) float32" in h_row
        keys("!")
        wait_screen(name, "console · forward")
        keys(*"h.shape", "Enter")
        wait_screen(name, ">>> h.shape", "Size([3, 8])")
        keys("Escape")
        time.sleep(0.5)  # an escape followed at once by a key reads as alt+key
        wait_screen(name, "variables · forward")
        keys("w")
        wait_screen(name, "watch expression")
        keys(*"round(h.abs().max().item(), 4)", "Enter")
        expression = "round(h.abs().max().item(), 4)"
        before = watch_row(wait_screen(name, f"│ {expression} "), expression)
        assert before.replace(".", "").isdigit(), before
        keys("n")  # the head's linear: h is the tanh's output now
        deadline = time.monotonic() + 20
        after = before
        while after == before and time.monotonic() < deadline:
            time.sleep(0.1)
            try:
                after = watch_row(screen(name), expression)
            except AssertionError:
                continue
        assert after != before and float(after) < 1.0  # |tanh| < 1
        keys("q")
    finally:
        tmux("kill-session", "-t", name)


def test_debug_like_pdb_source_first_module_breakpoint_jump_restart_quit(tmp_path):
    """A pudb user's session: the source on the first screen, a module breakpoint typed in
    the dialog's text form, continue until it hits, go to an iteration, restart, quit."""
    minibatch = Path(__file__).parent / "scripts" / "minibatch.py"
    script = tmp_path / f"e2e_{uuid.uuid4().hex[:8]}.py"
    script.write_text(minibatch.read_text())
    name = f"dyngraph-e2e-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m dyngraph debug {script}; echo EXIT=$?; sleep 30"
    # unset: pytest loads readline, which exports COLUMNS=80 LINES=24 to children;
    # Textual would trust them over the real pane size.
    env_cmd = f"cd {tmp_path} && unset COLUMNS LINES && TERM=xterm-256color {command}"
    assert tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "45", env_cmd).returncode == 0

    def keys(*sent: str) -> None:
        for key in sent:  # one at a time: a burst of keys reads as a paste
            tmux("send-keys", "-t", name, key)
            time.sleep(0.05)

    try:
        text = wait_screen(name, "PAUSED", "start", script.name)
        assert "▶    7 import dyngraph as torch" in wait_screen(name, "▶    7 import dyngraph")
        keys("B")
        wait_screen(name, "breakpoints", "enter: add")
        tmux("send-keys", "-t", name, "-l", "module:encoder")
        keys("Enter")
        wait_screen(name, "#1   module:encoder")
        keys("Escape")
        time.sleep(0.5)
        keys("c")
        text = wait_screen(name, "PAUSED  module", "in encoder.0", "iter 1/1")
        assert "breakpoint module:encoder" in text
        keys("c")
        wait_screen(name, "PAUSED  module", "iter 2/2")
        keys(":")
        wait_screen(name, "go to iteration")
        keys("1", "Enter")
        wait_screen(name, "iter 1/2", "history")
        keys("R")
        text = wait_screen(name, "PAUSED  start", "restarted", "▶    7 import dyngraph")
        assert "1 bp" in text
        keys("c")
        wait_screen(name, "PAUSED  module", "iter 1/1")
        keys("q")
        wait_screen(name, "EXIT=0")
    finally:
        tmux("kill-session", "-t", name)


PDB_SCRIPT = '''\
import dyngraph as torch
import dyngraph.nn as nn

for i in range(1200):
    print(f"setup line {i}")
model = nn.Linear(3, 1)
while True:  # trains until ctrl+c breaks in
    model(torch.randn(4, 3)).sum().backward()
'''


def test_pdb_habits_at_80x24_ctrl_c_focus_bad_breakpoints_and_the_output_after_q(tmp_path):
    """Issue 27, part 3, in a real 80x24 terminal: a breakpoint that cannot hit says so
    (with the nearest op), the footer keeps ? and q and offers V for the variables pane
    that has no room, tab moves the focus, ctrl+c breaks into the running loop, a second
    ctrl+c within a second quits, and then the script's output is on the terminal: its
    tail, with a line saying where all of it is."""
    script = tmp_path / f"e2e_{uuid.uuid4().hex[:8]}.py"
    script.write_text(PDB_SCRIPT)
    name = f"dyngraph-e2e-{uuid.uuid4().hex[:8]}"
    command = (f"{sys.executable} -m dyngraph debug --break op:lineer --break "
               f"{script.name}:3 {script}; echo EXIT=$?; sleep 30")
    env_cmd = f"cd {tmp_path} && unset COLUMNS LINES && TERM=xterm-256color {command}"
    assert tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", env_cmd).returncode == 0
    try:
        # The footer keeps ? and q and offers V: waited for, as the footer can paint
        # after the body (a capture under load once caught the frame half drawn).
        text = wait_screen(name, "PAUSED", "start", last_line=("?Help", "qQuit", "VVariables"))
        assert "did you mean op:linear?" in text  # said in the status line, wrapped
        tmux("send-keys", "-t", name, "Tab")
        time.sleep(0.3)
        tmux("send-keys", "-t", name, "c")
        wait_screen(name, "RUNNING")
        tmux("send-keys", "-t", name, "C-c")
        wait_screen(name, "PAUSED", "breaking in")
        assert processes_running(script.name), "the script waits, paused"
        # Past the second of the break-in's ctrl+c, then two presses sent together: under
        # load, a press sent soon after the break-in could itself quit (the break-in's
        # second within a second), and the next one, reaching a terminal the app had
        # restored, was a SIGINT that ended the test's shell before it printed EXIT=.
        time.sleep(CTRL_C_AGAIN + 0.1)
        tmux("send-keys", "-t", name, "C-c", "C-c")
        wait_screen(name, "EXIT=", timeout=30)
        text = tmux("capture-pane", "-t", name, "-p", "-S", "-400").stdout  # + scrollback
        assert "setup line 1199" in text  # what it printed, after the debugger
        assert "the script printed 1,200 lines" in text and "dyngraph-out/output-" in text
        assert f"breakpoint {script.name}:3 never hit: line 3 of {script.name} holds no code" \
            in text.replace("\n", "")  # (the terminal wraps it at 80)
        assert list((tmp_path / "dyngraph-out").glob("output-*.txt"))
    finally:
        tmux("kill-session", "-t", name)
