"""Trace files and the wire: round trips, truncation, refusal of bad files, fuzzing."""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.capture.tracing import make_header, module_scope
from dyngraph.errors import TraceFileError, UserError


def _workload(steps: int = 3) -> None:
    rng = np.random.default_rng(0)
    w = dg.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    w._name = "fc.weight"
    opt = dg.optim.SGD([w], lr=0.1)
    for i in range(steps):
        x = dg.tensor(rng.standard_normal((2 + i, 4)).astype(np.float32))
        with module_scope("fc"):
            y = (x @ w).tanh()
        with np.errstate(invalid="ignore"):
            loss = (y * y).mean() + (y[0, 0] - 2).log().sum() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()


def _same(a: ev.Event, b: ev.Event) -> bool:
    """Equality that treats NaN as equal to NaN (NaN previews would otherwise differ)."""
    return a == b or tf.encode_events([a]) == tf.encode_events([b])


@pytest.fixture()
def recorded(tmp_path: Path) -> tuple[dg.Trace, Path]:
    with dg.trace(stats="full", values="small") as t:
        _workload()
    path = tmp_path / "run.dgtrace"
    t.save(path)
    return t, path


def test_round_trip_equals_the_in_memory_trace(recorded):
    t, path = recorded
    r = dg.read_trace(path)
    assert len(r.events) == len(t.events)
    assert all(_same(a, b) for a, b in zip(r.events, t.events, strict=True))
    assert r.header == t.header and r.header.values == "small"
    assert [it.index for it in r.iterations] == [it.index for it in t.iterations] == [1, 2, 3]
    for a, b in zip(r.iterations, t.iterations, strict=True):
        assert a.structure_key == b.structure_key
        assert a.graph.nodes.keys() == b.graph.nodes.keys()
        assert a.graph.edges == b.graph.edges
        assert a.diff(b).unchanged
        assert a.backward_graph.backward_order == b.backward_graph.backward_order
    some_tensor = next(e.output for e in t.events if e.kind == "op")
    np.testing.assert_array_equal(r.values(some_tensor), t.values(some_tensor))
    streamed = list(tf.iter_events(path, chunk_size=64))
    assert all(_same(a, b) for a, b in zip(streamed, t.events, strict=True))
    assert r.events[-1] == r.events[len(r.events) - 1] and len(r.events[2:5]) == 3


def test_record_writes_the_stream_as_it_happens(tmp_path):
    path = tmp_path / "live.dgtrace"
    with dg.trace(stats="cheap") as t, dg.record(path, stats="cheap") as writer:
        _workload(2)
        written_midway = os.path.getsize(path)
    assert written_midway > 200  # iteration 1 was on disk before the recording ended
    r = dg.read_trace(path)
    assert writer.events_written == len(r.events)
    assert r.header.kind == "header" and r.header.stats == "cheap"
    # the same events as an in-memory trace running alongside (header aside)
    body = list(r.events)[1:]
    assert all(_same(a, b) for a, b in zip(body, t.events[1:len(body) + 1], strict=True))
    assert [it.structure_key for it in r.iterations] == [
        it.structure_key for it in t.iterations][: len(r.iterations)]


def test_a_file_cut_short_loads_its_whole_frames_with_a_warning(recorded, tmp_path):
    t, path = recorded
    data = path.read_bytes()
    frames = dg.read_trace(path).events._frames  # type: ignore[attr-defined]
    assert len(frames) >= 3
    cut = tmp_path / "cut.dgtrace"
    cut.write_bytes(data[:-10])
    with pytest.warns(UserWarning, match="cut short"):
        r = dg.read_trace(cut)
    expected = len(t.events) - frames[-1].count
    assert len(r.events) == expected
    assert all(_same(a, b) for a, b in zip(r.events, t.events[:expected], strict=True))
    with pytest.warns(UserWarning, match="cut short"):
        assert len(list(tf.iter_events(cut))) == expected


