"""Checkpoints through a real c10d TCPStore, each rank a thread with its own connection:
the protocol of ``dyngraph.ranks.exchange`` without the cost of starting processes."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from dyngraph.ranks.exchange import Exchange  # noqa: E402
from dyngraph.ranks.records import Detail, Record  # noqa: E402

OP = ("linear", "module.fc", "/w/train.py", 20, (8, 4))


_made: list[Exchange] = []


@pytest.fixture
def stores():
    """A store server and a client connection per rank, under a prefix as a job's are."""
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=30))

    def connect() -> object:
        client = dist.TCPStore("127.0.0.1", master.port, is_master=False,
                               timeout=timedelta(seconds=30))
        return dist.PrefixStore("dyngraph/run/0/", client)

    yield connect
    while _made:  # the watchers first: they would look at a store that is gone
        _made.pop().stop(wait=True)


def exchanges(connect, world: int, strict: bool = False, limit: float = 20.0,
              heard: dict[int, str] | None = None) -> list[Exchange]:
    out = []
    for rank in range(world):
        def on_remote(text: str, rank: int = rank) -> None:
            if heard is not None:
                heard[rank] = text
        ex = Exchange(connect(), rank, world, strict, limit, on_remote)
        ex.start_watching()
        out.append(ex)
        _made.append(ex)
    return out


