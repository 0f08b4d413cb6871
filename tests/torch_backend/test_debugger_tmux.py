"""The debugger in a real terminal on a PyTorch script: open paused, step, continue, quit."""

from __future__ import annotations

import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

from test_tmux import processes_running, tmux, wait_screen  # noqa: E402

TRAIN = Path(__file__).parent / "scripts" / "train.py"


def test_debug_a_pytorch_script_in_tmux(tmp_path):
    script = tmp_path / f"torch_{uuid.uuid4().hex[:8]}.py"
    script.write_text(TRAIN.read_text())
    name = f"dyngraph-torch-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m dyngraph debug {script}; sleep 30"
    # unset: pytest loads readline, which exports COLUMNS=80 LINES=24 to children;
    # Textual would trust them over the real pane size.
    env_cmd = f"cd {tmp_path} && unset COLUMNS LINES && TERM=xterm-256color {command}"
    assert tmux("new-session", "-d", "-s", name, "-x", "180", "-y", "45", env_cmd).returncode == 0
    try:
        wait_screen(name, "PAUSED", "start", "live", timeout=60)
        tmux("send-keys", "-t", name, "n")
        text = wait_screen(name, "step", "linear", f"{script.name}:", "fc1", timeout=60)
        assert "iter 1/1" in text
        tmux("send-keys", "-t", name, "F")  # to the end of backward: PyTorch's node names
        wait_screen(name, "end of backward", timeout=30)
        tmux("send-keys", "-t", name, "g")
        wait_screen(name, "backward graph", "AddmmBackward0", timeout=30)
        tmux("send-keys", "-t", name, "c")
        wait_screen(name, "FINISHED", "iter 3/3", timeout=60)
        tmux("send-keys", "-t", name, "q")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and processes_running(script.name):
            time.sleep(0.1)
        assert not processes_running(script.name)
    finally:
        tmux("kill-session", "-t", name)