def _error(path: Path) -> str:
    with pytest.raises(TraceFileError) as info:
        dg.read_trace(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert isinstance(info.value, UserError)
    with pytest.raises(TraceFileError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        list(tf.iter_events(path))
    return message


def test_garbage_empty_foreign_and_future_files_are_refused(tmp_path, recorded):
    _, good = recorded
    cases = {
        "empty": (b"", "empty file"),
        "garbage": (os.urandom(3000), "not a dyngraph trace"),
        "text": (b'{"kind": "header"}\n' * 10, "not a dyngraph trace"),
        "stub": (good.read_bytes()[:7], "cut short before its first complete frame"),
    }
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cases["flipped"] = (bytes(data), "damaged")
    future = tf.encode_events([ev.Header(seq=0, iteration=0, schema_version=99,
                                         dyngraph_version="9.0")])
    cases["future"] = (future, "newer dyngraph")
    newer_frame = bytearray(good.read_bytes())
    newer_frame[3] = tf.NEWEST_VERSION + 1
    cases["future-frame"] = (bytes(newer_frame), "newer dyngraph")
    no_header = tf.encode_events([ev.Op(seq=1, iteration=1, op="add")])
    cases["headless"] = (no_header, "does not begin with a header")
    control = tf.encode_message({"cmd": "step_op"})
    cases["control"] = (control, "not an events frame")
    for name, (content, expected) in cases.items():
        path = tmp_path / f"{name}.dgtrace"
        path.write_bytes(content)
        assert expected in _error(path), name
    assert "no such file" in _error(tmp_path / "missing.dgtrace")


def test_frames_on_the_wire_decode_incrementally():
    events = [make_header("cheap", "none"),
              ev.Op(seq=1, iteration=1, op="mul", inputs=(1, -1), output=2, shape=(2, 3),
                    attrs={"dim": (0, 1), "keepdim": True},
                    summary=ev.Summary((2, 3), "float32", norm=math.inf, nan=1,
                                       preview=(1.0, math.nan)))]
    values = ev.TensorValues(seq=2, iteration=1, tensor=2,
                             array=np.arange(6, dtype=np.int16).reshape(2, 3))
    reply = {"reply": "values", "array": tf.encode_array(np.eye(2)), "ok": True}
    stream = (tf.encode_events(events) + tf.encode_message(reply)
              + tf.encode_events([values]) + tf.encode_events([]))
    decoder = tf.FrameDecoder()
    items: list = []
    for i in range(0, len(stream), 7):  # arbitrary chunking
        items.extend(decoder.feed(stream[i:i + 7]))
    assert decoder.pending == 0 and len(items) == 4
    got_events, got_reply, got_values, empty = items
    assert got_events[0] == events[0] and _same(got_events[1], events[1])
    assert got_events[1].attrs == {"dim": (0, 1), "keepdim": True}
    np.testing.assert_array_equal(tf.decode_array(got_reply["array"]), np.eye(2))
    assert got_values == [values] and got_values[0].array.dtype == np.int16
    assert empty == []
    with pytest.raises(TraceFileError, match="at byte 0$"):  # one offset, the stream's
        tf.FrameDecoder().feed(b"XX" + stream)


def test_arrays_are_never_objects():
    with pytest.raises(TypeError):
        tf.encode_array(np.array([object()]))
    bad = tf.encode_array(np.arange(3))
    for change in ({"dtype": "|O"}, {"shape": [5]}, {"__ndarray__": "***"}):
        with pytest.raises(TraceFileError):
            tf.decode_array({**bad, **change})
    scalar = tf.decode_array(tf.encode_array(np.float32(2.5)))
    assert scalar.shape == () and scalar.dtype == np.float32


def test_writer_is_append_only_frames(tmp_path):
    path = tmp_path / "w.dgtrace"
    header = make_header("none", "none")
    with tf.TraceWriter(path, header, batch=2) as writer:
        # the header alone stays in a temporary file beside the target (an earlier trace
        # there survives a run that records nothing); the first recorded frame moves it
        size0 = os.path.getsize(writer.partial_path)
        assert not path.exists()
        writer.write([ev.Op(seq=i, iteration=1, op="add") for i in range(1, 4)])
        size1 = os.path.getsize(path)
        writer.write([ev.IterationEnd(seq=4, iteration=1)])
    assert size0 > 0 and size1 > size0  # the header at once, a full batch right away
    r = dg.read_trace(path)
    assert [e.seq for e in r.events] == [0, 1, 2, 3, 4]
    assert r.iterations[0].complete
    with pytest.raises(ValueError):
        writer.write([ev.Op(seq=9, iteration=2)])


def test_an_interrupted_write_never_writes_its_frame_twice(tmp_path, monkeypatch):
    """A KeyboardInterrupt that lands after a frame reached the file (Ctrl-C during
    ``dyngraph record``) must not leave that frame queued for the next write: the file
    would hold it twice and be refused as going back in seq."""
    path = tmp_path / "i.dgtrace"
    writer = tf.TraceWriter(path, make_header("none", "none"), batch=2)
    write_frame = writer._write_frame
    interrupted = []

    def interrupted_after_writing(events):
        write_frame(events)
        if not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt

    monkeypatch.setattr(writer, "_write_frame", interrupted_after_writing)
    with pytest.raises(KeyboardInterrupt):
        writer.write([ev.Op(seq=1, iteration=1, op="add"), ev.Op(seq=2, iteration=1, op="mul")])
    writer.write([ev.Op(seq=3, iteration=1, op="add"), ev.IterationEnd(seq=4, iteration=1)])
    writer.close()
    assert [e.seq for e in dg.read_trace(path).events] == [0, 1, 2, 3, 4]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_files_load_or_fail_cleanly(tmp_path_factory, data):
    """Random bytes, and valid files with bytes flipped, cut or inserted: read_trace either
    loads (possibly with a warning) or raises TraceFileError, never anything else."""
    base = _fuzz_base()
    how = data.draw(st.sampled_from(["random", "flip", "cut", "insert"]))
    if how == "random":
        content = data.draw(st.binary(max_size=400))
        if data.draw(st.booleans()):
            content = tf.MAGIC + content
    else:
        pos = data.draw(st.integers(0, len(base) - 1))
        if how == "flip":
            content = base[:pos] + bytes([base[pos] ^ data.draw(st.integers(1, 255))]) + \
                base[pos + 1:]
        elif how == "cut":
            content = base[:pos]
        else:
            content = base[:pos] + data.draw(st.binary(min_size=1, max_size=20)) + base[pos:]
    path = tmp_path_factory.mktemp("fuzz") / "f.dgtrace"
    path.write_bytes(content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            trace = dg.read_trace(path)
        except TraceFileError as exc:
            assert "\n" not in str(exc)
            return
        for it in trace.iterations:  # every frame decodes once it has passed its checksum
            _ = it.graph
        list(trace.events)


_FUZZ_BASE: list[bytes] = []


def _fuzz_base() -> bytes:
    if not _FUZZ_BASE:
        with dg.trace(stats="full", values="small") as t:
            _workload(2)
        _FUZZ_BASE.append(b"".join(tf.encode_events(t.events[i:i + 9])
                                   for i in range(0, len(t.events), 9)))
    return _FUZZ_BASE[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=12))
def test_frame_decoder_accepts_or_refuses_any_bytes(chunks):
    decoder = tf.FrameDecoder()
    try:
        for chunk in chunks:
            decoder.feed(chunk)
    except TraceFileError:
        pass


def test_malformed_rows_with_valid_checksums_are_refused():
    """Frames a buggy writer could produce: the checksum is fine, the content is not."""
    good = tf.encode_events_json([ev.Op(seq=1, iteration=1, op="add",  # format 1
                                   summary=ev.Summary((2,), "float32", min=1.0, norm=2.0))])
    body = good[tf.FRAME_HEADER.size + tf.EVENTS_META.size:].decode()
    packed = body.split('"float32","')[1].split('"')[0]
    for bad in (body.replace(packed, packed[:8]), body.replace(packed, "!!!!"),
                body.replace('"add"', '"add",1'), body.replace('"op"', '"nope"'), "[1]", "{}"):
        payload = good[tf.FRAME_HEADER.size:tf.FRAME_HEADER.size + tf.EVENTS_META.size] + \
            bad.encode()
        with pytest.raises(TraceFileError):
            tf.decode_events_payload(payload)


def test_an_unwritable_path_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot write"):
        with dg.record(tmp_path / "no" / "such" / "dir.dgtrace"):
            pass
