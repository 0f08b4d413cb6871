"""Named regression tests: each trace-file problem of issue 11, reproduced and kept fixed."""

from __future__ import annotations

import json
import os
import struct
import time
import tracemalloc
import warnings
from dataclasses import fields
from pathlib import Path

import pytest
import tracefuzz as fz

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.errors import TraceFileError, TraceFileWarning


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return fz.record_tiny(tmp_path_factory.mktemp("base") / "run.dgtrace", "full", "small")


def _frames(path: Path) -> list[tuple[int, bytes]]:
    return fz.split(path.read_bytes())


def _refusal(path: Path, *, lazily: bool = False, byte: bool = True) -> str:
    """The one-line refusal every reader gives for ``path`` (found at open, or when the
    damaged part is first looked at); it names the file and (``byte``) where."""
    with pytest.raises(TraceFileError) as info:
        trace = dg.read_trace(path)
        assert lazily, "refused only lazily"
        for it in trace.iterations:
            _ = it.graph
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    assert not byte or "byte" in message, message
    with pytest.raises(TraceFileError), warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceFileWarning)
        list(tf.iter_events(path))
    assert fz.exercise(path, path.parent / "out") == message or lazily
    return message


def _bounded(fn, seconds: float = 2.0, megabytes: float = 30.0):
    """Run ``fn``: quick, and with Python's allocations bounded."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        return fn()
    finally:
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        assert elapsed < seconds and peak < megabytes, (elapsed, peak)


def _header_frame() -> bytes:
    return tf.encode_events_json([ev.Header(seq=0, iteration=0)])


def _op(seq: int, iteration: int, output: int = 2) -> list:
    payload = tf.encode_events_json([ev.Op(seq=seq, iteration=iteration, op="add", output=output,
                                      shape=(2,))])[tf.FRAME_HEADER.size:]
    return json.loads(payload[tf.EVENTS_META.size:])[0]


# -- 1. frame metadata is checked, never trusted -------------------------------------------
def test_a_170_byte_trace_claiming_four_billion_iterations_is_refused_at_once(tmp_path):
    for lo in (0, 1):  # iteration 0 (setup's) .. 2**32-1, or 1..2**32-1
        body = fz.events_payload((1, lo, 2**32 - 1, 0, 1), [_op(1, max(lo, 1))])
        path = fz.write(tmp_path / f"bomb{lo}.dgtrace", _header_frame() + fz.frame(tf.EVENTS, body))
        assert os.path.getsize(path) < 220  # (schema 3's header names its iteration mode)
        message = _bounded(lambda p=path: _refusal(p))
        assert "4294967295" in message


def test_a_first_frame_claiming_four_billion_iterations_is_refused(tmp_path):
    rows = json.loads(_header_frame()[tf.FRAME_HEADER.size + tf.EVENTS_META.size:])
    body = fz.events_payload((2, 0, 2**32 - 1, 0, 0), [*rows, _op(1, 1)])
    path = fz.write(tmp_path / "bomb.dgtrace", fz.frame(tf.EVENTS, body))
    assert "iterations 0..4294967295 but holds 0..1" in _bounded(lambda: _refusal(path))


def test_an_iteration_only_in_metadata_is_never_listed(tmp_path):
    body = fz.events_payload((1, 1, 2, 0, 1), [_op(1, 1)])  # says 1..2, holds 1 only
    path = fz.write(tmp_path / "phantom.dgtrace", _header_frame() + fz.frame(tf.EVENTS, body))
    assert "says iterations 1..2 but holds 1..1" in _refusal(path)


def test_a_header_frame_in_the_middle_is_refused(base, tmp_path):
    frames = _frames(base)
    path = fz.write(tmp_path / "two-headers.dgtrace", fz.join([*frames[:2], frames[0],
                                                                 *frames[2:]]))
    # Iteration 0 after the header is setup's (schema 3): the second header is refused
    # as a frame going back, or as a header where events belong.
    message = _refusal(path)
    assert "goes back from iteration" in message or "a header in the middle" in message


def test_a_header_event_in_a_later_frame_is_refused_when_decoded(base, tmp_path):
    frames = _frames(base)
    meta, rows = fz.parse(frames[2][1])
    header_row = json.loads(frames[0][1][tf.EVENTS_META.size:])[0]
    header_row[2] = rows[0][2]  # in the frame's own iteration: only decoding can tell
    rows[1] = header_row
    frames[2] = (tf.EVENTS, fz.events_payload(meta, rows))
    path = fz.write(tmp_path / "header-row.dgtrace", fz.join(frames))
    assert "a header in the middle of the trace" in _refusal(path, lazily=True)


def test_an_empty_events_frame_is_ignored_with_a_warning(base, tmp_path):
    frames = _frames(base)
    empty = (tf.EVENTS, tf.EVENTS_META.pack(0, 0, 0, 0, 0) + b"[]")
    path = fz.write(tmp_path / "empty.dgtrace", fz.join([*frames[:2], empty, *frames[2:]]))
    with pytest.warns(TraceFileWarning, match=r"ignored 1 empty events frame \(the first at "
                                              r"byte \d+\)"):
        trace = dg.read_trace(path)
    original = dg.read_trace(base)
    assert [it.index for it in trace.iterations] == [it.index for it in original.iterations]
    assert len(trace.events) == len(original.events)


# -- 2. every field is checked when decoded ------------------------------------------------
def test_deep_nesting_is_refused_not_a_recursion_error(base, tmp_path):
    frames = _frames(base)
    meta, rows = fz.parse(frames[1][1])
    for depth, expected in ((900, "tensor is a list of 1"), (20_000, "nested too deep")):
        rows[0][3] = fz.HOLE  # (JSON itself stops at about 1,000 deep)
        frames[1] = (tf.EVENTS, fz.events_payload(meta, rows, ["[" * depth + "]" * depth]))
        path = fz.write(tmp_path / f"deep{depth}.dgtrace", fz.join(frames))
        assert expected in _refusal(path, lazily=True)


WRONG = [None, -1, 2**64, "x", [], [1, "a"], {}, {"a": [1]}, True, 1.5]


def _every_field_of_every_kind():
    header = ev.Header(seq=0, iteration=0, argv=("a",))
    summary = ev.Summary((2,), "float32", min=0.0, max=1.0, mean=0.5, std=0.5, norm=1.0)
    examples = {
        ev.TensorCreated: dict(tensor=1, name="w", shape=(2,), summary=summary),
        ev.TensorValues: dict(tensor=1),
        ev.Op: dict(op="add", inputs=(1, -1), output=2, shape=(2,), attrs={"dim": (0,)},
                    summary=summary, call=0),
        ev.BackwardStep: dict(node=2, op="add", grad_fn="AddBackward0", inputs=(1,),
                              grad_output=summary, grad_inputs=(summary, None)),
        ev.OptimizerStep: dict(optimizer="SGD", lr=0.1, updates=((1, 0.5),)),
        ev.ExceptionRaised: dict(type="KeyError", message="m", traceback="t", file="f.py"),
    }
    for kind, cls in ev.EVENT_TYPES.items():
        event = cls(seq=1, iteration=1, **examples.get(cls, {})) if cls is not ev.Header \
            else header
        for i, f in enumerate(fields(cls)):
            yield pytest.param(event, i, id=f"{kind}.{f.name}")


@pytest.mark.parametrize(("event", "index"), list(_every_field_of_every_kind()))
def test_a_wrong_value_in_any_field_is_refused_naming_it_or_read_safely(event, index,
                                                                          tmp_path):
    name = fields(type(event))[index].name
    head = [] if type(event) is ev.Header else [ev.Header(seq=0, iteration=0)]
    good = tf.encode_events_json([*head, event])
    meta, rows = fz.parse(good[tf.FRAME_HEADER.size:])
    for value in WRONG:
        rows[-1][index + 1] = value
        path = fz.write(tmp_path / "t.dgtrace", fz.frame(tf.EVENTS, fz.events_payload(meta, rows)))
        try:
            outcome = fz.exercise(path, tmp_path / "out")
        except fz.Unexpected as exc:
            raise AssertionError(f"{name} := {value!r}: {exc}") from None
        if outcome != "ok":
            # (a wrong seq or iteration may show first as a disagreement with the frame's
            # metadata, a wrong schema version as one from a newer dyngraph, a summary
            # gone as a reference to it that now points at nothing)
            assert name in outcome or "iterations" in outcome or "seq" in outcome \
                or "schema" in outcome or "reference" in outcome, (name, value, outcome)


def test_schema_version_true_is_refused(tmp_path):
    payload = tf.encode_events_json([ev.Header(seq=0, iteration=0)])[tf.FRAME_HEADER.size:]
    meta, rows = fz.parse(payload)
    rows[0][3] = True
    path = fz.write(tmp_path / "bool.dgtrace", fz.frame(tf.EVENTS, fz.events_payload(meta, rows)))
    assert "schema_version is True, expected an integer" in _refusal(path)


def test_text_that_is_not_valid_unicode_is_refused(base, tmp_path):
    frames = _frames(base)
    for raw in (b'"\\ud800"', b'"\xed\xa0\x80"'):  # an escaped and an encoded surrogate
        meta, rows = fz.parse(frames[1][1])
        rows[1][3] = fz.HOLE
        payload = fz.events_payload(meta, rows).replace(json.dumps(fz.HOLE).encode(), raw)
        frames_2 = [*frames[:1], (tf.EVENTS, payload), *frames[2:]]
        path = fz.write(tmp_path / "surrogate.dgtrace", fz.join(frames_2))
        message = _refusal(path, lazily=True)
        assert "surrogate" in message or "not UTF-8" in message


def test_an_error_found_after_opening_names_the_file_and_byte(base, tmp_path):
    frames = _frames(base)
    meta, rows = fz.parse(frames[-1][1])
    rows[0][1] = "not a seq"
    frames[-1] = (tf.EVENTS, fz.events_payload(meta, rows))
    path = fz.write(tmp_path / "late.dgtrace", fz.join(frames))
    trace = dg.read_trace(path)  # opens: only the first frame is decoded
    start = len(fz.join(frames[:-1]))
    with pytest.raises(TraceFileError, match=rf"^{path}: .*seq is 'not a seq'.* \(in the "
                                             rf"frame at byte {start}\)$"):
        _ = trace.iterations[-1].graph


# -- 3. what is read, and how much -----------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.dgtrace"
    os.mkfifo(fifo)  # nobody writes: opening it to read would block forever
    message = _bounded(lambda: _refusal(fifo, byte=False))
    assert message == f"{fifo}: is a FIFO, not a trace file"


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_without_reading_them(path):
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    with pytest.raises(TraceFileError, match=f"^{path}: is a device, not a trace file$"):
        _bounded(lambda: dg.read_trace(path))


def test_a_directory_is_named_as_one(tmp_path):
    with pytest.raises(TraceFileError, match="is a directory, not a trace file"):
        dg.read_trace(tmp_path)


def test_a_huge_foreign_file_is_refused_from_its_first_bytes(tmp_path):
    path = tmp_path / "huge.dgtrace"
    with open(path, "wb") as f:
        f.truncate(3 << 30)  # 3 GB of zeros, sparse: nothing to read but the start
    message = _bounded(lambda: _refusal(path, byte=False), seconds=2.0, megabytes=5)
    assert "not a dyngraph trace (unknown file signature)" in message


def test_memory_follows_the_events_decoded_not_the_file_size(tmp_path):
    path = tmp_path / "big.dgtrace"
    with tf.TraceWriter(path, ev.Header(seq=0, iteration=0)) as writer:
        writer.write([ev.ScriptOutput(seq=1, iteration=1, text="x" * (40 << 20))])
        writer.flush()  # a frame of its own, as at an iteration's end
        writer.write([ev.Op(seq=2, iteration=2, op="add", output=3)])
    assert os.path.getsize(path) > 40 << 20
    trace = _bounded(lambda: dg.read_trace(path), seconds=5.0, megabytes=5)
    assert [it.index for it in trace.iterations] == [1, 2]
    assert _bounded(lambda: len(trace.iterations[1].graph.nodes), megabytes=5) == 1


# -- 4. a corrupt length is not a file cut short -------------------------------------------
def test_a_corrupt_length_in_the_middle_says_so_and_what_was_kept(base, tmp_path):
    data = bytearray(base.read_bytes())
    frames = _frames(base)
    at = len(fz.join(frames[:2]))  # the frame of iteration 2
    struct.pack_into("<I", data, at + 4, 2**30)
    path = fz.write(tmp_path / "corrupt.dgtrace", bytes(data))
    kept = sum(tf.EVENTS_META.unpack_from(p)[0] for _, p in frames[:2])
    with pytest.warns(TraceFileWarning, match=rf"corrupt frame at byte {at} .* kept the "
                                              rf"{kept} events of the 2 frames before it"):
        trace = dg.read_trace(path)
    assert [it.index for it in trace.iterations] == [1]
    cut = fz.write(tmp_path / "cut.dgtrace", base.read_bytes()[:at + 40])
    with pytest.warns(TraceFileWarning, match=rf"cut short at byte {at} .* kept the {kept} "):
        dg.read_trace(cut)


# -- 5. small things ---------------------------------------------------------------------------
def test_messages_give_one_byte_offset(base, tmp_path):
    data = bytearray(base.read_bytes())
    at = len(fz.join(_frames(base)[:2]))
    data[at] = ord("X")  # the magic of a frame in the middle
    path = fz.write(tmp_path / "magic.dgtrace", bytes(data))
    for read in (dg.read_trace, lambda p: list(tf.iter_events(p))):
        with pytest.raises(TraceFileError) as info:
            read(path)
        assert str(info.value) == f"{path}: not a dyngraph frame at byte {at}"
    with pytest.raises(TraceFileError) as info:
        tf.FrameDecoder().feed(bytes(data))
    assert str(info.value).count("byte") == 1


def test_the_cut_short_warning_points_at_the_callers_line(base, tmp_path):
    cut = fz.write(tmp_path / "cut.dgtrace", base.read_bytes()[:-5])
    for read in (dg.read_trace, lambda p: list(tf.iter_events(p))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            read(cut)
        assert [w.category for w in caught] == [TraceFileWarning]
        assert caught[0].filename == __file__, caught[0].filename
