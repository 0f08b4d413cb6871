"""The debugger's model and sources without an app: history, cursor, graphs, breakpoints."""

from __future__ import annotations

import math

from conftest import FakeTrace
from dyngraph.tui import messages as msg
from dyngraph.tui.breakpoints import condition_holds, from_dialog, history_hit
from dyngraph.tui.inspector import sparkline
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource
from dyngraph.tui.status_line import status_text

from dyngraph.capture import events as ev
from dyngraph.capture.graph import Graph
from dyngraph.debug import Breakpoint


def replay(events) -> ReplaySource:
    source = ReplaySource(Model(), FakeTrace(events))
    source.pump()
    return source


def test_iterations_are_indexed_and_changed_structure_is_marked(nan_events):
    model = replay(nan_events).model
    assert [i.index for i in model.iterations] == [1, 2, 3]
    assert all(i.complete for i in model.iterations)
    # iteration 2 has an extra log op; iteration 3 is back to the plain graph
    assert [i.changed for i in model.iterations] == [False, True, True]
    diff = model.diff(2)
    added = [model.graph(2).nodes[i].op for i in diff.added]
    assert "log" in added


def test_replay_starts_at_the_first_op_and_steps_op_by_op(tiny_events):
    source = replay(tiny_events)
    model = source.model
    first = model.current_event
    assert isinstance(first, ev.Op) and first.op == "matmul"
    sizes = [len(model.graph_at_cursor().nodes)]
    for _ in range(3):
        source.step_op()
        assert isinstance(model.current_event, ev.Op)
        sizes.append(len(model.graph_at_cursor().nodes))
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    assert model.current_node_id() == model.current_event.output


def test_step_back_returns_to_the_same_graph(tiny_events):
    source = replay(tiny_events)
    model = source.model
    source.step_op()
    before = (model.cursor, sorted(model.graph_at_cursor().nodes))
    source.step_op()
    source.step_op()
    assert source.step_back() and source.step_back()
    assert (model.cursor, sorted(model.graph_at_cursor().nodes)) == before


def test_gradients_appear_only_once_backward_reached_them(tiny_events):
    source = replay(tiny_events)
    model = source.model
    source.finish_forward()
    assert model.current_event.kind == "backward_start"
    graph = model.graph_at_cursor()
    assert all(node.grad is None for node in graph.nodes.values())
    source.finish_backward()
    graph = model.graph_at_cursor()
    assert any(node.grad is not None for node in graph.nodes.values())
    # the complete graph of the same iteration was not changed by the filtered views
    assert model.graph(1).nodes.keys() >= graph.nodes.keys()


def test_next_iteration_and_iteration_jumps(tiny_events):
    source = replay(tiny_events)
    model = source.model
    source.next_iteration()
    assert model.current_event.iteration == 2 and model.current_event.kind == "op"
    assert source.goto_iteration(3)
    assert model.current_event.kind == "iteration_end"
    assert not source.goto_iteration(4)


def test_continue_without_breakpoints_runs_to_the_end(tiny_events):
    source = replay(tiny_events)
    source.continue_()
    state = source.state
    assert state.status == "finished" and "status 0" in state.description


def test_nan_breakpoint_stops_at_the_producing_op(nan_events):
    source = replay(nan_events)
    source.add_breakpoint(Breakpoint.nan())
    source.continue_()
    event = source.model.current_event
    assert isinstance(event, ev.Op) and event.op == "log" and event.iteration == 2
    state = source.state
    assert state.status == "paused" and state.reason == "nan"
    assert "log" in state.description


