"""Hostile trace files, made from real recordings, and every reader run over them.

``Mutator`` turns the frames of a real trace into a damaged or crafted file: most
mutations change what a frame says (field types, row lengths, nesting depth, metadata
ranges, frames out of place) and re-encode it with a valid checksum, so the readers'
own checks are what is tested, not the CRC's; the rest damage the raw bytes (truncation,
bit flips, a corrupt length). ``exercise`` runs every reader over a file and says how it
ended; anything but a clean load or the documented one-line ``TraceFileError`` raises.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import queue
import random
import struct
import time
import warnings
import zlib
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dyngraph.exporters.batch import export_iterations
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture import tracefile as tf
from dyngraph.debug.commands import run_summary
from dyngraph.errors import TraceFileError, TraceFileWarning

HEADER = tf.FRAME_HEADER
META = tf.EVENTS_META
HOLE = "\x00hole\x00"  # stands for raw JSON text spliced in after encoding

# Values a stranger's file may hold where any field belongs.
HOSTILE: list[Any] = [
    None, -1, 0, 1, 2**31, 2**32, 2**63, 2**64, -(2**64), 10**30, 1.5, -0.0, math.nan,
    math.inf, -math.inf, True, False, "", "x", "\ud800", "a\nb\x1b[2J", "../../x",
    "[/]", "[/enc]",
    [], [1], [-1, 2], ["a"], [[1]], [None], [1.5], [2**64], {}, {"a": 1}, {"": []},
    {"__ndarray__": "AAAA", "dtype": "<f8", "shape": [1]}, "x" * 5000,
]


# -- frames --------------------------------------------------------------------------------
def split(data: bytes) -> list[tuple[int, bytes]]:
    """The (type, payload) of each whole frame of a trace file's bytes."""
    frames, pos = [], 0
    while pos + HEADER.size <= len(data):
        _, ftype, _, length, _ = HEADER.unpack_from(data, pos)
        frames.append((ftype, data[pos + HEADER.size:pos + HEADER.size + length]))
        pos += HEADER.size + length
    return frames


def frame(ftype: int, payload: bytes, version: int = tf.JSON_VERSION) -> bytes:
    """A frame with a valid checksum; format 1 (JSON payloads) unless told otherwise."""
    return HEADER.pack(tf.MAGIC, ftype, version, len(payload),
                       zlib.crc32(payload)) + payload


def join(frames: list[tuple[int, bytes]], version: int = tf.JSON_VERSION) -> bytes:
    return b"".join(frame(t, p, version) for t, p in frames)


def events_payload(meta: tuple[int, ...], rows: Any, holes: list[str] = ()) -> bytes:
    """An events payload; each HOLE string in ``rows`` is replaced by the next raw text."""
    text = json.dumps(rows, separators=(",", ":"))
    for raw in holes:
        text = text.replace(json.dumps(HOLE), raw, 1)
    return META.pack(*meta) + text.encode()


def parse(payload: bytes) -> tuple[list[int], Any]:
    return list(META.unpack_from(payload)), json.loads(payload[META.size:])


