"""The agent's way out: the script's output and the events, sent up the channel.

A mixin of ``agent.Agent`` (its queue and locks are set up there). Events queue on the
script's thread with no lock and no syscall; ``flush`` sends them as one frame, on a pause,
when a batch is full (``BATCH`` rows) and every ``FLUSH_INTERVAL`` seconds from the pump
thread, which also drains the script's captured C-level output. What the script prints is
parked and numbered among the events in the order it happened (``_number_parked``).
"""

from __future__ import annotations

import operator
import os
import threading
import time
from collections import deque
from typing import Any

from ..capture import collector, tracefile
from ..capture.pending import resolved
from ..capture.rows import Row
from ..capture.tracing import tracer
from .channel import Channel, ChannelClosed, readable
from .watchdog import Busy

BATCH = 512
FLUSH_INTERVAL = 0.05
FLUSH_ROUNDS = 8  # what a flush queued for itself (a finalizer's print) goes in these
OUTPUT_JOIN = 4096  # print()'s pieces are joined into one event up to this many characters
hard_exit = os._exit  # the real one: the child wraps os._exit for the script

_SEQ = operator.itemgetter(1)


class Outbox:
    """A mixin of the agent: its output, batching and sending."""

    channel: Channel
    detached: bool
    busy: Busy
    _main_ident: int
    _queue: deque[Row]
    _parked: deque[tuple[str, str]]
    _numbering: Any  # threading.RLock
    _flush_lock: Any  # threading.Lock
    _flusher: int
    _taken: int
    _taken_iteration: int
    _outputs: bool
    _out_window: float
    _out_flushes: int
    _last_flush: float
    _closing: threading.Event
    _capture: Any

    # -- script output -------------------------------------------------------------------
    def output(self, stream: str, text: str) -> None:
        """The script wrote ``text`` (the capture calls this, any thread, capture lock held).

        Parked, then numbered (``_number_parked``): no lock, no send. The collector runs
        wherever Python allocates, inside a flush or inside the recording of an op, and a
        finalizer or a warning it runs may print: that print comes here, on whatever
        thread, and must neither wait for the flush nor take a seq while an op's is taken
        and its row not yet queued."""
        self._parked.append((stream, text))
        if threading.get_ident() == self._main_ident:
            self._number_parked()  # (now, unless inside an op: its place among the ops)

    def _number_parked(self, force: bool = False) -> None:
        """Queue the parked output as rows, with the next seqs, if no other row is being
        made: every seq taken so far is queued (or sent). Otherwise later (the next print
        of the script's thread, the next flush, the pump's tick); ``force`` at the end.

        One thread numbers at a time. The script's thread waits for its turn (its output
        must go before its next op); the others only try, and leave theirs to the thread
        numbering now, which looks again before it leaves. Other threads number only in
        ``flush``, where no frame goes out between their taking seqs and queueing the rows,
        and the flush sorts by seq the rows that the script's thread queued meanwhile with
        later seqs."""
        main = threading.get_ident() == self._main_ident
        while self._parked:
            if not self._numbering.acquire(blocking=main):
                return
            try:
                numbered = self._number_locked(force)
            finally:
                self._numbering.release()
            if not numbered:
                return

    def _number_locked(self, force: bool) -> bool:
        # No collection in here: the finalizers it runs could print and wait for the
        # capture lock, held by the script's thread waiting for this one.
        with collector.paused():
            parked = self._parked
            n = len(parked)  # (only this thread takes from it: the numbering lock)
            queue = self._queue
            # From the reading of tracer.seq to its update: no call, no loop. CPython
            # switches threads only at those, so the check and the taking of seqs are one
            # step for every other thread.
            seq = tracer.seq
            newest = queue[-1][1] if queue else self._taken
            if seq != newest and not force:
                return False  # a row is being made: its seq is taken, the row not queued
            tracer.seq = seq + n
            iteration = tracer.iteration
            self._outputs = True
            for i in range(1, n + 1):
                stream, text = parked.popleft()
                queue.append(("output", seq + i, iteration, stream, text))
            return True

    def output_written(self, text: str) -> None:
        """After the capture let go of its lock: lines go out at once (so output written
        just before a crash survives it), except in a flood: past a few flushes per 10 ms
        the batch and the timer take over, and a hundred thousand prints cost a few
        hundred sends, not 100,000."""
        if "\n" not in text:
            return
        now = time.monotonic()
        if now - self._out_window > 0.01:
            self._out_window = now
            self._out_flushes = 0
        if self._out_flushes < 4:
            self._out_flushes += 1
            self.flush()

    # -- the channel -----------------------------------------------------------------------
    def flush(self) -> None:
        """Send everything queued, in order.

        One thread sends at a time (the flush lock). What a thread queues while inside its
        own flush (a finalizer that prints, run by the collector while the batch is
        encoded) goes out with the next round of that same flush: a flush never waits for
        itself. Output never takes the flush lock (``output``): no lock is shared by the
        flush and the output path."""
        if self.detached:
            return
        me = threading.get_ident()
        if self._flusher == me:
            return
        token = self.busy.begin("a flush of events")
        try:
            with self._flush_lock:
                self._flusher = me
                try:
                    for _ in range(FLUSH_ROUNDS):
                        self._number_parked()
                        if not self._queue or not self._send_batch():
                            break
                finally:
                    self._flusher = 0
        finally:
            self.busy.end(token)

    def _send_batch(self) -> bool:
        """Send what is queued now, as one frame, up to the first row whose statistics
        are not read yet (``dyngraph.capture.pending``); False if nothing could go."""
        queue = self._queue
        n = len(queue)
        batch: list[Row] = []
        try:
            while len(batch) < n:
                row = resolved(queue[0])
                if row is None:
                    break  # (its statistics are not read yet: it waits, and so do later rows)
                queue.popleft()
                batch.append(row)
            if not batch:
                return False
            if self._outputs:
                self._outputs = len(batch) < n  # (output still queued: sort next time too)
                batch.sort(key=_SEQ)  # (rows queued by two threads: see _number_parked)
                self._taken = max(self._taken, batch[-1][1])  # (before joining: seqs go)
                batch = _joined(batch)
            else:
                self._taken = max(self._taken, batch[-1][1])
            self._taken_iteration = batch[-1][2]
            data = tracefile.encode_rows(batch)
        except BaseException:
            # Ctrl-C (or anything) before the frame went out: the rows go back, in order,
            # ahead of whatever was queued meanwhile.
            queue.extendleft(reversed(batch))
            raise
        self._last_flush = time.monotonic()
        try:
            self.channel.send(data)
        except ChannelClosed:
            hard_exit(1)  # the session is gone; a run nobody watches must not go on
        return True

    def send_message(self, message: dict[str, Any]) -> None:
        try:
            self.channel.send(tracefile.encode_message(message))
        except ChannelClosed:
            pass

    def _pump(self) -> None:
        while not self._closing.is_set():
            fds = self._capture.fds if self._capture is not None else ()
            if fds:
                try:
                    ready = readable(fds, FLUSH_INTERVAL)
                except OSError:
                    ready = []
                if ready:
                    self._capture.drain()
            else:
                self._closing.wait(FLUSH_INTERVAL)
            if self._queue and time.monotonic() - self._last_flush >= FLUSH_INTERVAL:
                self.flush()


def _joined(batch: list[Row]) -> list[Row]:
    """``print`` writes its pieces separately ("loss", " ", "0.5", "\\n"): consecutive output
    rows of one stream become one event (up to ``OUTPUT_JOIN`` characters), with the
    first piece's seq."""
    joined: list[Row] = []
    last: Row | None = None
    for r in batch:
        if (r[0] == "output" and last is not None and last[0] == "output"
                and last[3] == r[3] and len(last[4]) < OUTPUT_JOIN):
            last = joined[-1] = (*last[:4], last[4] + r[4])
            continue
        joined.append(r)
        last = r
    return joined
