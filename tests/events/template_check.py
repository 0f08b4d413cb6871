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
    return [version for _, version in frame_types(path)]


def frame_types(path: Path) -> list[tuple[int, int]]:
    """(frame type, format version) of each frame of the file at ``path``."""
    data, pos, out = path.read_bytes(), 0, []
    while pos < len(data):
        _, ftype, version, length, _ = tf.FRAME_HEADER.unpack_from(data, pos)
        out.append((ftype, version))
        pos += tf.FRAME_HEADER.size + length
    return out


def assert_templates_read_back_identical(events: list, tmp_path: Path, name: str,
                                         repeats: bool = True, in_frames: bool = True
                                         ) -> None:
    """Every event read from the templated files (format 4, templates within a frame;
    format 5, the file's table of templates) equals the one read from the format-3 file
    and the one recorded; when iterations ``repeats``, the templated files use templates
    and are smaller (format 4 only if they repeat ``in_frames``: an iteration longer
    than half a frame has no earlier one beside it)."""
    plain = saved(events, tmp_path / f"{name}-3.dgtrace", tf.FORMAT_VERSION)
    assert set(frame_versions(plain)) == {tf.FORMAT_VERSION}
    from_plain = list(dg.read_trace(plain).events)
    for version in (tf.TEMPLATE_VERSION, tf.TABLE_VERSION):
        templated = saved(events, tmp_path / f"{name}-{version}.dgtrace", version)
        expected = repeats and (in_frames or version == tf.TABLE_VERSION)
        if version == tf.TEMPLATE_VERSION or repeats:
            assert (version in frame_versions(templated)) == expected, (name, version)
        else:  # (the first iteration is a template at once, written as its rows: one
            # frame head and a byte per event of it more, whatever follows)
            assert templated.stat().st_size <= plain.stat().st_size + 300, name
        from_templated = list(dg.read_trace(templated).events)
        assert len(from_templated) == len(events)
        for k, (a, b, c) in enumerate(zip(from_templated, from_plain, events, strict=True)):
            assert a == b, (name, version, k, a, b)
            if k:  # (the header's created time is rounded the same way in both files)
                assert a == c, (name, version, k, a, c)
        if version == tf.TABLE_VERSION:  # streamed, the templates met on the way
            assert list(tf.iter_events(templated)) == from_templated
        if expected:
            assert templated.stat().st_size < plain.stat().st_size
