"""Schema 3's backward steps (each output slot's gradient, autograd's graph) in files of
every format, and traces written before it (format-2 frames, schema-2 JSON rows)."""

from __future__ import annotations

import json

import pytest

import dyngraph as dg
from dyngraph.capture import columnencode, columns
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.capture.graph import Graph, GraphBuilder, backward_graph, build_graphs
from dyngraph.capture.rowgraph import graph_of_rows
from dyngraph.capture.rows import rows_of

SPLIT_STEP = ev.BackwardStep(
    seq=5, iteration=1, node=3, op="split", grad_fn="SplitBackward0", inputs=(2,),
    grad_output=ev.Summary((2,), "float32", norm=1.0),
    grad_inputs=(ev.Summary((6,), "float32", norm=3.0),), grad_node=3, outputs=(3, 4, -1),
    grad_outputs=(ev.Summary((2,), "float32", norm=1.0), None,
                  ev.Summary((2,), "float32", norm=2.0)),
    next_nodes=(2,))


def _split_events() -> list[ev.Event]:
    """split of a leaf into three: pieces 3 and 4 recorded, the third no tensor of ours."""
    return [
        ev.TensorCreated(seq=1, iteration=1, tensor=2, name="w", shape=(6,),
                         requires_grad=True),
        ev.Op(seq=2, iteration=1, op="split", inputs=(2,), output=3, shape=(2,),
              requires_grad=True),
        ev.Op(seq=3, iteration=1, op="split", inputs=(2,), output=4, shape=(2,),
              requires_grad=True, attrs={"output": 1}),
        ev.BackwardStart(seq=4, iteration=1, root=3),
        SPLIT_STEP,
        ev.GradAccumulated(seq=6, iteration=1, tensor=2, name="w",
                           summary=ev.Summary((6,), "float32", norm=3.0)),
        ev.BackwardEnd(seq=7, iteration=1, root=3),
        ev.IterationEnd(seq=8, iteration=1, node_count=3, structure_key="k"),
    ]


def _check_split_graph(g: Graph) -> None:
    assert g.nodes[3].grad.norm == 1.0 and g.nodes[4].grad is None
    assert g.nodes[4].backward_seq == 5  # reached: its slot got no gradient (not used)
    back = backward_graph(g)
    assert [n.op for n in back.nodes.values()] == ["SplitBackward0", "AccumulateGrad"]
    assert [None if s is None else s.norm for s in back.nodes[3].grads] == [1.0, None, 2.0]
    assert [(e.src, e.dst, e.index) for e in back.edges] == [(3, 2, 0)]


@pytest.mark.parametrize("version", ["columns", "json"])
def test_each_output_slots_gradient_survives_a_file(tmp_path, version):
    events = _split_events()
    frame = tf.encode_events(events) if version == "columns" else \
        tf.encode_events_json(events)
    back = tf.FrameDecoder().feed(frame)[0]
    assert back == events
    (step,) = [e for e in back if type(e) is ev.BackwardStep]
    assert step.slots == ((3, SPLIT_STEP.grad_output), (4, None), (-1, step.grad_outputs[2]))
    assert step.gid == 3 and step.next_ids == (2,)
    (graph,) = build_graphs(back)
    _check_split_graph(graph)
    _check_split_graph(graph_of_rows(rows_of(back), 1))


def _format_2_frame(rows: list[tuple], monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Rows as a format-2 column frame (before schema 3's backward-step columns)."""
    short = {**columns.FIELD_TYPES, "backward_step": columns.FIELD_TYPES["backward_step"][:-4]}
    monkeypatch.setattr(columnencode, "FIELD_TYPES", short)
    old = [r[:-4] if r[0] == "backward_step" else r for r in rows]
    payload = columns.encode_payload(old, 0)
    monkeypatch.undo()
    return tf._frame(tf.EVENTS, payload, version=2)


def test_a_trace_of_format_2_reads_as_one_node_per_op_output(tmp_path, monkeypatch):
    with dg.trace(stats="cheap") as t:
        w = dg.ones(3, requires_grad=True)
        y = (w * 2.0).exp()
        y.sum().backward()
    rows = rows_of(list(t.events)[1:])
    frame = _format_2_frame(rows, monkeypatch)
    assert frame[3] == 2
    events = tf.FrameDecoder().feed(frame)[0]
    steps = [e for e in events if type(e) is ev.BackwardStep]
    assert steps and all((s.grad_node, s.outputs, s.grad_outputs, s.next_nodes)
                         == (-1, (), (), ()) for s in steps)
    path = tmp_path / "old.dgtrace"
    header = tf.encode_events([t.events[0]])
    path.write_bytes(header + frame)
    old = dg.read_trace(path).iterations[0].graph
    assert old.grad_nodes == {}
    new = t.iterations[0].graph
    assert {i: (n.grad_fn, n.grad) for i, n in old.nodes.items()} == \
        {i: (n.grad_fn, n.grad) for i, n in new.nodes.items()}
    # drawn as before: the forward graph reversed, the same picture as schema 3's
    assert sorted((e.src, e.dst) for e in backward_graph(old).edges) == \
        sorted((e.src, e.dst) for e in backward_graph(new).edges)


def test_schema_2_json_rows_read_with_the_backward_fields_empty():
    step = SPLIT_STEP
    payload = tf.encode_events_json([step])[tf.FRAME_HEADER.size:]
    meta, rows = payload[:tf.EVENTS_META.size], json.loads(payload[tf.EVENTS_META.size:])
    old = tf.decode_events_payload(meta + json.dumps([rows[0][:-4]]).encode())
    assert old == [step.replace(grad_node=-1, outputs=(), grad_outputs=(), next_nodes=())]
    assert old[0].slots == ((3, old[0].grad_output),) and old[0].next_ids == (2,)


def test_the_builder_and_the_rows_make_the_same_graph_of_several_output_slots():
    events = _split_events()
    builder = GraphBuilder()
    builder.add_all(events)
    (by_events,) = builder.finished
    assert by_events == graph_of_rows(rows_of(events), 1)
    assert list(by_events.grad_nodes) == [3]
