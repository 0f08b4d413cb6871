"""Reading trace files: index the frames of a file, or stream its events.

A trace may come from a stranger, so reading trusts nothing in it:

- only a regular file is opened (a FIFO would block the reader, ``/dev/zero`` never
  ends), and its first bytes must be a frame's signature before anything else is read;
- the file is read a chunk at a time, never whole: ``read_frames`` keeps, per frame, its
  place in the file and its metadata, and a frame's bytes are read again (from the same
  open file, so a trace replaced meanwhile still reads as it was) when it is decoded.
  Memory is bounded by the events actually decoded, not by the file's size;
- frame metadata is checked against the frames around it at once, and against its own
  events when they are decoded (``decoding.decode_events_payload``);
- a frame that runs past the end of the file is told apart: the last frame of a file cut
  short (a killed recording: the frames before it load, with a warning), or a corrupt
  length in the middle (whole frames follow it: "corrupt frame at byte N", with what was
  kept).

Every refusal is a ``TraceFileError`` of one line: the file, the problem and its byte.
"""

from __future__ import annotations

import os
import stat
import sys
import warnings
import weakref
import zlib
from collections.abc import Callable, Iterator
from types import FrameType
from typing import BinaryIO

from ..errors import TraceFileError, TraceFileWarning
from . import columns, templates, templatetable
from . import events as ev
from .decoding import EVENTS_META, FIRST_FRAME, LATER_FRAME
from .rows import Row, rows_of
from .tracefile import (
    EVENTS,
    FORMAT_VERSION,
    FRAME_HEADER,
    JSON_VERSION,
    MAGIC,
    NEWEST_VERSION,
    TABLE_VERSION,
    TEMPLATE,
    TEMPLATE_VERSION,
    check_header,
    decode_events_payload,
    decode_rows_payload,
)

CHUNK = 1 << 20  # bytes read at a time
_HSIZE = FRAME_HEADER.size
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _error(name: str, problem: str) -> TraceFileError:
    return TraceFileError(f"{name}: {problem}")


def not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file ("a FIFO"), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _open(name: str, buffering: int = CHUNK) -> BinaryIO:
    """The trace file ``name`` opened for reading; TraceFileError unless a regular file."""
    try:
        what = not_regular(os.stat(name).st_mode)  # before opening: opening a FIFO blocks
        if what is None:
            # O_NONBLOCK: should a FIFO take the file's place after the check, opening it
            # still returns at once (the check below then refuses it).
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        raise _error(name, "no such file") from None
    except OSError as exc:
        raise _error(name, f"cannot read ({exc.strerror or exc})") from None
    if what is None:
        what = not_regular(os.fstat(fd).st_mode)
        if what is not None:
            os.close(fd)
    if what is not None:
        raise _error(name, f"is {what}, not a trace file")
    return open(fd, "rb", buffering=max(buffering, 1))  # noqa: SIM115


def warn(message: str) -> None:
    """A TraceFileWarning attributed to the first caller outside dyngraph (the user's
    ``read_trace`` line, not one of ours)."""
    level = 2  # (stacklevel 2: warn's caller)
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, TraceFileWarning, stacklevel=level)


# -- the open file behind a trace ----------------------------------------------------------
class _File:
    """The open file frames are read from again when decoded; closed when unused."""

    def __init__(self, name: str, f: BinaryIO) -> None:
        self.name = name
        self.fd = os.dup(f.fileno())
        self.close = weakref.finalize(self, os.close, self.fd)

    def read(self, offset: int, length: int) -> bytes:
        data = b""
        while len(data) < length:  # (a read may return part; an empty one means EOF)
            try:
                more = os.pread(self.fd, length - len(data), offset + len(data))
            except OSError as exc:
                raise _error(self.name, f"cannot read ({exc.strerror or exc})") from None
            if not more:
                raise _error(self.name, f"changed since it was opened (the frame at byte "
                                        f"{offset - _HSIZE} is gone)")
            data += more
        return data