def test_op_line_module_iteration_breakpoints_in_history(tiny_events):
    events = tiny_events
    ops = [i for i, e in enumerate(events) if isinstance(e, ev.Op)]
    tanh = next(i for i in ops if events[i].op == "tanh")
    assert history_hit(Breakpoint.op("tanh"), events, tanh) == "op tanh"
    assert history_hit(Breakpoint.op("tan*"), events, tanh) == "op tanh"
    assert history_hit(Breakpoint.op("exp"), events, tanh) is None
    line = events[tanh].line
    first_on_line = next(i for i in ops if events[i].line == line)
    bp = Breakpoint.at_line("tiny.py", line)
    assert history_hit(bp, events, first_on_line) is not None
    assert history_hit(bp, events, tanh) is None  # same visit to the line: one stop
    it2 = next(i for i in ops if events[i].iteration == 2)
    assert history_hit(Breakpoint.at_iteration(2), events, it2) == "iteration 2"
    assert history_hit(Breakpoint.at_iteration(2), events, it2 + 1) is None
    assert history_hit(Breakpoint.op("tanh", "max > 100"), events, tanh) is None
    assert history_hit(Breakpoint.op("tanh", "max <= 1"), events, tanh) == "op tanh"


def test_condition_on_summaries():
    s = ev.Summary(shape=(3,), dtype="float32", min=-5.0, max=2.0, norm=3.0, nan=1)
    assert condition_holds("absmax > 4", s)
    assert condition_holds("nan > 0 or max > 10", s)
    assert not condition_holds("nan > 0 and max > 10", s)
    assert not condition_holds("std > 0", s)  # not recorded: never matches


def test_dialog_input_builds_runtime_breakpoints():
    assert from_dialog("line", "train.py:42") == Breakpoint.at_line("train.py", 42)
    assert from_dialog("op", "exp if max > 10") == Breakpoint.op("exp", "max > 10")
    assert from_dialog("grad_norm", "100") == Breakpoint.grad_norm(100.0)
    for kind, text in (("line", "train.py"), ("iteration", "zero"), ("grad_norm", "-1"),
                       ("op", "")):
        try:
            from_dialog(kind, text)
        except ValueError as exc:
            assert str(exc)
        else:
            raise AssertionError(f"{kind} {text!r} was accepted")


def test_grad_norm_history_matches_nodes_across_iterations(nan_events):
    model = replay(nan_events).model
    graph = model.graph(3)
    w1 = next(n for n in graph.nodes.values() if n.kind == "leaf" and n.grad is not None)
    assert model.grad_history(w1) == [None, None, None]  # not computed yet: gaps
    for info in model.iterations:
        model.iteration_norms(info.index)  # the app does this on a background thread
    history = model.grad_history(w1)
    assert len(history) == 3
    assert math.isnan(history[1])  # iteration 2's gradients are NaN
    assert history[0] > 0 and history[2] is not None
    bars = sparkline(history).plain
    assert bars[1] == "!" and bars[0] in "▁▂▃▄▅▆▇█"


def test_pause_messages_never_coalesce_but_news_does():
    events = [ev.Op(seq=1, iteration=1, op="add"),
              ev.BreakpointHit(seq=2, iteration=1, reason="op", description="op add", at_seq=1),
              ev.ScriptOutput(seq=3, iteration=1, text="hi\n"),
              ev.RunEnd(seq=4, iteration=1, status=3)]
    out = msg.translate(events)
    kinds = [type(m) for m in out]
    assert kinds == [msg.EventsArrived, msg.OutputArrived, msg.Paused, msg.RunEnded]
    news, paused = out[0], out[2]
    assert news.can_replace(msg.EventsArrived(5))
    assert not paused.can_replace(msg.Paused("op", "", 1))
    assert msg.translate([]) == []


def test_status_text_says_why_and_where():
    op = ev.Op(seq=7, iteration=2, op="log", file="/x/train.py", line=12)
    text = status_text(status="paused", reason="nan", description="first NaN", event=op,
                       iteration=2, iterations=3, live=True, behind=2).plain
    for part in ("PAUSED", "nan", "first NaN", "log", "train.py:12", "iter 2/3", "seq 7",
                 "history: 2 events"):
        assert part in text


def test_status_text_says_when_a_value_breakpoint_reads_statistics_per_op():
    op = ev.Op(seq=7, iteration=2, op="log", file="/x/train.py", line=12)
    facts = dict(status="running", reason="", description="", event=op, iteration=2,
                 iterations=3, live=True, nan_break=True)
    assert "stats read per op" in status_text(**facts, per_op_reads=True).plain
    assert "stats read per op" not in status_text(**facts).plain


