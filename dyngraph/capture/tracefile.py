"""Frames on disk and on the wire: the one encoding of the event stream.

A stream (a ``.dgtrace`` file, or the live debugger's channel) is a sequence of frames.
Each frame is a 12-byte header, then its payload::

    magic b"DG" | type: b"E" events, b"C" control | format version
    | payload length (uint32 LE) | CRC-32 of the payload (uint32 LE)

An events frame's payload starts with 24 bytes of metadata (event count, first and last
iteration, flags, first seq; so a reader can index a file without decoding it), then the
events: in typed columns (format 2, ``columns.py``: what is written), or as a UTF-8 JSON
array with one array per event, ``[kind, field, field, ...]`` in the dataclass's field
order (format 1: written before, still read, and written for a frame holding a value no
column can hold). A control frame's payload is one JSON object. Nothing runs code from
the data (no pickle, no marshal). The full description is in ``docs/trace-format.md``.

Decoding format 1 (with every field checked) is in ``decoding.py``, format 2 in
``columns.py``; reading files (``read_frames``, ``iter_events``, still importable from
here) in ``tracereader.py``.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import secrets
import stat
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from operator import attrgetter, itemgetter
from types import TracebackType
from typing import Any, BinaryIO

import numpy as np

from ..errors import TraceFileError, UserError
from . import collector, columns, templateencode, templates, templatetable
from . import events as ev
from .decoding import (  # decoding lives there; these names are still found here
    _ARRAY_KINDS,  # noqa: F401
    EVENTS_META,
    FULL_HEAD,
    STREAM,
    WHOLE,
    decode_array,
    decode_message_payload,
)
from .decoding import decode_events_payload as decode_json_payload
from .rows import Row, events_of, row_of, rows_of

MAGIC = b"DG"
_KIND = itemgetter(0)  # (a row's)
FORMAT_VERSION = columns.VERSION  # events frames in columns (``columns.py``): 3 since
# schema 3 (2 had fewer backward-step fields, still read); 1: JSON rows, still read
JSON_VERSION = 1
# Frames in columns with iteration templates (``templates.py``): written for a frame in
# which an iteration repeats an earlier one, format 3 otherwise; the newest format read.
TEMPLATE_VERSION = templates.VERSION
# Frames of a file naming its table of templates (``templatetable.py``), and template
# frames: what TraceWriter writes; the newest format read.
TABLE_VERSION = templatetable.VERSION
NEWEST_VERSION = TABLE_VERSION
# What TraceWriter writes (5: with the file's templates) and encode_rows, a frame alone,
# unless told (at most 4; 3: no templates).
WRITE_VERSION = TABLE_VERSION
EVENTS = ord("E")
CONTROL = ord("C")
TEMPLATE = templatetable.TEMPLATE  # a template frame (format 5's)
FRAME_HEADER = struct.Struct("<2sBBII")
FLAG_VALUES = 1  # the frame holds TensorValues events
MAX_FRAME = 1 << 30  # a length above this is garbage, not a frame
BATCH_EVENTS = 1024  # TraceWriter writes a frame at least this often (and at iteration ends)
# ... but at most one frame per FRAME_INTERVAL seconds at iteration ends: an iteration of a
# few dozen events (an MLP step, about a millisecond) would otherwise cost a frame each, and
# a frame's fixed cost is most of such an iteration's encoding. A process killed loses at
# most the last FRAME_INTERVAL of events. 50 ms, not 10: a templated frame's fixed cost
# (a few blocks per kind of event, written and read) is most of what its events cost, and
# at 10 ms it was a frame per two MLP steps on a busy machine (reading took twice as long).
FRAME_INTERVAL = 0.05

__all__ = [
    "FrameDecoder", "TraceWriter", "decode_array", "encode_array", "encode_events",
    "encode_message",
]


# -- numpy arrays as plain JSON ------------------------------------------------------------
def encode_array(a: np.ndarray) -> dict[str, Any]:
    """A JSON-compatible dict holding ``a`` exactly (numeric and bool dtypes).

    >>> decode_array(encode_array(np.arange(3.0))).tolist()
    [0.0, 1.0, 2.0]
    """
    a = np.asarray(a)
    if a.dtype.kind not in _ARRAY_KINDS:
        raise TypeError(f"encode_array: dtype {a.dtype} is not numeric")
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # not ascontiguousarray: it turns 0-d arrays into 1-d ones
    dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    data = a.astype(dtype, copy=False).tobytes()
    return {"__ndarray__": base64.b64encode(data).decode("ascii"), "dtype": dtype.str,
            "shape": list(a.shape)}


# -- encoding ------------------------------------------------------------------------------
_GETTERS: dict[type, Any] = {}
_KINDS: dict[type, str] = {}
for _cls in ev.EVENT_TYPES.values():
    _names = [f.name for f in fields(_cls)]
    _GETTERS[_cls] = attrgetter(*_names)
    _KINDS[_cls] = _cls.kind
_SUMMARY_GET = attrgetter(*ev.SUMMARY_FIELDS)
_CHEAP_GET = attrgetter("shape", "dtype", "norm", "nan", "inf", "sampled")
_SUMMARY_TYPES = (ev.Summary, type(ev.Summary((), "", min=0.0)))  # cheap, full


def _plain_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return encode_array(o)
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"cannot store {type(o).__name__} in a trace")


# A full summary's numbers go as one base64 string: mask (bit i set: stat i of min, max,
# mean, std, norm is None; bit 7: sampled), preview length, nan, inf, the five stats, then
# the preview, as little-endian doubles. Exact, and formatting 13 floats as JSON text costs
# about fifteen times more than packing them.
_FULL_HEAD = FULL_HEAD
_PREVIEWS = [struct.Struct(f"<{n}d") for n in range(256)]
_b64encode = base64.b64encode


_WHOLE = WHOLE


def _pack_full(o: ev.Summary) -> tuple[Any, ...]:
    mn, mx, mean, std, norm = o.min, o.max, o.mean, o.std, o.norm
    pv = o.preview
    if (mn is not None and mx is not None and mean is not None and std is not None
            and norm is not None and len(pv) < 256):  # the usual case, in one pack call
        data = _WHOLE[len(pv)].pack(128 if o.sampled else 0, len(pv), o.nan, o.inf, mn, mx,
                                    mean, std, norm, *pv)
        return (o.shape, o.dtype, _b64encode(data).decode("ascii"))
    stats = (mn, mx, mean, std, norm)
    mask = 128 if o.sampled else 0
    for i, v in enumerate(stats):
        if v is None:
            mask |= 1 << i
    preview = o.preview[:255]
    data = _FULL_HEAD.pack(mask, len(preview), o.nan, o.inf,
                           *[0.0 if v is None else v for v in stats])
    if preview:
        data += _PREVIEWS[len(preview)].pack(*preview)
    return (o.shape, o.dtype, _b64encode(data).decode("ascii"))


def _encoder(memo: dict[int, int]) -> Callable[[Any], str]:
    """A JSON encoder for one frame. A Summary object seen before in the frame is written as
    its index among the frame's summaries: a gradient's summary is shared by the backward
    step that produced it and the step or accumulation that received it."""
    summary_types, get_cheap, full = _SUMMARY_TYPES, _CHEAP_GET, _SUMMARY_TYPES[1:]

    def default(o: Any) -> Any:
        t = type(o)
        if t in summary_types:
            k = memo.get(id(o))
            if k is not None:
                return k
            memo[id(o)] = len(memo)
            return _pack_full(o) if t in full else get_cheap(o)
        return _plain_default(o)

    # check_circular=False: events hold plain, acyclic data, and skipping the id bookkeeping
    # of every list and tuple makes encoding about a fifth faster.
    return json.JSONEncoder(default=default, separators=(",", ":"), allow_nan=True,
                            check_circular=False).encode


_dumps = json.JSONEncoder(default=_plain_default, separators=(",", ":"), allow_nan=True,
                          check_circular=False).encode


def _frame(ftype: int, payload: bytes, version: int = FORMAT_VERSION) -> bytes:
    if len(payload) > MAX_FRAME:
        raise ValueError(f"frame of {len(payload)} bytes is too large")
    return FRAME_HEADER.pack(MAGIC, ftype, version, len(payload),
                             zlib.crc32(payload)) + payload


def encode_rows(rows: Sequence[Row], version: int | None = None) -> bytes:
    """One complete events frame holding the events of ``rows`` (``dyngraph.capture.rows``):
    in columns with iteration templates (format 4) when an iteration of the frame repeats
    an earlier one, else in columns (format 3; ``version=3`` never templates; the default
    is ``WRITE_VERSION``), or, for
    ``version=1`` or a value columns cannot hold (an id of 2^63 or more, a field of the
    wrong type), as JSON (format 1)."""
    if version is None:
        version = min(WRITE_VERSION, TEMPLATE_VERSION)
    flags = 0
    for r in rows:
        if r[0] == "values":
            flags = FLAG_VALUES
            break
    if version in (FORMAT_VERSION, TEMPLATE_VERSION) and rows:
        try:
            if version == TEMPLATE_VERSION:
                payload = templateencode.encode_payload(rows, flags)
                if payload is not None:
                    return _frame(EVENTS, payload, TEMPLATE_VERSION)
            return _frame(EVENTS, columns.encode_payload(rows, flags))  # (the current format)
        except (TypeError, ValueError, OverflowError, KeyError, AttributeError,
                struct.error):
            pass  # written as JSON below, which says what it cannot store
    if rows:
        meta = EVENTS_META.pack(len(rows), rows[0][2], rows[-1][2], flags, rows[0][1])
    else:
        meta = EVENTS_META.pack(0, 0, 0, 0, 0)
    return _frame(EVENTS, meta + _json_rows(rows), JSON_VERSION)


def _json_rows(rows: Sequence[Row]) -> bytes:
    """Format 1's body: a JSON array of the rows, a full summary packed (see below)."""
    out: list[Any] = []
    for row in rows:
        r: Any = row
        if r[0] == "op":  # attrs: an object (the row holds its items)
            r = (*r[:9], dict(r[9]), *r[10:])
        if r[0] in _SUMMARY_SLOTS:
            r = list(r)
            for i in _SUMMARY_SLOTS[r[0]]:
                if type(r[i]) is tuple and len(r[i]) == 11:
                    r[i] = _pack_full(_FullRow(r[i]))  # type: ignore[arg-type]
                elif r[0] == "backward_step" and i != 7:
                    r[i] = [_pack_full(_FullRow(x))  # type: ignore[arg-type]
                            if type(x) is tuple and len(x) == 11 else x for x in r[i]]
        out.append(r)
    return _dumps(out).encode()


