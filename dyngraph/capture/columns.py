"""Events frames in columns (frame format 2): rows in, rows out, every value checked.

Format 1 wrote each event as a JSON array; encoding and parsing that text, a value at a
time, cost a few microseconds per event, as much as recording a small op. Format 2 turns a
batch of rows (``dyngraph.capture.rows``) into typed columns, each one C call of
``array``/``bytes`` to write and to read back: per kind of event, one column per field;
strings, shapes, attribute dicts and summaries go once each into per-frame tables and
are referred to by index. Nothing here runs code from the data (no pickle, no marshal):
numbers are fixed-width little-endian integers and floats, strings UTF-8, attribute
dicts JSON. The layout is described in ``docs/trace-format.md``.

A payload, after the 24 bytes of metadata, is a sequence of blocks, each a uint32 byte
length and its bytes. Decoding reads each block as the column it must be (its length a
multiple of the item size, the count it must have) and checks every value's type and
range before a row is built, so a crafted frame is refused in one line
(``TraceFileError``), never half-read.
"""

from __future__ import annotations

import gc
import json
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from itertools import chain, compress, islice, repeat
from math import prod
from operator import itemgetter
from typing import Any

import numpy as np

from ..errors import TraceFileError
from . import events as ev
from . import framecost
from .decoding import (
    _ARRAY_KINDS,
    _CONVERT,
    _FIELD_TESTS,
    _INT64,
    _MAX_DIMS,
    EVENTS_META,
    FIRST_FRAME,
    STREAM,
    _attrs,
    _Bad,
    _text,
)
from .framecost import ITEM, NUMBER, STRING, TUPLE
from .rows import Row

KINDS = tuple(ev.EVENT_TYPES)  # a kind's code is its place here (the header's is 0)
VERSION = 3  # the frame format written: 2 before schema 3's backward-step fields
# Kinds whose rows an older frame format stores with fewer fields (the last ones), by
# (format, kind): the values those fields read as (see ``decoding._ADDED_FIELDS``).
_PADDED: dict[tuple[int, str], tuple[Any, ...]] = {(2, "backward_step"): (-1, (), (), ())}
CODES = {kind: code for code, kind in enumerate(KINDS)}
# The kinds whose events have attributes (ops, collectives): a frame holds at most one
# attribute object for each of its events of these kinds.
_ATTRS_CODES = bytes(CODES[k] for k in KINDS if "attrs" in ev.FIELD_NAMES[k])
_BLOCK = struct.Struct("<I")
_BIG = sys.byteorder == "big"
_NONE = -1  # a summary index meaning "no summary"
_PREVIEW_CUT = itemgetter(slice(0, 255))
_ITERATION = itemgetter(2)  # (a row's)

# What each field is stored as, by name (a name means the same in every kind): the type
# tests of format 1 (``decoding._FIELD_TESTS``) say which integers must be non-negative.
_STORED = {"count": "count", "index": "count", "int": "int", "bool": "bool", "str": "str",
           "number": "f64", "ids": "ids"}
_CONVERTED = {"shape": "shape", "argv": "strs", "summary": "summary",
              "grad_output": "summary", "grad_inputs": "summaries", "grad_outputs": "summaries",
              "updates": "updates",
              "attrs": "attrs", "array": "array", "result": "summary"}


def _field_type(name: str) -> str:
    if name in _CONVERTED:
        return _CONVERTED[name]
    return _STORED[_FIELD_TESTS[name]]


FIELD_TYPES: dict[str, tuple[str, ...]] = {
    kind: tuple(_field_type(n) for n in ev.FIELD_NAMES[kind][2:]) for kind in KINDS}
assert set(_CONVERT) <= set(_CONVERTED) | {"inputs", "outputs", "next_nodes"}


def _swap(a: array) -> array:  # type: ignore[type-arg]
    if _BIG:
        a.byteswap()
    return a