def run(world: int, body) -> dict[int, object]:
    """``body(rank)`` on a thread per rank; their results."""
    results: dict[int, object] = {}

    def target(rank: int) -> None:
        results[rank] = body(rank)

    threads = [threading.Thread(target=target, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def detail(rank: int, record: Record, ops=(OP,)):
    return lambda: Detail(rank, record, "/w/train.py", 30, tuple(ops))


@pytest.mark.parametrize("world", [2, 4])
def test_ranks_in_step_wait_only_where_the_record_is_new(stores, world):
    exes = exchanges(stores, world)

    def body(rank: int) -> list[str | None]:
        found = []
        for i in range(1, 6):
            for group, record in (("w", Record("ddp_forward", i, "")),
                                  ("w", Record("backward", i, "k1"))):
                found.append(exes[rank].checkpoint(group, range(world), record,
                                                   detail(rank, record)))
        return found

    results = run(world, body)
    assert all(r == [None] * 10 for r in results.values())
    # the first iteration is compared; later ones that repeat it wait for nobody
    assert [ex.waits for ex in exes] == [2] * world


def test_strict_ranks_wait_at_every_checkpoint(stores):
    exes = exchanges(stores, 2, strict=True)
    run(2, lambda rank: [exes[rank].checkpoint("w", [0, 1], Record("backward", i, "k"),
                                               detail(rank, Record("backward", i, "k")))
                         for i in range(1, 4)])
    assert [ex.waits for ex in exes] == [3, 3]


def test_a_forward_that_went_another_way_is_named_and_every_rank_hears_it(stores):
    heard: dict[int, str] = {}
    exes = exchanges(stores, 4, heard=heard)
    blocked = threading.Event()

    def body(rank: int) -> str | None:
        for i in range(1, 5):
            key = "odd" if (i == 4 and rank == 2) else "k"
            record = Record("backward", i, key, 2)
            ops = (OP, ("relu" if key == "odd" else "tanh", "module", "/w/train.py", 21,
                        (8, 4)))
            found = exes[rank].checkpoint("w", range(4), record, detail(rank, record, ops))
            if found:
                blocked.set()  # (it returns once every rank has heard)
                return found
            if i == 4:
                # the others went on into DDP's all-reduce: blocked there, as a real job
                blocked.wait(15)
                return found
        return None

    results = run(4, body)
    text = results[2]
    assert text.startswith("ranks diverged at iteration 4: rank 2 ran relu [module] at ")
    assert "where rank 0 ran tanh [module]" in text and "op 2 of the iteration" in text
    deadline = time.monotonic() + 10
    while len(heard) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert heard == {0: text, 1: text, 3: text}  # (blocked, they heard it from their watcher)


def test_a_rank_that_skipped_a_collective_is_found_waiting_in_it(stores):
    """Rank 0 waits in an all-reduce of a group of its own; rank 1 skipped it and went on
    to backward(), whose record alone is the same as in the iterations before."""
    exes = exchanges(stores, 2)
    named = threading.Event()

    def body(rank: int) -> str | None:
        ex = exes[rank]
        for i in range(1, 4):
            if not (i == 3 and rank == 1):
                r = Record("collective", i, "all_reduce(float32[8]) on group 1")
                found = ex.checkpoint("1", [0, 1], r, detail(rank, r))
                if i == 3:
                    named.wait(15)  # in the collective, waiting for rank 1
                    return found
            r = Record("backward", i, "k")
            found = ex.checkpoint("w", [0, 1], r, detail(rank, r))
            if found:
                named.set()
                return found
        return None

    text = run(2, body)[1]
    assert text.startswith("ranks diverged: rank 1 started backward() at /w/train.py:30 in "
                           "iteration 3")
    assert "while rank 0 called all_reduce(float32[8]) on group 1 at /w/train.py:30" in text


def test_a_rank_that_ended_is_named(stores):
    exes = exchanges(stores, 2)

    def body(rank: int) -> str | None:
        r = Record("backward", 1, "k")
        exes[rank].checkpoint("w", [0, 1], r, detail(rank, r))
        if rank == 1:
            return exes[rank].end(Record("end", 2, ""), detail(rank, r))
        r = Record("backward", 2, "k")
        return exes[rank].checkpoint("w", [0, 1], r, detail(rank, r))

    results = run(2, body)
    assert "rank 1 ended the script after iteration 1 while rank 0 started backward()" in (
        results[0] or results[1])


def test_a_late_rank_is_named_after_the_groups_timeout(stores):
    exes = exchanges(stores, 2, limit=0.5)
    r = Record("backward", 1, "k")
    started = time.monotonic()
    text = exes[0].checkpoint("w", [0, 1], r, detail(0, r))
    assert text == ("rank 1 did not reach the checkpoint where rank 0 waits to start "
                    "backward() in iteration 1 within 0.5 s (the process group's timeout)")
    assert time.monotonic() - started < 5


def test_a_paused_rank_holds_the_others_past_the_timeout(stores):
    exes = exchanges(stores, 2, strict=True, limit=0.5)

    def body(rank: int) -> tuple[str | None, float]:
        r = Record("backward", 1, "k")
        if rank == 1:
            exes[1].paused(True)  # a debugger's pause, three times the timeout
            time.sleep(1.5)
            exes[1].paused(False)
        started = time.monotonic()
        return exes[rank].checkpoint("w", [0, 1], r, detail(rank, r)), time.monotonic() - started

    results = run(2, body)
    assert results[0][0] is None and results[1][0] is None
    assert results[0][1] > 1.0  # rank 0 waited for it, longer than the timeout


class _EndsBetweenLooks:
    """A store in which rank 0 publishes its last record and then ``end/0`` just after
    rank 1 found the record missing, before rank 1 looks for ``end/0`` (the race a check
    of DDP ranks with batches of their own sizes lost, now and then)."""

    def __init__(self, store, other) -> None:
        self.store, self.other, self.done = store, other, False

    def check(self, keys):
        if keys == ["end/0"] and not self.done:  # (rank 1 found cp/w/1/0 missing)
            self.done = True
            self.other.set("cp/w/1/0", Record("end", 2, "").encode(1))
            self.other.set("end/0", "2")
        return self.store.check(keys)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_a_rank_that_ended_in_step_just_after_a_look_is_not_called_ended(stores):
    ex0, ex1 = exchanges(stores, 2, strict=True)
    r = Record("backward", 1, "k")
    run(2, lambda rank: (ex0, ex1)[rank].checkpoint("w", [0, 1], r, detail(rank, r)))
    ex1.store = _EndsBetweenLooks(ex1.store, ex0.store)
    assert ex1.end(Record("end", 2, ""), detail(1, r)) is None
