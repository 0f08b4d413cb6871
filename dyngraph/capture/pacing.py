"""Keep the cyclic garbage collector's pace while recording.

CPython collects its youngest generation after every ``threshold0`` (700) container
objects the program allocated and kept, and an older one after every ten of those. A
recording keeps two or three tuples per event (the row, its ids, its summary): on a
chain of tiny ops that is twice the engine's own allocations, so, unpaced, the collector
ran three times as often, and each time it walks every object of the program's live
graph again (on a 1,000-op chain, about a third of what recording it cost).

While a recording runs, ``CollectorPacing`` raises ``threshold0`` by the recording's
share of the allocations, so the collector runs as often per object the *program*
allocates as it would unrecorded. The recording still pays for its own objects (each
is looked at once, then untracked: rows hold only plain values); the program's garbage
is collected at its usual rate, so its memory is what it would be.

``keep`` makes the recording's tuples cost the collector one look each.
CPython stops tracking a tuple of plain values when a collection finds its items
untracked, looking at the youngest objects in order; but an inner tuple that only a
later one refers to (a row's ids or summary, made before the row) is moved behind it
while the collector sorts out what is reachable, so the row is looked at before its items
are untracked and stays tracked: each level of nesting took one more collection, in an
older generation each time, and an in-memory trace's batches reached the oldest one still
tracked, where every full collection read every row again. Anything the recording hands
to ``keep`` is referred to from an old list until a collection has run over it, so it
stays in place and all of it is untracked in one pass. The list is trimmed at the pacing's
checks (every ``CHECK_ROWS`` rows): what was kept before the previous check goes once a
collection ran since, so it holds at most two checks' worth; what a recording kept last
is let go when the next one starts.

The pace is approximate: the recording's allocations are estimated (``PER_ROW`` per
row; measured: op rows three, backward rows three or four, others one or two), the
program's are the rest of what the collector counted (a trace file's writer frees its
rows every few milliseconds, which makes the program's share look smaller), and the
threshold is never raised more than ``MAX_FACTOR`` (4) times: at worst, 2,100 more young
objects wait for their collection. The threshold the program set is respected: it is the base
that is scaled, a change the program makes meanwhile becomes the new base, 0 (automatic
collection off) stays 0, and it is restored when recording stops.
"""

from __future__ import annotations

import gc

PER_ROW = 2.5
"""Tuples the recording keeps per row, an estimate on the low side (so the program's
objects are never collected less often than unrecorded by more than a little)."""
MAX_FACTOR = 4.0
CHECK_ROWS = 1024
"""Rows between two adjustments (each reads the collector's statistics: ~2 µs)."""
ANCHOR_LIMIT = 1 << 16
"""Most tuples ``keep`` holds: beyond, they are let go (a program that turned the
collector off would otherwise have them all held)."""


# What ``keep`` was given (see the module doc): one list for the process's life, so it is
# old. Any recording code (the tracer, a backend, the summaries) may hand it the tuples it
# makes for a row. ``CollectorPacing.rows_recorded`` lets go of what has been through a
# collection since. (Not a ``gc.callbacks`` function: Python code run by the collector is
# where a Ctrl-C that lands during a collection is raised, and CPython swallows an
# exception raised there: "Exception ignored in ...", and the script ran on.)
_anchor: list[object] = []
keep = _anchor.append


def _collections() -> int:
    return sum(s["collections"] for s in gc.get_stats())


class CollectorPacing:
    """Scales ``gc`` threshold0 by the recording's share of allocations (module doc)."""

    __slots__ = ("_base", "_set", "_rows", "_collections", "_count", "_factor", "_kept")

    def __init__(self) -> None:
        self._base: int | None = None  # the program's threshold0; None: not pacing
        self._set = 0  # the threshold0 this object set last
        self._rows = 0
        self._collections = 0
        self._count = 0
        self._factor = 1.0
        self._kept = 0  # len(_anchor) at the last check

    @property
    def active(self) -> bool:
        return self._base is not None

    def start(self, seq: int) -> None:
        """Recording starts; ``seq`` is its row counter now."""
        if self._base is not None:
            return
        self._base = self._set = gc.get_threshold()[0]
        self._factor = 1.0
        _anchor.clear()  # (the last recording's: collected long since, or never will be)
        self._mark(seq)

    def stop(self) -> None:
        """Recording stops: the program's threshold back, unless it set one meanwhile."""
        if self._base is None:
            return
        threshold = gc.get_threshold()
        if threshold[0] == self._set:
            gc.set_threshold(self._base, *threshold[1:])
        self._base = None

    def _mark(self, seq: int) -> None:
        self._rows = seq
        self._collections = _collections()
        self._count = gc.get_count()[0]
        self._kept = len(_anchor)

    def rows_recorded(self, seq: int) -> None:
        """The recording's row counter is now ``seq``: adjust every ``CHECK_ROWS`` rows."""
        if self._base is None or seq - self._rows < CHECK_ROWS:
            return
        collections = _collections()
        if len(_anchor) > ANCHOR_LIMIT:  # the collector is off: do not hold on
            _anchor.clear()
        elif collections != self._collections:
            # A collection ran since the last check: what was kept before it has been
            # looked at. (What came after waits for the next check: held a little longer.)
            del _anchor[:self._kept]
        threshold = gc.get_threshold()
        if threshold[0] != self._set:  # the program set its own: that is the base now
            self._base = threshold[0]
        # Containers kept since the last check: every collection in between reset the
        # count after about threshold0 + 1 of them.
        total = ((collections - self._collections) * (self._set + 1)
                 + gc.get_count()[0] - self._count)
        ours = PER_ROW * (seq - self._rows)
        theirs = max(total - ours, ours / (MAX_FACTOR - 1.0), 1.0)
        # (halfway to the new estimate: one burst of allocations does not swing it)
        self._factor = min(MAX_FACTOR, 0.5 * self._factor + 0.5 * (1.0 + ours / theirs))
        self._set = round(self._base * self._factor)
        if self._set != threshold[0]:
            gc.set_threshold(self._set, *threshold[1:])
        self._mark(seq)
