"""Decoding column events frames (formats 2 and 3) into rows, every value checked; and
the checks of a frame's rows against its metadata that every format shares.

The blocks and tables are read by ``columnframe.py``; the layout is ``columnlayout.py``'s.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from ..errors import TraceFileError
from . import events as ev
from . import framecost
from .columnframe import _Frame, _Reader
from .columnlayout import (
    _ADDED_COLUMNS,
    _ATTRS_CODES,
    _HEADER_TAIL,
    _ITERATION,
    _PADDED,
    CODES,
    FIELD_TYPES,
    KINDS,
    VERSION,
    _header_width,
)
from .decoding import FIRST_FRAME, STREAM
from .framecost import ITEM, TUPLE
from .rows import Row


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
