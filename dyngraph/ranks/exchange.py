"""Checkpoints compared through the job's c10d store, so a divergence is named before the
collective it would hang.

Each rank numbers the checkpoints of each process group it reaches (0, 1, 2 ...) and
publishes its ``Record`` of checkpoint n under ``cp/GROUP/n/RANK`` in the store the job
already has (torchrun's TCPStore, through ``torch.distributed``'s default store; the keys
live under the job's prefix). Then, before entering the collective (or the backward pass),
it may wait for the other members' records of n and compare:

- ``strict`` (``dyngraph debug``): always. No rank enters a collective before every rank
  has said where it is; a rank paused in the debugger holds the others here, in the store,
  not inside a collective that would time out.
- otherwise (``record``, ``check``): only when its record differs from the one every rank
  agreed on at the same place of an earlier iteration. A training loop repeats itself, so
  a healthy step waits for nobody (one ``set`` per checkpoint, about 25 us); a rank that
  goes another way differs from what was agreed, so it is the one that waits and names it.
  (At least one of two ranks that differ from each other differs from the agreed record.)

A divergence is described from every rank's ``Detail`` (the ops of its iteration so far):
the rank that finds it asks for them under ``div``, each rank's watcher thread answers
from what its main thread left at that checkpoint (the main thread may be blocked inside a
collective by then), and the first description stored under ``divtext`` is the one every
rank reports.

Waiting never outlives the process group's own timeout without saying why: a rank that
ended, or that has not come after that long, is named; a rank paused in the debugger
(``pause/RANK``) may take as long as it likes.

The store is used through its Python API only (``set``, ``get``, ``wait``, ``check``,
``multi_get``, ``compare_set``, ``delete_key``): no torch import here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from .records import Detail, Record, describe

POLL = 0.5  # seconds between looks at the store while waiting for another rank
DETAIL_WAIT = 5.0  # how long a rank that found a divergence waits for the others' details
KEEP = 256  # checkpoints of each group whose keys a rank keeps in the store
WATCH = 0.25  # seconds between the watcher thread's looks at the store

DetailMaker = Callable[[], Detail]


class Exchange:
    """This rank's side of the checkpoints. ``store`` is the job's store, prefixed."""

    def __init__(self, store: Any, rank: int, world_size: int, strict: bool,
                 limit: float, on_remote: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.rank = rank
        self.world_size = world_size
        self.strict = strict
        self.limit = limit
        self.on_remote = on_remote
        self.counts: dict[str, int] = {}
        self.positions: dict[str, int] = {}
        self.iteration = -1
        self.verified: dict[tuple[str, int], str] = {}
        # (group, n) -> a maker of this rank's Detail there, for the last checkpoints
        self.details: dict[tuple[str, int], DetailMaker] = {}
        self.divergence: str | None = None
        self.waits = 0  # checkpoints at which this rank waited (for tests and benches)
        self._answered: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()  # between the main thread and the watcher

    # -- checkpoints ---------------------------------------------------------------------
    def checkpoint(self, group: str, members: Sequence[int], record: Record,
                   detail: DetailMaker) -> str | None:
        """Publish ``record`` as this rank's next checkpoint of ``group``; wait for and
        compare with the other ``members``' when needed (see the module docstring).
        Returns the description of a divergence, or None when the ranks are in step."""
        if self.divergence is not None:
            return None  # named already: the run is stopping
        n = self.counts.get(group, 0)
        self.counts[group] = n + 1
        if record.iteration != self.iteration:
            self.iteration = record.iteration
            self.positions = {}
        position = self.positions.get(group, 0)
        self.positions[group] = position + 1
        with self._lock:
            self.details[(group, n)] = detail
            self.details.pop((group, n - KEEP), None)
        self.store.set(self._key(group, n, self.rank), record.encode(n))
        others = [q for q in members if q != self.rank]
        if not others:
            return None
        if not self.strict and self.verified.get((group, position)) == record.shape:
            return None
        self.waits += 1
        found = self._gather(group, n, others, record)
        if isinstance(found, str):
            return self._report(found)
        records = {**found, self.rank: record}
        if all(r.agrees(record) for r in found.values()):
            self.verified[(group, position)] = record.shape
            return None
        return self._diverged(group, n, records)

    def end(self, record: Record, detail: DetailMaker) -> str | None:
        """The run's last checkpoint (world group), then ``end/RANK``: a rank still
        waiting for this one learns it will not come."""
        try:
            return self.checkpoint("w", range(self.world_size), record, detail)
        finally:
            self._set(f"end/{self.rank}", str(record.iteration))

    def paused(self, flag: bool) -> None:
        """This rank is paused in the debugger (or no longer): others wait as long."""
        self._set(f"pause/{self.rank}", "1" if flag else "0")

    # -- waiting ---------------------------------------------------------------------------
    def _key(self, group: str, n: int, rank: int) -> str:
        return f"cp/{group}/{n}/{rank}"

    def _gather(self, group: str, n: int, others: list[int], mine: Record
                ) -> dict[int, Record] | str:
        """The other ranks' records of checkpoint n, or why they cannot be had."""
        keys = {q: self._key(group, n, q) for q in others}
        missing = list(others)
        deadline = time.monotonic() + self.limit
        while missing:
            try:
                self.store.wait([keys[q] for q in missing], timedelta(seconds=POLL))
                break
            except Exception:  # noqa: BLE001 - the store's timeout (its type varies)
                pass
            missing = [q for q in missing if not self.store.check([keys[q]])]
            news = self._announced()
            if news is not None:
                return news
            for q in missing:
                if self.store.check([f"end/{q}"]):
                    return (f"rank {q} ended the script while rank {self.rank} waits "
                            f"{_at(mine)}")
            if any(self._get(f"pause/{q}") == "1" for q in missing):
                deadline = time.monotonic() + self.limit
            elif missing and time.monotonic() > deadline:
                late = ", ".join(map(str, missing))
                return (f"rank {late} did not reach the checkpoint where rank {self.rank} "
                        f"waits {_at(mine)} within {self.limit:g} s (the process group's "
                        f"timeout)")
        values = self.store.multi_get([keys[q] for q in others])
        return {q: Record.decode(v)[1] for q, v in zip(others, values, strict=True)}

    def _diverged(self, group: str, n: int, records: dict[int, Record]) -> str:
        """Ask every rank for its detail of checkpoint n, then describe the divergence (the
        first description stored is everyone's)."""
        self._answer(group, n)
        self.store.compare_set("div", "", f"{group}/{n}/{self.rank}")
        details: dict[int, Detail] = {}
        deadline = time.monotonic() + DETAIL_WAIT
        while len(details) < len(records) and time.monotonic() < deadline:
            for q in records:
                if q not in details and self.store.check([f"det/{group}/{n}/{q}"]):
                    details[q] = Detail.decode(self.store.get(f"det/{group}/{n}/{q}"))
            if len(details) < len(records):
                time.sleep(0.05)
        text = describe(records, details)
        return self._report(_decode(self.store.compare_set("divtext", "", text)) or text)

    def _report(self, text: str) -> str:
        self.divergence = text
        return text

    def _announced(self) -> str | None:
        """A divergence another rank described already."""
        if self.store.check(["divtext"]):
            return self._report(_decode(self.store.get("divtext")))
        return None

    # -- the watcher thread ------------------------------------------------------------------
    def start_watching(self) -> None:
        """Answer other ranks' requests for details, learn of a divergence they found, and
        drop this rank's old keys, from a daemon thread."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="dyngraph-ranks",
                                             daemon=True)
            self._watcher.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        dropped: dict[str, int] = {}
        while not self._stop.wait(WATCH):
            try:
                self._look(dropped)
            except Exception:  # noqa: BLE001 - the store went away (the job is ending)
                return

    def _look(self, dropped: dict[str, int]) -> None:
        if self.store.check(["div"]):
            group, n, _ = _decode(self.store.get("div")).rsplit("/", 2)
            self._answer(group, int(n))
            if self.divergence is None and self.store.check(["divtext"]):
                text = self._report(_decode(self.store.get("divtext")))
                if self.on_remote is not None:
                    self.on_remote(text)
                self._stop.set()
        for group, count in list(self.counts.items()):
            first = dropped.get(group, 0)
            for n in range(first, count - KEEP):
                self.store.delete_key(self._key(group, n, self.rank))
            dropped[group] = max(first, count - KEEP)

    def _answer(self, group: str, n: int) -> None:
        """Publish this rank's detail of checkpoint n of ``group`` (once)."""
        with self._lock:
            if (group, n) in self._answered:
                return
            self._answered.add((group, n))
            make = self.details.get((group, n))
        if make is not None:
            self.store.set(f"det/{group}/{n}/{self.rank}", make().encode())

    # -- small helpers ---------------------------------------------------------------------
    def _set(self, key: str, value: str) -> None:
        try:
            self.store.set(key, value)
        except Exception:  # noqa: BLE001 - a store that is gone: nobody to tell
            pass

    def _get(self, key: str) -> str:
        try:
            if self.store.check([key]):
                return _decode(self.store.get(key))
        except Exception:  # noqa: BLE001
            pass
        return ""


def _decode(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _at(record: Record) -> str:
    if record.kind == "backward":
        return f"to start backward() in iteration {record.iteration}"
    if record.kind == "end":
        return "at the end of the script"
    return f"at {record.what.partition('|')[0]} in iteration {record.iteration}"
