"""The private channel between a session (parent) and the agent in the script's process.

A byte stream carrying trace-file frames (``dyngraph.capture.tracefile``): event batches up,
control messages (dicts) both ways. Nothing else crosses it, so either end may live in
another process or on another machine. Today the parent makes a socket pair and hands one
end to the child as an inherited fd (``fd:N``); ``host:port`` connects over TCP instead.
"""

from __future__ import annotations

import select
import signal
import socket
import threading
from collections.abc import Sequence

# Big kernel buffers: the child writes batches of events while the parent may be busy.
_BUFFER = 4 * 1024 * 1024
_READ = 1024 * 1024



def readable(fds: Sequence[int], timeout: float) -> list[int]:
    """The fds of ``fds`` ready to read within ``timeout`` seconds. ``poll``, not
    ``select``: select refuses fds past 1023, which a script with many files open (or a
    process that read many traces) easily has."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    try:
        return [fd for fd, _ in poller.poll(max(timeout, 0.0) * 1000)]
    except InterruptedError:
        return []

# Signals a Python handler may be set for (Ctrl-C, a terminal closing, a timer): blocked in
# the main thread while it writes a frame (see ``Channel.send``). Faults and SIGUSR1 (the
# faulthandler stack dump a stuck child is asked for) are left alone.
_DEFERRED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGALRM,
             signal.SIGUSR2, signal.SIGCHLD, signal.SIGWINCH}


class ChannelClosed(Exception):
    """The other end went away."""


class Channel:
    """One end of the channel. ``send`` is thread-safe; ``recv`` belongs to one reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        # Reentrant: Python code can run on a thread holding it only between two whole
        # frames (the collector's finalizers, a signal handler), and what it sends there
        # is a whole frame too. Waiting for itself, that thread would hang for good.
        self._send_lock = threading.RLock()
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, _BUFFER)
            except OSError:  # pragma: no cover - some platforms refuse; the default works
                pass
        self.closed = False

    def send(self, data: bytes) -> None:
        """Send whole frames; raises ChannelClosed if the other end is gone.

        On the main thread, the signals that may have Python handlers are held back while
        the bytes go out: a handler run inside ``sendall`` (on EINTR) that raised
        (KeyboardInterrupt) would leave half a frame on the channel, which the other end
        can only take as garbage. They are delivered right after."""
        main = threading.current_thread() is threading.main_thread()
        try:
            with self._send_lock:
                if main:
                    held = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
                    try:
                        self.sock.sendall(data)
                    finally:
                        signal.pthread_sigmask(signal.SIG_SETMASK, held)
                else:
                    self.sock.sendall(data)
        except OSError as exc:
            self.closed = True
            raise ChannelClosed(str(exc)) from None

    def recv(self, timeout: float | None = None) -> bytes | None:
        """Up to 1 MiB of bytes; ``None`` on timeout; ``b""`` once the other end closed.

        The wait is a ``poll``, not a socket timeout: a timeout on the socket would also
        bound ``sendall`` in the other thread, and a slow reader must only slow the writer
        down, never break the channel.
        """
        try:
            if timeout is not None and not readable((self.sock.fileno(),), timeout):
                return None
            data = self.sock.recv(_READ)
        except (BlockingIOError, InterruptedError):
            return None
        except (OSError, ValueError):  # closed under us
            data = b""
        if not data:
            self.closed = True
        return data

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def socket_pair() -> tuple[Channel, socket.socket]:
    """The parent's channel, and the socket whose fd the child inherits."""
    parent, child = socket.socketpair()
    return Channel(parent), child


def connect(address: str) -> Channel:
    """Open the child's end: ``fd:N`` (an inherited socket) or ``HOST:PORT`` (TCP)."""
    kind, _, rest = address.rpartition(":")
    if kind == "fd":
        return Channel(socket.socket(fileno=int(rest)))
    if not kind:
        raise ValueError(f"bad channel address {address!r}: expected fd:N or HOST:PORT")
    sock = socket.create_connection((kind, int(rest)), timeout=10)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Channel(sock)
