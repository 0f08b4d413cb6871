"""Hostile trace files in frame format 2 (events in columns), made from real recordings.

``ColumnMutator`` is ``tracefuzz.Mutator`` for column frames: it changes the typed blocks
of a payload (a value set to an extreme, a block cut, grown, dropped, swapped or
duplicated), the rows themselves (decoded, a field set to a hostile value, encoded again)
and the frame metadata, each time with a valid checksum so that the readers' own checks
are what is tested; truncation, bit flips and corrupt lengths damage the raw bytes as
for format 1. ``tracefuzz.exercise`` then runs every reader over the result.
"""

from __future__ import annotations

import math
import random
import struct
import zlib
from typing import Any

import tracefuzz as fz

from dyngraph.capture import columns
from dyngraph.capture import tracefile as tf

BLOCK = struct.Struct("<I")
V2 = tf.FORMAT_VERSION

# Extreme values for a fixed-size item of each size (little-endian bytes).
EXTREMES: dict[int, list[bytes]] = {
    1: [bytes([v]) for v in (0, 1, 2, 5, 6, 7, 11, 14, 15, 64, 65, 127, 255)],
    4: [struct.pack("<I", v) for v in (0, 1, 2, 255, 2**16, 2**31 - 1, 2**31, 2**32 - 1)],
    8: [struct.pack("<q", v) for v in (0, 1, -1, -2, 2**31, 2**32, 2**62, 2**63 - 1,
                                       -(2**63))]
    + [struct.pack("<d", v) for v in (math.nan, math.inf, -math.inf, -0.0, 1e308)],
}
# Field values to put into rows before encoding them again (what encodes at all).
ROW_VALUES: list[Any] = [
    -1, -(2**63), 2**63 - 1, 0, 2**31, True, False, "", "x" * 3000, "\x1b[2J", "../x",
    (), (-1,), (2**62, -5), 1.5, math.nan, -math.inf, None,
]


def split_versions(data: bytes) -> list[tuple[int, int, bytes]]:
    """(type, format version, payload) of each whole frame of a trace's bytes."""
    out, pos = [], 0
    while pos + fz.HEADER.size <= len(data):
        _, ftype, version, length, _ = fz.HEADER.unpack_from(data, pos)
        out.append((ftype, version, data[pos + fz.HEADER.size:pos + fz.HEADER.size + length]))
        pos += fz.HEADER.size + length
    return out


def join_versions(frames: list[tuple[int, int, bytes]]) -> bytes:
    return b"".join(fz.HEADER.pack(tf.MAGIC, t, v, len(p), zlib.crc32(p)) + p
                    for t, v, p in frames)


def blocks(payload: bytes) -> tuple[bytes, list[bytes]]:
    """A column payload's metadata and its blocks."""
    meta, pos, out = payload[:fz.META.size], fz.META.size, []
    while pos + 4 <= len(payload):
        (n,) = BLOCK.unpack_from(payload, pos)
        out.append(payload[pos + 4:pos + 4 + n])
        pos += 4 + n
    return meta, out


def assemble(meta: bytes, parts: list[bytes]) -> bytes:
    return meta + b"".join(BLOCK.pack(len(b)) + b for b in parts)


