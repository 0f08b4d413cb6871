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

The format is written and read in four modules, one concern each: ``columnlayout`` (kinds,
field types, byte order, blocks), ``columnencode`` (rows to a payload), ``columnframe``
(a payload's blocks and tables, read and checked) and ``columndecode`` (a payload to rows,
and the checks of rows against their frame's metadata). This module names them all, as
the one place the other formats and the file code refer to.
"""

from __future__ import annotations

from .columndecode import (
    _RANGE,
    _by_kind,
    _check_headers,
    _decode_payload,
    _header_columns,
    _holds_added,
    _where,
    check_rows,
    decode_payload,
    frame_iterations,
)
from .columnencode import (
    _encode_column,
    _floats,
    _summary_blocks,
    _Tables,
    encode_payload,
    table_blocks,
)
from .columnframe import _bad, _Frame, _grouped, _looked_up, _Reader, _short
from .columnlayout import (
    _ADDED_COLUMNS,
    _ATTRS_CODES,
    _BIG,
    _BLOCK,
    _HEADER_TAIL,
    _ITERATION,
    _NONE,
    _PADDED,
    _PREVIEW_CUT,
    _SCHEMA_4_COLUMNS,
    CODES,
    FIELD_TYPES,
    KINDS,
    VERSION,
    _header_width,
    _swap,
    join_blocks,
)

__all__ = [
    "CODES", "FIELD_TYPES", "KINDS", "VERSION", "_ADDED_COLUMNS", "_ATTRS_CODES", "_BIG",
    "_BLOCK", "_HEADER_TAIL", "_ITERATION", "_NONE", "_PADDED", "_PREVIEW_CUT", "_RANGE",
    "_SCHEMA_4_COLUMNS", "_Frame", "_Reader", "_Tables", "_bad", "_by_kind",
    "_check_headers", "_decode_payload", "_encode_column", "_floats", "_grouped",
    "_header_columns", "_header_width", "_holds_added", "_looked_up", "_short",
    "_summary_blocks", "_swap", "_where", "check_rows", "decode_payload", "encode_payload",
    "frame_iterations", "join_blocks", "table_blocks",
]
