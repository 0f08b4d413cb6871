"""A key pressed while a trace still loads (issue 27, part 1: the first picture of a big
iteration, ``dyngraph view big.dgtrace`` then ``f`` at once).

A run past what is read so far waits with the cursor where it is (it used to follow the
loading frontier, drawing a bigger graph each tick), then lands exactly where it lands
on the trace read whole; and while the picture the user moved to is laid out, the trace's
decoding waits for it, for a bounded time. Pilot, on trace files read as ``dyngraph
view`` reads them (decoded in chunks on a thread, made small here so that loading takes
many ticks).
"""

from __future__ import annotations

import re
import time

import pytest
from canvas_helpers import Counting
from dyngraph.tui import app as app_module
from dyngraph.tui import canvas_layout as cl
from dyngraph.tui.graph_canvas import GraphCanvas
from dyngraph.tui.sources import ReplaySource
from dyngraph.tui.status_line import StatusLine
from replay_helpers import open_app, record_gpt, wait_for

import dyngraph


def slowly_loading_app(tmp_path, monkeypatch) -> app_module.DebuggerApp:
    """The debugger on a 12-layer GPT iteration read 8 events a chunk, two chunks ahead
    at most: slow enough to press keys while it loads."""
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=12, iterations=1)
    monkeypatch.setattr(ReplaySource, "CHUNK", 8)
    monkeypatch.setattr(ReplaySource, "AHEAD", 2)
    return open_app(path, Counting())


async def cursor_after(path, keys: list[str], slow: bool
                       ) -> tuple[int, tuple[str, str, str], list[int]]:
    """Where ``keys`` take the cursor, pressed as soon as the app is up or (not
    ``slow``) once the trace is read whole; the status there; and the cursor at each
    look while a key waited for the trace."""
    app = open_app(path, Counting())
    source = app.source
    seen: list[int] = []
    async with app.run_test(size=(200, 50)) as pilot:
        if not slow:
            await wait_for(pilot, lambda: not source.loading)
        for key in keys:
            await pilot.press(key)
            while source._waiting is not None:
                seen.append(app.model.cursor)
                await pilot.pause(0.01)
            await wait_for(pilot, lambda: source._waiting is None)
        cursor = app.model.cursor
        state = app.source.state
    # (how far the trace is read, said while it is, aside)
    said = re.sub(r"(^| · )reading the trace… \d+%$", "", state.description)
    return cursor, (state.status, state.reason, said), seen


@pytest.mark.parametrize("keys", [["f"], ["F"], ["f", "F", "i"]])
async def test_a_key_pressed_while_the_trace_loads_waits_in_place_and_lands_where_it_would(
        tmp_path, monkeypatch, keys):
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=12, iterations=2)
    read_whole = await cursor_after(path, keys, slow=False)
    # 8 events a chunk, two decoded ahead at most: the app takes in 16 events a tick.
    monkeypatch.setattr(ReplaySource, "CHUNK", 8)
    monkeypatch.setattr(ReplaySource, "AHEAD", 2)
    while_loading = await cursor_after(path, keys, slow=True)
    assert while_loading[0] == read_whole[0]
    assert while_loading[1] == read_whole[1]
    waited = while_loading[2]
    assert waited, "the key did not have to wait: the test loads too fast to tell"
    # While it waited, the cursor stayed where the key found it.
    assert len(set(waited)) <= len(keys), waited


