"""Pilot tests of the debugger on a live script (``dyngraph debug``): a real child process."""

from __future__ import annotations

import os

import pytest
from conftest import SCRIPTS, TINY, paused, status, wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import LiveSource

from dyngraph.capture import events as ev

SIZE = (160, 45)


def start(script=TINY, *args: str) -> DebuggerApp:
    return DebuggerApp(LiveSource.start(Model(), str(script), args))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); it is gone when its state says so.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


async def test_live_starts_paused_and_steps_op_by_op(closing):
    app = start()
    closing.append(app)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        assert "PAUSED" in status(app) and "start" in status(app)
        lines = []
        for _ in range(3):
            before = app.model.cursor
            await pilot.press("n")
            assert await wait_for(pilot, lambda b=before: app.model.cursor > b
                                  and paused(app, "step")())
            event = app.model.current_event
            assert isinstance(event, ev.Op)
            assert app.selected == event.output
            assert app.query_one(SourceView).line == event.line
            lines.append(event.line)
        assert "step" in status(app) and "live" in status(app)


async def test_live_nan_breakpoint_then_history_then_quit_leaves_no_child(closing):
    app = start(TINY, "--nan-at", "2")
    closing.append(app)
    pid = app.source.session.pid
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        assert "stats read per op" not in status(app)
        await pilot.press("x", "c")
        assert await wait_for(pilot, paused(app, "nan"))
        assert "stats read per op" in status(app)  # (the NaN breakpoint judges each op)
        assert await wait_for(pilot, lambda: isinstance(app.model.current_event, ev.Op))
        event = app.model.current_event
        assert event.op == "log" and event.iteration == 2
        assert app.graph.nodes[event.output].has_nonfinite
        assert "nan" in status(app)
        # step back through what already happened; the script stays paused
        await pilot.press("left", "left")
        assert app.model.cursor < app.model.index_of_seq(event.seq)
        assert "history" in status(app) and app.source.state.reason == "nan"
        await pilot.press("right", "right")
        assert app.model.current_event is event
        await pilot.press("q")
        assert await wait_for(pilot, lambda: app.return_code is not None, timeout=10)
    assert await_gone(pid)


def await_gone(pid: int, timeout: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not gone(pid):
        time.sleep(0.05)
    return gone(pid)


async def test_quit_while_the_script_runs_leaves_no_child(closing):
    app = start(SCRIPTS / "forever.py")
    closing.append(app)
    pid = app.source.session.pid
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, lambda: len(app.model.events) > 200)
        assert app.source.state.status == "running"
        assert await wait_for(pilot, lambda: "RUNNING" in status(app))
        await pilot.press("B")  # events keep arriving under a dialog
        seen = len(app.model.events)
        assert await wait_for(pilot, lambda: len(app.model.events) > seen + 100)
        await pilot.press("escape")
        await pilot.press("q")
        assert await wait_for(pilot, lambda: app.return_code is not None, timeout=10)
    assert await_gone(pid)


async def test_a_script_that_raises_pauses_post_mortem_and_the_ui_stays(closing):
    app = start(SCRIPTS / "raises.py")
    closing.append(app)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, paused(app, "exception"))
        assert app.model.exception is not None
        assert "exception" in status(app)
        await pilot.press("c")
        assert await wait_for(pilot, lambda: "FINISHED" in status(app))
        text = status(app)
        assert "FINISHED" in text and "status 1" in text
        # still usable after the end: step back through the run
        before = app.model.cursor
        await pilot.press("left")
        assert app.model.cursor < before


async def test_export_dir_gets_every_iteration_as_it_completes(closing, tmp_path):
    pytest.importorskip("dyngraph.exporters")
    out = tmp_path / "exports"
    app = DebuggerApp(LiveSource.start(Model(), str(TINY), ()), export_dir=out)
    closing.append(app)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("c")
        names = [f"iter-000{i}.{ext}" for i in (1, 2, 3) for ext in ("dot", "svg")]
        assert await wait_for(pilot, lambda: all((out / n).exists() for n in names), 30), \
            sorted(p.name for p in out.glob("*"))
        # the script's prints reached the output pane
        pane = app.query_one("#output")
        assert await wait_for(pilot, lambda: any("step 3 loss" in line for line in pane.lines))
        await pilot.press("o")
        assert pane.display


async def test_v_fetches_full_values_from_the_paused_child(closing):
    app = start()
    closing.append(app)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("n")
        assert await wait_for(pilot, lambda: isinstance(app.model.current_event, ev.Op)
                              and paused(app, "step")())
        await pilot.press("v")
        assert await wait_for(pilot, lambda: type(app.screen).__name__ == "ValuesScreen")
        text = str(app.screen.query_one("Static").render())
        assert "shape (16, 8) float32" in text and "[[" in text
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: type(app.screen).__name__ == "Screen")


async def test_a_script_that_exits_says_so_and_the_ui_stays(closing):
    app = start(SCRIPTS / "exits.py")
    closing.append(app)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, lambda: "FINISHED" in status(app))
        assert "status 3" in status(app)
        await pilot.press("n")  # nothing left to run: still finished, no error
        assert "FINISHED" in status(app)
        before = app.model.cursor
        await pilot.press("left")  # the history still walks
        assert app.model.cursor < before
        assert "bye" in "\n".join(app.query_one("#output").lines)
