"""Hostile traces through the real command line, and through the debugger app."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tracefuzz as fz

import dyngraph as dg
from dyngraph.capture import tracefile as tf


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("cli")
    base = fz.record_tiny(tmp / "base.dgtrace", "full", "small")
    frames = fz.split(base.read_bytes())
    meta, rows = fz.parse(frames[0][1])
    rows[0][5] = None  # the header's script: a None reached os.path.basename
    crafted = fz.write(tmp / "crafted.dgtrace", fz.join(
        [(tf.EVENTS, fz.events_payload(meta, rows)), *frames[1:]]))
    bomb_body = fz.events_payload((1, 1, 2**32 - 1, 0, 1), [fz.parse(frames[1][1])[1][0]])
    bomb = fz.write(tmp / "bomb.dgtrace", fz.join([frames[0], (tf.EVENTS, bomb_body)]))
    meta, rows = fz.parse(frames[-1][1])
    rows[0][1] = "late"  # found only when the last frame is decoded
    late = fz.write(tmp / "late.dgtrace", fz.join([*frames[:-1],
                                                   (tf.EVENTS, fz.events_payload(meta, rows))]))
    fifo = tmp / "fifo.dgtrace"
    os.mkfifo(fifo)
    cut = fz.write(tmp / "cut.dgtrace", base.read_bytes()[:-7])
    return {"base": base, "crafted": crafted, "bomb": bomb, "late": late, "fifo": fifo,
            "dir": tmp, "cut": cut}


def _cli(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "dyngraph", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("command", "name"), [
    ("summary", "crafted"), ("summary", "bomb"), ("summary", "fifo"),
    ("export", "crafted"), ("export", "fifo"), ("export", "dir"),
    ("view", "bomb"), ("view", "fifo"),
])
def test_the_cli_refuses_a_hostile_trace_in_one_line(command, name, files, tmp_path):
    path = files[name]
    extra = ["-o", tmp_path / "out"] if command == "export" else []
    start = time.monotonic()
    proc = _cli(command, path, *extra, timeout=30)
    assert time.monotonic() - start < 30
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert f"dyngraph {command}: error: {path}" in proc.stderr.replace(f"{path}:", str(path))
    if name in ("fifo", "dir"):
        assert "not a trace file" in proc.stderr and "no such file" not in proc.stderr


def test_the_cut_short_warning_is_one_line_of_ours(files):
    proc = _cli("summary", files["cut"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"dyngraph summary: warning: {files['cut']}: trace cut short")


def test_a_trace_damaged_past_what_loaded_shows_a_notification_not_a_crash(files):
    from dyngraph.tui.app import DebuggerApp
    from dyngraph.tui.model import Model
    from dyngraph.tui.sources import ReplaySource

    source = ReplaySource(Model(), dg.read_trace(files["late"]))  # opens: the damage is later
    app = DebuggerApp(source)

    async def run() -> list[str]:
        async with app.run_test(size=(160, 45)) as pilot:
            deadline = time.monotonic() + 20
            while source.loading and time.monotonic() < deadline:
                await pilot.pause(0.05)
            await pilot.pause(0.2)
            await pilot.press("n", "n", "c", "left")  # still usable on what loaded
            await pilot.pause()
            assert app.is_running
            return [f"{n.title}: {n.message}" for n in app._notifications]

    shown = asyncio.run(run())
    damaged = [n for n in shown if n.startswith("damaged trace: ")]
    assert damaged and str(files["late"]) in damaged[0] and "seq is 'late'" in damaged[0]