# -- encoding --------------------------------------------------------------------------------
class _Tables:
    """The tables of one frame being encoded: strings, shapes, attribute dicts, summaries,
    each value once, by first appearance."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}
        self.shapes: dict[tuple[int, ...], int] = {}
        self.attrs: dict[tuple[Any, ...], int] = {}  # attrs items -> index
        # id(summary row) -> index: a summary row shared by several rows (a gradient
        # handed on in backward) is stored once. (The rows hold the summary rows, so
        # their ids stay theirs while the frame is encoded.)
        self.sums: dict[int, int] = {id(None): _NONE}
        self.sum_list: list[tuple[Any, ...]] = []

    @staticmethod
    def _add(table: dict[Any, int], values: Sequence[Any]) -> None:
        new = [v for v in dict.fromkeys(values) if v not in table]
        if new:
            table.update(zip(new, range(len(table), len(table) + len(new)), strict=True))

    def string_ids(self, col: Sequence[str]) -> array:  # type: ignore[type-arg]
        table = self.strings
        self._add(table, col)
        return array("I", map(table.__getitem__, col))

    def shape_ids(self, col: Sequence[tuple[int, ...]]) -> array:  # type: ignore[type-arg]
        table = self.shapes
        self._add(table, col)
        return array("I", map(table.__getitem__, col))

    def attr_ids(self, col: Sequence[tuple[Any, ...]]) -> array:  # type: ignore[type-arg]
        table = self.attrs
        self._add(table, col)
        return array("I", map(table.__getitem__, col))

    def summary_ids(self, col: Sequence[Any]) -> array:  # type: ignore[type-arg]
        """Indexes of the summary rows of ``col`` in the frame's table, new ones added.

        A plain loop with one dict lookup per value: a pass of C calls per step (ids,
        ``dict.fromkeys``, a key-set intersection, an update) cost twice as much, on
        columns that are mostly new summaries."""
        table = self.sums
        get = table.get
        found = self.sum_list
        out: list[int] = []
        append = out.append
        for s in col:
            i = get(id(s))
            if i is None:
                i = table[id(s)] = len(found)
                found.append(s)
            append(i)
        return array("i", out)


def _floats(col: Sequence[Any], blocks: list[bytes]) -> None:
    """A float column that may hold None: the values (None as 0.0), then a mask block
    (empty when no value is None)."""
    try:
        blocks.append(_swap(array("d", col)).tobytes())
        blocks.append(b"")
    except TypeError:
        blocks.append(_swap(array("d", [0.0 if v is None else v for v in col])).tobytes())
        blocks.append(bytes([v is None for v in col]))


def _encode_column(ftype: str, col: Sequence[Any], t: _Tables, blocks: list[bytes],
                   arrays: list[bytes]) -> None:
    if ftype == "str":
        blocks.append(_swap(t.string_ids(col)).tobytes())
    elif ftype == "int" or ftype == "count":
        blocks.append(_swap(array("q", col)).tobytes())
    elif ftype == "bool":
        blocks.append(bytes(col))
    elif ftype == "summary":
        blocks.append(_swap(t.summary_ids(col)).tobytes())
    elif ftype == "shape":
        blocks.append(_swap(t.shape_ids(col)).tobytes())
    elif ftype == "ids":
        blocks.append(_swap(array("I", map(len, col))).tobytes())
        blocks.append(_swap(array("q", list(chain.from_iterable(col)))).tobytes())
    elif ftype == "attrs":
        blocks.append(_swap(t.attr_ids(col)).tobytes())
    elif ftype == "summaries":
        blocks.append(_swap(array("I", map(len, col))).tobytes())
        blocks.append(_swap(t.summary_ids(list(chain.from_iterable(col)))).tobytes())
    elif ftype == "f64":
        blocks.append(_swap(array("d", col)).tobytes())
    elif ftype == "strs":
        blocks.append(_swap(array("I", map(len, col))).tobytes())
        blocks.append(_swap(t.string_ids(list(chain.from_iterable(col)))).tobytes())
    elif ftype == "updates":
        blocks.append(_swap(array("I", map(len, col))).tobytes())
        pairs = list(chain.from_iterable(col))
        blocks.append(_swap(array("q", map(itemgetter(0), pairs))).tobytes())
        blocks.append(_swap(array("d", map(itemgetter(1), pairs))).tobytes())
    elif ftype == "array":
        dtypes, shapes, sizes = [], [], []
        for a in col:
            a = np.asarray(a)
            if a.dtype.kind not in _ARRAY_KINDS or a.dtype.hasobject:
                raise TypeError(f"cannot store an array of dtype {a.dtype}")
            dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
            data = a.astype(dt, copy=False).tobytes()  # (C order, whatever a's layout)
            dtypes.append(dt.str)
            shapes.append(tuple(a.shape))
            sizes.append(len(data))
            arrays.append(data)
        blocks.append(_swap(t.string_ids(dtypes)).tobytes())
        blocks.append(_swap(t.shape_ids(shapes)).tobytes())
        blocks.append(_swap(array("q", sizes)).tobytes())
    else:  # pragma: no cover - FIELD_TYPES names only the types above
        raise AssertionError(ftype)


def _summary_blocks(t: _Tables) -> list[bytes]:
    """The summary table: each summary's form (6: cheap, 11: full), then the cheap ones'
    columns, then the full ones'."""
    rows = t.sum_list
    forms = bytes(map(len, rows))
    blocks = [forms]
    cheap = list(compress(rows, map((6).__eq__, forms)))
    full = list(compress(rows, map((11).__eq__, forms)))
    if len(cheap) + len(full) != len(rows):
        raise ValueError("a summary row of neither form")
    for part, floats in ((cheap, (2,)), (full, (2, 3, 4, 5, 6))):
        cols = list(zip(*part, strict=True)) if part else [()] * (6 if part is cheap else 11)
        blocks.append(_swap(t.shape_ids(cols[0])).tobytes())
        blocks.append(_swap(t.string_ids(cols[1])).tobytes())
        for i in floats:
            _floats(cols[i], blocks)
        counts = 3 if part is cheap else 7
        blocks.append(_swap(array("q", cols[counts])).tobytes())  # nan
        blocks.append(_swap(array("q", cols[counts + 1])).tobytes())  # inf
        blocks.append(bytes(cols[-1]))  # sampled
        if part is full:
            previews = list(map(_PREVIEW_CUT, cols[9]))  # (at most 255, as format 1)
            blocks.append(_swap(array("I", map(len, previews))).tobytes())
            blocks.append(_swap(array("d", chain.from_iterable(previews))).tobytes())
    return blocks


