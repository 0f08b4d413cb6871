"""A file's table of iteration templates (frame format 5): an iteration repeated in any
later frame is written as what changes against it.

Format 4 (``templates.py``) templates a segment (a run of one iteration's events) against
an earlier segment of the same frame. Frames are cut every ``tracefile.BATCH_EVENTS``
events and, at iteration ends, every ``FRAME_INTERVAL``: an iteration longer than about
half a frame (a 1,000-op chain, most real training steps) never had an earlier one beside
it, and never templated. Format 5 keeps the templates in the file, not the frame:

- a *template frame* (frame type ``b"T"``, format 5) holds one template: its id (uint32,
  1 for the first of the file, then 2, 3 ... in order) and then a format-3 events payload
  (metadata included) of the rows of the iteration it was made from;
- a format-5 events frame is a format-4 one whose segment table names, per segment, a
  template id (0: written in full) and where in that template's rows the segment begins
  (a segment is any part of an iteration: an iteration cut by frames continues in the next
  frame at its offset; one that leaves its template midway is two segments, against it up
  to the first event of another kind and in full from there). The segment's kinds must
  be the template's at that place. ``COPY`` as the offset: the segment is the template's
  rows as they are (the iteration the template was made of, in the same frame). Each
  kind's blocks are compact (``templateencode.encode_against``): a bit per optional block,
  and only those set follow.

A template frame comes before the first frame that names it. A reader keeps the templates
it has seen (``ReaderTable``; a file's are decoded when a frame first needs one), so any
frame can be decoded alone given the file's table: the cost is one template decode per
template, not a chain (templates are always whole, never templated themselves).

The writer (``WriterTable``) makes a template of an iteration only once its kinds come
again: each iteration not written exactly against a template is kept as a *candidate*
(the last few, in memory), and the first segment of a later iteration whose kinds begin
like a candidate's turns that candidate into a template (its template frame written then,
before the frame that uses it). A run whose iterations never repeat writes no template.

Nothing here runs code from the data; ids, offsets and kinds are checked before a row is
built (``decode_payload``).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

from ..errors import TraceFileError
from . import columns, templateencode, templates
from .decoding import EVENTS_META, STREAM
from .rows import Row

VERSION = 5
TEMPLATE = ord("T")  # the frame type of a template frame
MAX_TEMPLATES = 4096  # a writer makes no more (a reader refuses more)
MAX_ROWS = 1 << 18  # an iteration longer than this is never a template (its rows are kept)
CANDIDATES = 8  # iterations kept, unregistered, in case their kinds come again
SEARCHED = 16  # templates tried (most recently used first) for an iteration's start
# A segment's offset that says it is its template's rows, whole and as they are (the
# iteration the template was made of, in the frame that makes it).
COPY = 0xFFFFFFFF
TEMPLATE_ID = struct.Struct("<I")
HEAD = TEMPLATE_ID.size + EVENTS_META.size  # a template frame's bytes read to index it
_KIND = itemgetter(0)
_FULL_ONLY = templates._FULL_ONLY  # (header, values: never in a template)


class Template:
    """One template: its id, its rows and their kinds (one byte each, ``columns.CODES``)."""

    __slots__ = ("at", "codes", "id", "rows")

    def __init__(self, id: int, rows: Sequence[Row], codes: bytes,
                 at: tuple[int, int, int] | None = None) -> None:
        self.id = id
        self.rows = rows
        self.codes = codes
        # (writing) where its rows were handed over, when that was as one segment: the
        # batch's number, the segment's start and end in it
        self.at = at


Lookup = Callable[[int, bool], Template]  # a template by id (and settle), for decoding


def codes_of(rows: Sequence[Row]) -> bytes:
    return bytes(map(columns.CODES.__getitem__, map(_KIND, rows)))


# -- writing ---------------------------------------------------------------------------------
class WriterTable:
    """A trace writer's templates and where the iteration being written stands.

    ``encode(rows, flags, made)`` returns the events frame's payload (None: nothing in
    ``rows`` follows a template; write them in format 3), after adding to ``made`` the
    payloads of the template frames to write before it. A template is registered only
    once its payload is made: should the events fail to encode (a value columns cannot
    hold), the template frames made are still to be written."""

    def __init__(self) -> None:
        self.templates: list[Template] = []
        self._recent: list[Template] = []  # most recently used first
        self._candidates: list[Template] = []  # (id 0) most recent first
        self._iteration = -1
        self._offset = 0  # rows of the current iteration in earlier segments
        self._rows: list[Row] | None = []  # the current iteration's (None: not a candidate)
        self._following: Template | None = None  # what its segments so far followed
        self._batch = 0  # batches encoded
        self._at: tuple[int, int, int] | None = None  # (see Template.at) the iteration's
        self._at_end: tuple[int, int, int] | None = None  # ... of the last one ended
        # The template columns of the frames written, by kind and segments' places
        # (``templateencode.TemplateColumns``)
        self._columns: dict[Any, templateencode.TemplateColumns] = {}

    def encode(self, rows: Sequence[Row], flags: int, made: list[bytes],
               eager: bool = False) -> bytes | None:
        codes = codes_of(rows)
        self._batch += 1
        chosen: list[tuple[int, int, Template | None, int]] = []  # (a, b, template, offset)
        for a, b in templateencode._segments(rows):
            if rows[a][2] != self._iteration:
                self._end_iteration()
                self._iteration = rows[a][2]
                self._at = (self._batch, a, b)
            else:
                self._at = None
            template, n = self._template_for(codes[a:b], made)
            if n < b - a and n >= templates.MIN_ROWS:  # followed up to a divergence
                chosen.append((a, a + n, template, self._offset))
                chosen.append((a + n, b, None, self._offset + n))
            else:
                chosen.append((a, b, template if n == b - a else None, self._offset))
            if self._rows is not None:
                self._rows.extend(rows[a:b])
                if len(self._rows) > MAX_ROWS:
                    self._rows = None
            self._offset += b - a
        if eager and rows[-1][0] == "iteration_end":
            # (the first iteration of a file, written alone: made a template at once,
            # since the next one, likely its repeat, comes in another frame)
            self._end_iteration()
            if self._candidates and self._candidates[0].at == self._at_end:
                self._register(0, made)
        # A template made of an iteration of this very batch: that iteration is written
        # as the template's rows (``COPY``), not once more in full.
        for new in self.templates[len(self.templates) - len(made):]:
            if new.at is not None and new.at[0] == self._batch:
                k = next((k for k, (a, b, _, _) in enumerate(chosen)
                          if (a, b) == new.at[1:]), None)
                if k is not None:  # (None: written as two segments, which stay)
                    chosen[k] = (*new.at[1:], new, COPY)
        if all(t is None for _, _, t, _ in chosen):
            return None
        table: list[int] = []
        full: list[Row] = []
        templated: list[templates.Templated] = []
        for a, b, t, offset in chosen:
            if t is None:
                table += (b - a, rows[a][2], 0, 0)
                full.extend(rows[a:b])
            elif offset == COPY:
                table += (b - a, rows[a][2], t.id, COPY)
            else:
                table += (b - a, rows[a][2], t.id, offset)
                templated.append((a, b, t.rows, offset, (t.id, offset, b - a)))
        head = [codes, columns._swap(array("I", table)).tobytes(),
                columns.encode_payload(full, flags & ~templates.FLAG_TEMPLATES)
                if full else b""]
        body = templateencode.encode_against(rows, codes, templated, compact=True,
                                             cache=self._columns)
        meta = EVENTS_META.pack(len(rows), rows[0][2], rows[-1][2],
                                flags | templates.FLAG_TEMPLATES, rows[0][1])
        return meta + columns.join_blocks([*head, *body])

    def _template_for(self, kinds: bytes, made: list[bytes]) -> tuple[Template | None, int]:
        """The template the segment of ``kinds`` at ``self._offset`` follows, and for how
        many of its events (all of them, unless it leaves the template); a candidate it
        follows is made a template (its frame's payload added to ``made``)."""
        if not _FULL_ONLY.isdisjoint(kinds):
            self._following = None
            return None, 0
        offset = self._offset
        if offset:  # an iteration continued: on its template, unless it left it
            t = self._following
            if t is None:
                return None, 0
            n = _common(kinds, t.codes[offset:offset + len(kinds)])
            if n < len(kinds):
                self._following = None
            return t, n
        best, longest = None, 0
        for i, t in enumerate(self._recent[:SEARCHED]):
            if t.codes.startswith(kinds):
                if i:
                    del self._recent[i]
                    self._recent.insert(0, t)
                self._following = t
                return t, len(kinds)
            n = _common(kinds, t.codes)
            if n > longest:
                best, longest = t, n
        for i, c in enumerate(self._candidates):
            if c.codes.startswith(kinds) and len(self.templates) < MAX_TEMPLATES:
                self._following = self._register(i, made)
                return self._following, len(kinds)
        # (the template the most of it follows, up to where it leaves it: the rest of the
        # iteration is written in full)
        self._following = None
        return best, longest

    def _register(self, i: int, made: list[bytes]) -> Template:
        """Candidate ``i`` made a template, its frame's payload added to ``made``."""
        c = self._candidates[i]
        t = Template(len(self.templates) + 1, c.rows, c.codes, c.at)
        made.append(TEMPLATE_ID.pack(t.id) + columns.encode_payload(c.rows, 0))
        del self._candidates[i]
        self.templates.append(t)
        self._recent.insert(0, t)
        return t

    def _end_iteration(self) -> None:
        """The iteration written so far ended: unless it was its template's exactly, it is
        a candidate (a later iteration may repeat it)."""
        rows, t = self._rows, self._following
        exact = t is not None and self._offset == len(t.codes)
        if rows is not None and not exact and len(rows) >= templates.MIN_ROWS:
            codes = codes_of(rows)
            if _FULL_ONLY.isdisjoint(codes):
                self._candidates = [c for c in self._candidates if c.codes != codes]
                self._candidates.insert(0, Template(0, rows, codes, self._at))
                del self._candidates[CANDIDATES:]
        self._at_end, self._at = self._at, None
        self._offset = 0
        self._rows = []
        self._following = None


def _common(a: bytes, b: bytes) -> int:
    """The length of the common prefix of ``a`` and ``b`` (by bisection: each step one
    comparison of slices, in C)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # a[:lo] == b[:lo] and a[:hi + 1] != b[:hi + 1]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# -- reading ---------------------------------------------------------------------------------
class ReaderTable:
    """The templates of one file or stream, by id, in the order their frames came; each
    decoded (and kept) when a frame first names it.

    A file's are read again from the file when first needed (``add`` takes a function
    that reads the payload), a stream's are kept as they came."""

    def __init__(self) -> None:
        self._sources: list[tuple[bytes | Callable[[], bytes], str]] = []
        self._decoded: dict[int, Template] = {}

    def __len__(self) -> int:
        return len(self._sources)

    def add(self, source: bytes | Callable[[], bytes], head: bytes, at: str) -> None:
        """A template frame's payload (``source``: the bytes, or a function that reads
        them again), whose first bytes are ``head``: its id is checked now."""
        if len(self._sources) >= MAX_TEMPLATES:
            raise TraceFileError(f"more than {MAX_TEMPLATES} iteration templates {at}")
        check_id(head, len(self._sources) + 1, at)
        self._sources.append((source, at))

    def get(self, id: int, known: int, settle: bool = False) -> Template:
        """Template ``id``, which must be among the first ``known`` (those before the
        frame that names it); ``settle`` as for ``columns.decode_payload`` (the rows of
        the frame that needs it will be kept)."""
        if not 1 <= id <= min(known, len(self._sources)):
            raise TraceFileError(f"events frame names iteration template {id}, which no "
                                 "frame before it holds")
        t = self._decoded.get(id)
        if t is None:
            source, at = self._sources[id - 1]
            payload = source if isinstance(source, bytes) else source()
            try:
                t = decode_template(payload, id, settle)
            except TraceFileError as exc:
                raise TraceFileError(f"{exc} (in the template frame {at})") from None
            self._decoded[id] = t
        return t