class FrameRef:
    """An events frame of a file: where it is and what its metadata says, not decoded."""

    __slots__ = ("count", "first_iteration", "last_iteration", "flags", "first_seq",
                 "offset", "length", "position", "file", "version", "table", "known")

    def __init__(self, meta: bytes, offset: int, length: int, position: int,
                 file: _File | None, version: int = FORMAT_VERSION,
                 table: templatetable.ReaderTable | None = None) -> None:
        self.version = version  # the frame format: 3 (2 before schema 3) columns, 1 JSON
        (self.count, self.first_iteration, self.last_iteration, self.flags,
         self.first_seq) = EVENTS_META.unpack_from(meta)
        self.offset = offset  # of the frame header
        self.length = length  # of the payload
        self.position = position  # FIRST_FRAME or LATER_FRAME
        self.file = file
        # The file's iteration templates (format 5), of which the frames before this one
        # held the first ``known``.
        self.table = table
        self.known = 0 if table is None else len(table)

    def templates(self, id: int, settle: bool = False) -> templatetable.Template:
        """Template ``id`` of the file, as this frame may name it."""
        if self.table is None:
            raise TraceFileError(f"events frame names iteration template {id}, which no "
                                 "frame before it holds")
        return self.table.get(id, self.known, settle)

    def decode(self) -> list[ev.Event]:
        """The frame's events; TraceFileError naming the file and the frame's byte."""
        assert self.file is not None, "a streamed frame is decoded as it is read"
        payload = self.file.read(self.offset + _HSIZE, self.length)
        try:
            return decode_events_payload(payload, self.position, self.version,
                                         self.templates)
        except TraceFileError as exc:
            raise _error(self.file.name, f"{exc} (in the frame at byte {self.offset})"
                         ) from None

    def rows(self) -> list[Row]:
        """The frame's rows (``dyngraph.capture.rows``), without building events when the
        frame is in columns; TraceFileError as for ``decode``."""
        if self.version == JSON_VERSION:
            return rows_of(self.decode())
        assert self.file is not None, "a streamed frame is decoded as it is read"
        payload = self.file.read(self.offset + _HSIZE, self.length)
        try:
            return decode_rows_payload(payload, self.position, keep=True,
                                       version=self.version, table=self.templates)
        except TraceFileError as exc:
            raise _error(self.file.name, f"{exc} (in the frame at byte {self.offset})"
                         ) from None

    def check_after(self, name: str, previous: FrameRef | None) -> None:
        """Refuse metadata that cannot describe this frame's events, before any decoding:
        a count too big for its bytes, a backwards iteration range, iterations or seqs
        that go back from the frame before."""
        at = f"(the frame at byte {self.offset})"
        # An event takes at least 2 bytes; 1 in format 5 (its kind: a segment may be
        # its template's rows as they are)
        if self.count * (1 if self.version == TABLE_VERSION else 2) > \
                self.length - EVENTS_META.size:
            raise _error(name, f"events frame says it holds {self.count:,} events in "
                               f"{self.length:,} bytes {at}")
        if self.first_iteration > self.last_iteration:
            raise _error(name, f"events frame says iterations {self.first_iteration}.."
                               f"{self.last_iteration} {at}")
        if previous is None:
            return
        # (Iteration 0 is setup's, and the header's: a second header is refused where
        # the frame is decoded, ``columns._check_headers``.)
        if self.first_iteration < previous.last_iteration:
            raise _error(name, f"events frame goes back from iteration "
                               f"{previous.last_iteration} to {self.first_iteration} {at}")
        if self.first_seq < previous.first_seq + previous.count:
            raise _error(name, f"events frame goes back to seq {self.first_seq} {at}")

    def iterations(self) -> list[int]:
        """The iterations this frame holds events of (the header's excluded).

        A frame of one iteration (``TraceWriter`` writes one at every iteration end and
        every 1,024 events) says so in its metadata, which decoding checks against its
        events. Any other frame is decoded here to see which iterations it really holds:
        metadata may claim a range of four billion, and an iteration that appears nowhere
        but in metadata would be a phantom. Frames of the first kind are the rule, so this
        costs a normal file nothing; a crafted one pays for the events it holds.
        """
        lo, hi = self.first_iteration, self.last_iteration
        if self.position == FIRST_FRAME:
            if self.count == 1:
                return []  # the header alone, as written
        elif lo == hi:
            return [lo]
        if self.version == JSON_VERSION:
            return sorted({e.iteration for e in self.decode() if type(e) is not ev.Header})
        # A column frame (the writer makes one of several iterations every 50 ms): its
        # iterations column says, read without decoding the rest.
        assert self.file is not None
        payload = self.file.read(self.offset + _HSIZE, self.length)
        try:
            if self.version == TABLE_VERSION:
                found = templatetable.frame_iterations(payload, lo, hi)
            elif self.version == TEMPLATE_VERSION:
                found = templates.frame_iterations(payload, lo, hi)
            else:
                found = columns.frame_iterations(payload, lo, hi)
        except TraceFileError as exc:
            raise _error(self.file.name, f"{exc} (in the frame at byte {self.offset})"
                         ) from None
        if self.position == FIRST_FRAME:
            found = found[1:]  # (the header's; decoding checks that it is one)
        return list(dict.fromkeys(found))