def encode_payload(rows: Sequence[Row], flags: int) -> bytes:
    """The payload of a format-2 events frame holding ``rows`` (metadata included).
    Raises (TypeError, ValueError, OverflowError ...) on a value format 2 cannot hold:
    the caller then writes the frame in format 1."""
    n = len(rows)
    kinds = list(map(itemgetter(0), rows))
    codes = bytes(map(CODES.__getitem__, kinds))
    t = _Tables()
    columns: list[bytes] = []
    arrays: list[bytes] = []
    # The rows of each kind, in one pass (a pass over all rows per kind present cost a
    # quarter of the encoding), in the order of their codes.
    by_kind: dict[str, list[Row]] = {}
    for r in rows:
        group = by_kind.get(r[0])
        if group is None:
            group = by_kind[r[0]] = []
        group.append(r)
    for kind in sorted(by_kind, key=CODES.__getitem__):
        cols = list(zip(*by_kind[kind], strict=True))
        if kind == "header":
            cols = cols[:3 + _header_width(cols[3])]
        for ftype, col in zip(FIELD_TYPES[kind], cols[3:], strict=False):
            _encode_column(ftype, col, t, columns, arrays)
    blocks = [
        codes,
        _swap(array("q", map(itemgetter(1), rows))).tobytes(),
        _swap(array("I", map(itemgetter(2), rows))).tobytes(),
        *table_blocks(t), *columns, b"".join(arrays),
    ]
    meta = EVENTS_META.pack(n, rows[0][2], rows[-1][2], flags, rows[0][1]) if n else \
        EVENTS_META.pack(0, 0, 0, 0, 0)
    return meta + join_blocks(blocks)


def table_blocks(t: _Tables) -> list[bytes]:
    """The blocks of a frame's tables (strings, shapes, attribute dicts, summaries), in the
    order ``_Frame`` reads them."""
    sums = _summary_blocks(t)
    shapes = list(t.shapes)
    if any(len(s) > _MAX_DIMS for s in shapes):
        raise ValueError("a shape of too many dimensions")
    strings = [s.encode("utf-8") for s in t.strings]  # (a lone surrogate raises)
    return [
        _swap(array("I", map(len, strings))).tobytes(), b"".join(strings),
        bytes(map(len, shapes)), _swap(array("q", chain.from_iterable(shapes))).tobytes(),
        json.dumps(list(map(dict, t.attrs)), separators=(",", ":"), allow_nan=True).encode(),
        *sums,
    ]


def join_blocks(blocks: Sequence[bytes]) -> bytes:
    """Blocks as a payload holds them: each its uint32 length, then its bytes."""
    pack = _BLOCK.pack
    return b"".join(chain.from_iterable((pack(len(b)), b) for b in blocks))


# -- decoding --------------------------------------------------------------------------------
class _Reader:
    """Reads a payload's blocks in order, each as what it must be."""

    def __init__(self, payload: bytes | memoryview) -> None:
        self.view = memoryview(payload)
        self.pos = EVENTS_META.size

    def block(self) -> memoryview:
        view, pos = self.view, self.pos
        if pos + 4 > len(view):
            raise TraceFileError("events frame cut short (a block is missing)")
        (length,) = _BLOCK.unpack_from(view, pos)
        end = pos + 4 + length
        if end > len(view):
            raise TraceFileError("events frame cut short (a block runs past its end)")
        self.pos = end
        return view[pos + 4:end]

    def column(self, typecode: str, count: int | None, what: str) -> list[Any]:
        """A block of fixed-size items as a list; ``count`` of them if given."""
        data, a = self._sized(typecode, count, what)
        a.frombytes(data)
        return _swap(a).tolist()

    def _sized(self, typecode: str, count: int | None, what: str
               ) -> tuple[memoryview, array]:  # type: ignore[type-arg]
        """The next block, checked to be a column of ``typecode`` items (``count`` if
        given), and an empty array of them."""
        data = self.block()
        a = array(typecode)
        if len(data) % a.itemsize or (count is not None and len(data) != count * a.itemsize):
            raise TraceFileError(f"events frame holds {len(data)} bytes of {what}, expected "
                                 f"{'a multiple of ' if count is None else ''}"
                                 f"{(count or 1) * a.itemsize}")
        return data, a

    def skip(self, typecode: str, count: int, what: str) -> None:
        """Pass a column (checked as ``column`` checks it) that is not needed."""
        self._sized(typecode, count, what)

    def raw(self, count: int | None, what: str) -> bytes:
        data = self.block()
        if count is not None and len(data) != count:
            raise TraceFileError(f"events frame holds {len(data)} bytes of {what}, "
                                 f"expected {count}")
        return bytes(data)

    def done(self) -> None:
        if self.pos != len(self.view):
            raise TraceFileError(f"events frame has {len(self.view) - self.pos} bytes more "
                                 "than its blocks")


