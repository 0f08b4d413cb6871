"""Pilot tests of the debugger as a pdb/pudb user meets it, on a live script (a real child):
the first screen, breakpoints set before anything runs, restart, jumps, gradient values."""

from __future__ import annotations

from conftest import SCRIPTS, TINY, paused, shown, status, wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.inspector import ValuesScreen
from dyngraph.tui.iteration_bar import DiffScreen, GotoScreen
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import LiveSource
from textual.widgets import Static

from dyngraph.capture import events as ev
from dyngraph.debug import Breakpoint

SIZE = (160, 45)
MINIBATCH = SCRIPTS / "minibatch.py"


def start(closing, script=TINY, *args: str, breakpoints=()) -> DebuggerApp:
    source = LiveSource.start(Model(), str(script), args)
    for bp in breakpoints:
        source.add_breakpoint(bp)
    app = DebuggerApp(source)
    closing.append(app)
    return app


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def screen_text(app: DebuggerApp) -> str:
    return "\n".join(shown(w) for w in app.screen.query(Static))


async def test_first_screen_shows_the_source_and_a_line_breakpoint_set_before_n_hits(closing):
    app = start(closing, TINY)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        view = app.query_one(SourceView)
        first = line_of(TINY, "import sys")  # the first statement, past the docstring
        assert await wait_for(pilot, lambda: view.file == str(TINY) and view.line == first)
        assert view.border_title == "tiny.py" and app.focused is view
        assert view.mark_row == first - 1 and view.cursor_row == first - 1
        graph = app.query_one("#graph")
        assert graph.border_title == "graph · before the first op"  # no iteration yet
        target = line_of(TINY, "loss = ")
        for _ in range(target - first):
            await pilot.press("down")
        await pilot.press("b")
        assert [str(b) for b in app.source.breakpoints.values()] == [f"{TINY}:{target}"]
        await pilot.press("c")
        assert await wait_for(pilot, paused(app, "line"))
        event = app.model.current_event
        assert isinstance(event, ev.Op) and event.line == target and event.iteration == 1
        assert view.line == target
        assert f"tiny.py:{target}" in status(app)
        assert graph.border_title.startswith("graph · iteration 1 · ")


async def test_restart_after_the_end_keeps_the_breakpoints_and_goes_to_iterations(closing):
    app = start(closing, MINIBATCH, breakpoints=[Breakpoint.module("encoder")])
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, paused(app, "module"))
        assert app.model.current_event.module == "encoder.0"
        # : jumps ahead (the run stops at the module breakpoint on the way, as c would)
        await pilot.press("colon")
        assert isinstance(app.screen, GotoScreen)
        await pilot.press("5", "enter")
        while app.model.current_event.iteration < 5:
            assert await wait_for(pilot, lambda: app.source.state.status == "paused")
            if app.model.current_event.iteration < 5:
                await pilot.press("c")
                await pilot.pause(0.3)
        assert app.model.current_event.iteration == 5
        # ... and back into history
        await pilot.press("colon", "2", "enter")
        assert app.model.cursor_iteration().index == 2 and "history" in status(app)
        # the run ends; R starts it again, paused at the start, the breakpoint still set
        app.source.remove_breakpoint(next(iter(app.source.breakpoints)))
        await pilot.press("c")
        assert await wait_for(pilot, lambda: app.source.state.status == "finished", 30)
        app.source.add_breakpoint(Breakpoint.module("encoder"))
        old = app.source
        await pilot.press("R")
        assert await wait_for(pilot, lambda: app.source is not old and paused(app, "start")())
        assert [str(b) for b in app.source.breakpoints.values()] == ["module:encoder"]
        assert app.query_one(SourceView).file == str(MINIBATCH)
        await pilot.press("c")
        assert await wait_for(pilot, paused(app, "module"))
        assert app.model.current_event.iteration == 1


async def test_diff_once_backward_ends_and_gradient_values_on_g(closing):
    app = start(closing, TINY)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, paused(app, "start"))
        await pilot.press("i")  # iteration 1's first op
        assert await wait_for(pilot, paused(app, "step"))
        await pilot.press("i")  # iteration 2's first op
        assert await wait_for(pilot, lambda: paused(app, "step")()
                              and app.model.current_event.iteration == 2)
        await pilot.press("F")  # to the end of iteration 2's backward: no IterationEnd yet
        assert await wait_for(pilot, lambda: paused(app)() and app.model.backward_done())
        assert not app.model.cursor_iteration().complete
        await pilot.press("d")
        assert isinstance(app.screen, DiffScreen)
        text = screen_text(app)
        assert "iteration 2 against 1" in text and "same structure" in text
        await pilot.press("escape")
        # the inspector on the input x: it needs no gradient, and says so
        x = next(n for n in app.graph.nodes.values() if n.kind == "leaf" and n.name == ""
                 and n.shape == (16, 4))
        app.select_node(x.id)
        await pilot.pause()
        inspector = app.query_one("#inspector").query_one(Static)
        assert "no gradient (does not require grad)" in shown(inspector)
        # G on w1: its full gradient from the paused child
        w1 = next(n for n in app.graph.nodes.values() if n.shape == (4, 8))
        app.select_node(w1.id)
        await pilot.press("G")
        assert await wait_for(pilot, lambda: isinstance(app.screen, ValuesScreen))
        text = screen_text(app)
        assert "gradient of" in text and "shape (4, 8) float32  32 elements" in text
