"""Writing events frames in columns (formats 2 and 3): a batch of rows turned into typed
columns and per-frame tables (strings, shapes, attribute dicts, summaries), each value once.

The layout is ``columnlayout.py``'s; reading it back is ``columnframe.py`` and
``columndecode.py``'s (see ``columns.py`` for the whole format).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence
from itertools import chain, compress
from operator import itemgetter
from typing import Any

import numpy as np

from .columnlayout import (
    _NONE,
    _PREVIEW_CUT,
    CODES,
    FIELD_TYPES,
    _header_width,
    _swap,
    join_blocks,
)
from .decoding import _ARRAY_KINDS, _MAX_DIMS, EVENTS_META
from .rows import Row


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
