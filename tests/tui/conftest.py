"""Helpers for the debugger's tests: events of a tiny script recorded in-process."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dyngraph import events as ev
from dyngraph.tracing import subscribe, tracer

SCRIPTS = Path(__file__).parent / "scripts"
TINY = SCRIPTS / "tiny.py"


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
