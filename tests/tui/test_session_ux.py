"""The session's habits at 200x50 and 80x24 (issue 27, parts 2-4): setup said as such,
the diff's roll-up, the focus going round the panes with its title inverted, s to the
source, a screenshot in dyngraph-out/, the timeline naming module calls, the : dialog's
hint whole."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, FakeTrace, record_events, wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.iteration_bar import IterationBar
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import ReplaySource
from dyngraph.tui.status_line import StatusLine
from dyngraph.tui.timeline import Timeline
from textual.widgets import Label

SIZES = [(200, 50), (80, 24)]


@pytest.fixture(scope="module")
def shrinking_events():
    return record_events(SCRIPTS / "shrinking.py")


def plain(widget) -> str:
    return str(widget.render())


@pytest.mark.parametrize("size", SIZES)
async def test_setup_rollup_focus_source_screenshot_and_goto(size, shrinking_events, tmp_path):
    trace_path = tmp_path / "run.dgtrace"
    app = DebuggerApp(ReplaySource(Model(), FakeTrace(shrinking_events)),
                      files_near=str(trace_path))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        # The first op is setup's: said in the status line and the iteration bar.
        assert "setup (iteration 0)" in plain(app.query_one(StatusLine))
        assert "iteration 0 setup/2" in plain(app.query_one(IterationBar))
        assert app.query_one("#graph").border_title.startswith("graph · setup (iteration 0) · ")
        # Iteration 2 against 1: 125 removed nodes are said in one line first.
        await pilot.press("colon")
        await pilot.pause()
        help_label = app.screen.query_one("#goto-help", Label)
        assert help_label.region.width >= len(str(help_label.render()).splitlines()[0])
        assert help_label.region.right <= size[0]  # the hint fits the terminal
        await pilot.press("2", "enter")
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        text = str(app.screen.query_one("Static").render())
        assert "− 125 nodes:" in text and "more" in text
        await pilot.press("escape")
        await pilot.pause()
        # Tab goes round the panes; the focused one's title is inverted.
        visited = []
        for _ in range(8):
            await pilot.press("tab")
            widget = app.focused
            visited.append(widget.id)
            if widget.border_title:
                assert "reverse" in str(widget.styles.border_title_style), widget.id
        assert {"graph", "source", "timeline"} <= set(visited)
        await pilot.press("s")
        assert isinstance(app.focused, SourceView)
        assert "follows no line: no op at this event" in str(app.focused.border_subtitle)
        # The timeline names a module call's row rather than a bare "module_call".
        timeline = app.query_one(Timeline)
        rows = [str(timeline.row_text(i)) for i in range(timeline.row_count)]
        assert not any(r.rstrip().endswith("module_call") for r in rows)
        # S saves the screen beside the trace, in dyngraph-out/.
        await pilot.press("S")
        assert await wait_for(pilot, lambda: list((tmp_path / "dyngraph-out").glob("*.svg")))
