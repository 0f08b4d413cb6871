"""Pilot tests of the variables pane, watches and the console on a live script (a real child)."""

from __future__ import annotations

from pathlib import Path

from conftest import wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.console_screen import ConsoleScreen
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import LiveSource, ReplaySource
from dyngraph.tui.variables_pane import VariablesPane
from textual.widgets import DataTable, RichLog

from dyngraph.debug import Breakpoint

FRAMES = Path(__file__).parents[1] / "runtime" / "scripts" / "frames.py"
SIZE = (180, 50)


def line_of(marker: str) -> int:
    for number, text in enumerate(FRAMES.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# @{marker}"):
            return number
    raise AssertionError(marker)


def rows(app: DebuggerApp) -> dict[str, tuple[str, str]]:
    """The pane's rows: name -> (type, value), as plain text."""
    table = app.query_one(VariablesPane).query_one(DataTable)
    out = {}
    for i in range(table.row_count):
        name, kind, value = (str(c) for c in table.get_row_at(i))
        out[name] = (kind, value)
    return out


def transcript(app: DebuggerApp) -> str:
    return "\n".join(str(item) for item in app.console_state.transcript)


def start(closing, *args: str, breakpoints=()) -> DebuggerApp:
    source = LiveSource.start(Model(), str(FRAMES), args)
    for bp in breakpoints:
        source.add_breakpoint(bp)
    app = DebuggerApp(source)
    closing.append(app)
    return app


def at_pause(app: DebuggerApp, reason: str):
    return lambda: (app.source.state.status == "paused" and app.source.state.reason == reason
                    and app.frames.current is not None)


async def test_pane_shows_forwards_locals_follows_the_stack_and_selects_nodes(closing):
    app = start(closing, breakpoints=[Breakpoint.op("tanh")])
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, at_pause(app, "start"))
        assert "not started" in str(app.query_one("#vars-note").render())
        await pilot.press("c")
        assert await wait_for(pilot, lambda: at_pause(app, "op")() and "h" in rows(app))
        shown = rows(app)
        assert list(shown) == ["self", "x", "h"]
        assert shown["self"] == ("Net", "Net, 49 parameters")
        node = app.frames.current.variables[2].tensor.node
        assert shown["h"][0] == "Tensor"
        assert shown["h"][1].startswith(f"(3, 8) float32 t{node} requires_grad  min ")
        assert app.query_one(VariablesPane).border_title.startswith("variables · forward")
        # up the stack: the script's top level; the source pane follows the frame
        await pilot.press("u")
        assert await wait_for(pilot, lambda: "batch" in rows(app))
        assert list(rows(app)) == ["net", "label", "step", "batch"]
        assert app.query_one(SourceView).line == line_of("call")
        await pilot.press("u")  # no frame above the top: the pane stays
        await pilot.press("D")
        assert await wait_for(pilot, lambda: "h" in rows(app))
        assert app.query_one(SourceView).line == line_of("tanh")
        # enter on a tensor in the graph selects its node
        app.query_one(VariablesPane).query_one(DataTable).focus()
        await pilot.press("down", "down", "enter")
        assert app.selected == node


async def test_watches_show_errors_inline_and_change_across_pauses(closing):
    app = start(closing, breakpoints=[Breakpoint.op("tanh")])
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, at_pause(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, lambda: at_pause(app, "op")() and "h" in rows(app))
        for expression in ("step", "missing"):
            await pilot.press("w")
            await pilot.press(*expression, "enter")
        assert await wait_for(pilot, lambda: "missing" in rows(app))
        assert rows(app)["step"] == ("watch", "0")
        assert rows(app)["missing"] == ("watch", "NameError: name 'missing' is not defined")
        await pilot.press("c")  # the tanh of iteration 2
        assert await wait_for(pilot, lambda: rows(app).get("step") == ("watch", "1"))
        # delete on a watch row removes it
        table = app.query_one(VariablesPane).query_one(DataTable)
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("delete")
        assert await wait_for(pilot, lambda: "missing" not in rows(app))


async def test_console_evaluates_in_the_frame_and_interrupts_without_killing(closing):
    app = start(closing, breakpoints=[Breakpoint.op("tanh")])
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, at_pause(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, lambda: at_pause(app, "op")() and "h" in rows(app))
        await pilot.press("exclamation_mark")
        assert isinstance(app.screen, ConsoleScreen)
        assert "forward at frames.py" in str(app.screen.query_one("Vertical").border_title)

        async def enter(line: str, expect: str) -> None:
            await pilot.press(*line, "enter")
            assert await wait_for(pilot, lambda: expect in transcript(app)
                                  and not app.console_state.busy), transcript(app)

        await enter("tuple(h.shape)", "(3, 8)")
        await enter("for i in range(2):", ">>> for i in range(2):")
        await enter("    print('row', i)", "...     print('row', i)")
        await enter("", "row 1")
        await enter("h * 0 + 1", "(3, 8) float32  requires_grad  min 1  max 1")  # a tensor
        assert "[1, 1, 1, 1" in transcript(app)  # then its preview
        await enter("1/0", "ZeroDivisionError: division by zero")
        assert 'File "<console:' in transcript(app) and "evaluation.py" not in transcript(app)
        await pilot.press(*"while True: pass", "enter", "enter")
        assert await wait_for(pilot, lambda: app.console_state.busy)
        await pilot.press("ctrl+c")
        assert await wait_for(pilot, lambda: "evaluation interrupted" in transcript(app))
        await pilot.press("up")  # history: the last input comes back
        assert app.screen.query_one("#console-input").value == "while True: pass"
        await pilot.press("escape")
        assert not isinstance(app.screen, ConsoleScreen)
        assert app.source.state.status == "paused"
        await pilot.press("n")  # the script steps on after all that
        assert await wait_for(pilot, lambda: at_pause(app, "step")())
        await pilot.press("exclamation_mark")
        log = app.screen.query_one(RichLog)
        assert log.lines  # the transcript was kept
        await pilot.press(*"scale", "enter")
        assert await wait_for(pilot, lambda: transcript(app).endswith("0.5"))


async def test_builtin_breakpoint_opens_the_console_at_its_line(closing):
    app = start(closing, "--builtin")
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(pilot, at_pause(app, "start"))
        await pilot.press("c")
        assert await wait_for(pilot, lambda: isinstance(app.screen, ConsoleScreen), timeout=20)
        assert app.source.state.reason == "breakpoint"
        assert await wait_for(pilot, lambda: app.query_one(SourceView).line
                              == line_of("builtin"))
        await pilot.press(*"step", "enter")
        assert await wait_for(pilot, lambda: transcript(app).endswith("0"))


async def test_replay_says_variables_are_for_live_runs_only(nan_trace):
    app = DebuggerApp(ReplaySource(Model(), nan_trace))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        note = str(app.query_one("#vars-note").render())
        assert "available in live runs only" in note
        assert app.query_one(VariablesPane).query_one(DataTable).row_count == 0
        await pilot.press("exclamation_mark")
        assert not isinstance(app.screen, ConsoleScreen)
        await pilot.press("w")
        assert not isinstance(app.screen, ConsoleScreen)
