"""Pilot tests of the debugger's small things on recorded traces: the breakpoint dialog's
text forms, honest change markers, find, screenshots, the footer, results that arrive under
a dialog, jumps, maximizing, help, and small terminals."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, record_trace_file, shown, status, wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.app_actions import _ValuesFetched
from dyngraph.tui.find_screen import FindScreen
from dyngraph.tui.help_screen import HelpScreen
from dyngraph.tui.inspector import Inspector, ValuesScreen
from dyngraph.tui.iteration_bar import DiffScreen, IterationBar
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import ReplaySource
from dyngraph.tui.timeline import describe_event
from textual.widgets import Footer, Label, OptionList, Static

import dyngraph
from dyngraph.capture import events as ev

SIZE = (160, 45)


@pytest.fixture(scope="session")
def minibatch_path(tmp_path_factory):
    """tests/tui/scripts/minibatch.py recorded: 12 minibatches, an L2 term from 9 on."""
    return record_trace_file(tmp_path_factory.mktemp("mb") / "mb.dgtrace",
                             SCRIPTS / "minibatch.py")


def replay(path) -> DebuggerApp:
    return DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))


def texts(app: DebuggerApp) -> str:
    return "\n".join(shown(w) for w in app.screen.query(Static))


async def test_dialog_reads_every_text_form_whatever_kind_is_selected(minibatch_path):
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("B")
        await pilot.pause()
        dialog = app.screen
        assert str(dialog.query_one("#bp-kind").value) == "op"
        await pilot.press(*"module:encoder", "enter")
        await pilot.pause()
        assert [str(b) for b in app.source.breakpoints.values()] == ["module:encoder"]
        assert "added module:encoder" in shown(dialog.query_one("#bp-help", Label))
        dialog.query_one("#bp-kind").value = "grad_norm"
        await pilot.pause()
        await pilot.press(*"grad>100", "enter")
        await pilot.pause()
        await pilot.press(*"op:([", "enter")  # refused, and says why
        await pilot.pause()
        assert "not an op name" in shown(dialog.query_one("#bp-error", Label))
        assert sorted(str(b) for b in app.source.breakpoints.values()) == [
            "grad>100", "module:encoder"]
        rows = dialog.query_one("#bp-list", OptionList)
        assert [str(rows.get_option_at_index(i).prompt).split()[1]
                for i in range(rows.option_count)] == ["module:encoder", "grad>100"]
        rows.focus()
        await pilot.pause()
        assert rows.highlighted == 0  # a row is selected: r acts at once
        await pilot.press("down", "r")
        await pilot.pause()
        assert [str(b) for b in app.source.breakpoints.values()] == ["module:encoder"]
        await pilot.press("escape")
        await pilot.press("c")
        event = app.model.current_event
        assert isinstance(event, ev.Op) and event.module == "encoder.0" and event.iteration == 1
        assert "module" in status(app)


async def test_change_markers_and_diff_agree_on_a_minibatch_loop(minibatch_path):
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # Iteration 0 is setup, the first minibatch's slicing (before the first
        # differentiable op): iteration 1 takes that batch carried in, so iteration 2,
        # which slices its own, is marked too (docs/events.md).
        assert [i.index for i in app.model.iterations if i.changed] == [2, 9]
        bar = app.query_one(IterationBar)
        assert "2 changed" in shown(bar)
        app.jump_to_iteration(8)
        await pilot.press("d")
        assert isinstance(app.screen, DiffScreen)
        assert "same structure" in texts(app)  # offsets of x[i:i + 16] differ: data only
        await pilot.press("escape")
        # a click on the iteration bar's cell 9 goes there
        first, shown_cells = bar._cells
        await pilot.click(IterationBar, offset=(first + shown_cells.index(9), 0))
        await pilot.pause()
        assert app.model.cursor_iteration().index == 9
        await pilot.press("d")
        text = texts(app)
        assert "added (" in text and "+ pow" in text and "removed (0)" in text


async def test_find_says_when_nothing_matches(minibatch_path):
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        await pilot.press(*"zebra")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FindScreen)
        assert not screen.query_one(OptionList).display
        assert "no node matches 'zebra'" in shown(screen.query_one("#find-note", Label))
        await pilot.press(*["backspace"] * 5, *"getitem")
        await pilot.pause()
        assert screen.query_one(OptionList).option_count >= 1
        assert "of" in shown(screen.query_one("#find-note", Label))


async def test_screenshot_goes_to_dyngraph_out_and_says_where(
        minibatch_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        written = app.deliver_screenshot()
        assert written is not None
        await pilot.pause()
        shots = list((tmp_path / "dyngraph-out").glob("*.svg"))
        assert len(shots) == 1 and shots[0].read_text().startswith("<svg")
        assert any(shots[0].name in n.message for n in app._notifications), \
            [n.message for n in app._notifications]
        # a folder that does not exist yet is made
        assert app.deliver_screenshot("x.svg", str(tmp_path / "new" / "dir"))
        assert (tmp_path / "new" / "dir" / "x.svg").exists()


async def test_footer_palette_key_reaches_the_right_edge(minibatch_path):
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        footer = app.query_one(Footer)

        def palette_key():
            return next((k for k in footer.children if "-command-palette" in k.classes
                         and k.region.width), None)

        await wait_for(pilot, lambda: palette_key() is not None)  # a busy machine is slow
        assert palette_key().region.right == SIZE[0]  # no unpainted column after it


async def test_results_arriving_under_a_dialog_update_the_main_screen(minibatch_path):
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        app._start_norms()  # the norms worker posts its result while help is on top
        await pilot.press("n")  # and a redraw of every pane meanwhile
        app.refresh_view()
        await wait_for(pilot, lambda: not app._norms_busy)
        assert isinstance(app.screen, HelpScreen)
        assert app.query_one(Inspector).node is not None
        app.post_message(_ValuesFetched("t1", None, "gone"))
        await pilot.pause()
        assert isinstance(app.screen, ValuesScreen)


async def test_help_teaches_and_m_maximizes_the_focused_pane(minibatch_path):
    app = replay(minibatch_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        text = " ".join(texts(app).split())
        assert "run the next op (or backward step), then pause" in text
        assert "A line breakpoint stops after the first op that line runs" in text
        assert "m maximizes the focused pane" in text
        await pilot.press("escape")
        app.query_one(SourceView).focus()
        await pilot.press("m")
        assert app.screen.maximized is app.query_one(SourceView)
        await pilot.press("m")
        assert app.screen.maximized is None


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_small_terminals_keep_the_current_line_and_the_whole_status(nan_trace, size):
    app = DebuggerApp(ReplaySource(Model(), nan_trace))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("x", "c")  # stops at the log that makes the NaN
        await pilot.pause()
        await pilot.resize_terminal(*size)
        await pilot.pause(0.3)
        view = app.query_one(SourceView)
        assert view.mark_row == app.model.current_event.line - 1
        top = view.scroll_offset.y
        assert top <= view.mark_row < top + view.scrollable_content_region.height
        assert not app.query_one("#variables").display
        rows = status(app).split("\n")
        assert all(len(row) <= size[0] for row in rows)
        # the description is there in full, on a line of its own if need be
        assert "NaN/Inf in log output (16 NaN, 0 Inf)" in " ".join(rows)


def test_timeline_rows_show_nan_gradient_norms():
    nan = ev.Summary((3,), "float32", norm=0.079, nan=57)
    step = ev.BackwardStep(seq=5, iteration=1, node=3, op="log", grad_fn="LogBackward0",
                           grad_output=nan)
    assert "‖g‖=nan" in describe_event(step).plain
    grad = ev.GradAccumulated(seq=6, iteration=1, tensor=1, name="w",
                              summary=ev.Summary((3,), "float32", norm=None, inf=2))
    assert "‖g‖=inf" in describe_event(grad).plain
