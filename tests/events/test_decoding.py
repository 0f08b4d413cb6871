"""Decoding builds events and summaries exactly as recorded, and the lazy trace decodes
only what it is asked for."""

from __future__ import annotations

import dataclasses
import math
import tracemalloc

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.capture.tracing import make_header


def _round_trip(events: list[ev.Event]) -> list[ev.Event]:
    frame = tf.encode_events(events)
    return tf.decode_events_payload(frame[tf.FRAME_HEADER.size:])


SUMMARIES = [
    ev.Summary((2, 3), "float32", norm=1.5, nan=2, inf=1, sampled=True),  # cheap
    ev.Summary((4,), "float64", min=-1.0, max=2.0, mean=0.5, std=1.0, norm=3.0,
               preview=(1.0, -2.5, 0.125)),  # full, packed
    ev.Summary((), "float32", min=None, max=None, mean=1.0, std=None, norm=None, nan=3,
               preview=(math.inf,), sampled=True),  # full, some statistics None
    ev.Summary((1,), "int64", mean=None, norm=2.0, preview=(7.0,)),  # only a preview
    ev.Summary((300,), "float32", min=0.0, max=1.0, mean=0.5, std=0.1, norm=9.0,
               preview=tuple(float(i) for i in range(300))),  # preview past 255 values
]


@pytest.mark.parametrize("summary", SUMMARIES)
def test_summaries_come_back_equal_and_of_the_same_class(summary):
    op = ev.Op(seq=1, iteration=1, op="mul", inputs=(1, 2), output=3, shape=(2, 3),
               summary=summary)
    step = ev.BackwardStep(seq=2, iteration=1, node=3, op="mul", grad_fn="MulBackward0",
                           inputs=(1, 2), grad_output=summary, grad_inputs=(None, summary))
    got_op, got_step = _round_trip([op, step])
    expected = summary if len(summary.preview) < 256 else summary.replace(
        preview=summary.preview[:255])
    assert got_op.summary == expected and type(got_op.summary) is type(expected)
    assert got_step.grad_output is got_op.summary  # shared, as recorded
    assert got_step.grad_inputs == (None, expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        got_op.summary.norm = 0.0  # type: ignore[misc]


def test_every_kind_decodes_to_its_own_frozen_class():
    header = make_header("full", "small")
    events = [header,
              ev.TensorCreated(seq=1, iteration=1, tensor=1, name="w", shape=(2,),
                               summary=SUMMARIES[0]),
              ev.TensorValues(seq=2, iteration=1, tensor=1, array=np.arange(2.0)),
              ev.Op(seq=3, iteration=1, op="sum", inputs=(1,), output=2,
                    attrs={"dim": (0, 1), "keepdim": False}),
              ev.OptimizerStep(seq=4, iteration=1, optimizer="SGD", lr=0.1,
                               updates=((1, 0.5),)),
              ev.IterationEnd(seq=5, iteration=1, node_count=2, structure_key="k")]
    got = _round_trip(events)
    assert got == events
    assert [type(e) for e in got] == [type(e) for e in events]
    assert got[3].attrs == {"dim": (0, 1), "keepdim": False}
    assert got[4].updates == ((1, 0.5),)
    for e in got:
        with pytest.raises(dataclasses.FrozenInstanceError):
            e.seq = 99  # type: ignore[misc]


def test_a_file_iteration_asked_again_decodes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "many.dgtrace"
    with tf.TraceWriter(path, make_header("cheap", "none"), batch=2) as writer:
        seq = 0
        for it in range(1, 41):  # 40 iterations of 5 events, in 3 frames each: > 64 frames
            for k in range(4):
                seq += 1
                writer.add(ev.Op(seq=seq, iteration=it, op="add", inputs=(k,), output=k + 1))
            seq += 1
            writer.add(ev.IterationEnd(seq=seq, iteration=it, node_count=4,
                                       structure_key=f"key{it}"))
    trace = dg.read_trace(path)
    first = trace.iterations[0]
    graph = first.graph
    assert len(graph.nodes) > 0
    for it in trace.iterations:  # evicts the first iteration's frames from the cache
        _ = it.events
    decoded = []
    original = tf.FrameRef.decode
    monkeypatch.setattr(tf.FrameRef, "decode", lambda self: decoded.append(self) or
                        original(self))
    assert first.graph is graph
    assert first.backward_graph is first.backward_graph
    assert first.complete and first.structure_key == "key1"
    assert len(decoded) <= 1  # complete/structure_key read the last frame once
    before = len(decoded)
    assert first.complete and first.structure_key == "key1" and first.graph is graph
    assert len(decoded) == before


def test_a_live_iteration_graph_follows_new_events():
    with dg.trace(stats="none") as t:
        x = dg.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        it = t.iterations[0]
        small = it.graph
        assert it.graph is small and not it.complete
        _ = (y + 1).sum()
        bigger = it.graph
    assert bigger is not small and len(bigger.nodes) > len(small.nodes)


def _write_big(path, count: int) -> None:
    with tf.TraceWriter(path, make_header("full", "none")) as writer:
        for i in range(1, count + 1):
            summary = ev.Summary((64, 32), "float32", min=-1.0, max=1.0, mean=0.0, std=0.5,
                                 norm=float(i), preview=(0.5,) * 8)
            writer.add(ev.Op(seq=i, iteration=1 + i // 1000, op="matmul", inputs=(i, -1),
                             output=i + 1, shape=(64, 32), file="/some/where/train.py",
                             line=i, function="forward", summary=summary))


def _streaming_peak(path) -> int:
    tracemalloc.start()
    try:
        count = 0
        for e in tf.iter_events(path, chunk_size=1 << 16):
            count += 1
            assert e.seq == 0 or e.summary.norm == e.seq
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_iter_events_streams_in_bounded_memory(tmp_path):
    small, big = tmp_path / "small.dgtrace", tmp_path / "big.dgtrace"
    _write_big(small, 3_000)
    _write_big(big, 15_000)
    assert big.stat().st_size > 3 * small.stat().st_size  # (templates: not 5x)
    # About one frame's bytes and objects at a time, however long the file.
    assert _streaming_peak(big) < 1.3 * _streaming_peak(small) + 200_000