def test_value_breakpoints_are_those_that_read_statistics_per_op():
    from dyngraph.debug.breakpoints import Breakpoint, reads_per_op

    assert not reads_per_op([Breakpoint.op("relu"), Breakpoint.module("enc"),
                             Breakpoint.at_line("train.py", 3), Breakpoint.at_iteration(2)])
    for bp in (Breakpoint.nan(), Breakpoint.grad_norm(10.0),
               Breakpoint.grad_norm(10.0, scope="global"), Breakpoint.op("relu", "max > 3")):
        assert reads_per_op([Breakpoint.op("matmul"), bp]), bp


def test_a_bounded_model_lets_the_oldest_iterations_go(nan_events):
    full = Model()
    full.ingest(nan_events)
    per_iteration = max(len(info.rows) for info in full.iterations)
    model = Model(max_events=2 * per_iteration)
    model.ingest(nan_events)
    model.move_to(model.last_step())
    dropped = [info.index for info in model.iterations if info.dropped]
    assert dropped and 3 not in dropped  # the newest (and the cursor's) stay
    held = sum(1 for e in model.events if e.kind != "dropped")
    assert held <= 2 * per_iteration + 5
    assert [i.index for i in model.iterations] == [1, 2, 3]  # the bar still knows them
    assert not model.graph(dropped[0]).nodes  # a dropped iteration draws empty
    source = ReplaySource(model, FakeTrace([]))
    assert source.goto_iteration(dropped[0]) and source.goto_iteration(3)
    assert model.graph_at_cursor().nodes


def test_stepping_pauses_stay_out_of_the_timeline_but_breakpoint_hits_do_not(tiny_events):
    first_op = next(e for e in tiny_events if isinstance(e, ev.Op))
    step = ev.BreakpointHit(seq=first_op.seq, iteration=first_op.iteration, reason="step",
                            description="next op", at_seq=first_op.seq)
    nan = ev.BreakpointHit(seq=first_op.seq, iteration=first_op.iteration, reason="nan",
                           description="first NaN", at_seq=first_op.seq)
    at = tiny_events.index(first_op) + 1
    model = Model()
    model.ingest([*tiny_events[:at], step, nan, *tiny_events[at:]])
    rows = model.iterations[0].rows
    kinds = [(model.events[i].kind, getattr(model.events[i], "reason", "")) for i in rows]
    assert ("breakpoint", "step") not in kinds
    assert ("breakpoint", "nan") in kinds


def test_a_trace_loading_in_chunks_grows_the_cursors_graph_without_rebuilding(tiny_events):
    """While a big trace loads, its iteration's graph grows under a cursor that stays put:
    the graph at the cursor is taken in chunk by chunk (``AsOf.grow``, one object all
    along; a 50,000-node iteration was rescanned on every chunk) and is, after each chunk
    and wherever the cursor then goes, what ``graph_as_of`` builds from scratch."""
    from dyngraph.tui.model import graph_as_of

    model = Model()
    first = next(i for i, e in enumerate(tiny_events) if e.kind == "op")
    model.ingest(tiny_events[:first + 1])
    model.move_to(first)
    model.graph_at_cursor()
    as_of = model._as_of
    assert as_of is not None
    end = next(i for i, e in enumerate(tiny_events) if e.kind == "iteration_end")
    for lo in range(first + 1, end + 1, 7):
        model.ingest(tiny_events[lo:min(lo + 7, end + 1)])
        for cursor in (first, len(model.events) - 1):
            model.move_to(cursor)
            got = model.graph_at_cursor()
            want = graph_as_of(model.graph(1), model.events[cursor].seq)
            assert list(got.nodes) == list(want.nodes), cursor
            assert [(n.grad, n.backward_seq) for n in got.nodes.values()] == [
                (n.grad, n.backward_seq) for n in want.nodes.values()]
            assert got.edges == want.edges and got.backward_order == want.backward_order
            assert model.inputs_of(model.current_node_id() or -1) == [
                e.src for e in want.edges if e.dst == model.current_node_id()]
    assert model._as_of is as_of