def check_id(payload: bytes, expected: int, at: str) -> None:
    """A template frame's id is the next one (templates are numbered in order)."""
    if len(payload) < TEMPLATE_ID.size + EVENTS_META.size:
        raise TraceFileError(f"template frame too short {at}")
    (found,) = TEMPLATE_ID.unpack_from(payload)
    if found != expected:
        raise TraceFileError(f"template frame holds template {found} where template "
                             f"{expected} comes {at}")


def decode_template(payload: bytes, id: int, settle: bool = False) -> Template:
    check_id(payload, id, "")
    nested = memoryview(payload)[TEMPLATE_ID.size:]
    count, lo, hi, _flags, first_seq = EVENTS_META.unpack_from(nested)
    if lo > hi:
        raise TraceFileError(f"template {id} says iterations {lo}..{hi}")
    # (settled: rows made from a template's share its values, and are untracked only
    # if those are)
    rows = columns.decode_payload(nested, lo, hi, STREAM, settle=settle,
                                  version=columns.VERSION)
    columns.check_rows(rows, count, lo, hi, first_seq, 0)
    if len(rows) < templates.MIN_ROWS:
        raise TraceFileError(f"template {id} holds {len(rows)} events")
    codes = codes_of(rows)
    if not _FULL_ONLY.isdisjoint(codes):
        raise TraceFileError(f"template {id} holds a header or tensor values")
    return Template(id, tuple(rows), codes)


