"""The layout of events frames in columns (formats 2 and 3), shared by their writer and
their reader: which kinds there are and their codes, what each field is stored as, the
byte order of columns and how a payload's blocks are framed.

The format itself is described in ``columns.py`` and ``docs/trace-format.md``.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from . import events as ev
from .decoding import _CONVERT, _FIELD_TESTS

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


def join_blocks(blocks: Sequence[bytes]) -> bytes:
    """Blocks as a payload holds them: each its uint32 length, then its bytes."""
    pack = _BLOCK.pack
    return b"".join(chain.from_iterable((pack(len(b)), b) for b in blocks))


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


# Fields added to an event's columns since format 2 was first written, at the end of its
# row in the order added, with the value an older frame means (a header written before
# the numpy version was recorded names none; the header's later columns follow from its
# schema version: ``_header_columns``). A frame that does not decode is read again without
# the last one, then the last two, ...
_ADDED_COLUMNS: dict[str, tuple[tuple[str, Any], ...]] = {"header": (("numpy_version", ""),)}
