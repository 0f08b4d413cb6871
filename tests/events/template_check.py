"""Shared by the template tests: save events with and without iteration templates, read
both back, and say how they compare."""

from __future__ import annotations

from pathlib import Path

import dyngraph as dg
from dyngraph.capture import tracefile as tf


def saved(events: list, path: Path, version: int) -> Path:
    """``events`` saved in frames of ``version``, cut every ``BATCH_EVENTS`` events and at
    iteration ends as the writer cuts them, without its clock (so the cuts, and which
    frames hold a repeated iteration, do not depend on the machine's load)."""
    written, interval = tf.WRITE_VERSION, tf.FRAME_INTERVAL
    tf.WRITE_VERSION, tf.FRAME_INTERVAL = version, 1e9
    try:
        dg.Trace(events).save(path)
    finally:
        tf.WRITE_VERSION, tf.FRAME_INTERVAL = written, interval
    return path


def frame_versions(path: Path) -> list[int]:
    data, pos, out = path.read_bytes(), 0, []
    while pos < len(data):
        _, _, version, length, _ = tf.FRAME_HEADER.unpack_from(data, pos)
        out.append(version)
        pos += tf.FRAME_HEADER.size + length
    return out


def assert_templates_read_back_identical(events: list, tmp_path: Path, name: str,
                                         repeats: bool = True) -> None:
    """Every event read from the templated file equals the one read from the format-3
    file and the one recorded; when iterations ``repeats`` within a frame, the templated
    file uses templates and is smaller."""
    plain = saved(events, tmp_path / f"{name}-3.dgtrace", tf.FORMAT_VERSION)
    templated = saved(events, tmp_path / f"{name}-4.dgtrace", tf.TEMPLATE_VERSION)
    assert set(frame_versions(plain)) == {tf.FORMAT_VERSION}
    assert (tf.TEMPLATE_VERSION in frame_versions(templated)) == repeats, name
    from_plain = list(dg.read_trace(plain).events)
    from_templated = list(dg.read_trace(templated).events)
    assert len(from_templated) == len(events)
    for k, (a, b, c) in enumerate(zip(from_templated, from_plain, events[:1] + events[1:],
                                      strict=True)):
        assert a == b, (name, k, a, b)
        if k:  # (the header's created time is rounded the same way in both files)
            assert a == c, (name, k, a, c)
    if repeats:
        assert templated.stat().st_size < plain.stat().st_size
