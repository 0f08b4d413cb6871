"""Helpers for the debugger's tests: events of a tiny script recorded in-process."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dyngraph.capture import events as ev
from dyngraph.capture.tracing import subscribe, tracer

SCRIPTS = Path(__file__).parent / "scripts"
TINY = SCRIPTS / "tiny.py"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests (Pilot tests) with asyncio; no plugin is installed for it."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
        return True
    return None


def record_events(script: Path = TINY, *args: str, stats: str = "full") -> list[ev.Event]:
    """Run ``script`` here with a subscriber; the events as a trace would hold them."""
    events: list[ev.Event] = []
    tracer.reset()
    argv = sys.argv
    sys.argv = [str(script), *args]
    try:
        with subscribe(events.append, stats=stats), contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(script), run_name="__main__")
            tracer.flush_iteration()
    finally:
        sys.argv = argv
        tracer.reset()
    header = ev.Header(seq=0, iteration=1, script=str(script))
    end = ev.RunEnd(seq=events[-1].seq + 1, iteration=events[-1].iteration, status=0)
    return [header, *events, end]


@dataclass
class FakeTrace:
    """What the debugger needs of ``dyngraph.Trace`` (stand-in until read_trace lands)."""

    events: list[ev.Event]
    header: ev.Header | None = None
    arrays: dict[int, object] = field(default_factory=dict)

    def values(self, tensor_id: int):
        return self.arrays.get(tensor_id)


@pytest.fixture(scope="session")
def tiny_events() -> list[ev.Event]:
    return record_events()


@pytest.fixture(scope="session")
def nan_events() -> list[ev.Event]:
    return record_events(TINY, "--nan-at", "2")


def record_trace_file(path: Path, script: Path = TINY, *args: str, values: str = "none") -> Path:
    """Record ``script`` with ``dyngraph record`` in a fresh interpreter (stable tensor ids)."""
    import subprocess

    subprocess.run(
        [sys.executable, "-m", "dyngraph", "record", "-o", str(path), "--stats", "full",
         "--values", values, str(script), *args],
        check=True, capture_output=True, timeout=120,
    )
    return path


@pytest.fixture(scope="session")
def nan_trace_path(tmp_path_factory) -> Path:
    """tiny.py with a NaN in iteration 2, recorded to a trace file."""
    return record_trace_file(tmp_path_factory.mktemp("traces") / "tiny.dgtrace", TINY,
                             "--nan-at", "2")


@pytest.fixture()
def nan_trace(nan_trace_path):
    import dyngraph

    return dyngraph.read_trace(nan_trace_path)


async def wait_for(pilot, condition, timeout: float = 10.0, step: float = 0.05) -> bool:
    """Let the app run until ``condition()`` holds (False after ``timeout`` seconds)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await pilot.pause(step)
    return bool(condition())


# -- live apps (a real child process) ---------------------------------------------------------
def status(app) -> str:
    """The status line as text."""
    from dyngraph.tui.status_line import StatusLine

    return str(app.main.query_one(StatusLine).render())


def paused(app, reason: str | None = None):
    """A condition: the child paused (for ``reason``) and the UI has drawn it."""
    def check() -> bool:
        s = app.source.state
        return (s.status == "paused" and (reason is None or s.reason == reason)
                and "PAUSED" in status(app) and app._last_state == s)
    return check


@pytest.fixture()
def closing():
    """Apps started by a test; their children are ended even when the test fails."""
    apps: list = []
    yield apps
    for app in apps:
        app.source.close()


def shown(widget) -> str:
    """What ``widget`` shows on screen, as plain text (one line per row)."""
    from textual.geometry import Region

    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text for strip in strips)
