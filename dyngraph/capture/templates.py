"""Iteration templates in events frames (frame format 4): a repeated iteration written as
what changes.

Most iterations repeat the one before: the same ops from the same lines, the same shapes,
the same wiring; only ids, durations and statistics move. Format 3 writes every field of
every event again. Format 4 splits a frame's events into segments, one per iteration (a
run of events of one iteration), and writes a segment whose event kinds match an earlier
segment of the frame, event by event, against that segment, its *template*:

- each field compared per position with the template's (a field equal to it is implied,
  not written), never a hash of a row: a divergence anywhere costs that field alone, and
  what differs is always written, so a frame reads back exactly as written;
- integers and id lists (tensor ids, call ids, lines, seqs) are compared after a shift per
  segment, kind and field (ids come from counters, so a repeated iteration's are the
  template's plus a constant; -1, "none", is never shifted);
- durations and summaries (values that change every time) are written as format 3 writes
  them, in columns;
- a segment holding the header or tensor values, or shorter than ``MIN_ROWS`` events, is
  written in full.

A frame without a segment to template is written in format 3 (``encode_payload`` returns
None): older readers still read most of a file, and format 3 stays what it was.

Payload, after the 24 bytes of metadata (``FLAG_TEMPLATES`` set in its flags), in blocks
as format 3 has them (``columns.py``; each a uint32 length and its bytes):

- the event kinds, one byte each (as format 3's first block);
- the segments: uint32 triples (events, iteration, template), the template the 1-based
  number of an earlier segment written in full, 0 for one written in full itself;
- a format-3 payload (metadata included) of the full segments' events, one after another;
- per templated segment, the shift of its seqs (int64);
- the tables of the written values (strings, shapes, attribute dicts, summaries: as in
  format 3);
- per kind present in templated segments (in code order): a mask of the seqs that differ
  from the shifted template's and those seqs; then per field: a dense field's column; an
  integer field's shifts (int64 per templated segment), mask and differing values; any
  other field's mask and differing values. A mask has a bit per event of that kind in
  templated segments (numpy's ``packbits`` order).

Nothing here runs code from the data; every count, index and shift is checked before a row
is built, and the rows are checked against the metadata as format 3's are.

This module reads the format (and holds what writer and reader share); ``templateencode.py``
writes it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from itertools import chain, islice, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from ..errors import TraceFileError
from . import columns, framecost
from . import events as ev
from .decoding import EVENTS_META, STREAM
from .rows import Row

VERSION = 4
FLAG_TEMPLATES = 2  # (metadata flags: 1 is tracefile.FLAG_VALUES)
MIN_ROWS = 8  # a segment shorter than this is written in full: too small to gain
_INT64 = 1 << 63
_KIND = itemgetter(0)
_SEQ = itemgetter(1)
_ITERATION = itemgetter(2)
# Segments holding these are written in full: the header opens a file, values carry arrays.
_FULL_ONLY = frozenset({columns.CODES["header"], columns.CODES["values"]})

DENSE, SHIFTED, SAME, SUMMARY = "dense", "shifted", "same", "summary"


def _plan(kind: str) -> tuple[tuple[int, str, str, str], ...]:
    """(row index, field name, stored type, how written) of each field of ``kind``."""
    out = []
    for i, (name, ftype) in enumerate(zip(ev.FIELD_NAMES[kind][2:], columns.FIELD_TYPES[kind],
                                          strict=True), start=3):
        if ftype == "summary":
            how = SUMMARY
        elif ftype in ("summaries", "f64", "updates", "array") or name == "duration_ns":
            how = DENSE
        elif ftype in ("int", "count", "ids"):
            how = SHIFTED
        else:
            how = SAME
        out.append((i, name, ftype, how))
    return tuple(out)


PLANS = {kind: _plan(kind) for kind in columns.KINDS}


def _shifted(templates: Sequence[Any], shifts: Sequence[int], ids: bool) -> list[Any]:
    """Every value shifted (the seqs: they all move)."""
    if not any(shifts):
        return list(templates)
    if ids:
        return [tuple([x + d if x >= 0 else x for x in t]) if d else t
                for t, d in zip(templates, shifts, strict=True)]
    return [t + d if t >= 0 else t for t, d in zip(templates, shifts, strict=True)]


def _places(cache: dict[Any, dict[int, list[int]]], key: Any, codes: bytes, start: int,
            n: int) -> dict[int, list[int]]:
    """Where each kind's events sit in ``codes[start:start + n]``, a segment like every
    other at ``key`` (made once per key: every segment that repeats a template has them
    at the same places)."""
    found = cache.get(key)
    if found is None:
        kinds = np.frombuffer(codes, np.uint8, n, start)
        found = cache[key] = {code: np.flatnonzero(kinds == code).tolist()
                              for code in np.unique(kinds).tolist()}
    return found


def _wide(r: columns._Reader, kind: str, name: str, n: int) -> list[int]:
    """``_narrow``'s column read back, checked."""
    block = r.block()
    size = block[0] if len(block) else 0
    if size not in (4, 8) or len(block) != 1 + size * n:
        raise TraceFileError(f"events frame holds {len(block)} bytes of {kind} {name}, "
                             f"expected 1 + 4 or 8 per event for {n}")
    col: list[int] = np.frombuffer(block[1:], "<u4" if size == 4 else "<i8").tolist()
    if col and min(col) < 0:
        raise TraceFileError(f"malformed {kind} events: a negative {name}")
    return col