def _bad(kind: str, index: int, field: str, value: Any, expected: str) -> TraceFileError:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return TraceFileError(f"malformed {kind} event {index}: {field} is {shown}, "
                          f"expected {expected}")


class _Frame:
    """The decoded tables of one payload, for the columns to refer to."""

    def __init__(self, r: _Reader, lo: int, hi: int, allowance: framecost.Allowance,
                 ops: int) -> None:
        self.r, self.lo, self.hi = r, lo, hi
        self.allowance = allowance
        self.charge = allowance.charge
        self.ops = ops  # (the events that have attributes)
        # References into the tables, counted as the columns are read: a table entry no
        # event refers to is memory spent for nothing, and the writer makes none.
        self.refs = {"strings": 0, "shapes": 0, "summaries": 0}
        # What holds the tuples inside others (attribute items, summaries, columns of
        # tuples ...), in the order made: held till the frame is decoded (see
        # ``decode_payload``'s ``settle``, and ``hold``).
        self.inner: list[Any] = []
        self.strings = self._strings()
        self.shapes = self._shapes()
        self.attrs = self._attrs()
        self.sums = self._summaries()

    def check_referenced(self) -> None:
        """Every table entry is referred to by some event (or summary): at most as many
        entries as references. (Attributes: at most one per op, checked when read.)"""
        for what, table in (("strings", self.strings), ("shapes", self.shapes),
                            ("summaries", self.sums[:-1])):
            if len(table) > self.refs[what]:
                raise TraceFileError(f"events frame holds {len(table):,} {what} but its "
                                     f"events refer to {self.refs[what]:,}")

    def hold(self, made: list[Any]) -> list[Any]:
        """``made`` (a list of tuples that rows will hold), held till the frame is
        decoded, and so is its first tuple: ``list(zip(...))`` makes that one before the
        list (zip keeps a tuple at hand), and only later objects would refer to it."""
        self.inner.append(made)
        if made:
            self.inner.append(made[0])
        return made

    def _strings(self) -> list[str]:
        r = self.r
        data, a = r._sized("I", None, "string lengths")
        self.charge(STRING * (len(data) // a.itemsize), "strings")  # (before the list)
        a.frombytes(data)
        lengths = _swap(a).tolist()
        blob = r.block()  # (not copied: the characters are copied once, into the strs)
        if sum(lengths) != len(blob):
            raise TraceFileError("events frame's strings do not match their lengths")
        out, pos = [], 0
        for n in lengths:
            out.append(_text(blob[pos:pos + n]))
            pos += n
        return out

    def _shapes(self) -> list[tuple[int, ...]]:
        r = self.r
        ndims = r.raw(None, "shape sizes")
        self.charge(TUPLE * len(ndims) + ITEM * sum(ndims), "shapes")
        dims = r.column("q", sum(ndims), "shape dimensions")
        if ndims and max(ndims) > _MAX_DIMS:
            raise TraceFileError(f"a shape of {max(ndims)} dimensions (at most {_MAX_DIMS})")
        if dims and min(dims) < 0:
            raise TraceFileError(f"a shape with a negative dimension ({min(dims)})")
        it = iter(dims)
        shapes = list(map(tuple, map(islice, repeat(it), ndims)))
        for s in shapes:
            if prod(s) >= _INT64:
                raise TraceFileError(f"a shape of {prod(s)} elements (fewer than 2^63)")
        return shapes

    def _attrs(self) -> list[tuple[Any, ...]]:
        text = _text(self.r.block())
        # (twice: the JSON's objects, then the tuples made of them)
        self.charge(2 * framecost.json_cost(text), "attributes")
        try:
            table = json.loads(text)
        except RecursionError:
            raise TraceFileError("attributes nested too deep") from None
        except ValueError as exc:
            raise TraceFileError(f"undecodable attributes ({exc})"[:200]) from None
        if type(table) is not list:
            raise TraceFileError("events frame's attributes are not a list")
        if len(table) > max(self.ops, 1):  # (an empty frame's writer leaves one: "[{}]")
            raise TraceFileError(f"events frame holds {len(table):,} attribute objects for "
                                 f"{self.ops:,} ops and collectives (each stored once, for "
                                 "an event that has it)")
        out: list[tuple[Any, ...]] = []
        inner = self.inner
        for d in table:
            try:
                if type(d) is dict and not d:
                    out.append(())
                    continue
                pairs = list(_attrs(d).items())  # (made before the tuple of them)
                inner.append(pairs)
                out.append(tuple(pairs))
            except (_Bad, RecursionError):
                raise TraceFileError(f"malformed attributes {_short(d)}") from None
        return out

    def _index(self, col: list[int], table: Sequence[Any], what: str) -> None:
        if col and max(col) >= len(table):
            raise TraceFileError(f"events frame refers to {what} {max(col)} of "
                                 f"{len(table)}")

    def _floats(self, count: int, what: str) -> list[Any]:
        values = self.r.column("d", count, what)
        mask = self.r.raw(None, f"{what} mask")
        if mask:
            if len(mask) != count or max(mask) > 1:
                raise TraceFileError(f"events frame's {what} mask is damaged")
            values = [None if m else v for v, m in zip(values, mask, strict=True)]
        return values

    def _summary_part(self, n: int, full: bool) -> list[tuple[Any, ...]]:
        r = self.r
        fields = 12 if full else 7
        self.charge(n * (TUPLE + 8 * fields + NUMBER * (6 if full else 2)), "summaries")
        self.refs["shapes"] += n
        self.refs["strings"] += n
        shapes = r.column("I", n, "summary shapes")
        dtypes = r.column("I", n, "summary dtypes")
        self._index(shapes, self.shapes, "shape")
        self._index(dtypes, self.strings, "string")
        stats = [self._floats(n, "summary statistics") for _ in range(5 if full else 1)]
        nan = r.column("q", n, "NaN counts")
        inf = r.column("q", n, "Inf counts")
        sampled = r.raw(n, "sampled flags")
        if (nan and min(nan) < 0) or (inf and min(inf) < 0) or (sampled and max(sampled) > 1):
            raise TraceFileError("a summary with a negative count or a damaged flag")
        shape_of, string_of = self.shapes.__getitem__, self.strings.__getitem__
        head = (map(shape_of, shapes), map(string_of, dtypes))
        flags = map(bool, sampled)
        if not full:
            return list(zip(*head, stats[0], nan, inf, flags, strict=True))
        lengths = r.column("I", n, "preview lengths")
        self.charge(ITEM * sum(lengths), "summaries' previews")
        values = r.column("d", sum(lengths), "previews")
        it = iter(values)
        # (a list first: zip makes each summary before its items, and a preview made
        # after its summary would leave the summary tracked by the collector a while)
        previews = list(map(tuple, map(islice, repeat(it), lengths)))
        self.inner.append(previews)
        return list(zip(*head, *stats, nan, inf, previews, flags, strict=True))

    def _summaries(self) -> list[Any]:
        forms = self.r.raw(None, "summary forms")
        n_cheap = forms.count(6)
        if n_cheap + forms.count(11) != len(forms):
            raise TraceFileError("a summary of an unknown form")
        cheap = self._summary_part(n_cheap, False)
        full = self._summary_part(len(forms) - n_cheap, True)
        self.hold(cheap)
        self.hold(full)
        if not full:
            table = cheap
        elif not cheap:
            table = full
        else:
            nc, nf = iter(cheap).__next__, iter(full).__next__
            table = [nc() if f == 6 else nf() for f in forms]
        out: list[Any] = table
        out.append(None)  # index -1: no summary
        return out

    # -- columns ------------------------------------------------------------------------------
    def _indexed(self, table: list[Any], kind: str, name: str, n: int,
                 where: Callable[[int], int], what: str) -> list[Any]:
        """A column of ``n`` indexes into one of the frame's tables, looked up, checked."""
        col = self.r.column("I", n, name)
        out = _looked_up(table, col)
        if out is None:
            k = col.index(max(col))
            raise _bad(kind, where(k), name, col[k], what)
        return out

    def column(self, kind: str, name: str, ftype: str, n: int,
               where: Callable[[int], int]) -> list[Any]:
        """Field ``name`` of the ``n`` events of ``kind`` (``where(k)``: the frame index of
        the k-th), checked."""
        r = self.r
        if ftype == "str":
            self.refs["strings"] += n
            return self._indexed(self.strings, kind, name, n, where, "a string of the frame")
        if ftype == "int" or ftype == "count":
            col = r.column("q", n, name)
            if ftype == "count" and col and min(col) < 0:
                k = col.index(min(col))
                raise _bad(kind, where(k), name, col[k], "a non-negative integer")
            return col
        if ftype == "bool":
            data = r.raw(n, name)
            if data and max(data) > 1:
                k = data.index(max(data))
                raise _bad(kind, where(k), name, data[k], "true or false")
            return list(map(bool, data))
        if ftype == "summary":
            col = r.column("i", n, name)
            self._summary_refs(col, kind, name, where)
            return list(map(self.sums.__getitem__, col))
        if ftype == "shape":
            self.refs["shapes"] += n
            return self._indexed(self.shapes, kind, name, n, where, "a shape of the frame")
        if ftype == "ids":
            lengths = r.column("I", n, f"{name} lengths")
            self.charge(ITEM * sum(lengths), f"{kind} {name}")
            flat = r.column("q", sum(lengths), name)
            return _grouped(flat, lengths)
        if ftype == "attrs":
            return self._indexed(self.attrs, kind, name, n, where, "attributes of the frame")
        if ftype == "summaries":
            lengths = r.column("I", n, f"{name} lengths")
            self.charge(ITEM * sum(lengths), f"{kind} {name}")
            flat = r.column("i", sum(lengths), name)
            self._summary_refs(flat, kind, name, lambda k: where(0))
            return _grouped(list(map(self.sums.__getitem__, flat)), lengths)
        if ftype == "f64":
            return r.column("d", n, name)
        if ftype == "strs":
            lengths = r.column("I", n, f"{name} lengths")
            self.charge(ITEM * sum(lengths), f"{kind} {name}")
            self.refs["strings"] += sum(lengths)
            flat = r.column("I", sum(lengths), name)
            if flat and max(flat) >= len(self.strings):
                raise _bad(kind, where(0), name, max(flat), "strings of the frame")
            return _grouped(list(map(self.strings.__getitem__, flat)), lengths)
        if ftype == "updates":
            lengths = r.column("I", n, f"{name} lengths")
            total = sum(lengths)
            self.charge((TUPLE + 2 * ITEM) * total, f"{kind} {name}")
            ids = r.column("q", total, f"{name} ids")
            norms = r.column("d", total, f"{name} norms")
            pairs = self.hold(list(zip(ids, norms, strict=True)))
            return _grouped(pairs, lengths)
        if ftype == "array":
            return self._arrays(kind, name, n, where)
        raise AssertionError(ftype)  # pragma: no cover

    def _summary_refs(self, col: list[int], kind: str, name: str,
                      where: Callable[[int], int]) -> None:
        self.refs["summaries"] += len(col)
        if col and (min(col) < _NONE or max(col) >= len(self.sums) - 1):
            k = col.index(min(col) if min(col) < _NONE else max(col))
            raise _bad(kind, where(k), name, col[k], "a summary of the frame")

    def _arrays(self, kind: str, name: str, n: int, where: Callable[[int], int]
                ) -> list[Any]:
        r = self.r
        dtypes = r.column("I", n, "array dtypes")
        shapes = r.column("I", n, "array shapes")
        sizes = r.column("q", n, "array sizes")
        self._index(dtypes, self.strings, "string")
        self._index(shapes, self.shapes, "shape")
        self.refs["strings"] += n
        self.refs["shapes"] += n
        self.pending_arrays = (kind, name, where, dtypes, shapes, sizes)
        return [None] * n  # filled in by ``arrays`` once the blob is read (it comes last)

    def arrays(self, blob: bytes) -> list[np.ndarray]:
        kind, name, where, dtypes, shapes, sizes = self.pending_arrays
        if sum(sizes) != len(blob) or (sizes and min(sizes) < 0):
            raise TraceFileError("events frame's arrays do not match their sizes")
        out, pos = [], 0
        for k, (d, s, size) in enumerate(zip(dtypes, shapes, sizes, strict=True)):
            try:
                dtype = np.dtype(self.strings[d])
            except (TypeError, ValueError):
                dtype = None
            if dtype is None or dtype.kind not in _ARRAY_KINDS or dtype.hasobject:
                raise _bad(kind, where(k), name, self.strings[d], "a numeric dtype")
            shape = self.shapes[s]
            if size != dtype.itemsize * prod(shape):
                raise _bad(kind, where(k), name, size, f"{dtype.itemsize * prod(shape)} bytes")
            out.append(np.frombuffer(blob[pos:pos + size], dtype).reshape(shape).copy())
            pos += size
        return out


def _looked_up(table: list[Any], col: list[int]) -> list[Any] | None:
    """``table``'s items at the (unsigned) indexes ``col``; None if one is out of range
    (cheaper than a ``max`` first: a column is a few hundred indexes)."""
    try:
        return list(map(table.__getitem__, col))
    except IndexError:
        return None


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _grouped(flat: list[Any], lengths: list[int]) -> list[tuple[Any, ...]]:
    """``flat`` cut into tuples of ``lengths`` (their sum is ``len(flat)``)."""
    it = iter(flat)
    return list(map(tuple, map(islice, repeat(it), lengths)))


# Fields added to an event's columns since format 2 was first written, at the end of its
# row in the order added, with the value an older frame means (a header written before
# the numpy version was recorded names none; the header's later columns follow from its
# schema version: ``_header_columns``). A frame that does not decode is read again without
# the last one, then the last two, ...
_ADDED_COLUMNS: dict[str, tuple[tuple[str, Any], ...]] = {"header": (("numpy_version", ""),)}


def decode_payload(payload: bytes | memoryview, lo: int, hi: int,
                   position: int | None = STREAM, settle: bool = False,
                   version: int = VERSION) -> list[Row]:
    """The rows of a column events frame's payload (frame format ``version``), every value
    checked; TraceFileError naming what is wrong otherwise. ``lo..hi``: the iterations the
    events may have. A frame written before ``_ADDED_COLUMNS`` were is read as it was
    written."""
    try:
        return _decode_payload(payload, lo, hi, position, settle, version)
    except TraceFileError as exc:
        if not _holds_added(payload):
            raise
        for older in range(1, max(map(len, _ADDED_COLUMNS.values())) + 1):
            try:
                return _decode_payload(payload, lo, hi, position, settle, version, older)
            except TraceFileError:
                pass
        raise exc from None


def _holds_added(payload: bytes | memoryview) -> bool:
    """Does the frame hold an event of a kind that has ``_ADDED_COLUMNS``?"""
    try:
        (count,) = struct.unpack_from("<I", payload)
        codes = _Reader(payload).raw(count, "event kinds")
    except (TraceFileError, struct.error):
        return False
    return any(CODES[kind] in codes for kind in _ADDED_COLUMNS)


def _decode_payload(payload: bytes | memoryview, lo: int, hi: int,
                    position: int | None = STREAM, settle: bool = False,
                    version: int = VERSION, older: int = 0) -> list[Row]:
    """``decode_payload``; ``older``: without the last ``older`` of each kind's
    ``_ADDED_COLUMNS``, whose values each row then takes.

    ``settle`` (for rows that will be kept, decoded with the collector paused): runs the
    young generation's collection before returning, so that every row of plain values is
    untracked at once. The collector untracks a tuple whose items are all untracked, in
    the order it then holds the young objects; an object only other young objects refer
    to is moved behind its referrer, so a row (row -> summary -> shape) lost one level
    per collection and lived on, tracked, into the oldest generation, making full
    collections more frequent and slower. Collected while every table and column that
    refers to them is still held here, they stay in the order made: inner first.
    """
    (count,) = struct.unpack_from("<I", payload)
    r = _Reader(payload)
    codes = r.raw(count, "event kinds")
    seqs = r.column("q", count, "seqs")
    iterations = r.column("I", count, "iterations")
    if codes and max(codes) >= len(KINDS):
        k = codes.index(max(codes))
        raise TraceFileError(f"unknown event kind {codes[k]} (event {k})")
    if seqs and min(seqs) < 0:
        k = seqs.index(min(seqs))
        raise TraceFileError(f"malformed {KINDS[codes[k]]} event {k}: seq is {seqs[k]}, "
                             "expected a non-negative 64-bit integer")
    if iterations and (min(iterations) < lo or max(iterations) > hi):
        bad = min(iterations) if min(iterations) < lo else max(iterations)
        k = iterations.index(bad)
        raise TraceFileError(f"malformed {KINDS[codes[k]]} event {k}: iteration is {bad}, "
                             f"expected an iteration in the frame's range {lo}..{hi}")
    _check_headers(codes, position)
    allowance = framecost.Allowance(count, len(payload))
    allowance.charge(2 * ITEM * count, "seqs and iterations")
    frame = _Frame(r, lo, hi, allowance, sum(map(codes.count, _ATTRS_CODES)))
    present = sorted(set(codes))
    per_kind: list[list[Row] | None] = [None] * len(KINDS)
    array_rows: list[Row] | None = None
    if len(present) > 1:
        # The events grouped by kind in one stable sort (a mask per kind, an int compared
        # per event and kind, was 40% of decoding), each kind's seqs and iterations a
        # slice of the sorted columns.
        order, counts = _by_kind(codes)
        take = itemgetter(*order.tolist())  # (count >= 2: more than one kind)
        sorted_seqs, sorted_iterations = take(seqs), take(iterations)
    start = 0
    for code in present:
        kind = KINDS[code]
        if len(present) == 1:
            ks, kit, n = seqs, iterations, count
            where: Callable[[int], int] = int
        else:
            n = counts[code]
            ks = sorted_seqs[start:start + n]
            kit = sorted_iterations[start:start + n]
            start += n
            where = _where(codes, code)
        names, ftypes = ev.FIELD_NAMES[kind][2:], FIELD_TYPES[kind]
        # An older format stores fewer columns of some kinds (``_PADDED``), and a format-2
        # frame may be of before ``_ADDED_COLUMNS``: the rest is what an older stream means.
        # A header's schema version says which of its columns follow (``_header_columns``).
        pad = _PADDED.get((version, kind), ())
        if pad:
            names, ftypes = names[:-len(pad)], ftypes[:-len(pad)]
        later = _ADDED_COLUMNS.get(kind, ()) if kind != "header" else ()
        added = later[max(0, len(later) - older):] if older else ()
        if added:
            names, ftypes = names[:-len(added)], ftypes[:-len(added)]
        allowance.charge(n * (TUPLE + 2 * ITEM * (len(names) + len(pad))), f"{kind} events")
        cols: list[Any]
        if kind == "header":
            cols = _header_columns(frame, n, where, older)
        else:
            cols = [frame.column(kind, name, ftype, n, where)
                    for name, ftype in zip(names, ftypes, strict=True)]
        cols += [repeat(value, n) for value in pad]
        frame.inner.append(cols)
        per_kind[code] = list(zip(repeat(kind), ks, kit, *cols,
                                  *(repeat(value, n) for _, value in added)))
        if kind == "values":
            array_rows = per_kind[code]
    blob = r.raw(None, "arrays")
    r.done()
    frame.check_referenced()
    if array_rows is not None:
        arrays = frame.arrays(blob)
        per_kind[CODES["values"]] = [(*row[:4], a) for row, a in
                                     zip(array_rows, arrays, strict=True)]
    elif blob:
        raise TraceFileError("events frame holds array bytes but no values event")
    if len(present) == 1:
        rows = per_kind[present[0]]
    else:
        # Back in the frame's order: the k-th event is at position inverse[k] of the rows
        # grouped by kind (in the order of ``present``, as sorted).
        grouped = list(chain.from_iterable(per_kind[c] for c in present))  # type: ignore[misc]
        inverse = np.empty(count, np.intp)
        inverse[order] = _RANGE[:count] if count <= len(_RANGE) else np.arange(count)
        rows = list(map(grouped.__getitem__, inverse.tolist()))
    if settle:
        gc.collect(0)  # (frame and per_kind still held: see above)
    return rows  # type: ignore[return-value]


_RANGE = np.arange(1 << 12)

# The header's last fields, with what a header written without them means: no numpy
# version (a frame of before it was recorded: ``_ADDED_COLUMNS``) and, before schema 4
# (iteration mode, rank, world size, run id), iterations that end at backward in a
# process of no job.
_HEADER_TAIL = ("", "backward", 0, 0, "")
_SCHEMA_4_COLUMNS = 4


def _header_width(versions: Sequence[Any]) -> int:
    """How many columns headers of these schema versions have."""
    width = len(ev.FIELD_NAMES["header"]) - 2
    old = all(type(v) is int and v < ev.RANKS_SCHEMA for v in versions)
    return width - _SCHEMA_4_COLUMNS if old else width


def _header_columns(frame: _Frame, n: int, where: Callable[[int], int],
                    older: int) -> list[Any]:
    """The columns of ``n`` headers, their schema version (the first) read first: it says
    which columns follow; ``older`` (1): a frame of before the numpy version was recorded."""
    names, types = ev.FIELD_NAMES["header"][2:], FIELD_TYPES["header"]
    cols: list[Any] = [frame.column("header", names[0], types[0], n, where)]
    width = _header_width(cols[0]) - older
    cols += [frame.column("header", name, ftype, n, where)
             for name, ftype in zip(names[1:width], types[1:width], strict=True)]
    missing = len(names) - width
    if missing:
        cols += [[value] * n for value in _HEADER_TAIL[-missing:]]
    return cols


def _by_kind(codes: bytes) -> tuple[np.ndarray, list[int]]:
    """The positions of the events sorted by kind code (stably: a kind's in frame order)
    and the number of events of each code."""
    kinds = np.frombuffer(codes, np.uint8)
    return np.argsort(kinds, kind="stable"), np.bincount(kinds).tolist()


def frame_iterations(payload: bytes | memoryview, lo: int, hi: int) -> list[int]:
    """Every column frame event's iteration, in order, reading only the first blocks
    (kinds, seqs, iterations): what a frame spanning several iterations holds, without
    decoding it. TraceFileError if they leave ``lo..hi`` or go backwards."""
    (count,) = struct.unpack_from("<I", payload)
    r = _Reader(payload)
    r.raw(count, "event kinds")
    r.skip("q", count, "seqs")
    iterations = r.column("I", count, "iterations")
    if iterations and (iterations[0] != lo or iterations[-1] != hi or
                       min(iterations) < lo or max(iterations) > hi):
        raise TraceFileError(f"events frame says iterations {lo}..{hi} but holds "
                             f"{min(iterations)}..{max(iterations)}")
    if iterations != sorted(iterations):
        raise TraceFileError("events frame goes back in iterations")
    return iterations


def _where(codes: bytes, code: int) -> Callable[[int], int]:
    """Frame index of the k-th event of kind ``code`` (for error messages only)."""
    def at(k: int) -> int:
        positions = [i for i, c in enumerate(codes) if c == code]
        return positions[k] if k < len(positions) else 0
    return at


def _check_headers(codes: bytes, position: int | None) -> None:
    """A file's first event is its header, and no other event is one."""
    if position is STREAM:
        return
    header = CODES["header"]
    if position == FIRST_FRAME and (not codes or codes[0] != header):
        raise TraceFileError("damaged trace (it does not begin with a header)")
    start = 1 if position == FIRST_FRAME else 0
    if codes.find(header, start) >= 0:
        raise TraceFileError(f"a header in the middle of the trace (event "
                             f"{codes.find(header, start)})")


def check_rows(rows: list[Row], count: int, lo: int, hi: int, first_seq: int,
               position: int | None) -> None:
    """Rows against their frame's metadata, as ``decoding._check_against_meta`` checks
    events."""
    if len(rows) != count:
        raise TraceFileError(f"events frame says {count} events but holds {len(rows)}")
    if position is STREAM or not rows:
        return
    if rows[0][2] != lo or rows[-1][2] != hi:
        raise TraceFileError(f"events frame says iterations {lo}..{hi} but holds "
                             f"{rows[0][2]}..{rows[-1][2]}")
    if rows[0][1] != first_seq:
        raise TraceFileError(f"events frame says it starts at seq {first_seq} but its "
                             f"first event has seq {rows[0][1]}")
    if lo != hi:
        iterations = list(map(_ITERATION, rows))
        if iterations != sorted(iterations):  # (in C; the loop below only to explain)
            previous = lo
            for it in iterations:
                if it < previous:
                    raise TraceFileError(f"events frame goes back from iteration "
                                         f"{previous} to {it}")
                previous = it
