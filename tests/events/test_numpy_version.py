"""The numpy a run used is in its trace's header and in ``dyngraph --version``: the engine's
arithmetic is numpy's (numpy 2.4's in-place negative was wrong on strided views), so a bug
report says which. Traces written before the header had it still read, with ""."""

from __future__ import annotations

import json

import numpy as np

import dyngraph
from dyngraph.capture import columnencode, columns
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.capture.rows import rows_of
from dyngraph.capture.tracereader import read_frames
from dyngraph.cli import main

# A header of before the numpy version (schema 2): its row ends at ``created``, the fields
# after it (numpy_version, then schema 4's rank fields) were not written.
_OLD_HEADER = ev.Header(seq=0, iteration=0, schema_version=2, dyngraph_version="0.1.0",
                        script="train.py", argv=("--lr", "0.1"), created=1.5)
_AFTER_CREATED = len(ev.FIELD_NAMES["header"]) - ev.FIELD_NAMES["header"].index("created") - 1


def test_a_recorded_trace_names_the_numpy_it_ran_on(tmp_path):
    path = tmp_path / "run.dgtrace"
    with dyngraph.record(path):
        x = dyngraph.ones(3, requires_grad=True)
        (x * 2).sum().backward()
    header, _ = read_frames(path)
    assert header.numpy_version == np.__version__
    assert header.dyngraph_version == dyngraph.__version__


def _older_frame(monkeypatch, short: int) -> bytes:
    """The header frame a dyngraph from before the last ``short`` header fields wrote."""
    old_types = dict(columns.FIELD_TYPES, header=columns.FIELD_TYPES["header"][:-short])
    monkeypatch.setattr(columnencode, "FIELD_TYPES", old_types)
    frame = tf.encode_rows([rows_of([_OLD_HEADER.replace(numpy_version="2.4.6")])[0][:-short]])
    monkeypatch.undo()
    return frame


def test_a_format_2_header_written_before_the_numpy_version_reads(tmp_path, monkeypatch):
    """The frames older dyngraphs wrote: the header's columns without numpy_version (and
    schema 4's iteration mode and rank fields after it), and without schema 4's only."""
    path = tmp_path / "old.dgtrace"
    end = tf.encode_events([ev.RunEnd(seq=1, iteration=1)])
    path.write_bytes(_older_frame(monkeypatch, _AFTER_CREATED) + end)
    header, _ = read_frames(path)
    assert header == _OLD_HEADER.replace(numpy_version="")
    path.write_bytes(_older_frame(monkeypatch, _AFTER_CREATED - 1) + end)
    header, _ = read_frames(path)
    assert header == _OLD_HEADER.replace(numpy_version="2.4.6")
    # ... and a header frame one column short of even the oldest is damage, named as before
    path.write_bytes(_older_frame(monkeypatch, _AFTER_CREATED + 1) + end)
    try:
        read_frames(path)
    except dyngraph.errors.TraceFileError as exc:
        assert "bytes of" in str(exc)
    else:
        raise AssertionError("a damaged header frame was accepted")


def test_a_format_1_header_written_before_the_numpy_version_reads():
    new = _OLD_HEADER.replace(numpy_version="2.4.6", iteration_mode="step", rank=1,
                              world_size=2, run_id="job")
    payload = tf.encode_events_json([new])[tf.FRAME_HEADER.size:]
    meta, rows = payload[:tf.EVENTS_META.size], json.loads(payload[tf.EVENTS_META.size:])
    assert rows[0][-_AFTER_CREATED:] == ["2.4.6", "step", 1, 2, "job"]
    old = tf.decode_events_payload(meta + json.dumps([rows[0][:-_AFTER_CREATED]]).encode())
    assert old == [_OLD_HEADER.replace(numpy_version="")]
    old = tf.decode_events_payload(meta + json.dumps([rows[0][:1 - _AFTER_CREATED]]).encode())
    assert old == [_OLD_HEADER.replace(numpy_version="2.4.6")]


def test_version_names_numpy(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"dyngraph {dyngraph.__version__} ")
    assert f"numpy {np.__version__}" in out
