"""Writing iteration templates in events frames (formats 4 and 5): each templated segment's
fields compared, per position and column by column, with its template's; only what
differs is written (the format is described in ``templates.py``, which reads it back).

Comparisons run on whole columns in C (a column equal to its template's costs one
comparison) and on integers in numpy; a value is never assumed: what differs is always
written, so a frame reads back exactly as written.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import length_hint
from typing import Any

import numpy as np

from . import columns
from .decoding import EVENTS_META
from .rows import Row
from .templates import (
    _FULL_ONLY,
    _ITERATION,
    _KIND,
    _PREVIEW,
    _SUMMARY_FLOATS,
    _SUMMARY_SAME,
    DENSE,
    FLAG_TEMPLATES,
    MIN_ROWS,
    PLANS,
    SHIFTED,
    SUMMARY,
    _places,
    _shifted,
)


def _segments(rows: Sequence[Row]) -> list[tuple[int, int]]:
    """(start, end) of each run of rows of one iteration."""
    iterations = np.fromiter(map(_ITERATION, rows), np.int64, len(rows))
    cuts = (np.flatnonzero(np.diff(iterations)) + 1).tolist()
    starts = [0, *cuts]
    return list(zip(starts, [*cuts, len(rows)], strict=True))


def _first_shift(rows: Sequence[Any], templates: Sequence[Any], ids: bool) -> int:
    """The shift that maps the template's values onto these: from the first non-negative
    template value its partner differs from (0 if none does)."""
    for value, template in zip(rows, templates, strict=True):
        if ids:
            if len(value) == len(template):
                for v, t in zip(value, template, strict=True):
                    if t >= 0 and v != t:
                        return int(v - t)
        elif template >= 0 and type(value) is int and value != template:
            return value - template
    return 0


_FAR = 1 << 62  # (values and shifts below this in size add up within int64)


def _chosen_in_numpy(values: Sequence[Any], templates: Sequence[Any],
                     shifts: Sequence[int], ids: bool,
                     ints: tuple[list[int] | None, np.ndarray | None] | None = None
                     ) -> tuple[np.ndarray, list[Any] | None, np.ndarray] | None:
    """``_chosen`` in numpy, for plain integers of sizes whose sums cannot wrap and id
    lists as long as their templates' (None otherwise: ``_chosen`` does it in Python),
    with ``_differs`` of the values and those implied (which are then not made); the
    bits and the differences as boolean arrays (never made lists: ``_packed`` and
    ``_sparse`` take them as they are). ``ints``: the templates' lengths and integers
    (``TemplateColumns.ints``), when made already."""
    if ints is None:
        ints = (list(map(len, templates)) if ids else None,
                _int64s(list(chain.from_iterable(templates)) if ids else templates))
    lengths, t = ints
    if t is None:
        return None
    if lengths is not None:
        if list(map(len, values)) != lengths:
            return None
        v = _int64s(list(chain.from_iterable(values)))
    else:
        v = _int64s(values)
    d = _int64s(shifts)
    if v is None or d is None:
        return None
    if lengths is not None:
        d = np.repeat(d, lengths)
    moved = t + d
    bits = (d != 0) & (t >= 0) & (v == moved)
    other = v != np.where(bits, moved, t)
    if lengths is None:
        return bits, None, other
    ends = np.cumsum(np.array(lengths, np.int64))
    seen = np.concatenate(([0], np.cumsum(other)))
    return bits, None, seen[ends] > seen[ends - lengths]


def _chosen(values: Sequence[Any], templates: Sequence[Any], shifts: Sequence[int],
            ids: bool, ints: tuple[list[int] | None, np.ndarray | None] | None = None
            ) -> tuple[Any, list[Any] | None, Any]:
    """Per template value (per id of an id list), whether it is shifted: an id of a tensor
    made in the iteration moves, a parameter's stays. The bits, the values implied, and
    which values differ from those (None: not known yet, ``_differs`` says)."""
    fast = _chosen_in_numpy(values, templates, shifts, ids, ints)
    if fast is not None:
        return fast
    bits: list[bool] = []
    implied: list[Any] = []
    if ids:
        for v, t, d in zip(values, templates, shifts, strict=True):
            if d and len(v) == len(t):
                row = [x == y + d and y >= 0 for x, y in zip(v, t, strict=True)]
                bits += row
                implied.append(tuple([y + d if b else y for y, b in zip(t, row, strict=True)])
                               if any(row) else t)
            else:
                bits += [False] * len(t)
                implied.append(t)
        return bits, implied, None
    for v, t, d in zip(values, templates, shifts, strict=True):
        b = bool(d) and t >= 0 and v == t + d
        bits.append(b)
        implied.append(t + d if b else t)
    return bits, implied, None


def _packed(bits: Any) -> bytes:
    """A mask block of ``bits`` (a list or a boolean array): empty when none is set."""
    bits = np.asarray(bits, dtype=bool)
    return np.packbits(bits).tobytes() if bits.any() else b""


def _differs(values: Sequence[Any], implied: Sequence[Any]) -> list[bool]:
    # ``is not`` first: the same object is the common case, and equal. Otherwise ``!=``,
    # the same equality format 3's tables use to share strings, shapes and attributes.
    return [v is not t and v != t for v, t in zip(values, implied, strict=True)]


def encode_payload(rows: Sequence[Row], flags: int) -> bytes | None:
    """The payload of a format-4 frame holding ``rows``, or None when no segment repeats
    an earlier one (then the frame is written in format 3). Raises as
    ``columns.encode_payload`` does on a value the columns cannot hold."""
    if len(rows) < 2 * MIN_ROWS or rows[0][2] == rows[-1][2]:
        return None  # one iteration (a long one's part): nothing can repeat
    codes = bytes(map(columns.CODES.__getitem__, map(_KIND, rows)))
    segments = _segments(rows)
    seen: dict[bytes, int] = {}  # kinds of a full segment -> its 1-based number
    table: list[int] = []
    full: list[Row] = []
    templated: list[tuple[int, int, int]] = []  # (start, end, template's start)
    for number, (a, b) in enumerate(segments, start=1):
        kinds = codes[a:b]
        template = seen.get(kinds, 0) if b - a >= MIN_ROWS else 0
        if template and not _FULL_ONLY.isdisjoint(kinds):
            template = 0
        table += (b - a, rows[a][2], template)
        if template:
            templated.append((a, b, segments[template - 1][0]))
        else:
            seen.setdefault(kinds, number)
            full.extend(rows[a:b])
    if not templated:
        return None
    head = [codes, columns._swap(array("I", table)).tobytes(),
            columns.encode_payload(full, flags & ~FLAG_TEMPLATES)]
    body = encode_against(rows, codes, [(a, b, rows, ta, ta) for a, b, ta in templated])
    meta = EVENTS_META.pack(len(rows), rows[0][2], rows[-1][2], flags | FLAG_TEMPLATES,
                            rows[0][1])
    return meta + columns.join_blocks([*head, *body])


# A templated segment, for the shared parts of formats 4 and 5: (start, end) in the
# frame, then the rows its template's are taken from and where in them it begins, and a
# key naming that place (kinds at one key are always the same).
Templated = tuple[int, int, Sequence[Row], int, Any]


class TemplateColumns:
    """The columns of one kind's template rows for a frame's templated segments, and
    their integers as arrays, each made when first needed. A writer keeps them by the
    segments' places (``encode_against``'s ``cache``): frames cut alike from iterations
    that repeat a template (most of a long recording's) use the same ones again."""

    __slots__ = ("cols", "_flat", "_ints", "_memos")

    def __init__(self, templates: Sequence[Row]) -> None:
        self.cols = list(zip(*templates, strict=True))
        self._ints: dict[int, tuple[list[int] | None, np.ndarray | None]] = {}
        self._flat: dict[int, list[Any]] = {}
        self._memos: dict[int, dict[Any, Any]] = {}

    def flat(self, i: int) -> list[Any]:
        """Field ``i``'s lists (a backward step's summary lists) one after another."""
        got = self._flat.get(i)
        if got is None:
            got = self._flat[i] = list(chain.from_iterable(self.cols[i]))
        return got

    def memo(self, i: int) -> dict[Any, Any]:
        """What ``_encode_summaries`` keeps of field ``i``'s template summaries."""
        got = self._memos.get(i)
        if got is None:
            got = self._memos[i] = {}
        return got

    def ints(self, i: int, ids: bool) -> tuple[list[int] | None, np.ndarray | None]:
        """Field ``i``'s id lists' lengths (``ids``) and its integers, flat, as int64
        (None: a value that is not a plain integer far from int64's ends)."""
        got = self._ints.get(i)
        if got is None:
            col = self.cols[i]
            lengths = list(map(len, col)) if ids else None
            flat: Any = list(chain.from_iterable(col)) if ids else col
            arr = _int64s(flat)
            got = self._ints[i] = (lengths, arr)
        return got


def _int64s(flat: Sequence[Any]) -> np.ndarray | None:
    """``flat`` as int64, if every item is a plain int (a bool is no int here) below
    ``_FAR`` in size; else None."""
    if not set(map(type, flat)) <= {int}:
        return None
    try:
        arr = np.fromiter(flat, np.int64, len(flat))
    except (OverflowError, ValueError):
        return None
    if len(arr) and (arr.max() >= _FAR or arr.min() <= -_FAR):
        return None
    return arr


CACHED = 64  # template columns a writer keeps (``encode_against``'s cache)


def encode_against(rows: Sequence[Row], codes: bytes, templated: Sequence[Templated],
                   compact: bool = False,
                   cache: dict[Any, TemplateColumns] | None = None) -> list[bytes]:
    """The blocks that follow the full segments: the seq shifts, the tables, then the
    templated segments' fields kind by kind (see the module's docstring). ``compact``
    (format 5): each kind's blocks begin with a bit per optional block (a mask, the
    shifts of a field, statistics of a summary form), and only those set follow.
    ``cache``: template columns kept by the segments' keys, which must then name the
    template rows they take (format 5's: template id, offset, length)."""
    t = columns._Tables()
    blocks: list[bytes] = []
    shifts_seq = [rows[a][1] - base[start][1] for a, _, base, start, _ in templated]
    keys = tuple(key for _, _, _, _, key in templated)
    if cache is not None and len(cache) > CACHED:
        cache.clear()
    # The templated rows of each kind, with their templates and segment numbers.
    by_kind: dict[int, tuple[list[Row], list[Row], list[int]]] = {}
    places: dict[Any, dict[int, list[int]]] = {}
    for s, (a, b, base, start, key) in enumerate(templated):
        mine, theirs = rows[a:b], base[start:start + b - a]  # (gathered from, in C)
        for code, at in _places(places, key, codes, a, b - a).items():
            group = by_kind.get(code)
            if group is None:
                group = by_kind[code] = ([], [], [])
            group[0].extend(map(mine.__getitem__, at))
            if cache is None or (code, keys) not in cache:
                group[1].extend(map(theirs.__getitem__, at))
            group[2].extend(repeat(s, len(at)))
    for code in sorted(by_kind):
        first = len(blocks)
        present: list[bool] | None = [] if compact else None
        mine_rows, theirs_rows, segment = by_kind[code]
        tc = None if cache is None else cache.get((code, keys))
        if tc is None:
            tc = TemplateColumns(theirs_rows)
            if cache is not None:
                cache[(code, keys)] = tc
        _encode_kind(columns.KINDS[code], mine_rows, tc, segment, shifts_seq,
                     len(templated), t, blocks, present)
        if present is not None:
            blocks.insert(first, np.packbits(np.array(present, dtype=bool)).tobytes())
    return [columns._swap(array("q", shifts_seq)).tobytes(), *columns.table_blocks(t),
            *blocks]


def _encode_kind(kind: str, rows: list[Row], tc: TemplateColumns, segment: list[int],
                 shifts_seq: list[int], n_segments: int, t: columns._Tables,
                 blocks: list[bytes], present: list[bool] | None = None) -> None:
    cols = list(zip(*rows, strict=True))
    tcols = tc.cols
    _encode_seqs(cols[1], tc, shifts_seq, segment, t, blocks, present)
    # Each segment's rows of this kind: segment numbers ascend with the rows.
    cuts = (np.flatnonzero(np.diff(np.fromiter(segment, np.int64, len(segment)))) + 1
            ).tolist()
    spans = [(segment[a], a, b) for a, b in zip([0, *cuts], [*cuts, len(segment)],
                                                strict=True)]
    for i, _name, ftype, how in PLANS[kind]:
        if how == DENSE and ftype == "count" and present is not None:
            _narrow(cols[i], blocks)
            continue
        if how == DENSE and ftype == "summaries" and present is not None:
            # (as many as the template's, per event: each against the template's, as a
            # summary field is; else the column as written)
            if _optional(present, list(map(len, cols[i])) != list(map(len, tcols[i]))):
                columns._encode_column(ftype, cols[i], t, blocks, [])
            else:
                _encode_summaries(list(chain.from_iterable(cols[i])),
                                  tc.flat(i), t, blocks, present, tc.memo(i))
            continue
        if how == DENSE:
            columns._encode_column(ftype, cols[i], t, blocks, [])
            continue
        if how == SUMMARY:
            _encode_summaries(cols[i], tcols[i], t, blocks, present, tc.memo(i))
            continue
        if how == SHIFTED:
            ids = ftype == "ids"
            shifts = [0] * n_segments
            col, tcol = cols[i], tcols[i]
            if col == tcol:  # (a line, a parameter's id: as in the template, compared in C)
                if _optional(present, False):
                    blocks.append(columns._swap(array("q", shifts)).tobytes())
                    blocks.append(b"")
                _sparse(ftype, col, col, t, blocks, present)
                continue
            for s, a, b in spans:
                shifts[s] = _first_shift(col[a:b], tcol[a:b], ids)
            bits, moved, other = _chosen(cols[i], tcols[i],
                                         list(map(shifts.__getitem__, segment)), ids,
                                         tc.ints(i, ids))
            if _optional(present, any(shifts)):
                blocks.append(columns._swap(array("q", shifts)).tobytes())
                blocks.append(_packed(bits))
            _sparse(ftype, cols[i], moved or (), t, blocks, present, other)
        else:
            _sparse(ftype, cols[i], tcols[i], t, blocks, present)


def _encode_seqs(seqs: Sequence[int], tc: TemplateColumns, shifts: Sequence[int],
                 segment: Sequence[int], t: columns._Tables, blocks: list[bytes],
                 present: list[bool] | None) -> None:
    """The seqs against the template's shifted by their segment's (``shifts``, by segment
    number; ``_sparse``): compared in numpy when they are plain integers far from
    int64's ends (every seq of a segment moves alike, so the mask is almost always
    empty)."""
    n = len(seqs)
    _, tv = tc.ints(1, False)
    v = _int64s(seqs) if n and tv is not None else None
    d = _int64s(shifts) if v is not None else None
    if tv is not None and v is not None and d is not None and tv.min() >= 0:
        moved = tv + d[np.fromiter(segment, np.intp, n)]
        _sparse("int", seqs, (), t, blocks, present, v != moved)
        return
    implied = _shifted(tc.cols[1], list(map(shifts.__getitem__, segment)), False)
    _sparse("int", seqs, implied, t, blocks, present)


def _narrow(col: Sequence[int], blocks: list[bytes]) -> None:
    """A column of counts (durations) in compact frames: its item size (4 when every
    count fits 32 bits, else 8), then the counts."""
    if not col or max(col) < 1 << 32:
        blocks.append(b"\x04" + np.array(col, "<u4").tobytes())
    else:
        blocks.append(b"\x08" + np.array(col, "<i8").tobytes())


def _optional(present: list[bool] | None, wanted: bool) -> bool:
    """Are an optional block's contents written? Always, but in compact frames (format 5,
    ``present``) only when ``wanted``, which is noted there."""
    if present is None:
        return True
    present.append(wanted)
    return wanted


def _sparse(ftype: str, values: Sequence[Any], implied: Sequence[Any], t: columns._Tables,
            blocks: list[bytes], present: list[bool] | None = None,
            mask: Any = None) -> None:
    """A mask of the values that differ from what is implied (``mask``, when known: a
    list or a boolean array; None: all as implied), and those values."""
    if mask is None:
        # (a whole column as its template's, compared in C first: the common case)
        mask = () if values == implied else _differs(values, implied)
    if type(mask) is np.ndarray:
        at = np.flatnonzero(mask).tolist()
    else:
        at = list(compress(range(len(mask)), mask)) if any(mask) else []
    if _optional(present, bool(at)):
        blocks.append(_packed(mask) if at else b"")
        columns._encode_column(ftype, list(map(values.__getitem__, at)), t, blocks, [])


def _encode_summaries(values: Sequence[Any], templates: Sequence[Any], t: columns._Tables,
                      blocks: list[bytes], present: list[bool] | None = None,
                      memo: dict[Any, Any] | None = None) -> None:
    """Blocks: a mask of the summaries written whole and those (format 3's summary
    column); then per form (6, 11), for the summaries of that form like their template's,
    the compared parts (mask and differing values, as ``_sparse``) and the statistics.
    ``memo``: what is made of the templates alone, kept for the next frame like this."""
    if memo is None:
        memo = {}
    # (a summary's form is its length, None's 0: ``length_hint``'s default, in C)
    forms = list(map(length_hint, values))
    tforms = memo.get("forms")
    if tforms is None:
        tforms = memo["forms"] = list(map(length_hint, templates))
    whole = [False] * len(forms) if forms == tforms else \
        list(map(int.__ne__, forms, tforms))
    if _optional(present, any(whole)):
        blocks.append(np.packbits(np.array(whole, dtype=bool)).tobytes() if any(whole)
                      else b"")
        columns._encode_column("summary", list(compress(values, whole)), t, blocks, [])
    for form in (6, 11):
        tcols = None
        if forms and forms.count(form) == len(forms) and not any(whole):  # (all: in C)
            mine, theirs = list(values), templates
            tcols = memo.get(form)
            if tcols is None:
                tcols = memo[form] = list(zip(*theirs, strict=True))
        else:
            chosen = [f == form and not w for f, w in zip(forms, whole, strict=True)] \
                if any(whole) else list(map(form.__eq__, forms))
            if present is not None and not any(chosen):
                continue  # (the reader knows there are none: compact frames skip the form)
            mine = list(compress(values, chosen))
            theirs = list(compress(templates, chosen))
        cols = list(zip(*mine, strict=True)) if mine else [()] * form
        if tcols is None:
            tcols = list(zip(*theirs, strict=True)) if theirs else [()] * form
        for k, ftype in _SUMMARY_SAME[form]:
            _sparse(ftype, cols[k], tcols[k], t, blocks, present)
        for k in _SUMMARY_FLOATS[form]:
            columns._floats(cols[k], blocks)
        if form == 11:
            previews = list(map(columns._PREVIEW_CUT, cols[_PREVIEW]))
            blocks.append(columns._swap(array("I", map(len, previews))).tobytes())
            blocks.append(columns._swap(array("d", chain.from_iterable(previews))).tobytes())