def test_loading_a_trace_file_leaves_the_cyclic_collector_as_it_was(nan_trace_path):
    """The collector is held off while a trace file loads (its events and graph all live
    on) and runs again once it is read, or once the source is closed half-way."""
    import gc
    import time

    import dyngraph

    assert gc.isenabled()
    source = ReplaySource(Model(), dyngraph.read_trace(nan_trace_path))
    source.pump()
    deadline = time.monotonic() + 60
    while source.loading and time.monotonic() < deadline:
        source.pump()
        time.sleep(0.005)
    assert not source.loading and gc.isenabled()
    source.close()
    assert gc.isenabled()
    half = ReplaySource(Model(), dyngraph.read_trace(nan_trace_path))
    half.pump()
    half.close()
    time.sleep(0.2)  # (its thread ends on its own)
    assert gc.isenabled()


def test_quitting_while_a_trace_loads_stops_its_decoding(tiny_events):
    """``q`` on a big trace still loading: the decoding thread went on through the whole
    file while the process exited (a 50,000-node trace gave the prompt back after 0.9-1.1
    s, 0.37 s once read). It stops at its next chunk now."""
    import threading
    import time

    pulled = 0
    total = 200 * ReplaySource.CHUNK

    class Lazy:  # a long trace read as it is iterated, as read_trace's events are
        def __len__(self) -> int:
            return total

        def __iter__(self):
            nonlocal pulled
            for i in range(total):
                pulled += 1
                yield tiny_events[i % len(tiny_events)]

    source = ReplaySource(Model(), FakeTrace(Lazy()))  # type: ignore[arg-type]
    source.pump()  # (reads the head here, starts the thread)
    source.close()
    deadline = time.monotonic() + 10
    while (any(t.name == "dyngraph-trace" for t in threading.enumerate())
           and time.monotonic() < deadline):
        time.sleep(0.01)
    assert not any(t.name == "dyngraph-trace" for t in threading.enumerate())
    assert pulled < (ReplaySource.AHEAD + 4) * ReplaySource.CHUNK < total


def test_a_node_without_its_gradient_keeps_every_other_field():
    """The cursor's graph before backward shows nodes without gradients, copied field by
    field for speed: every other field of the node survives the copy."""
    from dataclasses import fields

    from dyngraph.tui.graph_as_of import without_grad

    from dyngraph.capture.graph import GraphNode

    values = {f.name: f"v-{f.name}" for f in fields(GraphNode)}
    bare = without_grad(GraphNode(**values))
    assert (bare.grad, bare.grad_fn, bare.backward_seq) == (None, "", 0)
    for f in fields(GraphNode):
        if f.name not in ("grad", "grad_fn", "backward_seq"):
            assert getattr(bare, f.name) == values[f.name], f.name


def test_the_graph_at_the_cursor_by_difference_is_the_graph_as_of_that_event(tiny_events):
    """Stepping refills the cursor's graph by what changed (``AsOf``); at every event,
    forwards, backwards and in jumps, it is what ``graph_as_of`` builds from scratch."""
    import random

    from dyngraph.tui.model import AsOf, graph_as_of

    model = replay(tiny_events).model
    graph = model.graph(1)
    as_of = AsOf.of(graph)
    assert as_of is not None
    seqs = sorted({n.seq for n in graph.nodes.values()}
                  | {n.backward_seq for n in graph.nodes.values()})
    order = seqs + seqs[::-1] + random.Random(0).choices(seqs, k=40)
    view = Graph(iteration=1)
    for seq in order:
        got = as_of.fill(seq, view, {})
        want = graph_as_of(graph, seq)
        assert list(got.nodes) == list(want.nodes), seq
        assert [(n.grad, n.backward_seq) for n in got.nodes.values()] == [
            (n.grad, n.backward_seq) for n in want.nodes.values()], seq
        assert got.edges == want.edges and got.backward_order == want.backward_order
        assert got.complete == want.complete
