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
  agreed on at the same place of an earlier iteration (the same group at the same count
  of checkpoints, of every group, into the iteration). A training loop repeats itself, so
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

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .records import Detail, Record, describe

POLL = 0.05  # at most this many seconds between looks at the store while waiting
DETAIL_WAIT = 5.0  # how long a rank that found a divergence waits for the others' details
KEEP = 256  # checkpoints of each group whose keys a rank keeps in the store
WATCH = 0.25  # seconds between the watcher thread's looks at the store

DetailMaker = Callable[[], Detail]


class Exchange:
    """This rank's side of the checkpoints. ``store`` is the job's store, prefixed."""

    def __init__(self, store: Any, rank: int, world_size: int, strict: bool,
                 limit: float, on_remote: Callable[[str], None] | None = None,
                 compare: bool = True) -> None:
        self.store = store
        self.compare = compare  # False: wait (strict) but never call the ranks diverged
        self.rank = rank
        self.world_size = world_size
        self.strict = strict
        self.limit = limit
        self.on_remote = on_remote
        self.counts: dict[str, int] = {}
        self.members: dict[str, tuple[int, ...]] = {}
        self.position = 0  # checkpoints passed in this iteration, every group's
        self.iteration = -1
        # position in an iteration -> the group and record every rank agreed on there
        self.verified: dict[int, tuple[str, str]] = {}
        # (group, n) -> a maker of this rank's Detail there, for the last checkpoints
        self.details: dict[tuple[str, int], DetailMaker] = {}
        self.divergence: str | None = None
        self.waits = 0  # checkpoints at which this rank waited (for tests and benches)
        self._answered: set[tuple[str, int]] = set()
        self._finding = False
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
        self.members[group] = tuple(members)
        if record.iteration != self.iteration:
            self.iteration = record.iteration
            self.position = 0
        position = self.position
        self.position += 1
        with self._lock:
            self.details[(group, n)] = detail
            self.details.pop((group, n - KEEP), None)
        self.store.set(self._key(group, n, self.rank), record.encode(n))
        others = [q for q in members if q != self.rank]
        if not others:
            return None
        if not self.strict and self.verified.get(position) == (group, record.shape):
            return None
        self.waits += 1
        found = self._gather(group, n, others, record)
        if isinstance(found, str):
            return self._report(found)
        records, at = found
        records[self.rank] = record
        if not self.compare or (all(r.agrees(record) for r in records.values())
                                and len(records) == len(members)):
            self.verified[position] = (group, record.shape)
            return None
        return self._diverged(records, {**at, self.rank: (group, n)})

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
                ) -> tuple[dict[int, Record], dict[int, tuple[str, int]]] | str:
        """The other ranks' records of checkpoint n (and the checkpoint each record is
        of), or why they cannot be had. A rank that waits at a checkpoint of another group
        instead, one this rank has not reached (it skipped a collective there), is
        found while waiting: its record of that checkpoint is returned instead."""
        keys = {q: self._key(group, n, q) for q in others}
        missing = list(others)
        deadline = time.monotonic() + self.limit
        pause = 0.0002
        while True:
            missing = [q for q in missing if not self.store.check([keys[q]])]
            if not missing:
                break
            # (``check`` and a sleep, not the store's ``wait``: a ``wait`` that times out
            # makes c10d print a warning into the script's output, every time)
            time.sleep(pause)
            pause = min(pause * 2, POLL)
            if pause < POLL:
                continue
            news = self._announced()
            if news is not None:
                return news
            for q in missing:
                elsewhere = self._ahead(q, group, keys[q])
                if elsewhere is not None:
                    return elsewhere
            for q in missing:
                # (a rank publishes its last record, then ``end``: one that ended since the
                # look above may have published the awaited record just before)
                if self.store.check([f"end/{q}"]) and not self.store.check([keys[q]]):
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
        return ({q: Record.decode(v)[1] for q, v in zip(others, values, strict=True)},
                {q: (group, n) for q in others})

    def _ahead(self, q: int, waiting: str, awaited: str
               ) -> tuple[dict[int, Record], dict[int, tuple[str, int]]] | None:
        """Rank q's record of a checkpoint of another group this rank shares with it and
        has not reached: q is waiting there, for this rank, which went another way. (Not
        if q published the awaited record meanwhile: it did so before the other.)"""
        for group, count in list(self.counts.items()):
            if group == waiting or q not in self.members.get(group, ()):
                continue
            key = self._key(group, count, q)
            if self.store.check([key]) and not self.store.check([awaited]):
                return {q: Record.decode(self.store.get(key))[1]}, {q: (group, count)}
        return None

    def _diverged(self, records: dict[int, Record], at: dict[int, tuple[str, int]]) -> str:
        """Ask every rank for its detail of its checkpoint in ``at``, then describe the
        divergence (the first description stored is everyone's)."""
        self._finding = True
        group, n = at[self.rank]
        self._answer(group, n)
        request = json.dumps({str(q): f"{g}/{m}" for q, (g, m) in at.items()})
        self.store.compare_set("div", "", request)
        details: dict[int, Detail] = {}
        deadline = time.monotonic() + DETAIL_WAIT
        while len(details) < len(records) and time.monotonic() < deadline:
            for q in records:
                key = f"det/{at[q][0]}/{at[q][1]}/{q}"
                if q not in details and self.store.check([key]):
                    details[q] = Detail.decode(self.store.get(key))
            if len(details) < len(records):
                time.sleep(0.05)
        text = describe(records, details)
        text = _decode(self.store.compare_set("divtext", "", text)) or text
        self._set(f"ack/{self.rank}", "1")
        # Until the other ranks have heard (their watchers), stopping this one would make
        # theirs fail inside the collective they wait in, with the transport's error
        # printed before ours.
        deadline = time.monotonic() + DETAIL_WAIT
        while time.monotonic() < deadline and not all(
                self.store.check([f"ack/{q}"]) for q in records):
            time.sleep(0.05)
        return self._report(text)

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

    def stop(self, wait: bool = False) -> None:
        """Stop the watcher (``wait``: until it has)."""
        self._stop.set()
        if wait and self._watcher is not None:
            self._watcher.join(5)

    def _watch(self) -> None:
        dropped: dict[str, int] = {}
        while not self._stop.wait(WATCH):
            try:
                self._look(dropped)
            except Exception:  # noqa: BLE001 - the store went away (the job is ending)
                return

    def _look(self, dropped: dict[str, int]) -> None:
        if self.store.check(["div"]):
            request = json.loads(_decode(self.store.get("div")))
            mine = request.get(str(self.rank))
            if mine is not None:  # (a rank not named has nothing to say)
                group, n = mine.rsplit("/", 1)
                self._answer(group, int(n))
            if self.divergence is None and not self._finding and self.store.check(
                    ["divtext"]):
                text = self._report(_decode(self.store.get("divtext")))
                if self.on_remote is not None:
                    self.on_remote(text)
                self._set(f"ack/{self.rank}", "1")
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
    if record.kind in ("ddp_forward", "ddp_init"):
        return f"at DistributedDataParallel in iteration {record.iteration}"
    if record.kind == "end":
        return "at the end of the script"
    return f"at {record.what} in iteration {record.iteration}"
