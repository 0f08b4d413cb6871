"""The numpy a run used is in its trace's header and in ``dyngraph --version``: the engine's
arithmetic is numpy's (numpy 2.4's in-place negative was wrong on strided views), so a bug
report says which. Traces written before the header had it still read, with ""."""

from __future__ import annotations

import json

import numpy as np

import dyngraph
from dyngraph.capture import columns
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


def test_a_format_2_header_written_before_the_numpy_version_reads(tmp_path, monkeypatch):
    """The frame an older dyngraph wrote: the header's columns without numpy_version."""
    old_types = dict(columns.FIELD_TYPES,
                     header=columns.FIELD_TYPES["header"][:-_AFTER_CREATED])
    monkeypatch.setattr(columns, "FIELD_TYPES", old_types)
    row = rows_of([_OLD_HEADER])[0][:-_AFTER_CREATED]
    frame = tf.encode_rows([row])
    monkeypatch.undo()
    path = tmp_path / "old.dgtrace"
    path.write_bytes(frame + tf.encode_events([ev.RunEnd(seq=1, iteration=1)]))
    header, _ = read_frames(path)
    assert header == _OLD_HEADER.replace(numpy_version="")
    # ... and a header frame one column short of even that is damage, named as before
    monkeypatch.setattr(columns, "FIELD_TYPES",
                        dict(old_types, header=old_types["header"][:-1]))
    broken = tf.encode_rows([row[:-1]])
    monkeypatch.undo()
    path.write_bytes(broken)
    try:
        read_frames(path)
    except dyngraph.errors.TraceFileError as exc:
        assert "bytes of" in str(exc)
    else:
        raise AssertionError("a damaged header frame was accepted")


def test_a_format_1_header_written_before_the_numpy_version_reads():
    new = _OLD_HEADER.replace(numpy_version="2.4.6")
    payload = tf.encode_events_json([new])[tf.FRAME_HEADER.size:]
    meta, rows = payload[:tf.EVENTS_META.size], json.loads(payload[tf.EVENTS_META.size:])
    assert rows[0][-_AFTER_CREATED] == "2.4.6"
    old = tf.decode_events_payload(meta + json.dumps([rows[0][:-_AFTER_CREATED]]).encode())
    assert old == [_OLD_HEADER.replace(numpy_version="")]


def test_version_names_numpy(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"dyngraph {dyngraph.__version__} ")
    assert f"numpy {np.__version__}" in out