def decode_payload(payload: bytes | memoryview, lo: int, hi: int,
                   position: int | None, table: Lookup | None,
                   settle: bool = False) -> list[Row]:
    """The rows of a format-5 payload, every value checked; ``table(id, settle)`` gives
    the templates of the frames before this one (None: there are none to give)."""
    r = columns._Reader(payload)
    codes = templates.read_kinds(r, payload, position)
    segments = _read_segments(r, codes, lo, hi, table, settle)
    return templates.decode_body(r, payload, codes, lo, hi, segments, settle, compact=True)


def _read_segments(r: columns._Reader, codes: bytes, lo: int, hi: int,
                   table: Lookup | None, settle: bool) -> list[templates.Segment]:
    """Each segment (``templates.Segment``), checked: they cover the frame, iterations go
    forward within ``lo..hi``, and each templated one's kinds are its template's there."""
    entries = r.column("I", None, "segments")
    if len(entries) % 4:
        raise TraceFileError("events frame's segment table is not whole quadruples")
    out: list[templates.Segment] = []
    start, previous = 0, lo
    for n, iteration, id, offset in zip(entries[::4], entries[1::4], entries[2::4],
                                         entries[3::4], strict=True):
        if n == 0 or not previous <= iteration <= hi:
            raise TraceFileError(f"events frame has a segment of {n} events in iteration "
                                 f"{iteration} (after {previous}, frame {lo}..{hi})")
        if id:
            if table is None:
                raise TraceFileError("events frame names an iteration template, but the "
                                     "stream holds none")
            t = table(id, settle)
            if offset == COPY:
                if t.codes != codes[start:start + n] or t.rows[0][2] != iteration or \
                        t.rows[-1][2] != iteration:
                    raise TraceFileError(f"events frame's segment {len(out) + 1} is not "
                                         f"template {id}'s iteration {iteration}")
                out.append((start, start + n, iteration, t.rows, 0, templates.COPIED))
            elif t.codes[offset:offset + n] != codes[start:start + n]:
                raise TraceFileError(f"events frame's segment {len(out) + 1} does not "
                                     f"match template {id}'s events at {offset}")
            else:
                out.append((start, start + n, iteration, t.rows, offset, (id, offset, n)))
        else:
            out.append((start, start + n, iteration, None, 0, None))
        start += n
        previous = iteration
    if start != len(codes):
        raise TraceFileError(f"events frame's segments hold {start} events, "
                             f"not {len(codes)}")
    return out


def frame_iterations(payload: bytes | memoryview, lo: int, hi: int) -> list[int]:
    """Every event's iteration, from the segment table (``columns.frame_iterations``);
    the templates are not needed for it."""
    count = EVENTS_META.unpack_from(payload)[0]
    r = columns._Reader(payload)
    r.raw(count, "event kinds")
    entries = r.column("I", None, "segments")
    if len(entries) % 4:
        raise TraceFileError("events frame's segment table is not whole quadruples")
    iterations: list[int] = []
    previous = lo
    for n, iteration in zip(entries[::4], entries[1::4], strict=True):
        if n == 0 or not previous <= iteration <= hi or len(iterations) + n > count:
            raise TraceFileError(f"events frame has a segment of {n} events in iteration "
                                 f"{iteration} (after {previous}, frame {lo}..{hi})")
        iterations.extend(repeat(iteration, n))
        previous = iteration
    if len(iterations) != count or (iterations and (iterations[0] != lo
                                                    or iterations[-1] != hi)):
        raise TraceFileError(f"events frame's segments do not hold its {count} events "
                             f"of iterations {lo}..{hi}")
    return iterations