class _FullRow:
    """A full summary row read as a Summary is (for ``_pack_full``)."""

    __slots__ = ("shape", "dtype", "min", "max", "mean", "std", "norm", "nan", "inf",
                 "preview", "sampled")

    def __init__(self, r: tuple[Any, ...]) -> None:
        (self.shape, self.dtype, self.min, self.max, self.mean, self.std, self.norm,
         self.nan, self.inf, self.preview, self.sampled) = r


# Where summaries sit in rows (``rows`` layout), by kind; a backward step's 8 holds a
# tuple of them.
_SUMMARY_SLOTS = {"op": (16,), "tensor": (9,), "grad": (5,), "backward_step": (7, 8, 12)}


Table = templatetable.Lookup  # a template by id (format 5's frames)


def decode_events_payload(payload: bytes | memoryview, position: int | None = STREAM,
                          version: int | None = None, table: Table | None = None
                          ) -> list[ev.Event]:
    """The events of an events frame's payload (metadata included), of frame format
    ``version`` (None: told from the payload itself, for callers that kept only it);
    ``table``: the templates of the frames before it (format 5)."""
    if version is None:
        version = _sniff(payload)
    if version == JSON_VERSION:
        return decode_json_payload(payload, position)
    return events_of(decode_rows_payload(payload, position, version=version, table=table))