# -- walking a file's frames ---------------------------------------------------------------
class _Walk:
    """Goes through a file frame by frame, checking each header, checksum and metadata.

    Iterating yields ``(FrameRef, payload)`` (payload None unless ``keep``); afterwards
    ``ending`` says how the file ended if not cleanly, as a warning's text.
    """

    def __init__(self, name: str, f: BinaryIO, keep: bool, file: _File | None) -> None:
        self.name, self.f, self.keep, self.file = name, f, keep, file
        self.ending: str | None = None
        self.events = 0  # in the frames walked so far
        self.frames = 0
        self.empty: list[int] = []  # offsets of empty events frames (ignored)
        self.table = templatetable.ReaderTable()  # the template frames met (format 5)

    def __iter__(self) -> Iterator[tuple[FrameRef, bytes | None]]:
        name, read = self.name, self.f.read
        head = read(_HSIZE)
        if not head:
            raise _error(name, "empty file, not a dyngraph trace")
        if head[:2] != MAGIC[:len(head)]:
            raise _error(name, "not a dyngraph trace (unknown file signature)")
        pos, previous = 0, None
        size = os.fstat(self.f.fileno()).st_size
        while head:
            if len(head) < _HSIZE:
                self._cut_short(pos, len(head))
                return
            try:
                ftype, length = check_header(head, 0, at=pos)
            except TraceFileError as exc:
                raise _error(name, str(exc)) from None
            end = pos + _HSIZE + length
            if end > size:
                size = os.fstat(self.f.fileno()).st_size  # a file still being written grows
                if end > size:
                    self._past_end(pos, length, size)
                    return
            payload, crc, meta = self._payload(length)
            if payload is None and len(meta) < min(length, EVENTS_META.size):
                self._cut_short(pos, size - pos)  # (the file shrank meanwhile)
                return
            if crc != FRAME_HEADER.unpack(head)[4]:
                raise _error(name, f"damaged frame at byte {pos} (checksum mismatch)")
            if ftype == TEMPLATE and previous is not None:
                self._template(payload, meta, pos, length)
                pos = end
                head = read(_HSIZE)
                continue
            if ftype != EVENTS or length < EVENTS_META.size:
                raise _error(name, f"damaged frame at byte {pos} (not an events frame)")
            position = LATER_FRAME if previous is not None else FIRST_FRAME
            ref = FrameRef(meta, pos, length, position, self.file, head[3],
                           self.table if self.table else None)
            if ref.count == 0:
                self.empty.append(pos)  # holds nothing: nothing to refuse either
            else:
                ref.check_after(name, previous)
                previous = ref
                self.events += ref.count
                self.frames += 1
                yield ref, payload
            pos = end
            head = read(_HSIZE)
        if self.frames == 0:
            raise _error(name, "no events in the file (every frame is empty)")

    def _template(self, payload: bytes | None, meta: bytes, pos: int, length: int) -> None:
        """A template frame: kept for the frames after it (a file's read again when
        first needed)."""
        source: bytes | Callable[[], bytes]
        if payload is not None:
            source = payload
        else:
            file = self.file
            assert file is not None

            def source() -> bytes:
                return file.read(pos + _HSIZE, length)
        try:
            self.table.add(source, meta, f"at byte {pos}")
        except TraceFileError as exc:
            raise _error(self.name, str(exc)) from None

    def _payload(self, length: int) -> tuple[bytes | None, int, bytes]:
        """(payload if kept, its CRC, its first bytes), reading a chunk at a time so a
        frame that is not kept never sits in memory whole."""
        read = self.f.read
        if self.keep or length <= CHUNK:
            data = read(length)
            if len(data) < length:
                return None, -1, b""
            return (data if self.keep else None), zlib.crc32(data), data[:templatetable.HEAD]
        crc, meta, left = 0, b"", length
        while left:
            chunk = read(min(left, CHUNK))
            if not chunk:
                return None, -1, b""
            crc = zlib.crc32(chunk, crc)
            meta = meta or chunk[:templatetable.HEAD]
            left -= len(chunk)
        return None, crc, meta

    def _cut_short(self, pos: int, pending: int) -> None:
        if self.frames == 0:
            raise _error(self.name, "trace cut short before its first complete frame")
        self.ending = (f"{self.name}: trace cut short at byte {pos} ({pending:,} bytes of an "
                       f"incomplete frame at the end); kept the {self.events:,} events "
                       "before it")

    def _past_end(self, pos: int, length: int, size: int) -> None:
        """The frame at ``pos`` says it runs past the end of the file: the last frame of a
        file cut short, unless a whole frame follows (then its length is corrupt)."""
        follows = _next_frame(self.f, pos + _HSIZE, size)
        if follows is None:
            self._cut_short(pos, size - pos)
            return
        if self.frames == 0:
            raise _error(self.name, f"corrupt frame at byte {pos} (its length runs past the "
                                    f"end of the file, yet a whole frame follows at byte "
                                    f"{follows})")
        self.ending = (f"{self.name}: corrupt frame at byte {pos} (its length, {length:,} "
                       f"bytes, runs past the end of the file, yet a whole frame follows at "
                       f"byte {follows}); kept the {self.events:,} events of the "
                       f"{self.frames:,} frames before it, ignored the {size - pos:,} bytes "
                       "from there on")