# Summary rows (``rows.py``): cheap (shape, dtype, norm, nan, inf, sampled) and full
# (shape, dtype, min, max, mean, std, norm, nan, inf, preview, sampled). Against a template
# summary of the same form, shape, dtype, counts and flag are compared (they rarely move)
# and the statistics written; any other pair (a form that changes, None) is written whole.
_SUMMARY_SAME = {6: ((0, "shape"), (1, "str"), (3, "int"), (4, "int"), (5, "bool")),
                 11: ((0, "shape"), (1, "str"), (7, "int"), (8, "int"), (10, "bool"))}
_SUMMARY_FLOATS = {6: (2,), 11: (2, 3, 4, 5, 6)}
_PREVIEW = 9


def _summary_form(s: Any) -> int:
    return 0 if s is None else len(s)


def _decode_summaries(frame: columns._Frame, kind: str, name: str, templates: Sequence[Any],
                      where: Callable[[int], int], present: Present | None = None
                      ) -> list[Any]:
    n = len(templates)
    r = frame.r
    whole_at: list[int] = []
    written: list[Any] = []
    if present is None or present.next():
        whole_at = _mask(r, n, name)
        written = frame.column(kind, name, "summary", len(whole_at), where)
    out = list(templates)
    for k, v in zip(whole_at, written, strict=True):
        out[k] = v
    forms = np.fromiter(map(_summary_form, templates), np.int64, n)
    forms[whole_at] = 0  # (written whole: none of the forms below)
    for form in (6, 11):
        at = np.flatnonzero(forms == form).tolist()
        m = len(at)
        if present is not None and not m:
            continue  # (compact: a form no summary has is not written)
        frame.charge(m * (framecost.TUPLE + framecost.ITEM * form), f"{kind} {name}")
        theirs = [templates[k] for k in at]
        tcols = list(zip(*theirs, strict=True)) if theirs else [()] * form
        cols: list[Any] = [None] * form
        for k, ftype in _SUMMARY_SAME[form]:
            cols[k] = _filled(frame, kind, f"{name} part", ftype, m, tcols[k], where,
                              present)
        counts = [cols[k] for k, ftype in _SUMMARY_SAME[form] if ftype == "int"]
        if m and min(map(min, counts)) < 0:
            raise TraceFileError(f"malformed {kind} events: a {name} with a negative count")
        for k in _SUMMARY_FLOATS[form]:
            cols[k] = frame._floats(m, "summary statistics")
        if form == 11:
            lengths = r.column("I", m, "preview lengths")
            frame.charge(framecost.ITEM * sum(lengths), "summaries' previews")
            values = iter(r.column("d", sum(lengths), "previews"))
            cols[_PREVIEW] = [tuple(islice(values, length)) for length in lengths]
        for col in cols:
            frame.hold(col)
        for k, summary in zip(at, zip(*cols, strict=True), strict=True):
            out[k] = summary
    return frame.hold(out)


class Present:
    """A compact frame's bits of one kind (``encode_against``): whether each optional
    block is written, read in the order written."""

    __slots__ = ("at", "bits", "kind")

    def __init__(self, packed: bytes, kind: str) -> None:
        self.bits = np.unpackbits(np.frombuffer(packed, np.uint8)).tolist()
        self.at = 0
        self.kind = kind

    def next(self) -> bool:
        if self.at >= len(self.bits):
            raise TraceFileError(f"events frame's {self.kind} events lack their blocks' "
                                 "bits")
        self.at += 1
        return bool(self.bits[self.at - 1])

    def done(self) -> None:
        """Every bit read, and those after (to the byte's end) unset."""
        if len(self.bits) - self.at >= 8 or any(self.bits[self.at:]):
            raise TraceFileError(f"events frame's {self.kind} events hold more blocks' "
                                 "bits than blocks")


