"""Graphviz children never outlive their layout: not on a timeout, not when Python exits."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from dyngraph.exporters import GraphvizError, LayoutTimeout, layout

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


def slow_dot(tmp_path: Path) -> tuple[Path, Path]:
    """A fake dot that records its pid and its own child's pid, then waits on the child.

    The child (not exec'd) holds the pipes too: only killing the whole group frees them.
    """
    pids = tmp_path / "pids"
    script = tmp_path / "slowdot"
    script.write_text(f"#!/bin/sh\nsleep 30 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\n"
                      "wait\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, pids


def alive(pid: int) -> bool:
    """Running or stopped; a zombie (dead, waiting for init to reap it) counts as gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((ln for ln in status.splitlines() if ln.startswith("State:")), "")
    return "Z" not in state.split()[1:2] and "X" not in state.split()[1:2]


def wait_gone(pids: list[int], within: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def read_pids(path: Path, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, "the fake dot never started"
        time.sleep(0.02)
    return [int(p) for p in path.read_text().split()]


def test_timeout_kills_the_whole_group_promptly(tmp_path: Path) -> None:
    script, pids = slow_dot(tmp_path)
    t0 = time.monotonic()
    with pytest.raises(LayoutTimeout):
        layout("digraph { a }", dot=script, timeout=0.5)
    # Killing only the shell would leave `sleep` holding stdout: reading it would block 30 s.
    assert time.monotonic() - t0 < 8
    found = read_pids(pids)
    assert len(found) == 2
    assert wait_gone(found) == []


def test_dot_dies_when_python_exits_mid_layout(tmp_path: Path) -> None:
    script, pids = slow_dot(tmp_path)
    program = textwrap.dedent(f"""
        import os, sys, threading, time
        from dyngraph.exporters import layout

        def work():
            layout("digraph {{ a -> b }}", dot={str(script)!r}, timeout=60)

        threading.Thread(target=work, daemon=True).start()
        deadline = time.monotonic() + 10
        while not os.path.exists({str(pids)!r}) and time.monotonic() < deadline:
            time.sleep(0.02)
        sys.exit(0)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", program], timeout=30, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    found = read_pids(pids, within=1.0)
    try:
        assert wait_gone(found) == [], "Graphviz outlived the Python process that started it"
    finally:
        for pid in found:  # never leave a sleeper behind, even when the test fails
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def _parent_mid_layout(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """A Python process blocked in ``layout()`` on a fake dot that ``exec``s a sleeper (so
    its pid stays the dot's), and that dot's pid."""
    pids = tmp_path / "pids"
    script = tmp_path / "stuckdot"
    script.write_text(f"#!/bin/sh\necho $$ > {pids}.tmp\nmv {pids}.tmp {pids}\nexec sleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    program = f"from dyngraph.exporters import layout\nlayout('digraph {{ a }}', " \
              f"dot={str(script)!r}, timeout=60)\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", program], env=env, text=True)
    return parent, read_pids(pids)[0]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_dot_dies_with_its_parent(tmp_path: Path, how: str) -> None:
    parent, dot_pid = _parent_mid_layout(tmp_path)
    try:
        assert alive(dot_pid)
        parent.send_signal(getattr(signal, how))
        parent.wait(timeout=10)
        assert wait_gone([dot_pid]) == [], f"Graphviz outlived its parent's {how}"
    finally:
        parent.kill()
        try:
            os.kill(dot_pid, 9)
        except OSError:
            pass


def test_a_layout_child_cannot_take_the_machines_memory(tmp_path: Path) -> None:
    hungry = tmp_path / "hungry-dot"  # asks for 2 GB, more than a layout child may map
    hungry.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
                      "block = bytearray(2 << 30)\nprint('graph 1 1 1')\n")
    hungry.chmod(hungry.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(GraphvizError, match="MemoryError"):
        layout("digraph { a }", dot=hungry, timeout=30)