def _next_frame(f: BinaryIO, start: int, size: int) -> int | None:
    """The offset of the first whole, checksum-valid frame at or after ``start``, if any.
    (A match inside a payload, possible in binary columns, is a coincidence that the
    checksum of the frame it would begin then rules out.)"""
    fd = f.fileno()
    signature = MAGIC + bytes([EVENTS])
    at = start
    while at < size:
        chunk = os.pread(fd, CHUNK + len(signature) + 1, at)
        i = chunk.find(signature)
        while i >= 0:
            if i + 3 < len(chunk) and chunk[i + 3] in _VERSIONS and \
                    _whole_frame_at(fd, at + i, size):
                return at + i
            i = chunk.find(signature, i + 1)
        at += CHUNK
    return None


_VERSIONS = range(JSON_VERSION, NEWEST_VERSION + 1)  # every frame format there is


def _whole_frame_at(fd: int, pos: int, size: int) -> bool:
    head = os.pread(fd, _HSIZE, pos)
    if len(head) < _HSIZE:
        return False
    try:
        _, length = check_header(head)
    except TraceFileError:
        return False
    if pos + _HSIZE + length > size:
        return False
    crc, done = 0, 0
    while done < length:
        chunk = os.pread(fd, min(CHUNK, length - done), pos + _HSIZE + done)
        if not chunk:
            return False
        crc = zlib.crc32(chunk, crc)
        done += len(chunk)
    return crc == FRAME_HEADER.unpack(head)[4]