def decode_rows_payload(payload: bytes | memoryview, position: int | None = STREAM,
                        keep: bool = False, version: int = FORMAT_VERSION,
                        table: Table | None = None) -> list[Row]:
    """The rows of a column events frame's payload (metadata included; frame format
    ``version``; ``table`` as for ``decode_events_payload``), checked against the
    metadata as ``decode_events_payload`` checks events.

    ``keep``: the rows will be kept (a trace's), so they are settled
    (``columns.decode_payload``) if the program lets the collector run at all (one that
    turned collections off gets none from us)."""
    if len(payload) < EVENTS_META.size:
        raise TraceFileError("events frame too short")
    count, lo, hi, _flags, first_seq = EVENTS_META.unpack_from(payload)
    if position is STREAM:
        lo, hi = 0, (1 << 32) - 1
    collector.pause()  # (as decoding.decode_events_payload does, for the same reason)
    try:
        settle = keep and collector.program_collects() and gc.get_threshold()[0] > 0
        if version == TABLE_VERSION:
            rows = templatetable.decode_payload(payload, lo, hi, position, table,
                                                settle=settle)
        elif version == TEMPLATE_VERSION:
            rows = templates.decode_payload(payload, lo, hi, position, settle=settle)
        else:
            rows = columns.decode_payload(payload, lo, hi, position, settle=settle,
                                          version=version)
    except RecursionError:
        raise TraceFileError("undecodable events frame (nested too deep)") from None
    finally:
        collector.resume()
    columns.check_rows(rows, count, lo, hi, first_seq, position)
    return rows