def nested(depth: int, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


# -- mutations -----------------------------------------------------------------------------
class Mutator:
    """Seeded mutations of one real trace; ``make(i)`` is case ``i`` (deterministic)."""

    def __init__(self, data: bytes, seed: int = 0) -> None:
        self.data = data
        self.frames = split(data)
        self.seed = seed
        self.mutations: list[Callable[[random.Random], tuple[bytes, str]]] = [
            self.field_type, self.field_type, self.field_type, self.summary_part,
            self.nesting, self.row_shape, self.kind_swap, self.metadata, self.metadata,
            self.structure, self.values_array, self.truncate, self.bit_flips,
            self.corrupt_length, self.amplify,
        ]

    def make(self, case: int) -> tuple[bytes, str]:
        rng = random.Random(self.seed * 1_000_003 + case)
        return rng.choice(self.mutations)(rng)

    def amplify(self, rng: random.Random) -> tuple[bytes, str]:
        """An op row grown to cost memory out of proportion to its events (``AMPLIFIED``)."""
        name = rng.choice(sorted(AMPLIFIED))
        size = rng.choice([1 << 16, 1 << 19, 1 << 21])
        return amplified(self.data, name, size), f"{name}, {size:,} bytes"

    def _pick(self, rng: random.Random) -> tuple[int, list[int], Any]:
        i = rng.randrange(len(self.frames))
        meta, rows = parse(self.frames[i][1])
        return i, meta, rows

    def _with(self, i: int, payload: bytes) -> bytes:
        frames = list(self.frames)
        frames[i] = (tf.EVENTS, payload)
        return join(frames)

    def field_type(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, rows = self._pick(rng)
        r = rng.randrange(len(rows))
        f = rng.randrange(1, len(rows[r]))
        value = rng.choice(HOSTILE)
        what = f"frame {i} row {r} ({rows[r][0]}) field {f} := {value!r:.40}"
        rows[r][f] = value
        return self._with(i, events_payload(meta, rows)), what

    def summary_part(self, rng: random.Random) -> tuple[bytes, str]:
        for _ in range(20):
            i, meta, rows = self._pick(rng)
            places = [(r, f) for r, row in enumerate(rows) for f, v in enumerate(row)
                      if f and type(v) is list and len(v) in (3, 6, 11) and
                      type(v[1]) is str]
            if places:
                break
        else:
            return self.field_type(rng)
        r, f = rng.choice(places)
        summary = rows[r][f]
        k = rng.randrange(len(summary))
        if len(summary) == 3 and k == 2 and rng.random() < 0.6:
            raw = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 10, 48, 56])))
            import base64
            value: Any = base64.b64encode(raw).decode()
        else:
            value = rng.choice(HOSTILE)
        summary[k] = value
        what = f"frame {i} row {r} summary field {f} part {k} := {value!r:.40}"
        return self._with(i, events_payload(meta, rows)), what

    def nesting(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, rows = self._pick(rng)
        r = rng.randrange(len(rows))
        f = rng.randrange(1, len(rows[r]))
        depth = rng.choice([3, 9, 50, 500, 990, 3000, 100_000])
        rows[r][f] = HOLE
        what = f"frame {i} row {r} field {f} nested {depth} deep"
        return self._with(i, events_payload(meta, rows, [nested(depth, rng)])), what

    def row_shape(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, rows = self._pick(rng)
        r = rng.randrange(len(rows))
        how = rng.choice(["drop field", "add field", "not a row", "empty row", "drop row",
                          "double row", "rows not a list"])
        if how == "drop field":
            rows[r].pop(rng.randrange(1, len(rows[r])))
        elif how == "add field":
            rows[r].append(rng.choice(HOSTILE))
        elif how == "not a row":
            rows[r] = rng.choice(HOSTILE)
        elif how == "empty row":
            rows[r] = []
        elif how == "drop row":
            rows.pop(r)
        elif how == "double row":
            rows.insert(r, list(rows[r]))
        else:
            rows = {"rows": rows}
        if rng.random() < 0.5 and type(rows) is list:
            meta[0] = len(rows)  # the count agrees, so the rows themselves are looked at
        return self._with(i, events_payload(meta, rows)), f"frame {i} row {r}: {how}"

    def kind_swap(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, rows = self._pick(rng)
        r = rng.randrange(len(rows))
        kind = rng.choice([*ev.EVENT_TYPES, "nope", ""])
        rows[r][0] = kind
        return self._with(i, events_payload(meta, rows)), f"frame {i} row {r} kind := {kind}"

    def metadata(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, rows = self._pick(rng)
        k = rng.randrange(5)
        limit = 2**64 - 1 if k == 4 else 2**32 - 1
        value = rng.choice([0, 1, 2, 3, limit, limit - 1, rng.randrange(limit),
                            max(meta[k] - 1, 0), min(meta[k] + 1, limit), 10**7])
        what = f"frame {i} metadata {k} := {value}"
        if rng.random() < 0.3:  # the 170-byte memory bomb: iterations 0..2**32-1
            meta[1], meta[2], what = 0, 2**32 - 1, f"frame {i} claims iterations 0..2**32-1"
        else:
            meta[k] = value
        return self._with(i, events_payload(meta, rows)), what

    def structure(self, rng: random.Random) -> tuple[bytes, str]:
        frames = list(self.frames)
        i = rng.randrange(1, len(frames)) if len(frames) > 1 else 0
        how = rng.choice(["header in the middle", "empty frame", "control frame",
                          "duplicate", "swap", "delete", "garbage tail", "header only",
                          "no header", "two headers in frame 0"])
        if how == "header in the middle":
            frames.insert(i, frames[0])
        elif how == "empty frame":
            frames.insert(i, (tf.EVENTS, META.pack(0, 0, 0, 0, 0) + b"[]"))
        elif how == "control frame":
            frames.insert(i, (tf.CONTROL, b'{"cmd":"step_op"}'))
        elif how == "duplicate":
            frames.insert(i, frames[i])
        elif how == "swap" and i + 1 < len(frames):
            frames[i], frames[i + 1] = frames[i + 1], frames[i]
        elif how == "delete":
            frames.pop(i)
        elif how == "header only":
            frames = frames[:1]
        elif how == "no header":
            frames = frames[1:] or frames
        elif how == "two headers in frame 0":
            meta, rows = parse(frames[0][1])
            rows = rows + rows
            meta[0] = len(rows)
            frames[0] = (tf.EVENTS, events_payload(meta, rows))
        data = join(frames)
        if how == "garbage tail":
            data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        return data, f"{how} at frame {i}"

    def values_array(self, rng: random.Random) -> tuple[bytes, str]:
        for _ in range(20):
            i, meta, rows = self._pick(rng)
            places = [r for r, row in enumerate(rows) if row[0] == "values"]
            if places:
                break
        else:
            return self.field_type(rng)
        r = rng.choice(places)
        array = rows[r][4]
        key = rng.choice(["__ndarray__", "dtype", "shape", None])
        value = rng.choice([*HOSTILE, "O", "U5", "<c16", "f8,i4", [-1], [2**40, 2**40],
                            [0] * 70, "!!!!"])
        if key is None:
            rows[r][4] = value
        else:
            array[key] = value
        what = f"frame {i} values row {r} array[{key}] := {value!r:.40}"
        return self._with(i, events_payload(meta, rows)), what

    def truncate(self, rng: random.Random) -> tuple[bytes, str]:
        cut = rng.randrange(len(self.data))
        return self.data[:cut], f"truncated at byte {cut}"

    def bit_flips(self, rng: random.Random) -> tuple[bytes, str]:
        data = bytearray(self.data)
        where = [rng.randrange(len(data)) for _ in range(rng.randint(1, 8))]
        for p in where:
            data[p] ^= 1 << rng.randrange(8)
        return bytes(data), f"bits flipped at {where}"

    def corrupt_length(self, rng: random.Random) -> tuple[bytes, str]:
        data = bytearray(self.data)
        starts, pos = [], 0
        for _, payload in self.frames:
            starts.append(pos)
            pos += HEADER.size + len(payload)
        at = rng.choice(starts)
        length = rng.choice([0, 1, 23, 24, 2**30, 2**32 - 1, rng.randrange(len(data))])
        struct.pack_into("<I", data, at + 4, length)
        return bytes(data), f"frame at byte {at} length := {length}"


# -- running every reader ------------------------------------------------------------------
class Unexpected(AssertionError):
    """A reader ended in something other than success or the documented error."""


def _refusal(path: Path, exc: TraceFileError) -> str:
    message = str(exc)
    if "\n" in message or str(path) not in message:
        raise Unexpected(f"not one line naming the file: {message!r}")
    return message


def exercise(path: Path, out_dir: Path, limit: float = 20.0) -> str:
    """Run every reader over ``path``: "ok", or the refusal's text. Raises Unexpected
    for anything else (another exception, a warning of another kind, too slow)."""
    start = time.monotonic()
    outcomes = []
    for name, reader in (("read_trace", _read_everything), ("summary", _summary),
                         ("export", _export), ("view", _view)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                reader(path, out_dir)
                outcomes.append("ok")
            except TraceFileError as exc:
                outcomes.append(_refusal(path, exc))
            except Exception as exc:
                raise Unexpected(f"{name}: {type(exc).__name__}: {exc}"[:300]) from exc
        for w in caught:
            if not issubclass(w.category, TraceFileWarning) or "\n" in str(w.message):
                raise Unexpected(f"{name}: warned {w.category.__name__}: {w.message}")
        if time.monotonic() - start > limit:
            raise Unexpected(f"{name}: took more than {limit} s")
    return outcomes[0]


def _read_everything(path: Path, out_dir: Path) -> None:
    trace = dg.read_trace(path)
    previous = None
    for it in trace.iterations:
        assert it.events, f"phantom iteration {it.index}"
        _ = it.graph.structure_key, it.backward_graph, it.structure_key, it.complete
        if previous is not None:
            it.diff(previous)
        previous = it
    ids = [e.output for e in trace.events if type(e) is ev.Op][:3]
    for tensor in ids:
        trace.values(tensor)
    list(tf.iter_events(path))


def _summary(path: Path, out_dir: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        run_summary(Namespace(trace=str(path)))


def _export(path: Path, out_dir: Path) -> None:
    trace = dg.read_trace(path)
    export_iterations(trace, out_dir, formats=("dot",), diff=True, graph_kind="both")


def _view(path: Path, out_dir: Path) -> None:
    """What ``dyngraph view`` does before and around the app: load the trace into the
    debugger's model through its ReplaySource, then move the cursor everywhere."""
    source = ReplaySource(Model(), dg.read_trace(path))
    model = source.model
    deadline = time.monotonic() + 10
    while source.loading and time.monotonic() < deadline:
        if not source.pump():
            time.sleep(0.001)
    if source.loading:
        raise Unexpected("view: the trace did not finish loading")
    if source.error is not None:  # found while loading: the app shows it in a notification
        if not isinstance(source.error, TraceFileError):
            raise Unexpected(f"view: loading failed with {source.error!r}") from source.error
        _refusal(path, source.error)
    for info in list(model.iterations):
        model.graph(info.index)
        model.diff(info.index)
        model.iteration_norms(info.index)
    for move in (source.step_op, source.next_iteration, source.finish_forward,
                 source.finish_backward, source.step_back, source.continue_, source.rewind):
        move()
        _ = model.graph_at_cursor(), model.current_node_id(), source.state
    with contextlib.suppress(queue.Empty):
        source._queue.get_nowait()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def fuzz_cases_wanted(default: int) -> int:
    return int(os.environ.get("DYNGRAPH_FUZZ_CASES", default))


# -- real recordings to start from -----------------------------------------------------------
def record_tiny(path: Path, stats: str, values: str = "none", steps: int = 3,
                version: int = tf.JSON_VERSION) -> Path:
    """A small real recording: a two-layer MLP with module names, trained a few steps,
    in frames of format ``version`` (1, JSON, by default: what the JSON mutations and the
    crafted frames of the tests work on; 2, columns, is what dyngraph writes now)."""
    import numpy as np

    from dyngraph import nn

    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    with dg.record(path, stats=stats, values=values):
        for _ in range(steps):
            x = dg.tensor(rng.standard_normal((5, 3)).astype(np.float32))
            y = dg.tensor(rng.standard_normal((5, 1)).astype(np.float32))
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    # The kinds a training loop without a debugger does not record, appended as a run
    # that printed, paused and raised would have them.
    events = list(dg.read_trace(path).events)
    seq, it = events[-1].seq, events[-1].iteration + 1
    events += [
        ev.ScriptOutput(seq=seq + 1, iteration=it, stream="stdout", text="step 3\n"),
        ev.BreakpointHit(seq=seq + 2, iteration=it, reason="nan", description="t3",
                         at_seq=seq),
        ev.ExceptionRaised(seq=seq + 3, iteration=it, type="KeyError", message="'k'",
                           traceback="Traceback ...", at_seq=seq, file="train.py", line=7),
        ev.RunEnd(seq=seq + 4, iteration=it, status=1, reason="exception"),
    ]
    if version in (tf.FORMAT_VERSION, tf.TEMPLATE_VERSION, tf.TABLE_VERSION):
        written, tf.WRITE_VERSION = tf.WRITE_VERSION, version
        try:
            dg.Trace(events).save(path)
        finally:
            tf.WRITE_VERSION = written
        return path
    # Format 1, frame by frame as the writer cut them: the header, then each iteration.
    frames, batch = [events[:1]], []
    for e in events[1:]:
        batch.append(e)
        if type(e) is ev.IterationEnd:
            frames.append(batch)
            batch = []
    if batch:
        frames.append(batch)
    path.write_bytes(b"".join(tf.encode_events_json(f) for f in frames))
    return path


# -- frames that would cost memory out of proportion to their events -------------------------
def amplifiers(data: bytes, size: int = 6 << 20) -> list[tuple[str, bytes]]:
    """(name, trace) pairs: a real format-1 trace (``data``) with one op row of its second
    frame grown to about ``size`` bytes of JSON that costs Python objects out of
    proportion (``columnfuzz.amplifiers`` for format 2)."""
    return [(name, amplified(data, name, size)) for name in AMPLIFIED]


# (the op row's field, and its JSON text of about ``size`` bytes)
AMPLIFIED: dict[str, tuple[int, Callable[[int], str]]] = {
    "json attributes: a list of empty lists":
        (9, lambda size: '{"a":[' + "[]," * (size // 3) + "[]]}"),
    "json attributes: a long list of numbers":
        (9, lambda size: '{"a":[' + "1000," * (size // 5) + "0]}"),
    "json: an op with millions of inputs": (4, lambda size: "[" + "1000," * (size // 5) + "0]"),
    "json: a shape of millions of dimensions": (6, lambda size: "[" + "1," * (size // 2) + "1]"),
}


def amplified(data: bytes, name: str, size: int) -> bytes:
    frames = split(data)[:2]
    meta, rows = parse(frames[1][1])
    op = next(i for i, r in enumerate(rows) if r[0] == "op")
    field, text = AMPLIFIED[name]
    crafted = [list(r) for r in rows]
    crafted[op][field] = HOLE
    return join([frames[0], (tf.EVENTS, events_payload(tuple(meta), crafted, [text(size)]))])
