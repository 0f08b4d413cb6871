"""Frame format 5, the file's table of iteration templates: an iteration longer than a
frame templates across frames, reads back exactly (read whole, streamed, or fed to a
stream decoder), traces of every earlier format still read, and a crafted table is
refused in one line."""

from __future__ import annotations

import random
import struct
import sys
import warnings
from pathlib import Path

import pytest
from template_check import assert_templates_read_back_identical, frame_types, saved

import dyngraph as dg
from dyngraph.capture import templatetable
from dyngraph.capture import tracefile as tf
from dyngraph.errors import TraceFileError

sys.path.insert(0, str(Path(__file__).parents[1] / "hostile"))
import columnfuzz as cf  # noqa: E402
import tracefuzz as fz  # noqa: E402

DATA = Path(__file__).parent / "data"
SEGMENT = struct.Struct("<4I")


def _chain(iterations: int, ops: int = 400, longer_at: int | None = None) -> list:
    """Events of a chain of ``ops`` elementwise ops per iteration (each iteration, with its
    backward steps, spans two frames); at iteration ``longer_at`` the chain has one op
    more in its middle."""
    x = dg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    with dg.trace(stats="cheap") as t:
        for it in range(1, iterations + 1):
            y = x
            for k in range(ops // 2):
                y = y * 1.0001 + 0.5
                if it == longer_at and k == ops // 4:
                    y = y - 0.25
            y.sum().backward()
    return list(t.events)


def _segments(path: Path) -> list[list[tuple[int, int, int, int]]]:
    """The segment table (events, iteration, template, offset) of each format-5 events
    frame of the file."""
    out = []
    for ftype, version, payload in cf.split_versions(path.read_bytes()):
        if ftype == tf.EVENTS and version == tf.TABLE_VERSION:
            _, parts = cf.blocks(payload)
            out.append([SEGMENT.unpack_from(parts[1], k)
                        for k in range(0, len(parts[1]), SEGMENT.size)])
    return out


def test_an_iteration_longer_than_a_frame_templates_across_frames(tmp_path):
    """A 400-op chain (about 1,200 events an iteration, cut every 1,024): from the second
    iteration on, every part of every iteration, in whichever frame it falls, is written
    against the first one's template, and reads back as recorded."""
    events = _chain(5)
    assert_templates_read_back_identical(events, tmp_path, "chain", in_frames=False)
    path = saved(events, tmp_path / "chain.dgtrace", tf.TABLE_VERSION)
    assert frame_types(path).count((tf.TEMPLATE, tf.TABLE_VERSION)) == 1
    segments = [s for frame in _segments(path) for s in frame]
    assert {s[1] for s in segments} >= {2, 3, 4, 5}
    assert all(s[2] == 1 for s in segments if s[1] >= 2), segments
    assert len({s[3] for s in segments if s[1] >= 2}) > 1  # (parts at their offsets)
    # A repeated iteration's bytes (two more iterations' worth) against format 3's
    fewer = [e for e in events if e.iteration <= 3]
    sizes = {version: [saved(evs, tmp_path / f"{version}-{len(evs)}.dgtrace",
                             version).stat().st_size for evs in (fewer, events)]
             for version in (tf.FORMAT_VERSION, tf.TABLE_VERSION)}
    ratio = (sizes[5][1] - sizes[5][0]) / (sizes[3][1] - sizes[3][0])
    assert ratio < BYTES_GOAL, ratio


# A repeated iteration's bytes against format 3's (issue 29's goal is 0.3, measured by
# bench/tracefile.py; a cheap chain's are mostly its durations and norms)
BYTES_GOAL = 0.4


def test_a_longer_iteration_leaves_its_template_at_the_change_and_reads_back(tmp_path):
    """Iteration 3 runs one op more in its middle: the part before it follows the
    template, the rest is written as it is; iteration 4 follows the template again."""
    events = _chain(4, longer_at=3)
    assert_templates_read_back_identical(events, tmp_path, "longer", in_frames=False)
    path = saved(events, tmp_path / "longer.dgtrace", tf.TABLE_VERSION)
    by_iteration: dict[int, set[int]] = {}
    for frame in _segments(path):
        for _, it, template, _ in frame:
            by_iteration.setdefault(it, set()).add(template)
    assert by_iteration[3] >= {0, 1} and by_iteration[4] == {1}


def test_iterations_of_two_alternating_structures_each_follow_their_own_template(tmp_path):
    """Short and long sequences taking turns (an RNN over batches of two lengths): two
    templates, each named by the iterations of its length."""
    dg.manual_seed(0)
    cell = dg.nn.GRUCell(3, 4)
    with dg.trace(stats="full") as t:
        for it in range(8):
            h = dg.zeros(2, 4)
            for _ in range(3 if it % 2 else 5):
                h = cell(dg.randn(2, 3), h)
            h.pow(2).mean().backward()
    events = list(t.events)
    assert_templates_read_back_identical(events, tmp_path, "alternating")
    path = saved(events, tmp_path / "alternating.dgtrace", tf.TABLE_VERSION)
    assert frame_types(path).count((tf.TEMPLATE, tf.TABLE_VERSION)) == 2
    used = {(it % 2, template) for frame in _segments(path) for _, it, template, _ in frame
            if it >= 4}  # (once both are made)
    assert used == {(0, 2), (1, 1)}


def test_a_templated_trace_fed_to_a_stream_decoder_reads_the_same(tmp_path):
    path = saved(_chain(3, ops=200), tmp_path / "t.dgtrace", tf.TABLE_VERSION)
    data = path.read_bytes()
    decoder = tf.FrameDecoder()
    fed = []
    for k in range(0, len(data), 4093):  # (frames cut anywhere)
        for item in decoder.feed(data[k:k + 4093]):
            assert isinstance(item, list)
            fed += item
    assert fed == list(dg.read_trace(path).events) == list(tf.iter_events(path))


# -- traces of every earlier format ------------------------------------------------------------
def test_traces_of_every_frame_format_read_the_same_events():
    """One recording (a tiny MLP, three steps) as dyngraph writes it in each frame format:
    1 (JSON), 3 (columns), 4 (templates within a frame), 5 (the file's templates). The
    files are kept in tests/events/data: readers of later versions must read them all."""
    read = {}
    for version in (1, 3, 4, 5):
        path = DATA / f"format{version}.dgtrace"
        assert version in {v for _, v in frame_types(path)}, path
        read[version] = list(dg.read_trace(path).events)
        assert list(tf.iter_events(path)) == read[version]
    assert read[1] == read[3] == read[4] == read[5]
    # (three steps, and the run's end: output, a pause, an exception)
    assert len(dg.read_trace(DATA / "format5.dgtrace").iterations) == 4


def _format_files(tmp: Path) -> None:  # (how the files above were made)
    events = list(dg.read_trace(fz.record_tiny(tmp / "r.dgtrace", "cheap", steps=3,
                                               version=tf.FORMAT_VERSION)).events)
    for version in (3, 4, 5):
        saved(events, DATA / f"format{version}.dgtrace", version)
    batches: list[list] = [events[:1]]  # format 1: a frame per iteration, as written
    for e in events[1:]:
        if len(batches) == 1 or e.iteration != batches[-1][-1].iteration:
            batches.append([])
        batches[-1].append(e)
    (DATA / "format1.dgtrace").write_bytes(b"".join(map(tf.encode_events_json, batches)))


# -- crafted tables ------------------------------------------------------------------------------
def _refused(path: Path, match: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TraceFileError, match=match) as info:
            list(dg.read_trace(path).events)
    assert "\n" not in str(info.value)


def test_a_frame_naming_a_template_no_earlier_frame_holds_is_refused(tmp_path):
    path = saved(_chain(3, ops=200), tmp_path / "t.dgtrace", tf.TABLE_VERSION)
    frames = cf.split_versions(path.read_bytes())
    without = [f for f in frames if f[0] != tf.TEMPLATE]
    _refused(fz.write(tmp_path / "no-template.dgtrace", cf.join_versions(without)),
             "names iteration template 1, which no frame before it holds")
    k = next(i for i, f in enumerate(frames) if f[0] == tf.TEMPLATE)
    late = [*frames[:k], *frames[k + 1:], frames[k]]  # after the frames that name it
    _refused(fz.write(tmp_path / "late.dgtrace", cf.join_versions(late)),
             "names iteration template 1, which no frame before it holds")


def test_template_frames_out_of_order_or_first_are_refused(tmp_path):
    path = saved(_chain(3, ops=200), tmp_path / "t.dgtrace", tf.TABLE_VERSION)
    frames = cf.split_versions(path.read_bytes())
    k = next(i for i, f in enumerate(frames) if f[0] == tf.TEMPLATE)
    payload = frames[k][2]
    renumbered = list(frames)
    renumbered[k] = (tf.TEMPLATE, tf.TABLE_VERSION, struct.pack("<I", 2) + payload[4:])
    _refused(fz.write(tmp_path / "two.dgtrace", cf.join_versions(renumbered)),
             "holds template 2 where template 1 comes")
    first = [frames[k], *frames[:k], *frames[k + 1:]]
    _refused(fz.write(tmp_path / "first.dgtrace", cf.join_versions(first)),
             "not an events frame")
    older = list(frames)
    older[k] = (tf.TEMPLATE, tf.TEMPLATE_VERSION, payload)  # (a template frame is format 5)
    _refused(fz.write(tmp_path / "older.dgtrace", cf.join_versions(older)),
             "damaged frame header")


def test_a_segment_copied_from_a_template_of_another_iteration_is_refused(tmp_path):
    path = saved(_chain(3, ops=20), tmp_path / "t.dgtrace", tf.TABLE_VERSION)
    frames = cf.split_versions(path.read_bytes())
    copies = [k for k, (t, v, p) in enumerate(frames) if t == tf.EVENTS and v == 5
              and templatetable.COPY in struct.unpack_from("<4I", cf.blocks(p)[1][1])]
    assert copies
    meta, parts = cf.blocks(frames[copies[0]][2])
    n, it, template, offset = SEGMENT.unpack_from(parts[1])
    parts[1] = SEGMENT.pack(n, it + 1, template, offset) + parts[1][SEGMENT.size:]
    meta = meta[:4] + struct.pack("<II", it + 1, it + 1) + meta[12:]
    mutated = list(frames)
    mutated[copies[0]] = (tf.EVENTS, tf.TABLE_VERSION, cf.assemble(meta, parts))
    _refused(fz.write(tmp_path / "copy.dgtrace", cf.join_versions(mutated)),
             "is not template 1's iteration")


def test_crafted_table_frames_load_or_are_refused_in_one_line(tmp_path):
    """Seeded mutations of each block of a real format-5 frame or template frame
    (checksums made right): every reader loads or refuses on one line.
    (``DYNGRAPH_FUZZ_CASES`` sets the count; 60 by default.)"""
    from test_templates import _mutated

    base = saved(_chain(3, ops=30), tmp_path / "base.dgtrace", tf.TABLE_VERSION)
    frames = cf.split_versions(base.read_bytes())
    targets = [k for k, (_, v, _) in enumerate(frames) if v == tf.TABLE_VERSION]
    assert len(targets) >= 3
    failures = []
    for case in range(fz.fuzz_cases_wanted(60)):
        rng = random.Random(case)
        k = rng.choice(targets)
        ftype, version, payload = frames[k]
        if ftype == tf.TEMPLATE:  # (the id, then a format-3 payload)
            inner, what = _mutated(payload[4:], rng)
            payload = payload[:4] + inner
        else:
            payload, what = _mutated(payload, rng)
        mutated = list(frames)
        mutated[k] = (ftype, version, payload)
        path = fz.write(tmp_path / "case.dgtrace", cf.join_versions(mutated))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trace = dg.read_trace(path)
                list(trace.events)
                for it in trace.iterations:
                    it.graph.nodes  # noqa: B018
                list(tf.iter_events(path))
        except TraceFileError as exc:
            if "\n" in str(exc):
                failures.append(f"case {case} ({what}): a refusal of several lines")
        except Exception as exc:  # noqa: BLE001
            failures.append(f"case {case} ({what}): {type(exc).__name__}: {exc}"[:200])
    assert not failures, "\n".join(failures[:10])
