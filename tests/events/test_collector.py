"""``dyngraph.capture.collector``: pauses of the cyclic collector from several threads at once end
with the collector as the program had it, and the program's own setting stays readable
while they run."""

from __future__ import annotations

import gc
import time

import pytest
from pausing_thread import pause_on_a_thread

from dyngraph.capture import collector


@pytest.fixture(autouse=True)
def _collector_on():
    # An earlier test's thread may still be inside a pause of its own (a layout a test
    # made slow, a frame being decoded): these tests count from none.
    deadline = time.monotonic() + 30
    while collector._depth and time.monotonic() < deadline:
        time.sleep(0.05)
    assert collector._depth == 0, "a pause of the collector was never ended"
    assert gc.isenabled()
    yield
    gc.enable()


def test_the_collector_runs_again_only_when_the_last_of_overlapping_pauses_ends():
    # Thread A pauses, then B, then A ends first: the collector stays off until B ends
    # (each pause used to restore what it found, so A's end turned it on under B).
    done_a, a = pause_on_a_thread()
    done_b, b = pause_on_a_thread()
    done_a.set()
    a.join()
    assert not gc.isenabled() and collector.program_collects()
    done_b.set()
    b.join()
    assert gc.isenabled()


def test_a_program_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    done, thread = pause_on_a_thread()
    assert not collector.program_collects()
    with collector.paused():
        assert not collector.program_collects()
    done.set()
    thread.join()
    assert not gc.isenabled() and not collector.program_collects()


def test_a_program_that_collects_is_seen_to_while_another_thread_pauses():
    done, thread = pause_on_a_thread()
    try:
        assert not gc.isenabled() and collector.program_collects()
    finally:
        done.set()
        thread.join()


def test_a_resume_without_a_pause_is_an_error_not_a_collector_left_on():
    gc.disable()
    with pytest.raises(RuntimeError, match="without a pause"):
        collector.resume()
    assert not gc.isenabled()