class ColumnMutator(fz.Mutator):
    """Seeded mutations of one real format-2 trace; ``make(i)`` is case ``i``."""

    def __init__(self, data: bytes, seed: int = 0) -> None:
        self.data = data
        self.versions = split_versions(data)
        self.frames = [(t, p) for t, _, p in self.versions]
        self.seed = seed
        self.mutations = [
            self.block_value, self.block_value, self.block_value, self.block_size,
            self.block_order, self.row_field, self.row_field, self.column_metadata,
            self.frame_order, self.truncate, self.bit_flips, self.corrupt_length,
            self.amplify,
        ]

    def amplify(self, rng: random.Random) -> tuple[bytes, str]:
        """A frame grown to cost memory out of proportion to its events (``Amplifier``)."""
        if not hasattr(self, "_amplifier"):
            self._amplifier = Amplifier(self.data)
        return self._amplifier.mutation(rng)

    def _pick_frame(self, rng: random.Random) -> tuple[int, bytes, list[bytes]]:
        i = rng.randrange(len(self.versions))
        meta, parts = blocks(self.versions[i][2])
        return i, meta, parts

    def _with_payload(self, i: int, payload: bytes) -> bytes:
        frames = list(self.versions)
        frames[i] = (tf.EVENTS, V2, payload)
        return join_versions(frames)

    def block_value(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, parts = self._pick_frame(rng)
        b = rng.randrange(len(parts))
        data = bytearray(parts[b])
        size = rng.choice([1, 4, 8])
        if len(data) < size:
            return self.block_size(rng)
        at = rng.randrange(len(data) // size) * size
        value = rng.choice(EXTREMES[size])
        data[at:at + size] = value
        parts[b] = bytes(data)
        what = f"frame {i} block {b} item at byte {at} := {value.hex()}"
        return self._with_payload(i, assemble(meta, parts)), what

    def block_size(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, parts = self._pick_frame(rng)
        b = rng.randrange(len(parts))
        how = rng.choice(["cut", "grow", "empty", "garbage", "huge"])
        if how == "cut":
            parts[b] = parts[b][:rng.randrange(len(parts[b]) + 1)]
        elif how == "grow":
            parts[b] += bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 8, 9])))
        elif how == "empty":
            parts[b] = b""
        elif how == "garbage":
            parts[b] = bytes(rng.randrange(256) for _ in range(len(parts[b])))
        else:  # a block that says it is 4 GB long
            payload = assemble(meta, parts)
            pos = fz.META.size + sum(4 + len(p) for p in parts[:b])
            payload = payload[:pos] + BLOCK.pack(2**32 - 1) + payload[pos + 4:]
            return self._with_payload(i, payload), f"frame {i} block {b} length := 2**32-1"
        return self._with_payload(i, assemble(meta, parts)), f"frame {i} block {b}: {how}"

    def block_order(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta, parts = self._pick_frame(rng)
        b = rng.randrange(len(parts))
        how = rng.choice(["swap", "drop", "double", "insert empty", "add trailing"])
        if how == "swap" and b + 1 < len(parts):
            parts[b], parts[b + 1] = parts[b + 1], parts[b]
        elif how == "drop":
            parts.pop(b)
        elif how == "double":
            parts.insert(b, parts[b])
        elif how == "insert empty":
            parts.insert(b, b"")
        else:
            return (self._with_payload(i, assemble(meta, parts) + b"\x00\x01"),
                    f"frame {i}: trailing bytes")
        return self._with_payload(i, assemble(meta, parts)), f"frame {i} block {b}: {how}"

    def row_field(self, rng: random.Random) -> tuple[bytes, str]:
        """A row decoded, one field changed, the frame encoded again (when it encodes)."""
        for _ in range(10):
            i = rng.randrange(len(self.versions))
            payload = self.versions[i][2]
            rows = [list(r) for r in tf.decode_rows_payload(payload)]
            r = rng.randrange(len(rows))
            f = rng.randrange(1, len(rows[r]))
            value = rng.choice(ROW_VALUES)
            rows[r][f] = value
            flags = struct.unpack_from("<I", payload, 12)[0]
            try:
                new = columns.encode_payload([tuple(x) for x in rows], flags)
            except (TypeError, ValueError, OverflowError, KeyError, AttributeError,
                    struct.error):
                continue
            new = payload[:fz.META.size] + new[fz.META.size:]  # the metadata as it was
            what = f"frame {i} row {r} ({rows[r][0]}) field {f} := {value!r:.40}"
            return self._with_payload(i, new), what
        return self.block_value(rng)

    def column_metadata(self, rng: random.Random) -> tuple[bytes, str]:
        i, meta_bytes, parts = self._pick_frame(rng)
        meta = list(fz.META.unpack(meta_bytes))
        k = rng.randrange(5)
        limit = 2**64 - 1 if k == 4 else 2**32 - 1
        meta[k] = rng.choice([0, 1, 2, limit, limit - 1, max(meta[k] - 1, 0),
                              min(meta[k] + 1, limit), 10**7])
        what = f"frame {i} metadata {k} := {meta[k]}"
        return self._with_payload(i, assemble(fz.META.pack(*meta), parts)), what

    def frame_order(self, rng: random.Random) -> tuple[bytes, str]:
        frames = list(self.versions)
        i = rng.randrange(1, len(frames)) if len(frames) > 1 else 0
        how = rng.choice(["header in the middle", "duplicate", "swap", "delete",
                          "header only", "no header", "json frame among columns"])
        if how == "header in the middle":
            frames.insert(i, frames[0])
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
        elif how == "json frame among columns":  # a column payload labelled format 1
            frames[i] = (frames[i][0], tf.JSON_VERSION, frames[i][2])
        return join_versions(frames), f"{how} at frame {i}"


# -- frames that would cost memory out of proportion to their events -------------------------
# The blocks of a column payload, by place (docs/trace-format.md): the tables.
STRING_LENGTHS, STRINGS, SHAPE_SIZES, SHAPE_DIMS, ATTRIBUTES, SUMMARY_FORMS = 3, 4, 5, 6, 7, 8
CHEAP_COLUMNS = range(9, 16)  # shapes, dtypes, norms, norm mask, NaN, Inf, sampled


def amplifiers(data: bytes, size: int = 6 << 20) -> list[tuple[str, bytes]]:
    """(name, trace) pairs: a real format-2 trace (``data``: its header frame, then a frame
    of ops) with its second frame grown to about ``size`` bytes in a way that costs Python
    objects out of proportion to its events: each a shape of issue 23's crafted 69 MB
    trace of 4 events that took 4.5 GB. A reader must refuse each, or hold it in memory
    in proportion to its events."""
    grow = Amplifier(data)
    return [(name, make(size)) for name, make in grow.shapes.items()]


class Amplifier:
    """The shapes of ``amplifiers``, one by one: ``shapes[name](size)`` is a trace."""

    def __init__(self, data: bytes) -> None:
        self.versions = split_versions(data)[:2]
        self.payload = self.versions[1][2]
        self.meta, self.parts = blocks(self.payload)
        self.shapes = {
            "issue 23: 4 events, attributes of nested lists": self.four_events,
            "attributes: a list of empty lists": self.empty_lists,
            "attributes: deep entries nobody refers to": self.deep_entries,
            "attributes: a long list of numbers": self.numbers,
            "attributes: nested past the limit": self.too_deep,
            "strings nobody refers to": self.strings,
            "shapes nobody refers to": self.shapes_table,
            "summaries nobody refers to": self.summaries,
            "an op with millions of inputs": self.inputs,
        }

    def mutation(self, rng: random.Random) -> tuple[bytes, str]:
        """One shape at a size a fuzz case can afford (for ``ColumnMutator``)."""
        name = rng.choice(sorted(self.shapes))
        size = rng.choice([1 << 16, 1 << 19, 1 << 21])
        return self.shapes[name](size), f"{name}, {size:,} bytes"

    def _trace(self, parts: list[bytes], meta: bytes | None = None) -> bytes:
        payload = assemble(self.meta if meta is None else meta, parts)
        return join_versions([self.versions[0], (tf.EVENTS, V2, payload)])

    def _attrs(self, extra: bytes) -> bytes:
        """The frame with ``extra`` (JSON text) added to its attributes table."""
        attrs = bytes(self.parts[ATTRIBUTES])[:-1]
        return self._trace(_with(self.parts, ATTRIBUTES, attrs + b"," + extra + b"]"))

    def four_events(self, size: int) -> bytes:
        rows = tf.decode_rows_payload(self.payload)
        first = next(i for i, r in enumerate(rows) if r[0] == "op")
        four = [r for r in rows[first:] if r[2] == rows[first][2]][:4]
        payload = columns.encode_payload(four, 0)
        meta, parts = blocks(payload)
        meta = fz.META.pack(4, four[0][2], four[-1][2], 0, four[0][1])
        nested = b'{"a":[' + b"[]," * (size // 3) + b"[]]}"
        parts[ATTRIBUTES] = bytes(parts[ATTRIBUTES])[:-1] + b"," + nested + b"]"
        return join_versions([self.versions[0], (tf.EVENTS, V2, assemble(meta, parts))])

    def empty_lists(self, size: int) -> bytes:
        return self._attrs(b'{"a":[' + b"[]," * (size // 3) + b"[]]}")

    def deep_entries(self, size: int) -> bytes:
        deep = b'{"a":[[[[[[[[0]]]]]]]]},'
        return self._attrs(deep * (size // len(deep)) + b"{}")

    def numbers(self, size: int) -> bytes:
        return self._attrs(b'{"a":[' + b"1000," * (size // 5) + b"0]}")  # (an int each)

    def too_deep(self, size: int) -> bytes:
        depth = min(size // 2, 100_000)
        return self._attrs(b'{"a":' + b"[" * depth + b"]" * depth + b"}")

    def strings(self, size: int) -> bytes:
        n, parts = size // 5, self.parts
        parts = _with(parts, STRING_LENGTHS, parts[STRING_LENGTHS] + struct.pack("<I", 1) * n)
        return self._trace(_with(parts, STRINGS, parts[STRINGS] + b"x" * n))

    def shapes_table(self, size: int) -> bytes:
        n, parts = size // 9, self.parts
        parts = _with(parts, SHAPE_SIZES, parts[SHAPE_SIZES] + b"\x01" * n)
        return self._trace(_with(parts, SHAPE_DIMS, parts[SHAPE_DIMS]
                                 + struct.pack("<q", 1000) * n))

    def summaries(self, size: int) -> bytes:
        n = size // 34
        parts = _with(self.parts, SUMMARY_FORMS, self.parts[SUMMARY_FORMS] + b"\x06" * n)
        items = (struct.pack("<I", 0), struct.pack("<I", 0), struct.pack("<d", 0.5), b"",
                 struct.pack("<q", 0), struct.pack("<q", 0), b"\x00")
        for block, item in zip(CHEAP_COLUMNS, items, strict=True):
            parts = _with(parts, block, parts[block] + item * n)
        return self._trace(parts)

    def inputs(self, size: int) -> bytes:
        rows = [list(r) for r in tf.decode_rows_payload(self.payload)]
        op = next(r for r in rows if r[0] == "op")
        op[4] = tuple(range(1000, 1000 + size // 8))
        payload = columns.encode_payload([tuple(r) for r in rows], 0)
        return join_versions([self.versions[0],
                              (tf.EVENTS, V2, self.meta + payload[len(self.meta):])])


def _with(parts: list[bytes], block: int, value: bytes) -> list[bytes]:
    new = list(parts)
    new[block] = value
    return new