def _reading(name: str, walk: _Walk) -> Iterator[tuple[FrameRef, bytes | None]]:
    """``walk``'s frames, an I/O error (or a file like /proc/self/mem) a TraceFileError."""
    frames = iter(walk)
    while True:
        try:
            item = next(frames, None)
        except OSError as exc:
            raise _error(name, f"cannot read ({exc.strerror or exc})") from None
        if item is None:
            return
        yield item


def _warn_ending(walk: _Walk) -> None:
    if walk.empty:
        warn(f"{walk.name}: ignored {len(walk.empty)} empty events frame"
             f"{'s' * (len(walk.empty) > 1)} (the first at byte {walk.empty[0]})")
    if walk.ending:
        warn(walk.ending)


# -- the public readers --------------------------------------------------------------------
def read_frames(path: str | os.PathLike[str]) -> tuple[ev.Header, list[FrameRef]]:
    """Index a trace file: its header and its events frames (payloads not decoded).

    Reads the file once, a chunk at a time (checksums and metadata), and keeps it open for
    decoding frames later. A file cut short or with a corrupt frame yields the whole frames
    before it, with a TraceFileWarning; anything else wrong raises TraceFileError naming the
    file, the problem and its byte.
    """
    name = os.fspath(path)
    with _open(name) as f:
        file = _File(name, f)
        try:
            walk = _Walk(name, f, keep=False, file=file)
            frames = [ref for ref, _ in _reading(name, walk)]
            header = header_of(name, frames[0].decode())
        except BaseException:
            # Now, not when the garbage collector gets to it: a refused file's traceback
            # keeps the frames (and so this descriptor) alive, and a process that opens
            # many bad files would run out of descriptors.
            file.close()
            raise
    _warn_ending(walk)
    return header, frames


def header_of(name: str, first: list[ev.Event]) -> ev.Header:
    """The header that begins a file's first frame, checked."""
    if not first or type(first[0]) is not ev.Header:
        raise _error(name, "damaged trace (it does not begin with a header)")
    header = first[0]
    version = header.schema_version
    if type(version) is not int or version < 1:  # (type: a bool is an int too)
        raise _error(name, f"damaged header (schema version {version!r})")
    if version > ev.SCHEMA_VERSION:
        raise _error(
            name,
            f"written by a newer dyngraph ({header.dyngraph_version or '?'}, trace schema "
            f"{version}; this dyngraph reads up to schema {ev.SCHEMA_VERSION}); "
            "upgrade dyngraph to open it",
        )
    return header


def iter_events(path: str | os.PathLike[str], chunk_size: int = CHUNK) -> Iterator[ev.Event]:
    """Stream the events of a trace file, header first, a frame at a time.

    Memory stays at about one frame. Problems are reported as by ``read_trace``:
    TraceFileError naming the file, or a TraceFileWarning for a file cut short.
    """
    name = os.fspath(path)
    with _open(name, chunk_size) as f:
        walk = _Walk(name, f, keep=True, file=None)
        for ref, payload in _reading(name, walk):
            try:
                events = decode_events_payload(payload, ref.position,  # type: ignore[arg-type]
                                               ref.version, ref.templates)
            except TraceFileError as exc:
                raise _error(name, f"{exc} (in the frame at byte {ref.offset})") from None
            if ref.position == FIRST_FRAME:
                header_of(name, events)
            yield from events
            del events, payload  # before the next frame is decoded
    _warn_ending(walk)
