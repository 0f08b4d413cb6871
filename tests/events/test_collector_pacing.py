"""While recording, the cyclic collector keeps the pace it has unrecorded: its first
threshold is scaled by the recording's share of allocations, the program's own setting is
the base, and it is restored afterwards."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import dyngraph as dg


@pytest.fixture(autouse=True)
def _threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def _chain(steps: int) -> None:
    x = dg.tensor(np.ones(4, np.float32), requires_grad=True)
    for _ in range(steps):
        y = x
        for _ in range(250):
            y = y * 1.0001 + 0.5
        y.sum().backward()


def test_threshold_rises_while_recording_and_is_restored() -> None:
    seen = []
    with dg.trace(stats="cheap"):
        for _ in range(6):
            _chain(1)
            seen.append(gc.get_threshold()[0])
    assert max(seen) > 700  # the recording's tuples no longer hurry the collector
    assert max(seen) <= 4 * 700
    assert gc.get_threshold() == (700, 10, 10)


def test_the_programs_own_threshold_is_the_base_and_survives_the_recording() -> None:
    with dg.trace(stats="cheap"):
        _chain(3)
        gc.set_threshold(5000, 20, 20)
        _chain(3)
        assert gc.get_threshold()[0] >= 5000
        assert gc.get_threshold()[1:] == (20, 20)
    assert gc.get_threshold() == (5000, 20, 20)


def test_automatic_collection_turned_off_stays_off() -> None:
    gc.set_threshold(0)
    with dg.trace(stats="cheap"):
        _chain(4)
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_nested_recordings_restore_once_the_last_one_stops() -> None:
    with dg.trace(stats="cheap"):
        with dg.trace(stats="cheap"):
            _chain(4)
        _chain(2)
        assert gc.get_threshold()[0] > 700
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("stats", ["cheap", "full"])
def test_a_recordings_rows_cost_the_collector_one_look(stats: str) -> None:
    """Every row of an in-memory trace, and every batch of them, is untracked by the
    first collection of the youngest generation after it is made: a full collection
    then reads none of them again."""
    with dg.trace(stats=stats) as t:
        _chain(3)
        sgd_model = dg.nn.Sequential(dg.nn.Linear(8, 4), dg.nn.ReLU(), dg.nn.Linear(4, 1))
        opt = dg.optim.SGD(sgd_model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            sgd_model(dg.ones(2, 8)).sum().backward()
            opt.step()
        _chain(1)
    gc.collect(0)
    batches = t.events.batches
    rows = [r for b in batches for r in b]
    assert len(rows) > 3000
    # (a shape seen for the first time may leave its row to the next collection)
    assert sum(map(gc.is_tracked, rows)) < len(rows) / 100
    # What it left (a row whose shape is new; the batch made as recording stopped) goes
    # in the next collections, one level of nesting each.
    for _ in range(5):
        gc.collect()
    assert not any(map(gc.is_tracked, rows))
    assert not any(map(gc.is_tracked, batches))