def _mask(r: columns._Reader, n: int, name: str) -> list[int]:
    """The positions a mask block (``_sparse``) marks among ``n``."""
    packed = r.raw(None, f"{name} mask")
    if not packed:
        return []
    if len(packed) != (n + 7) // 8:
        raise TraceFileError(f"events frame holds a {name} mask of {len(packed)} bytes "
                             f"for {n} events")
    return np.flatnonzero(np.unpackbits(np.frombuffer(packed, np.uint8), count=n)).tolist()


# -- decoding --------------------------------------------------------------------------------
def decode_payload(payload: bytes | memoryview, lo: int, hi: int,
                   position: int | None = STREAM, settle: bool = False) -> list[Row]:
    """The rows of a format-4 payload, every value checked (``columns.decode_payload``'s
    contract)."""
    r = columns._Reader(payload)
    codes = read_kinds(r, payload, position)
    segments = [(a, b, it, None if ta < 0 else SELF, ta, ta)
                for a, b, it, ta in _read_segments(r, codes, len(codes), lo, hi)]
    return decode_body(r, payload, codes, lo, hi, segments, settle)


def read_kinds(r: columns._Reader, payload: bytes | memoryview, position: int | None
               ) -> bytes:
    """A templated payload's first block, its events' kinds, checked."""
    count = EVENTS_META.unpack_from(payload)[0]
    codes = r.raw(count, "event kinds")
    if codes and max(codes) >= len(columns.KINDS):
        k = codes.index(max(codes))
        raise TraceFileError(f"unknown event kind {codes[k]} (event {k})")
    columns._check_headers(codes, position)
    return codes


SELF: Any = ()  # (a segment's template is in the frame itself: format 4)
COPIED: Any = ("copied",)  # (a segment's key: its rows are its template's, as they are)
# A segment, decoding: (start, end, iteration, the rows its template's are taken from
# (None: written in full; SELF: the frame's own), where in them it begins, a key naming
# that place).
Segment = tuple[int, int, int, Any, int, Any]


def decode_body(r: columns._Reader, payload: bytes | memoryview, codes: bytes, lo: int,
                hi: int, segments: list[Segment], settle: bool, compact: bool = False
                ) -> list[Row]:
    """The rows of a templated payload from its nested full rows on (formats 4 and 5:
    the segments read and checked by the caller, templates' kinds included; ``compact``
    as for ``encode_against``)."""
    count = len(codes)
    nested = bytes(r.block())  # (empty: no segment is written in full)
    full = columns.decode_payload(nested, lo, hi, STREAM, settle=False, version=3) \
        if nested else []
    templated = [s for s in segments if s[3] is not None and s[5] is not COPIED]
    _check_full(full, codes, [(a, b, it) for a, b, it, base, _, _ in segments
                              if base is None])
    shifts_seq = r.column("q", len(templated), "seq shifts")
    allowance = framecost.Allowance(count, len(payload))
    # Rows in frame order: the full segments' as decoded, then the templated ones filled in.
    out: list[Any] = [None] * count
    where = 0
    for a, b, _, base, start, key in segments:
        if base is None:
            out[a:b] = full[where:where + b - a]
            where += b - a
        elif key is COPIED:
            out[a:b] = base[start:start + b - a]
    by_kind: dict[int, tuple[list[int], list[Row], list[int]]] = {}
    places: dict[Any, dict[int, list[int]]] = {}
    for s, (a, b, _, base, start, key) in enumerate(templated):
        rows = out if base is SELF else base
        for code, at in _places(places, key, codes, a, b - a).items():
            group = by_kind.get(code)
            if group is None:
                group = by_kind[code] = ([], [], [])
            group[0].extend([a + k for k in at])
            group[1].extend([rows[start + k] for k in at])
            group[2].extend(repeat(s, len(at)))
    ops = len(by_kind.get(columns.CODES["op"], ((),))[0])
    frame = columns._Frame(r, lo, hi, allowance, ops)
    iterations = [it for _, _, it, _, _, _ in templated]
    for code in sorted(by_kind):
        positions, template_rows, segment = by_kind[code]
        kind = columns.KINDS[code]
        allowance.charge(len(positions) * (framecost.TUPLE + framecost.ITEM
                                           * len(ev.FIELD_NAMES[kind])), f"{kind} events")
        present = Present(bytes(r.raw(None, f"{kind} blocks' bits")), kind) if compact \
            else None
        rows = _decode_kind(frame, kind, template_rows, segment, shifts_seq, iterations,
                            len(templated), present)
        if present is not None:
            present.done()
        for p, row in zip(positions, rows, strict=True):
            out[p] = row
    r.done()
    frame.check_referenced()
    if settle:
        gc.collect(0)  # (every list of values made held by ``frame``: see columns.py)
    return out


