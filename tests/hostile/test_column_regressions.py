"""Named cases of frame format 2 (events in columns): each crafted file is refused in one
line naming the file and the frame, by every reader, quickly; the fuzzer
(``columnfuzz.ColumnMutator``) explores around them."""

from __future__ import annotations

import struct
from pathlib import Path

import columnfuzz as cf
import pytest
import tracefuzz as fz

import dyngraph as dg
from dyngraph.capture import tracefile as tf
from dyngraph.errors import TraceFileError


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return fz.record_tiny(tmp_path_factory.mktemp("base2") / "run.dgtrace", "full", "small",
                          version=tf.FORMAT_VERSION)


def _refused(path: Path) -> str:
    with pytest.raises(TraceFileError) as info:
        trace = dg.read_trace(path)
        for it in trace.iterations:
            _ = it.graph, it.events
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "byte" in message, message
    assert fz.exercise(path, path.parent / "out") == message
    return message


def _with_block(base: Path, tmp_path: Path, frame: int, block: int, data: bytes) -> Path:
    frames = cf.split_versions(base.read_bytes())
    meta, parts = cf.blocks(frames[frame][2])
    parts[block] = data
    frames[frame] = (tf.EVENTS, tf.FORMAT_VERSION, cf.assemble(meta, parts))
    return fz.write(tmp_path / "crafted.dgtrace", cf.join_versions(frames))


def test_what_dyngraph_writes_is_format_2_and_reads_back(base):
    versions = {v for _, v, _ in cf.split_versions(base.read_bytes())}
    assert versions == {tf.FORMAT_VERSION}
    assert fz.exercise(base, base.parent / "out") == "ok"


# Blocks of a payload: 0 kinds, 1 seqs, 2 iterations, 3-4 strings, 5-6 shapes, 7
# attributes, 8-32 summaries (the forms, 7 blocks of cheap ones, 17 of full ones), then
# the columns of each kind present: frame 1 begins with its tensors (kind 1), whose first
# two columns are the tensor ids and the names.
NAMES = 34


def test_a_string_index_past_the_table_is_refused_naming_the_field(base, tmp_path):
    frames = cf.split_versions(base.read_bytes())
    _, parts = cf.blocks(frames[1][2])
    n_strings = len(parts[3]) // 4
    path = _with_block(base, tmp_path, 1, NAMES,
                       struct.pack("<I", n_strings + 7) + parts[NAMES][4:])
    assert f"name is {n_strings + 7}, expected a string of the frame" in _refused(path)


def test_a_damaged_frame_is_refused_when_its_graph_is_asked_for(base, tmp_path):
    # it.graph builds its nodes when first looked into, but decodes (and checks) the rows
    # at once: a damaged frame is refused there, not later inside whoever draws the graph.
    frames = cf.split_versions(base.read_bytes())
    _, parts = cf.blocks(frames[1][2])
    path = _with_block(base, tmp_path, 1, NAMES,
                       struct.pack("<I", len(parts[3]) // 4 + 7) + parts[NAMES][4:])
    trace = dg.read_trace(path)
    with pytest.raises(TraceFileError, match="expected a string of the frame"):
        for it in trace.iterations:
            _ = it.graph


def test_a_block_running_past_its_frame_is_refused(base, tmp_path):
    frames = cf.split_versions(base.read_bytes())
    payload = frames[1][2]
    pos = fz.META.size
    broken = payload[:pos] + struct.pack("<I", len(payload)) + payload[pos + 4:]
    frames[1] = (tf.EVENTS, tf.FORMAT_VERSION, broken)
    path = fz.write(tmp_path / "past.dgtrace", cf.join_versions(frames))
    assert "cut short" in _refused(path)


def test_bytes_after_the_last_block_are_refused(base, tmp_path):
    frames = cf.split_versions(base.read_bytes())
    frames[1] = (tf.EVENTS, tf.FORMAT_VERSION, frames[1][2] + b"\x00\x00")
    path = fz.write(tmp_path / "tail.dgtrace", cf.join_versions(frames))
    assert "more than its blocks" in _refused(path)


def test_a_boolean_that_is_not_0_or_1_is_refused_naming_the_field(base, tmp_path):
    frames = cf.split_versions(base.read_bytes())
    rows = [list(r) for r in tf.decode_rows_payload(frames[1][2])]
    op = next(i for i, r in enumerate(rows) if r[0] == "op")
    rows[op][8] = 7  # requires_grad: bytes() stores it as the byte 7
    payload = tf.columns.encode_payload([tuple(r) for r in rows], 0)
    frames[1] = (tf.EVENTS, tf.FORMAT_VERSION, frames[1][2][:fz.META.size]
                 + payload[fz.META.size:])
    path = fz.write(tmp_path / "bool.dgtrace", cf.join_versions(frames))
    message = _refused(path)
    assert "requires_grad is 7, expected true or false" in message


def test_a_negative_line_is_refused_naming_the_field(base, tmp_path):
    frames = cf.split_versions(base.read_bytes())
    rows = [list(r) for r in tf.decode_rows_payload(frames[1][2])]
    op = next(i for i, r in enumerate(rows) if r[0] == "op")
    rows[op][12] = -3
    payload = tf.columns.encode_payload([tuple(r) for r in rows], 0)
    frames[1] = (tf.EVENTS, tf.FORMAT_VERSION, frames[1][2][:fz.META.size]
                 + payload[fz.META.size:])
    path = fz.write(tmp_path / "line.dgtrace", cf.join_versions(frames))
    assert "line is -3, expected a non-negative integer" in _refused(path)


def test_a_frame_mixing_formats_reads(base, tmp_path):
    """A file of format-2 frames with a format-1 frame among them (a frame the writer could
    not put in columns) reads as one trace."""
    frames = cf.split_versions(base.read_bytes())
    events = tf.decode_events_payload(frames[1][2], version=tf.FORMAT_VERSION)
    frames[1] = (tf.EVENTS, tf.JSON_VERSION,
                 tf.encode_events_json(events)[tf.FRAME_HEADER.size:])
    path = fz.write(tmp_path / "mixed.dgtrace", cf.join_versions(frames))
    assert fz.exercise(path, tmp_path / "out") == "ok"
    assert list(dg.read_trace(path).events) == list(dg.read_trace(base).events)
