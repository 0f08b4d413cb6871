"""Pilot tests of the debugger on a recorded trace (``dyngraph view``)."""

from __future__ import annotations

import pytest
from conftest import wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import ReplaySource
from dyngraph.tui.status_line import StatusLine
from dyngraph.tui.timeline import Timeline

from dyngraph.capture import events as ev

SIZE = (160, 45)


def make_app(trace) -> DebuggerApp:
    return DebuggerApp(ReplaySource(Model(), trace))


def status(app: DebuggerApp) -> str:
    return str(app.query_one(StatusLine).render())


async def test_stepping_moves_the_highlighted_node_and_the_source_line(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        canvas = app.query_one("#graph")
        source = app.query_one(SourceView)
        seen = []
        for _ in range(4):
            event = app.model.current_event
            assert isinstance(event, ev.Op)
            assert app.selected == event.output
            assert getattr(canvas, "selected", event.output) == event.output
            assert source.line == event.line and source.mark_row == event.line - 1
            timeline = app.query_one(Timeline)
            assert timeline._rows[timeline.mark_row] == app.model.cursor
            seen.append((event.output, event.line))
            await pilot.press("n")
        assert len({node for node, _ in seen}) == 4
        assert len({line for _, line in seen}) >= 2  # the marked source line moved too
        assert "PAUSED" in status(app) and "replay" in status(app)


async def test_back_stepping_in_replay(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        model = app.model
        start = (model.cursor, len(app.graph.nodes))
        await pilot.press("n", "n", "n")
        assert len(app.graph.nodes) > start[1]
        await pilot.press("left", "left", "left")
        assert (model.cursor, len(app.graph.nodes)) == start
        await pilot.press("left")  # nothing before the first op: stays, rings the bell
        assert model.cursor == start[0]
        await pilot.press("right")
        assert model.cursor > start[0]


async def test_nan_breakpoint_stops_at_the_producing_op(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("x", "c")
        event = app.model.current_event
        assert isinstance(event, ev.Op) and event.op == "log" and event.iteration == 2
        assert app.selected == event.output and app.graph.nodes[event.output].has_nonfinite
        text = status(app)
        assert "nan" in text and "log" in text and "iter 2/3" in text
        await pilot.press("c")  # no other NaN producer... the next NaN op is in the same iter
        assert app.model.current_event.seq > event.seq


async def test_iteration_keys_and_graph_mode(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("right_square_bracket")
        assert app.model.cursor_iteration().index == 2
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert app.model.cursor_iteration().index == 3
        await pilot.press("left_square_bracket")
        assert app.model.cursor_iteration().index == 2
        await pilot.press("i")
        assert app.model.cursor_iteration().index == 3
        await pilot.press("g")
        assert app.graph_mode == "backward" and "backward graph" in status(app)
        await pilot.press("f")
        assert app.model.current_event.kind == "backward_start"


async def test_find_selects_a_node_and_b_sets_an_op_breakpoint(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("f")  # the whole forward graph of iteration 1
        await pilot.press("slash")
        await pilot.press(*"tanh")
        await pilot.press("enter")
        await pilot.pause()
        assert app.graph.nodes[app.selected].op == "tanh"
        await pilot.press("b")
        assert [str(b) for b in app.source.breakpoints.values()] == ["op:tanh"]
        await pilot.press("c")
        assert app.model.current_event.op == "tanh" and app.model.current_event.iteration == 2
        await pilot.press("b")
        assert not app.source.breakpoints


async def test_breakpoints_dialog_adds_and_removes(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("B")
        await pilot.pause()
        await pilot.press(*"log", "enter")
        await pilot.pause()
        assert [str(b) for b in app.source.breakpoints.values()] == ["op:log"]
        dialog = app.screen
        dialog.query_one("#bp-kind").value = "line"
        await pilot.pause()
        await pilot.press(*"nofile", "enter")  # not FILE:LINE: refused with a message
        await pilot.pause()
        assert len(app.source.breakpoints) == 1
        assert "FILE:LINE" in str(dialog.query_one("#bp-error").render())
        dialog.query_one("#bp-value").value = ""
        await pilot.press(*"tiny.py:21", "enter")
        await pilot.pause()
        assert sorted(str(b) for b in app.source.breakpoints.values()) == ["op:log",
                                                                          "tiny.py:21"]
        dialog.query_one("#bp-list").focus()
        await pilot.pause()
        await pilot.press("end", "r")  # remove the highlighted one (the line breakpoint)
        await pilot.pause()
        assert [str(b) for b in app.source.breakpoints.values()] == ["op:log"]
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("c")
        assert app.model.current_event.op == "log"


async def test_help_output_and_diff_screens_open_and_close(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for key, screen in (("question_mark", "HelpScreen"), ("d", "DiffScreen")):
            await pilot.press(key)
            await pilot.pause()
            assert type(app.screen).__name__ == screen
            await pilot.press("escape")
            await pilot.pause()
            assert type(app.screen).__name__ == "Screen"
        await pilot.press("o")
        assert app.query_one("#output").display


async def test_every_binding_has_an_id_and_a_palette_command(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        bindings = app.key_bindings()
        assert all(b.id for b in bindings)
        from dyngraph.tui.keys import HELP_BY_ID

        assert {b.id for b in bindings} <= set(HELP_BY_ID)
        assert all(hasattr(app, f"action_{b.action}") for b in bindings)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for b in bindings:
            if b.action not in ("quit", "help"):
                assert any(t.startswith(b.description) for t in titles), b.description


async def test_quit_exits_a_replay(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("q")
        assert await wait_for(pilot, lambda: app.return_code is not None, timeout=5)
    assert app.return_code == 0


@pytest.mark.parametrize("size", [(60, 20), (220, 60)])
async def test_survives_resize(nan_trace, size):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(*size)
        await pilot.press("n", "n")
        await pilot.pause()
        assert app.model.current_event.kind == "op"


async def test_e_exports_the_current_iteration_as_dot_and_svg(nan_trace, tmp_path, monkeypatch):
    pytest.importorskip("dyngraph.exporters")
    monkeypatch.chdir(tmp_path)
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("right_square_bracket", "e")
        out = tmp_path / "dyngraph-out"  # (no trace file named: the working folder's)
        done = await wait_for(pilot, lambda: (out / "iter-0002.svg").exists(), timeout=30)
        assert done, list(out.glob("*")) if out.exists() else "no export directory"
    dot = (out / "iter-0002.dot").read_text()
    assert dot.startswith("digraph") and "log" in dot
    assert b"<svg" in (out / "iter-0002.svg").read_bytes()[:2000]


async def test_v_shows_values_recorded_in_the_trace(tmp_path):
    from conftest import TINY, record_trace_file

    import dyngraph

    path = record_trace_file(tmp_path / "values.dgtrace", TINY, "--steps", "1", values="small")
    app = make_app(dyngraph.read_trace(path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("v")
        assert await wait_for(pilot, lambda: type(app.screen).__name__ == "ValuesScreen")
        text = str(app.screen.query_one("Static").render())
        assert "shape (16, 8) float32" in text and "[[" in text


async def test_enter_on_a_source_line_runs_to_it(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.query_one(SourceView)
        view.focus()
        target = app.model.current_event.line + 4  # the loss line: two ops later
        view.move_cursor(target - 1)
        await pilot.press("enter")
        event = app.model.current_event
        assert isinstance(event, ev.Op) and event.line == target
        assert "line" in status(app)


async def test_a_trace_without_ops_opens(tmp_path):
    from conftest import record_trace_file

    import dyngraph

    script = tmp_path / "empty.py"
    script.write_text("print('nothing to see')\n")
    app = make_app(dyngraph.read_trace(record_trace_file(tmp_path / "e.dgtrace", script)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("n", "left", "c", "i", "f", "g", "slash", "v", "d", "e")
        await pilot.pause()
        assert app.model.iteration_count == 0 and not app.graph.nodes
        await pilot.press("escape", "c")
        assert "FINISHED" in status(app) and "status 0" in status(app)


async def test_b_in_the_source_pane_toggles_a_line_breakpoint(nan_trace):
    app = make_app(nan_trace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.query_one(SourceView)
        view.focus()
        line = app.model.current_event.line + 3  # the log line, only in iteration 2
        view.move_cursor(line - 1)
        await pilot.press("b")
        assert [str(b) for b in app.source.breakpoints.values()] == [f"{view.file}:{line}"]
        assert line in view.breakpoint_lines and view.row_text(line - 1).plain.startswith("●")
        app.query_one(Timeline).focus()
        await pilot.press("c")
        event = app.model.current_event
        assert event.line == line and event.iteration == 2 and "line" in status(app)
        view.focus()
        view.move_cursor(line - 1)
        await pilot.press("b")
        assert not app.source.breakpoints and line not in view.breakpoint_lines