def _sniff(payload: bytes | memoryview) -> int:
    """A payload's format: columns begin with a block of one byte per event (its length
    is the event count of the metadata), JSON with ``[``."""
    if len(payload) >= EVENTS_META.size + 4 and \
            bytes(payload[EVENTS_META.size:EVENTS_META.size + 4]) == bytes(payload[:4]):
        return TEMPLATE_VERSION if templates.is_templated(payload) else FORMAT_VERSION
    return JSON_VERSION


def encode_events(events: Sequence[ev.Event]) -> bytes:
    """One complete events frame holding ``events`` (for a file or a socket)."""
    return encode_rows(rows_of(events))


def encode_events_json(events: Sequence[ev.Event]) -> bytes:
    """``encode_events`` in format 1 (JSON rows), as dyngraph wrote before format 2."""
    getters, kinds = _GETTERS, _KINDS
    rows = []
    flags = 0
    for e in events:
        cls = type(e)
        if cls is ev.TensorValues:
            flags |= FLAG_VALUES
        rows.append((kinds[cls], *getters[cls](e)))
    memo: dict[int, int] = {}
    body = _encoder(memo)(rows).encode()
    del memo  # (it held ids only; the events keep the summaries alive meanwhile)
    if events:
        meta = EVENTS_META.pack(len(rows), events[0].iteration, events[-1].iteration, flags,
                                events[0].seq)
    else:
        meta = EVENTS_META.pack(0, 0, 0, 0, 0)
    return _frame(EVENTS, meta + body, JSON_VERSION)


def encode_message(message: dict[str, Any]) -> bytes:
    """One complete control frame holding a JSON-compatible dict (never in trace files)."""
    return _frame(CONTROL, _dumps(message).encode(), JSON_VERSION)


