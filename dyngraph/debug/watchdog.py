"""Nobody waits on a stuck child forever.

What "stops answering" means. Not that the script makes no progress: a ``time.sleep``, a
wait for input or the network, a long op that lets go of the GIL, a pause in the debugger
(even one where the console evaluates for minutes) are all the user's time, and through
all of them the child's command thread answers the session's pings. A child is stuck when

- its runtime says so: one of dyngraph's own critical sections in the child (a flush of
  events, a write of the script's output) has lasted the limit. Those take micro- to
  milliseconds; one that lasts is a lock nobody releases (the deadlock this module was
  written after) or a send nobody reads;
- or it answers no ping for the limit, and the process is not stopped (``kill -STOP``, a
  debugger attached with ptrace: someone is looking at it). Then the interpreter itself is
  held: a C call that keeps the GIL that long, a deadlock in C code.

Either way the session asks the child for a stack dump of every thread (``faulthandler``,
registered on SIGUSR1 by the child: it works without the GIL), reports it, and ends the
child. The limit (``DEFAULT_LIMIT``; ``--watchdog`` on the command line; 0 turns it off)
is the same for both: a long GIL-holding call that is legitimate is the one risk, and a
minute of it is rare enough to be called a hang.

``Busy`` is the child's half, ``Watchdog`` the session's.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from ..errors import UserError

DEFAULT_LIMIT = 60.0
PING_EVERY = 1.0
DUMP_WAIT = 1.5  # how long the session gives faulthandler to write the dump


def watchdog_limit(seconds: float | None) -> float:
    """The limit to use: ``seconds``, else ``$DYNGRAPH_WATCHDOG``, else ``DEFAULT_LIMIT``."""
    where = "--watchdog"
    if seconds is None:
        text = os.environ.get("DYNGRAPH_WATCHDOG", "").strip()
        if not text:
            return DEFAULT_LIMIT
        where = "DYNGRAPH_WATCHDOG"
        try:
            seconds = float(text)
        except ValueError:
            raise UserError(f"{where} must be a number of seconds (0: off), not {text!r}") \
                from None
    if not 0 <= seconds < float("inf"):
        raise UserError(f"{where} must be 0 (off) or a number of seconds, not {seconds}")
    return float(seconds)


class Busy:
    """When each of the runtime's critical sections now running began (any thread).

    ``begin``/``end`` are two dict operations (atomic under the GIL, no lock: this is what
    runs when everything else may be stuck)."""

    def __init__(self) -> None:
        self._since: dict[int, tuple[str, float]] = {}
        self._tokens = itertools.count(1)

    def begin(self, what: str) -> int:
        token = next(self._tokens)
        self._since[token] = (what, time.monotonic())
        return token

    def end(self, token: int) -> None:
        self._since.pop(token, None)

    def longest(self) -> tuple[float, str]:
        """(seconds, what) of the oldest section still running; (0.0, "") when none."""
        running = list(self._since.values())
        if not running:
            return 0.0, ""
        what, since = min(running, key=lambda entry: entry[1])
        return time.monotonic() - since, what


def stopped(pid: int) -> bool:
    """Is ``pid`` stopped (SIGSTOP, job control) or held by a tracer (gdb, strace -p)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("T", "t")


def stack_dump(pid: int, stderr: Any) -> str:
    """Ask ``pid`` for faulthandler's dump of its threads and read it from ``stderr`` (the
    file its original fd 2 writes to). Empty if nothing came."""
    try:
        fd = stderr.fileno()
        start = os.fstat(fd).st_size
        os.kill(pid, signal.SIGUSR1)
    except (OSError, ValueError):
        return ""
    deadline = time.monotonic() + DUMP_WAIT
    size = start
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = os.fstat(fd).st_size
        if now > start and now == size:  # written, and no longer growing
            break
        size = now
    try:
        data = os.pread(fd, 256 * 1024, start)  # (pread: the child shares the file offset)
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


class Watchdog:
    """The session's half: pings the child and decides when it is stuck.

    ``tick()`` runs on the session's reader thread at least every 0.2 s; ``answered(msg)``
    when a pong arrives. ``send`` sends a control message to the child."""

    def __init__(self, limit: float, pid: int, send: Callable[[dict[str, Any]], None]) -> None:
        self.limit = limit
        self._pid = pid
        self._send = send
        self._pings = itertools.count(1)
        self._waiting: tuple[int, float] | None = None  # (ping, sent at) not yet answered
        self._last_ping = 0.0
        # From the child's header on: its command thread answers from then (before, it
        # starts up, and its first message must be its settings, not a ping).
        self.armed = False
        self.blamed_us = False  # stuck inside dyngraph's own runtime: a bug of ours

    def tick(self) -> str | None:
        """Ping when due; a one-line reason once the child counts as stuck, else None."""
        if not (self.limit and self.armed):
            return None
        now = time.monotonic()
        if self._waiting is not None:
            ping, sent = self._waiting
            if now - sent >= self.limit:
                if stopped(self._pid):  # someone stopped it on purpose: their time, not ours
                    self._waiting = (ping, now)
                    return None
                return (f"it did not answer for {now - sent:.0f} s (its interpreter is held: "
                        "a call that keeps the GIL, or a deadlock in C code)")
            return None
        if now - self._last_ping >= PING_EVERY:
            ping = next(self._pings)
            self._waiting = (ping, now)
            self._last_ping = now
            self._send({"cmd": "ping", "ping": ping})
        return None

    def answered(self, msg: dict[str, Any]) -> str | None:
        """A pong: a reason when the child's own runtime reports itself stuck."""
        if self._waiting is not None and msg.get("ping") == self._waiting[0]:
            self._waiting = None
        busy = float(msg.get("busy", 0.0) or 0.0)
        if self.limit and busy >= self.limit:
            what = str(msg.get("what", "")) or "its work"
            self.blamed_us = True
            return f"dyngraph's runtime in the script was blocked for {busy:.0f} s in {what}"
        return None


def pong(busy: Busy, msg: dict[str, Any]) -> dict[str, Any]:
    """The child's answer to a ping."""
    seconds, what = busy.longest()
    return {"reply": "ping", "ping": msg.get("ping"), "busy": round(seconds, 3), "what": what}