def _read_segments(r: columns._Reader, codes: bytes, count: int, lo: int, hi: int
                   ) -> list[tuple[int, int, int, int]]:
    """(start, end, iteration, template's start or -1) of each segment, checked: they
    cover the frame, iterations go forward within ``lo..hi``, and a template is an
    earlier full segment of the same kinds."""
    table = r.column("I", None, "segments")
    if len(table) % 3:
        raise TraceFileError("events frame's segment table is not whole triples")
    out: list[tuple[int, int, int, int]] = []
    start, previous = 0, lo
    for n, iteration, template in zip(table[::3], table[1::3], table[2::3], strict=True):
        if n == 0 or not previous <= iteration <= hi:
            raise TraceFileError(f"events frame has a segment of {n} events in iteration "
                                 f"{iteration} (after {previous}, frame {lo}..{hi})")
        ta = -1
        if template:
            if template > len(out) or out[template - 1][3] >= 0:
                raise TraceFileError(f"events frame's segment {len(out) + 1} names segment "
                                     f"{template}, which is not an earlier full segment")
            ta, tb = out[template - 1][0], out[template - 1][1]
            if codes[ta:tb] != codes[start:start + n] or n < MIN_ROWS:
                raise TraceFileError(f"events frame's segment {len(out) + 1} does not match "
                                     f"its template's events")
        out.append((start, start + n, iteration, ta))
        start += n
        previous = iteration
    if start != count:
        raise TraceFileError(f"events frame's segments hold {start} events, not {count}")
    return out


def _check_full(full: list[Row], codes: bytes, segments: list[tuple[int, int, int]]) -> None:
    """The full segments' rows are the events the segment table says they are."""
    kinds = b"".join(codes[a:b] for a, b, _ in segments)
    if len(full) != len(kinds) or bytes(
            map(columns.CODES.__getitem__, map(_KIND, full))) != kinds:
        raise TraceFileError("events frame's full segments do not match its event kinds")
    iterations = [it for a, b, it in segments for _ in range(b - a)]
    if list(map(_ITERATION, full)) != iterations:
        raise TraceFileError("events frame's full segments do not match their iterations")


def _decode_kind(frame: columns._Frame, kind: str, templates: list[Row], segment: list[int],
                 shifts_seq: list[int], iterations: list[int], n_segments: int,
                 present: Present | None = None) -> list[Row]:
    n = len(templates)
    where: Callable[[int], int] = int
    tcols = list(zip(*templates, strict=True))
    seqs = _filled(frame, kind, "seq", "int", n,
                   _shifted(tcols[1], [shifts_seq[s] for s in segment], False), where,
                   present)
    if seqs and min(seqs) < 0:
        raise TraceFileError(f"malformed {kind} event: seq is {min(seqs)}")
    cols: list[Any] = []
    for i, name, ftype, how in PLANS[kind]:
        if how == DENSE and ftype == "count" and present is not None:
            cols.append(_wide(frame.r, kind, name, n))
            continue
        if how == DENSE and ftype == "summaries" and present is not None and \
                not present.next():
            flat = _decode_summaries(frame, kind, name, [x for v in tcols[i] for x in v],
                                     where, present)
            cols.append(frame.hold(columns._grouped(flat, list(map(len, tcols[i])))))
            continue
        if how == DENSE:
            cols.append(frame.column(kind, name, ftype, n, where))
            continue
        if how == SUMMARY:
            cols.append(_decode_summaries(frame, kind, name, tcols[i], where, present))
            continue
        implied: Sequence[Any] = tcols[i]
        if how == SHIFTED and (present is None or present.next()):
            shifts = frame.r.column("q", n_segments, f"{name} shifts")
            if shifts and (min(shifts) <= -_INT64 or max(shifts) >= _INT64):
                raise TraceFileError(f"malformed {kind} events: a {name} shift out of range")
            # (held: the tuples in it were made after it, and stay before the rows)
            implied = frame.hold(_shifted_by_mask(frame.r, kind, name, ftype, tcols[i],
                                                  [shifts[s] for s in segment]))
        cols.append(_filled(frame, kind, name, ftype, n, implied, where, present))
    for col in cols:  # (held till the frame is decoded: see ``columns.decode_payload``)
        frame.hold(col)
    return list(zip(repeat(kind), seqs, [iterations[s] for s in segment], *cols))