def check_header(buf: bytes | bytearray | memoryview, pos: int = 0,
                 at: int | None = None) -> tuple[int, int]:
    """(type, length) of the frame header at ``buf[pos:]``; TraceFileError if it is not one
    of ours. Messages give ``at``, where it is in the stream (by default ``pos``)."""
    at = pos if at is None else at
    magic, ftype, version, length, _crc = FRAME_HEADER.unpack_from(buf, pos)
    if magic != MAGIC:
        raise TraceFileError(f"not a dyngraph frame at byte {at}")
    if version > NEWEST_VERSION:
        raise TraceFileError(
            f"frame format {version} is from a newer dyngraph (this one reads up to "
            f"{NEWEST_VERSION}); upgrade dyngraph"
        )
    if version < 1 or ftype not in (EVENTS, CONTROL, TEMPLATE) or length > MAX_FRAME or (
            ftype == TEMPLATE and version != TABLE_VERSION):
        raise TraceFileError(f"damaged frame header at byte {at}")
    return ftype, length


class FrameDecoder:
    """Incremental decoder for a byte stream of frames (the live channel).

    >>> d = FrameDecoder()
    >>> data = encode_message({"cmd": "step_op"})
    >>> d.feed(data[:5]), d.feed(data[5:])
    ([], [{'cmd': 'step_op'}])
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.offset = 0  # bytes consumed so far, for error messages
        self.templates = templatetable.ReaderTable()  # the stream's template frames'

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame waiting for more data."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[list[ev.Event] | dict[str, Any]]:
        buf = self._buf
        buf += data
        out: list[list[ev.Event] | dict[str, Any]] = []
        pos = 0
        size = len(buf)
        hsize = FRAME_HEADER.size
        table = self.templates
        try:
            while size - pos >= hsize:
                ftype, length = check_header(buf, pos, at=self.offset + pos)
                end = pos + hsize + length
                if end > size:
                    break
                payload = bytes(buf[pos + hsize:end])  # a copy: buf must stay resizable
                _, _, version, _, crc = FRAME_HEADER.unpack_from(buf, pos)
                if zlib.crc32(payload) != crc:
                    raise TraceFileError(
                        f"damaged frame at byte {self.offset + pos} of the stream "
                        "(checksum mismatch)")
                if ftype == EVENTS:
                    out.append(decode_events_payload(
                        payload, STREAM, version,
                        lambda id, settle: table.get(id, len(table))))  # (decoded now)
                elif ftype == TEMPLATE:  # kept for the frames that name it
                    table.add(payload, payload[:templatetable.HEAD],
                              f"at byte {self.offset + pos} of the stream")
                else:
                    out.append(decode_message_payload(payload))
                pos = end
        finally:
            del buf[:pos]
            self.offset += pos
        return out


# -- files ---------------------------------------------------------------------------
class TraceWriter:
    """Writes a trace file: the header frame at once, then frames of events as they come.

    Events are buffered and written as one frame every ``BATCH_EVENTS`` events, at an
    iteration's end (the first one at once, later ones once ``FRAME_INTERVAL`` has passed
    since the last frame) and on ``flush()``/``close()``; a process killed in between
    loses at most the unwritten tail, and the file still loads up to its last whole frame.

    The file starts as a temporary one beside the target (``.NAME.XXXXXXXX.partial``). It is
    renamed onto the target, whole (the header and at least one frame), as soon as a frame
    holds something recorded: an op, a tensor, a backward step ... (output, an exception and
    the run's end alone do not count); from then on frames are appended to the target itself,
    so a process killed later leaves the target loadable up to its last whole frame. An
    existing trace is thus replaced only by a run that recorded something, never by a run
    that failed at its import: ``close(keep_existing=True)`` then keeps the old one (and
    without it, the new file still replaces it at ``close()``). The target must be a new
    file, an empty one or a trace (``check_target``): a script or a document is never
    overwritten.

    A write that fails (a full disk) raises the OSError once; the frames written before it
    stay whole (a partly written frame is cut off again) and ``close()`` keeps them, so a
    readable prefix survives.

    >>> from dyngraph.capture.tracing import make_header    # doctest: +SKIP
    >>> with TraceWriter("run.dgtrace", make_header()) as w:    # doctest: +SKIP
    ...     w.write(events)
    """

    # Events that alone do not make a recording worth replacing an earlier trace with.
    _NOT_RECORDED = frozenset(("header", "output", "exception", "run_end", "breakpoint"))

    def __init__(self, path: str | os.PathLike[str], header: ev.Header,
                 batch: int = BATCH_EVENTS) -> None:
        self.path = os.fspath(path)
        self._target = self.check_target(self.path)
        # a trace was there before (an empty file holds nothing worth keeping)
        self.replaces = os.path.isfile(self._target) and os.path.getsize(self._target) > 0
        self.kept_existing = False  # close() left that old trace in place
        self.in_place = False  # renamed onto the target: frames now go to it directly
        self.error: OSError | None = None  # the write that failed, if one did
        # Unbuffered: each frame reaches the OS whole at once, so a killed process leaves
        # every frame it finished.
        self.partial_path, file = self._open_partial(self._target)
        self._file: BinaryIO | None = file
        self._pending: list[Row] = []
        self._batch = batch
        self.events_written = 0
        self.bytes_written = 0
        self._last_write = time.monotonic()
        # The file's iteration templates (format 5), unless told to write an older format.
        self._table = templatetable.WriterTable() if WRITE_VERSION == TABLE_VERSION \
            else None
        try:
            self._write_frame([row_of(header)])
        except OSError as exc:
            self.discard()
            raise UserError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    # -- where it writes -----------------------------------------------------------------
    @staticmethod
    def check_target(path: str | os.PathLike[str], script: str | None = None) -> str:
        """The real path a trace for ``path`` will be written to; UserError (one line) if
        writing there could destroy something other than a dyngraph trace.

        Refused: an empty name, a directory, anything but a regular file (a FIFO, a
        device; ``/dev/null`` is written to as such), the running ``script`` itself (also
        through a symlink or a hard link), and any non-empty file that does not begin with
        a trace's signature. A symlink to a trace is followed: the trace it points to is
        replaced, the link stays.
        """
        name = os.fspath(path)
        if not name:
            raise UserError("no trace file name given")
        real = os.path.realpath(name)
        parent = os.path.dirname(real)
        if not os.path.isdir(parent):
            raise UserError(f"cannot write {name}: directory {parent} does not exist")
        max_name = os.pathconf(parent, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
        if len(os.fsencode(os.path.basename(real))) > max_name:
            raise UserError(f"cannot write {name[:60]}...: the file name is longer than "
                            f"{max_name} bytes")
        try:
            st = os.stat(real)
        except FileNotFoundError:
            return real
        except OSError as exc:
            raise UserError(f"cannot write {name}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{name} is a directory: give a trace file name")
        if real == os.devnull:
            return real  # a run whose trace nobody wants
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{name} is not a regular file: refusing to write a trace to it")
        if script is not None and TraceWriter._same_file(st, script):
            raise UserError(f"{name} is the script itself: refusing to overwrite it "
                            "with its trace")
        if st.st_size and not TraceWriter._is_trace(real):
            raise UserError(f"{name} exists and is not a dyngraph trace: refusing to "
                            "overwrite it (remove it or choose another name)")
        return real

    @staticmethod
    def _is_trace(path: str) -> bool:
        """Does the file begin with a trace's signature (a frame header's first bytes)?"""
        try:
            with open(path, "rb") as f:
                head = f.read(4)
        except OSError:
            return False
        return head[:2] == MAGIC and len(head) >= 4 and head[2] == EVENTS

    @staticmethod
    def _open_partial(target: str) -> tuple[str, BinaryIO]:
        """A new temporary file beside ``target`` (same directory: the rename stays on one
        file system and is atomic), with the mode open() would give a new file."""
        if target == os.devnull:
            return target, open(target, "wb", buffering=0)  # noqa: SIM115
        folder, base = os.path.split(target)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        for _ in range(100):
            # base cut short: the target's name may be as long as the system allows
            partial = os.path.join(folder, f".{base[:100]}.{secrets.token_hex(4)}.partial")
            try:
                fd = os.open(partial, flags, 0o666)
            except FileExistsError:
                continue
            except OSError as exc:
                raise UserError(f"{target}: cannot write a trace here "
                                f"({exc.strerror or exc})") from None
            return partial, open(fd, "wb", buffering=0)  # noqa: SIM115
        raise UserError(f"{target}: cannot create a temporary file beside it")

    @staticmethod
    def _same_file(st: os.stat_result, script: str) -> bool:
        try:
            other = os.stat(script)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)

    @staticmethod
    def _remove(path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    # -- writing -------------------------------------------------------------------------
    def _write_frame(self, events: Sequence[Row]) -> None:
        assert self._file is not None
        if self.error is not None:
            return  # the disk refused a frame: later ones would make a gap, not a trace
        data = self._encode(events)
        view = memoryview(data)
        try:
            while view:  # a raw write may take only part of it
                view = view[self._file.write(view) or 0:]
        except OSError as exc:
            self._failed(exc)
            raise
        self.events_written += len(events)
        self.bytes_written += len(data)
        self._last_write = time.monotonic()
        if not self.in_place and self.events_written > 1 and self._records(events):
            self._move_in_place()

    def _encode(self, rows: Sequence[Row]) -> bytes:
        """The frames of ``rows``: with the file's templates, the template frames they
        make first, then an events frame that names them (format 5; format 3 when no
        iteration follows a template, or ``encode_rows``'s choice for a value columns
        cannot hold)."""
        # The collector paused while a frame is encoded (as ``decode_rows_payload`` does):
        # transposing rows into columns (``zip(*rows)``) makes an iterator per row, and
        # each few hundred of those ran a collection over the young rows of the
        # recording (a 1,000-op chain's templated frame cost twice what it does paused).
        # Encoding makes no cycles; the program's own collection comes at the next
        # allocation after, as it would have.
        with collector.paused():
            return self._encode_rows(rows)

    def _encode_rows(self, rows: Sequence[Row]) -> bytes:
        table = self._table
        if table is None or not rows:
            return encode_rows(rows)
        flags = FLAG_VALUES if "values" in map(_KIND, rows) else 0
        made: list[bytes] = []
        payload = None
        try:
            # (eager: the file's first recorded frame, written at once, holds its first
            # iteration alone)
            payload = table.encode(rows, flags, made, eager=not self.in_place)
        except (TypeError, ValueError, OverflowError, KeyError, AttributeError,
                struct.error):
            pass  # in full, below (the template frames made are written all the same)
        frames = [_frame(TEMPLATE, p, TABLE_VERSION) for p in made]
        if payload is None:
            frames.append(encode_rows(rows, FORMAT_VERSION))
        else:
            frames.append(_frame(EVENTS, payload, TABLE_VERSION))
        return b"".join(frames)

    @staticmethod
    def _records(rows: Sequence[Row]) -> bool:
        """Does the frame hold anything recorded, more than output and how the run ended?"""
        return any(r[0] not in TraceWriter._NOT_RECORDED for r in rows)

    def _move_in_place(self) -> None:
        """Rename the file (still open, still written to) onto the target."""
        try:
            self._commit(last_try=False)
        except UserError:
            return  # close() tries again, and says why it cannot
        self.in_place = True

    def _failed(self, exc: OSError) -> None:
        """Cut a partly written frame off again, so the file ends at its last whole frame."""
        self.error = exc
        try:
            assert self._file is not None
            os.ftruncate(self._file.fileno(), self.bytes_written)
        except OSError:
            pass  # a reader stops at the partial frame anyway

    def write(self, events: Iterable[ev.Event]) -> None:
        """Queue events; full batches and finished iterations are written out."""
        if self._file is None:
            raise ValueError(f"TraceWriter for {self.path} is closed")
        for e in events:
            self._pending.append(row_of(e))
            if len(self._pending) >= self._batch or (type(e) is ev.IterationEnd
                                                     and self._due()):
                self._write_pending()

    def add(self, event: ev.Event) -> None:
        """Queue one event (usable directly as a tracer subscriber)."""
        pending = self._pending
        pending.append(row_of(event))
        if len(pending) >= self._batch or (type(event) is ev.IterationEnd and self._due()):
            self._write_pending()

    def take(self, rows: Sequence[Row], at_once: bool = False) -> None:
        """Queue a batch of rows (a tracer sink: the tracer hands them over at iteration
        ends and every ``BATCH_EVENTS``), written as ``write`` writes events; ``at_once``:
        write them now, as a frame of their own."""
        if self._file is None:
            raise ValueError(f"TraceWriter for {self.path} is closed")
        pending = self._pending
        pending += rows
        if at_once or len(pending) >= self._batch or self._due():
            self._write_pending()

    def _due(self) -> bool:
        """Is a frame due at an iteration's end? The first recorded one at once (it puts
        the file in place), later ones once ``FRAME_INTERVAL`` has passed."""
        return not self.in_place or time.monotonic() - self._last_write >= FRAME_INTERVAL

    def _write_pending(self) -> None:
        # Taken off the queue before writing: whatever interrupts the write (a full disk,
        # a KeyboardInterrupt after the frame reached the file), the frame is never written
        # a second time by a later flush.
        pending, self._pending = self._pending, []
        self._write_frame(pending)

    def flush(self) -> None:
        if self._file is None:
            return
        if self._pending:
            self._write_pending()
        self._file.flush()

    def close(self, keep_existing: bool = False) -> None:
        """Write what is queued and rename the file onto the target.

        ``keep_existing``: if a trace was there before, leave it and discard this one.
        A failed write is not raised again here: what was written before it is kept.
        """
        if self._file is None:
            return
        try:
            try:
                self.flush()
            except OSError:
                pass  # already recorded in self.error, and the prefix is whole
        finally:
            self._file.close()
            self._file = None
            if self.in_place:
                pass
            elif keep_existing and self.replaces and self.partial_path != self._target:
                self.kept_existing = True
                self._remove(self.partial_path)
            else:
                self._commit()

    def _commit(self, last_try: bool = True) -> None:
        """Rename the temporary file onto the target; UserError if that fails (and, on the
        ``last_try``, the temporary file is removed: nothing will write to it again)."""
        if self.partial_path == self._target:
            return  # /dev/null, written to directly
        try:
            if self.replaces:  # the old trace's permissions, not the umask's
                try:
                    os.chmod(self.partial_path, stat.S_IMODE(os.stat(self._target).st_mode))
                except FileNotFoundError:
                    pass  # removed meanwhile: the umask's, then
            os.replace(self.partial_path, self._target)
        except OSError as exc:
            if last_try:
                self._remove(self.partial_path)
            raise UserError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def discard(self) -> None:
        """Stop without touching the target: the temporary file is removed."""
        if self._file is not None:
            self._file.close()
            self._file = None
            if self.partial_path != self._target and not self.in_place:
                self._remove(self.partial_path)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def __getattr__(name: str) -> Any:
    # The file readers live in tracereader.py, which imports this module; they are still
    # reachable here, where they always were.
    if name in ("FrameRef", "read_frames", "iter_events"):
        from . import tracereader

        return getattr(tracereader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
