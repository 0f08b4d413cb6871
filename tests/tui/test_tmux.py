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

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10)


def screen(name: str) -> str:
    return tmux("capture-pane", "-t", name, "-p").stdout


def wait_screen(name: str, *words: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen(name)
        if all(w in text for w in words):
            return text
        time.sleep(0.1)
    raise AssertionError(f"never saw {words} on the screen:\n{text}")


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
    env_cmd = f"cd {tmp_path} && TERM=xterm-256color {command}"
    assert tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "45", env_cmd).returncode == 0
    try:
        wait_screen(name, "PAUSED", "start", "live")
        tmux("send-keys", "-t", name, "n")
        text = wait_screen(name, "step", "matmul", f"{script.name}:")
        assert "iter 1/1" in text
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