async def test_f_at_once_on_a_loading_trace_shows_the_status_then_the_forward_pass(
        tmp_path, monkeypatch):
    app = slowly_loading_app(tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        first = app.model.cursor
        await pilot.press("f")
        assert app.source._waiting is not None
        state = app.source.state
        # What the user reads meanwhile: running, reading the trace, and how far.
        assert (state.status, state.reason) == ("running", "loading")
        assert "reading the trace…" in state.description
        assert app.model.cursor == first
        await pilot.pause()
        line = "\n".join(str(s) for s in app.query_one(StatusLine)._parts)
        assert "RUNNING" in line.upper() and "reading the trace…" in line, line
        await wait_for(pilot, lambda: app.source._waiting is None)
        canvas = app.query_one(GraphCanvas)
        await wait_for(pilot, lambda: app._last_cursor == app.model.cursor
                       and canvas.scene is not None and not canvas.status)
        event = app.model.events[app.model.cursor]
        assert event.kind == "backward_start"
        # The whole forward pass, no gradient yet: as on a trace read whole.
        whole = app.model.graph(1)
        assert {n for n, node in whole.nodes.items() if node.seq < event.seq} == set(
            app.graph.nodes)
        assert all(n.grad is None for n in app.graph.nodes.values())


class SlowLayout:
    """``canvas_layout.lay_out`` taking ``delay`` seconds more once ``slow`` is set."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.slow = False
        self.lay_out = cl.lay_out

    def __call__(self, view, layout_fn):
        if self.slow:
            time.sleep(self.delay)
        return self.lay_out(view, layout_fn)


@pytest.mark.parametrize("delay", [2.0, 10.0])
async def test_the_trace_waits_for_the_picture_the_user_moved_to_for_a_bounded_time(
        tmp_path, monkeypatch, delay):
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=12, iterations=3)
    monkeypatch.setattr(ReplaySource, "CHUNK", 64)
    monkeypatch.setattr(ReplaySource, "TAKEN", 1)
    monkeypatch.setattr(app_module, "PREFETCH_ABOVE", 10**9)  # no picture made ahead
    monkeypatch.setattr(app_module, "PICTURE_FIRST", 3.0 if delay > 5 else 30.0)
    layout = SlowLayout(delay)
    monkeypatch.setattr(cl, "lay_out", layout)
    app = open_app(path, Counting())
    async with app.run_test(size=(200, 50)) as pilot:
        canvas = app.query_one(GraphCanvas)
        await wait_for(pilot, lambda: canvas.scene is not None and not canvas.laying_out)
        layout.slow = True
        await pilot.press("f")
        await wait_for(pilot, lambda: app.source._waiting is None and canvas.laying_out)
        read = len(app.model.events)
        assert app.source.loading
        await pilot.pause(0.3)
        # The picture is being laid out: the trace reads no further, its thread is held.
        assert canvas.laying_out
        assert len(app.model.events) == read
        assert not app.source._go.is_set()
        if delay > 5:
            # A layout that takes long stalls the trace no longer than PICTURE_FIRST.
            await wait_for(pilot, lambda: not app.source.loading)
            assert canvas.laying_out
            assert app.source._go.is_set()
        else:
            await wait_for(pilot, lambda: not canvas.laying_out)
            await wait_for(pilot, lambda: not app.source.loading)
        assert len(app.model.events) == len(dyngraph.read_trace(path).events)
        assert app.model.events[app.model.cursor].kind == "backward_start"


async def picture_after_f(path, at_once: bool) -> tuple[object, object, list[str]]:
    """The graph pane after ``f`` (pressed at once, or once the trace is read whole),
    the trace then read whole: its scroll offset, size and lines."""
    app = open_app(path, Counting())
    async with app.run_test(size=(80, 24)) as pilot:
        canvas = app.query_one(GraphCanvas)
        if not at_once:
            await wait_for(pilot, lambda: not app.source.loading)
        await pilot.press("f")
        await wait_for(pilot, lambda: app.source._waiting is None
                       and app._last_cursor == app.model.cursor
                       and canvas.scene is not None and not canvas.status)
        await wait_for(pilot, lambda: not app.source.loading)
        await pilot.pause(0.3)
        return canvas.scroll_offset, canvas.virtual_size, canvas.visible_lines()


async def test_f_at_once_draws_the_picture_f_draws_on_the_trace_read_whole(
        tmp_path, monkeypatch):
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=24, iterations=1)
    whole = await picture_after_f(path, at_once=False)
    monkeypatch.setattr(ReplaySource, "CHUNK", 8)
    monkeypatch.setattr(ReplaySource, "AHEAD", 2)
    at_once = await picture_after_f(path, at_once=True)
    # The same boxes, labels and place: centred against the picture's edge, the jump
    # made from a small picture stopped a scrollbar's width short before.
    assert at_once[1] == whole[1]
    assert at_once[0] == whole[0]
    assert at_once[2] == whole[2]


async def test_the_decoding_stops_at_the_event_a_waiting_key_looks_for(tmp_path, monkeypatch):
    # ``f`` at once: the thread decoding the trace puts the chunk it has as soon as it
    # has decoded the forward pass's end, and decodes no further until the app has
    # looked: the jump lands with nothing past it decoded and taken in (the decoding
    # went on for up to two chunks more, which the app then took in as well).
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=12, iterations=1)
    monkeypatch.setattr(ReplaySource, "CHUNK", 8)
    monkeypatch.setattr(ReplaySource, "AHEAD", 2)
    landed: list[tuple[int, int]] = []
    move = ReplaySource._history_move

    def moved(self, index, reason, description):
        landed.append((index, len(self.model.events)))
        return move(self, index, reason, description)

    monkeypatch.setattr(ReplaySource, "_history_move", moved)
    app = open_app(path, Counting())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f")
        assert app.source._waiting is not None
        await wait_for(pilot, lambda: app.source._waiting is None, timeout=60)
        index, taken = landed[-1]
        assert app.model.events[index].kind == "backward_start"
        assert taken == index + 1, (index, taken)


async def test_the_timeline_keeps_its_rows_while_a_key_waits_for_the_trace(
        tmp_path, monkeypatch):
    # Each new row count lays the whole screen out again; while ``f`` waits, the rows
    # change once, when it lands (redraws meanwhile, however long since the last rows,
    # leave them be).
    app = slowly_loading_app(tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        timeline = app.query_one("#timeline")
        await pilot.press("f")
        assert app.source._waiting is not None
        rows = timeline.row_count
        read = len(app.model.events)
        await wait_for(pilot, lambda: len(app.model.events) > read + 32
                       or app.source._waiting is None)
        assert app.source._waiting is not None, "the test loads too fast to tell"
        app._timeline_at = -1e9  # (the rows were last taken in long ago)
        app.refresh_view()
        assert timeline.row_count == rows
        await wait_for(pilot, lambda: app.source._waiting is None, timeout=60)
        await wait_for(pilot, lambda: app._last_cursor == app.model.cursor)
        info = app.model.cursor_iteration()
        assert timeline.row_count == len(info.rows) > rows


async def test_a_key_waiting_for_the_trace_is_not_held_up_by_the_picture_on_screen(
        tmp_path, monkeypatch):
    # The decoding waits while the pane lays out the picture on screen (the picture
    # first); a key that waits for the trace (f while the first op's picture is still
    # being laid out) lets it go on at once: what the user waits for is further on.
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=12, iterations=1)
    monkeypatch.setattr(ReplaySource, "CHUNK", 64)
    monkeypatch.setattr(app_module, "PICTURE_FIRST", 30.0)
    layout = SlowLayout(5.0)
    layout.slow = True  # (the first op's picture too)
    monkeypatch.setattr(cl, "lay_out", layout)
    app = open_app(path, Counting())
    async with app.run_test(size=(200, 50)) as pilot:
        canvas = app.query_one(GraphCanvas)
        await wait_for(pilot, lambda: canvas.laying_out and not app.source._go.is_set())
        read = len(app.model.events)
        await pilot.pause(0.3)
        assert len(app.model.events) == read  # (held: the picture first)
        await pilot.press("f")
        # Well within the 5 s the first op's picture takes: the trace reads on.
        await wait_for(pilot, lambda: len(app.model.events) > read, timeout=2.0)
