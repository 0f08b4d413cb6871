"""Frame format 4, iteration templates: a repeated iteration is written as what changes
against an earlier one, reads back exactly, falls back on any divergence, and a crafted
templated frame is refused in one line."""

from __future__ import annotations

import random
import struct
import sys
import zlib
from pathlib import Path

import pytest

import dyngraph as dg
import dyngraph.nn as nn
from dyngraph.capture import templates
from dyngraph.capture import tracefile as tf
from dyngraph.capture.rows import rows_of
from dyngraph.errors import TraceFileError

sys.path.insert(0, str(Path(__file__).parents[1] / "hostile"))
import columnfuzz as cf  # noqa: E402
import tracefuzz as fz  # noqa: E402


def _training(steps: int, stats: str = "cheap", widen_at: int | None = None) -> list:
    """Events of an MLP's training steps; at step ``widen_at`` the batch is wider (the
    same ops, other shapes)."""
    dg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    with dg.trace(stats=stats) as t:
        for step in range(steps):
            x = dg.randn(6 if step == widen_at else 3, 4)
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return list(t.events)


# A repeated iteration's bytes against format 3's (issue 29's goal is 0.3; see
# docs/trace-format.md for what is measured).
BYTES_GOAL = 0.75


def _round_trip(rows: list) -> tuple[int, list]:
    frame = tf.encode_rows(rows)
    _, _, version, _, _ = tf.FRAME_HEADER.unpack_from(frame)
    (decoded,) = tf.FrameDecoder().feed(frame)
    return version, decoded


def test_a_repeated_iteration_is_written_against_its_template_and_reads_back_exactly():
    events = _training(6)
    version, decoded = _round_trip(rows_of(events[1:]))
    assert version == tf.TEMPLATE_VERSION and decoded == events[1:]
    one = [e for e in events if e.iteration == 2]
    many = [e for e in events if 2 <= e.iteration <= 5]
    plain = len(tf.encode_rows(rows_of(many), version=tf.FORMAT_VERSION))
    templated = len(tf.encode_rows(rows_of(many)))
    single = len(tf.encode_rows(rows_of(one), version=tf.FORMAT_VERSION))
    assert (templated - single) / 3 < BYTES_GOAL * (plain - single) / 3  # per repeat


def test_a_divergence_mid_iteration_is_written_as_it_is():
    """Step 3 (iteration 4) runs the same ops on a wider batch: every shape differs from
    the template's from its first op on, and each is written; events read back as
    recorded."""
    events = _training(5, widen_at=3)
    version, decoded = _round_trip(rows_of(events[1:]))
    assert version == tf.TEMPLATE_VERSION and decoded == events[1:]
    assert {e.shape for e in decoded if e.kind == "op" and e.iteration == 4} != \
        {e.shape for e in decoded if e.kind == "op" and e.iteration == 3}


def test_an_iteration_of_other_events_is_written_in_full():
    rows = rows_of(_training(3)[1:])
    extra = [r for r in rows if r[2] == 3]
    at = next(i for i, r in enumerate(extra) if r[0] == "op")
    extra.insert(at, extra[at][:1] + (extra[at][1],) + extra[at][2:])  # one op more
    rows = [r for r in rows if r[2] != 3] + extra
    version, decoded = _round_trip(rows)
    assert rows_of(decoded) == rows


def test_writing_version_3_never_templates_and_old_frames_still_read():
    rows = rows_of(_training(4)[1:])
    frame = tf.encode_rows(rows, version=tf.FORMAT_VERSION)
    assert tf.FRAME_HEADER.unpack_from(frame)[2] == tf.FORMAT_VERSION
    assert rows_of(tf.FrameDecoder().feed(frame)[0]) == rows
    assert templates.encode_payload(rows[:5], 0) is None  # nothing repeats


# -- crafted templated frames --------------------------------------------------------------
def _mutated(payload: bytes, rng: random.Random) -> tuple[bytes, str]:
    meta, parts = cf.blocks(payload)
    i = rng.randrange(len(parts))
    part = bytearray(parts[i])
    choice = rng.randrange(5)
    if choice == 0 and len(part) >= 4:
        size = rng.choice([s for s in (1, 4, 8) if s <= len(part)])
        at = rng.randrange(0, len(part) - size + 1, size)
        part[at:at + size] = rng.choice(cf.EXTREMES[size])
        what = f"block {i}: an extreme {size}-byte item at {at}"
    elif choice == 1 and part:
        part[rng.randrange(len(part))] ^= 1 << rng.randrange(8)
        what = f"block {i}: a bit flipped"
    elif choice == 2:
        del part[rng.randrange(len(part) + 1):]
        what = f"block {i}: cut short"
    elif choice == 3:
        parts.insert(i, bytes(part))
        return cf.assemble(meta, parts), f"block {i} twice"
    else:
        count = struct.unpack_from("<I", meta)[0]
        meta = struct.pack("<I", rng.choice([0, 1, count - 1, count + 1, 2**31])) + meta[4:]
        return cf.assemble(meta, parts), "event count"
    parts[i] = bytes(part)
    return cf.assemble(meta, parts), what


def test_crafted_templated_frames_load_or_are_refused_in_one_line(tmp_path):
    """Seeded mutations of each block of a real templated frame, checksums made right so
    the readers' own checks are reached: every reader loads or refuses on one line.
    (``DYNGRAPH_FUZZ_CASES`` sets the count; 60 by default.)"""
    base = fz.record_tiny(tmp_path / "base.dgtrace", "full", steps=4,
                          version=tf.TEMPLATE_VERSION).read_bytes()
    frames = cf.split_versions(base)
    templated = [k for k, (_, v, _) in enumerate(frames) if v == tf.TEMPLATE_VERSION]
    assert templated
    failures = []
    for case in range(fz.fuzz_cases_wanted(60)):
        rng = random.Random(case)
        k = rng.choice(templated)
        payload, what = _mutated(frames[k][2], rng)
        mutated = list(frames)
        mutated[k] = (tf.EVENTS, tf.TEMPLATE_VERSION, payload)
        path = fz.write(tmp_path / "case.dgtrace", cf.join_versions(mutated))
        try:
            trace = dg.read_trace(path)
            list(trace.events)
            for it in trace.iterations:
                it.graph  # noqa: B018
        except TraceFileError as exc:
            if "\n" in str(exc):
                failures.append(f"case {case} ({what}): a refusal of several lines")
        except Exception as exc:  # noqa: BLE001
            failures.append(f"case {case} ({what}): {type(exc).__name__}: {exc}"[:200])
    assert not failures, "\n".join(failures[:10])


def test_a_template_that_is_not_an_earlier_full_segment_is_refused():
    rows = rows_of(_training(4)[1:])
    payload = templates.encode_payload(rows, 0)
    assert payload is not None
    meta, parts = cf.blocks(payload)
    table = list(struct.unpack(f"<{len(parts[1]) // 4}I", parts[1]))
    table[2::3] = [len(table) // 3 + 1] * (len(table) // 3)  # every one names a later one
    parts[1] = struct.pack(f"<{len(table)}I", *table)
    broken = cf.assemble(meta, parts)
    frame = tf.FRAME_HEADER.pack(tf.MAGIC, tf.EVENTS, tf.TEMPLATE_VERSION, len(broken),
                                 zlib.crc32(broken)) + broken
    with pytest.raises(TraceFileError, match="not an earlier full segment"):
        tf.FrameDecoder().feed(frame)