def _shifted_by_mask(r: columns._Reader, kind: str, name: str, ftype: str,
                     templates: Sequence[Any], shifts: Sequence[int]) -> list[Any]:
    """The template's integers (``ids``: its id lists) with the shift of their event added
    to those the next mask block marks (in numpy: a shift that would leave int64 is
    refused, never wrapped)."""
    ids = ftype == "ids"
    lengths = np.fromiter(map(len, templates), np.int64, len(templates)) if ids else None
    flat = np.fromiter(chain.from_iterable(templates) if ids else templates, np.int64)
    at = _mask_array(r, len(flat), f"{name} shifted")
    if len(at):
        per = np.array(shifts, np.int64)
        by_slot = (per if lengths is None else np.repeat(per, lengths))[at]
        values = flat[at]
        if np.any(values > np.where(by_slot > 0, _MAX64 - by_slot, _MAX64)) or np.any(
                values < np.where(by_slot < 0, -_MAX64 - 1 - by_slot, -_MAX64 - 1)):
            raise TraceFileError(f"malformed {kind} events: a shifted {name} out of range")
        flat[at] = values + by_slot
        if ftype == "count" and flat.min() < 0:
            raise TraceFileError(f"malformed {kind} events: a shifted {name} out of range")
    if not ids:
        return flat.tolist()  # type: ignore[no-any-return]
    assert lengths is not None
    return columns._grouped(flat.tolist(), lengths.tolist())


_MAX64 = (1 << 63) - 1


def _mask_array(r: columns._Reader, n: int, name: str) -> np.ndarray:
    """``_mask``'s positions, as an array."""
    packed = r.raw(None, f"{name} mask")
    if not packed:
        return np.empty(0, np.intp)
    if len(packed) != (n + 7) // 8:
        raise TraceFileError(f"events frame holds a {name} mask of {len(packed)} bytes "
                             f"for {n} events")
    return np.flatnonzero(np.unpackbits(np.frombuffer(packed, np.uint8), count=n))


def _filled(frame: columns._Frame, kind: str, name: str, ftype: str, n: int,
            implied: Sequence[Any], where: Callable[[int], int],
            present: Present | None = None) -> list[Any]:
    """``implied`` with the values the mask says differ replaced by those written."""
    if present is not None and not present.next():
        return list(implied)
    at = _mask(frame.r, n, name)
    values = frame.column(kind, name, ftype, len(at), where)
    if not at:
        return list(implied)
    out = list(implied)
    for k, v in zip(at, values, strict=True):
        out[k] = v
    return out


def frame_iterations(payload: bytes | memoryview, lo: int, hi: int) -> list[int]:
    """Every event's iteration, from the segment table (``columns.frame_iterations``)."""
    (count,) = EVENTS_META.unpack_from(payload)[:1]
    r = columns._Reader(payload)
    codes = r.raw(count, "event kinds")
    segments = _read_segments(r, codes, count, lo, hi)
    iterations = [it for a, b, it, _ in segments for _ in range(b - a)]
    if iterations and (iterations[0] != lo or iterations[-1] != hi):
        raise TraceFileError(f"events frame says iterations {lo}..{hi} but holds "
                             f"{iterations[0]}..{iterations[-1]}")
    return iterations


def is_templated(payload: bytes | memoryview) -> bool:
    return len(payload) >= EVENTS_META.size and bool(
        EVENTS_META.unpack_from(payload)[3] & FLAG_TEMPLATES)


def __getattr__(name: str) -> Any:
    # The writer lives in templateencode.py, which imports this module; format 4's
    # ``encode_payload`` is still reachable here, where it always was.
    if name == "encode_payload":
        from . import templateencode

        return templateencode.encode_payload
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
