"""The compile lane in the debugger: compile rows on the timeline, a mark on the iteration
bar where a recompile happened, the inspector's view of the guard that failed and of the
line that broke the graph, and ``compile:`` breakpoints in a replay. The trace is made
here (the events the lane records, beside real ops of the numpy engine)."""

from __future__ import annotations

from pathlib import Path

from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.breakpoints import history_hit
from dyngraph.tui.compile_view import compile_row, compile_view
from dyngraph.tui.inspector import Inspector
from dyngraph.tui.iteration_bar import IterationBar, bar_text
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import SourceView
from dyngraph.tui.sources import ReplaySource
from dyngraph.tui.timeline import Timeline, describe_event

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture.tracing import tracer
from dyngraph.compile_lane.records import Fact

HERE = str(Path(__file__).resolve())
SIZE = (180, 50)


def marked(marker: str) -> int:
    for number, text in enumerate(Path(HERE).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# @{marker}"):
            return number
    raise AssertionError(marker)


def step(x: dg.Tensor) -> dg.Tensor:
    h = x * 2  # @guard-made
    if h.sum().item() > 0:  # @breaks
        h = h + 1
    return h.sum()


def lane_trace() -> dg.Trace:
    """Three iterations of ``step``: compiled in the first (with a break at its ``if``),
    recompiled in the third on a new length; the op lane has the ops at those lines."""
    def_line = marked("breaks") - 2
    with dg.trace() as t:
        for i, n in enumerate((3, 3, 4)):
            facts = []
            if i == 2:
                facts.append(Fact("recompile", "0/1", "step", HERE, def_line,
                                  "tensor 'x' size mismatch at index 0. expected 3, actual 4",
                                  detail="0/0: tensor 'x' size mismatch at index 0. expected "
                                         "3, actual 4",
                                  stack=f"{HERE}:{marked('guard-made')} in step", input="x"))
            if i != 1:
                cid = f"0/{i // 2}"
                facts += [Fact("start", cid, "step", HERE, def_line),
                          Fact("break", cid, "step", HERE, marked("breaks"), "no .item()",
                               "Unsupported Tensor.item() call", "Set capture_scalar_outputs",
                               f"{HERE}:{marked('breaks')} in step"),
                          Fact("end", cid, "step", HERE, def_line, duration_ns=2 * 10**8)]
            for fact in facts:
                tracer.record("compile", *fact)
            x = dg.ones(n, requires_grad=True)
            step(x).backward()
    return t


def test_compile_events_are_timeline_rows_and_recompiles_mark_the_iteration_bar():
    t = lane_trace()
    events = list(t.events)
    recompile = next(e for e in events if type(e) is ev.CompileEvent and e.what == "recompile")
    row = describe_event(recompile).plain
    assert "↻ recompile" in row and "step" in row and "expected 3, actual 4" in row
    assert f"test_compile_view.py:{marked('breaks') - 2}" in row
    brk = next(e for e in events if type(e) is ev.CompileEvent and e.what == "break")
    assert "✂ break" in compile_row(brk).plain and "Tensor.item()" in compile_row(brk).plain
    model = Model()
    model.ingest(events)
    assert [info.recompiles for info in model.iterations] == [0, 0, 1]
    bar = bar_text(model.iterations, 1, 120).plain
    assert "··↻" in bar and "1 recompiled" in bar


def test_the_inspector_shows_the_failed_guard_and_the_line_that_broke_the_graph():
    t = lane_trace()
    events = list(t.events)
    recompile = next(e for e in events if type(e) is ev.CompileEvent and e.what == "recompile")
    text = _plain(compile_view(recompile))
    assert "guard failed  tensor 'x' size mismatch at index 0. expected 3, actual 4" in text
    assert "input         x" in text
    assert f"guard made at test_compile_view.py:{marked('guard-made')} in step" in text
    brk = next(e for e in events if type(e) is ev.CompileEvent and e.what == "break")
    text = _plain(compile_view(brk, "item, sum (iterations 1-3)"))
    assert f"breaks at  test_compile_view.py:{marked('breaks')}" in text
    assert "type       Unsupported Tensor.item() call" in text
    assert "hint       Set capture_scalar_outputs" in text
    assert "op lane    item, sum (iterations 1-3)" in text


async def test_choosing_a_compile_row_shows_it_its_line_and_the_op_lane_s_ops_there():
    app = DebuggerApp(ReplaySource(Model(), lane_trace()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        index = next(i for i, e in enumerate(app.model.events)
                     if type(e) is ev.CompileEvent and e.what == "break")
        app.query_one(Timeline).post_message(Timeline.EventChosen(index))
        await pilot.pause()
        inspector = app.query_one(Inspector)
        assert inspector.border_title == "inspector · compile break"
        body = _plain(inspector._body.content)
        assert "Unsupported Tensor.item() call" in body
        # joined by line: the op lane recorded the .item() line's ops
        assert "op lane" in body and "sum" in body and "iterations 1-3" in body
        assert app.query_one(SourceView).line == marked("breaks")
        await pilot.press("n")  # stepping on: the inspector follows the op lane again
        assert type(app.model.current_event) is ev.Op and app.compile_event is None
        assert inspector.border_title == f"inspector · t{app.model.current_event.output}"


async def test_a_compile_breakpoint_stops_a_replay_at_the_recompile():
    trace = lane_trace()
    events = list(trace.events)
    bp = dg.debug.Breakpoint.parse("compile:recompile")
    hits = [i for i in range(len(events)) if history_hit(bp, events, i)]
    assert len(hits) == 1 and events[hits[0]].iteration == 3
    app = DebuggerApp(ReplaySource(Model(), trace))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.source.add_breakpoint(bp)
        await pilot.press("c")
        event = app.model.current_event
        assert type(event) is ev.CompileEvent and event.what == "recompile"
        assert app.query_one(Inspector).border_title == "inspector · compile recompile"
        assert app.query_one(SourceView).line == marked("guard-made")
        assert "↻" in str(app.query_one(IterationBar).render())


def _plain(renderable: object) -> str:
    from rich.console import Console

    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()
