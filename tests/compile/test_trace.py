"""Compile events in trace files (schema 3), traces written before them (schema 2), and
the views built on them: the summary's compile table and the check's recompile count.
No torch needed: the events are made here as the compile lane makes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.capture.tracing import tracer
from dyngraph.cli import main
from dyngraph.compile_lane import report
from dyngraph.compile_lane.records import Fact

SCHEMA2 = Path(__file__).with_name("data") / "schema2.dgtrace"


def lane_run(path: Path) -> dg.Trace:
    """A recording whose compile lane saw what the demo makes torch.compile do: a compile
    with a graph break, then two recompiles on new lengths, each breaking again."""
    facts = []
    for i, (expected, actual) in enumerate(((None, 5), (5, 7), (7, 9))):
        cid = f"0/{i}"
        if expected is not None:
            facts.append(Fact("recompile", cid, "train_step", "/w/demo.py", 50,
                              f"tensor 'x' size mismatch at index 1. expected {expected}, "
                              f"actual {actual}", input="x",
                              stack="/w/demo.py:37 in forward"))
        facts += [Fact("start", cid, "train_step", "/w/demo.py", 50),
                  Fact("break", cid, "train_step", "/w/demo.py", 52, "no item()",
                       "Unsupported Tensor.item() call", "Set capture_scalar_outputs",
                       "/w/demo.py:88 in main\n/w/demo.py:52 in train_step"),
                  Fact("end", cid, "train_step", "/w/demo.py", 50, duration_ns=10**9)]
    with dg.record(path), dg.trace() as t:
        for fact in facts:
            tracer.record("compile", *fact)
            if fact.what == "end":  # the iteration's own ops, then its end
                with dg.iteration():
                    (dg.ones(2, requires_grad=True) * 2).sum().backward()
    return t


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[dg.Trace, Path]:
    path = tmp_path / "lane.dgtrace"
    return lane_run(path), path


def test_compile_events_go_through_trace_files_and_the_wire(recorded):
    t, path = recorded
    lane = [e for e in t.events if type(e) is ev.CompileEvent]
    assert len(lane) == 11 and [e.iteration for e in lane if e.what == "start"] == [1, 2, 3]
    back = [e for e in dg.read_trace(path).events if type(e) is ev.CompileEvent]
    assert back == lane
    assert dg.read_trace(path).header.schema_version == ev.SCHEMA_VERSION >= 3
    decoder = tf.FrameDecoder()
    for encode in (tf.encode_events, tf.encode_events_json):  # columns, and format 1
        assert [e for batch in decoder.feed(encode(lane)) for e in batch] == lane


def test_traces_written_before_the_compile_lane_still_read(tmp_path):
    trace = dg.read_trace(SCHEMA2)
    assert trace.header.schema_version == 2
    assert [it.index for it in trace.iterations] == [1, 2]
    assert not any(type(e) is ev.CompileEvent for e in trace.events)
    assert report.compile_table(trace.events).empty
    copy = tmp_path / "old.dgtrace"
    shutil.copy(SCHEMA2, copy)
    assert main(["summary", str(copy)]) == 0


def test_the_summary_tables_breaks_once_per_place_and_recompiles_per_function(
        recorded, capsys):
    _, path = recorded
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 compile(s), 3.00 s compiling, 3 graph break(s) at 1 place(s), 2 recompile(s)" in (
        " ".join(out.split()))
    breaks = out[out.index("graph breaks"):out.index("recompiles (")]
    assert breaks.count("demo.py:52") == 1 and "3×" in breaks and "iterations 1, 2, 3" in breaks
    recompiles = out[out.index("recompiles ("):]
    assert "2× train_step demo.py:50" in recompiles
    assert "2× guard failed: tensor 'x' size mismatch at index 1. expected 7, actual 9" in (
        recompiles)
    assert "input x; guard made at demo.py:37 in forward" in recompiles


def test_the_recompile_counter_names_the_function_and_guard_past_the_limit(recorded):
    t, _ = recorded
    for limit, over in ((2, None), (1, 3)):
        counter = report.RecompileCounter(limit)
        stopped = [e for e in t.events if counter.add(e)]
        assert counter.total == (2 if over is None else limit + 1)
        if over is None:
            assert stopped == [] and counter.over is None
        else:
            assert stopped == [counter.over] and counter.over.iteration == over
            assert counter.failure() == (
                "train_step (demo.py:50) recompiled 2 times (> --max-recompiles 1), the last "
                "in iteration 3: guard failed on input x: tensor 'x' size mismatch at index "
                "1. expected 7, actual 9, a guard made at demo.py:37 in forward")


def test_the_join_finds_the_op_lane_s_ops_at_a_compile_event_s_line():
    with dg.trace() as t:
        tracer.record("compile", *Fact("break", "0/0", "f", __file__, 0))
        x = dg.ones(3, requires_grad=True)
        y = x * 2  # the line both lanes name
    line = next(e.line for e in t.events if type(e) is ev.Op)
    ops = report.ops_at_line(list(t.events), __file__, line)
    assert [o.op for o in ops] == ["mul"] and report.join_text(ops) == "mul (iteration 1)"
    assert report.ops_at_line(list(t.events), __file__, line + 1) == []
    del y
