"""Module calls: every call of a module is told apart, even back to back, and traces
written before calls were recorded still read."""

from __future__ import annotations

import json
from pathlib import Path

import dyngraph
import dyngraph.nn as nn
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf


class Cell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(3, 3)

    def forward(self, x: dyngraph.Tensor) -> dyngraph.Tensor:
        return self.inner(x).tanh() * 2


def test_back_to_back_calls_of_one_module_get_their_own_ids() -> None:
    cell, idle = Cell(), nn.Identity()
    with dyngraph.trace() as t:
        h = dyngraph.randn(1, 3)
        idle(h)  # runs no op: announces nothing
        h = cell(cell(h))
        h.sum().backward()
    calls = [e for e in t.events if isinstance(e, ev.ModuleCall)]
    assert [(c.module, c.parent) for c in calls] == [
        ("", 0), ("inner", calls[0].call), ("", 0), ("inner", calls[2].call)]
    assert len({c.call for c in calls}) == 4
    ops = [e for e in t.events if isinstance(e, ev.Op)]
    assert [(o.op, o.call) for o in ops] == [
        ("linear", calls[1].call), ("tanh", calls[0].call), ("mul", calls[0].call),
        ("linear", calls[3].call), ("tanh", calls[2].call), ("mul", calls[2].call),
        ("sum", 0)]
    graph = t.iterations[0].graph
    assert graph.calls == {c.call: (c.module, c.parent) for c in calls}
    assert sorted({n.call for n in graph.nodes.values() if n.kind == "op"}) == sorted(
        [0, *(c.call for c in calls)])


def test_a_call_spanning_iterations_is_introduced_again() -> None:
    class Trainer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 1)

        def forward(self) -> None:
            for _ in range(2):
                self.fc(dyngraph.randn(1, 2)).sum().backward()

    with dyngraph.trace() as t:
        Trainer()()
    for it in t.iterations:
        graph = it.graph
        assert all(n.call in graph.calls for n in graph.nodes.values() if n.kind == "op")
        assert {path for path, _ in graph.calls.values()} == {"", "fc"}


def test_schema_1_frames_read_with_no_calls() -> None:
    new = ev.Op(seq=1, iteration=1, op="add", inputs=(1, -1), output=2, shape=(2,),
                module="enc", call=5)
    payload = tf.encode_events_json([new])[tf.FRAME_HEADER.size:]  # format 1
    meta, rows = payload[:tf.EVENTS_META.size], json.loads(payload[tf.EVENTS_META.size:])
    assert rows[0][-1] == 5
    old_rows = [rows[0][:-1]]  # what schema 1 wrote: no call field
    old = tf.decode_events_payload(meta + json.dumps(old_rows).encode())
    assert old == [new.replace(call=0)]
    broken = [rows[0][:-2]]  # two fields short: not an older schema, a damaged file
    try:
        tf.decode_events_payload(meta + json.dumps(broken).encode())
    except dyngraph.errors.TraceFileError as exc:
        assert "op event with" in str(exc)
    else:
        raise AssertionError("a damaged row was accepted")


def test_schema_2_files_read_as_rank_0_of_no_job() -> None:
    """A trace written before schema 4 (this file was, by dyngraph at schema 2: its header
    frame in columns has no rank, world size or run id) still opens: as no job's rank 0."""
    path = Path(__file__).parent / "data" / "schema2.dgtrace"
    trace = dyngraph.read_trace(path)
    header = trace.header
    assert header.schema_version == 2
    assert (header.rank, header.world_size, header.run_id) == (0, 0, "")
    assert [e.op for e in trace.events if e.kind == "op"] == ["mul", "sum"]
    assert trace.events[-1].kind == "iteration_end"


def test_schema_3_files_read_as_rank_0_of_no_job() -> None:
    """A trace written at schema 3 (this file was, by dyngraph before schema 4: its header
    has the numpy version but no rank fields; frame format 3) still opens, whole."""
    trace = dyngraph.read_trace(Path(__file__).parent / "data" / "schema3.dgtrace")
    header = trace.header
    assert (header.schema_version, header.numpy_version) == (3, "2.4.6")
    assert (header.rank, header.world_size, header.run_id) == (0, 0, "")
    assert [e.op for e in trace.events if e.kind == "op"] == ["mul", "sum"]
    steps = [e for e in trace.events if e.kind == "backward_step"]
    assert [e.grad_fn for e in steps] == ["SumBackward0", "MulBackward0"]


def test_a_format_1_schema_3_header_reads_as_rank_0_of_no_job() -> None:
    """A JSON header row of schema 3 ends at the numpy version: four fields short (schema
    4's iteration mode and rank fields), read as iterations ending at backward, rank 0."""
    new = ev.Header(seq=0, iteration=0, schema_version=3, script="t.py", numpy_version="2.4.6",
                    iteration_mode="step", rank=1, world_size=2, run_id="r")
    payload = tf.encode_events_json([new])[tf.FRAME_HEADER.size:]
    meta, rows = payload[:tf.EVENTS_META.size], json.loads(payload[tf.EVENTS_META.size:])
    old = tf.decode_events_payload(meta + json.dumps([rows[0][:-4]]).encode())
    assert old == [new.replace(iteration_mode="backward", rank=0, world_size=0, run_id="")]


def test_a_rank_header_round_trips_in_both_formats() -> None:
    header = ev.Header(seq=0, iteration=0, script="ddp.py", rank=3, world_size=4,
                       run_id="job-17")
    for encode in (tf.encode_events, tf.encode_events_json):
        payload = encode([header])[tf.FRAME_HEADER.size:]
        assert tf.decode_events_payload(payload) == [header]


def test_collectives_attributes_are_counted_with_the_ops_ones() -> None:
    """A frame's attribute objects are at most one per event that has attributes: ops and
    collectives alike (a frame of rank traces holding a collective's attributes beside an
    op's was refused as damaged)."""
    events = [ev.Op(seq=1, iteration=1, op="mul", attrs={"alpha": 2}),
              ev.Collective(seq=2, iteration=1, op="all_reduce", group="w", group_seq=1,
                            attrs={"op": "SUM", "group_size": 2}),
              ev.Collective(seq=3, iteration=1, op="broadcast", attrs={"src": 0})]
    payload = tf.encode_events(events)[tf.FRAME_HEADER.size:]
    assert tf.decode_events_payload(payload, 1) == events
