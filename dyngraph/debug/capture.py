"""Capture the script's stdout and stderr in its own process, down to the file descriptors.

Python-level writes (``print``, logging, warnings) reach ``CapturedStream`` objects that
hand the text over at once, in the writing thread, so they keep their exact place among
the op events. Writes straight to fd 1 and 2 (C code, ``os.write``, subprocesses that
inherit the fds) land in pipes that are drained before every Python-level write and by the
agent's pump thread, so all output stays in the order it was written per stream.
"""

from __future__ import annotations

import codecs
import fcntl
import io
import os
import sys
import threading
from collections.abc import Callable

from .channel import readable
from .watchdog import Busy

Emit = Callable[[str, str], None]  # (stream, text)
Written = Callable[[str], None]  # (text)


class CapturedStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` inside the debugged script."""

    def __init__(self, capture: OutputCapture, name: str, fd: int) -> None:
        super().__init__()
        self._capture = capture
        self._name = name
        self._fd = fd
        self.buffer = _BinaryView(self)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"<{self._name}>"

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "replace"

    line_buffering = True

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._capture.write(self._name, text)
        return len(text)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd

    def flush(self) -> None:
        pass

    def close(self) -> None:  # scripts that close sys.stdout must not break capture
        pass


class _BinaryView(io.RawIOBase):
    """``sys.stdout.buffer``: bytes are decoded and go the same way as text."""

    def __init__(self, stream: CapturedStream) -> None:
        super().__init__()
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        text = self._decoder.decode(bytes(data))
        if text:
            self._stream.write(text)
        return len(data)


class OutputCapture:
    """Redirect fds 1 and 2 into pipes and ``sys.stdout``/``sys.stderr`` into ``emit``.

    ``emit(stream, text)`` is called with the capture lock held, in the order the script
    wrote: it must only queue the text, never wait for anything (another thread may be
    waiting for the capture lock while holding what ``emit`` would wait for).
    ``written(text)`` is called after the lock is let go, to send what was queued.
    ``fds`` are the pipes' read ends for a ``poll`` in the pump thread, which calls
    ``drain()``.

    The lock is reentrant: a finalizer that the collector runs while this thread is
    inside ``write`` (allocating) prints here again. Such a nested write does not drain
    the pipes (the outer one is in the middle of that), so nothing is reordered.
    """

    def __init__(self, emit: Emit, written: Written | None = None,
                 busy: Busy | None = None) -> None:
        self._emit = emit
        self._written = written
        self._busy = busy or Busy()
        self._draining = False
        self._stopped = False
        self._lock = threading.RLock()
        self._pipes: dict[int, tuple[str, int]] = {}
        self._decoders: dict[str, codecs.IncrementalDecoder] = {}
        self._saved: list[tuple[int, int]] = []
        self._saved_streams: tuple[object, ...] = ()
        self.fds: tuple[int, ...] = ()

    def start(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, name in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()
            fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK)
            self._saved.append((fd, os.dup(fd)))
            os.dup2(w, fd)
            os.close(w)
            self._pipes[r] = (name, fd)
            self._decoders[name] = codecs.getincrementaldecoder("utf-8")("replace")
        self.fds = tuple(self._pipes)
        self._saved_streams = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
        sys.stdout = sys.__stdout__ = CapturedStream(self, "stdout", 1)  # type: ignore
        sys.stderr = sys.__stderr__ = CapturedStream(self, "stderr", 2)  # type: ignore

    def write(self, stream: str, text: str) -> None:
        if self._stopped:  # (a logging handler that kept the stream, a finalizer at exit)
            original = self._saved_streams[0 if stream == "stdout" else 1]
            try:
                original.write(text)  # type: ignore[attr-defined]
            except (OSError, ValueError):
                pass
            return
        token = self._busy.begin("a write of the script's output")
        try:
            with self._lock:
                drained = self._drain_locked()
                self._emit(stream, text)
        finally:
            self._busy.end(token)
        if self._written is not None:
            self._written(drained or text)

    def drain(self) -> None:
        """Hand over whatever C-level output is waiting in the pipes (never blocks)."""
        with self._lock:
            drained = self._drain_locked()
        if drained and self._written is not None:
            self._written(drained)

    def _drain_locked(self) -> str:
        """Emit what the pipes hold; returns a newline if any line was emitted, else ""."""
        if self._draining:
            return ""
        self._draining = True
        try:
            return self._drain_pipes()
        finally:
            self._draining = False

    def _drain_pipes(self) -> str:
        try:  # one cheap syscall when, as usual, nothing is waiting
            ready = readable(self.fds, 0)
        except OSError:
            return ""
        newline = ""
        for r in ready:
            name = self._pipes[r][0]
            while True:
                try:
                    data = os.read(r, 65536)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                if not data:
                    break
                text = self._decoders[name].decode(data)
                if text:
                    self._emit(name, text)
                    if "\n" in text:
                        newline = "\n"
        return newline

    def detach(self) -> None:
        """In a forked worker: let go of the pipes' read ends (the parent process drains
        them; the worker must never take output out of them)."""
        for r in self._pipes:
            try:
                os.close(r)
            except OSError:
                pass
        self._pipes.clear()
        self.fds = ()
        self._stopped = True  # (our streams write to fds 1 and 2 now: the pipes)

    def stop(self) -> None:
        """Drain everything and give the process its original fds and streams back."""
        if not self._pipes:
            return
        self.drain()
        sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = self._saved_streams  # type: ignore
        self._stopped = True  # (what still writes to our streams goes to the original ones)
        for fd, saved in self._saved:
            os.dup2(saved, fd)
            os.close(saved)
        self.drain()  # anything written between the last drain and the restore
        for r in self._pipes:
            os.close(r)
        self._pipes.clear()
        self.fds = ()
