"""Reading a column events frame's blocks: ``_Reader`` takes a payload's blocks in order,
each checked to be the column it must be; ``_Frame`` reads and checks a payload's tables
(strings, shapes, attribute dicts, summaries) and the columns that refer to them.

Every count, index and length is checked before anything is built from it, so a crafted
frame is refused in one line (``TraceFileError``), never half-read.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Sequence
from itertools import islice, repeat
from math import prod
from typing import Any

import numpy as np

from ..errors import TraceFileError
from . import framecost
from .columnlayout import _BLOCK, _NONE, _swap
from .decoding import _ARRAY_KINDS, _INT64, _MAX_DIMS, EVENTS_META, _attrs, _Bad, _text
from .framecost import ITEM, NUMBER, STRING, TUPLE


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
