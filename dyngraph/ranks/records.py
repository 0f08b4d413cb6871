"""What ranks tell each other at a checkpoint, and how a divergence is put into words.

A checkpoint is a moment every rank of a group must reach in step: a collective, the
start of a backward pass (DDP's all-reduce runs inside it), DDP's constructor and forward
(they broadcast from C++), the end of the run. Each rank publishes a ``Record`` of where
it is: the kind of checkpoint, its iteration, and what must be the same on every rank
there (for a backward: the parameters it reaches, whose gradients DDP's all-reduce waits
for; for a collective: the op, its tensors' shapes and dtypes, the root rank). Other
shapes (a sequence length of one rank's) or another branch over the same parameters are
no divergence: DDP averages the gradients all the same; nor is what one rank computes
beside the model (rank 0 saving a checkpoint, logging a metric). A rank that skipped a
collective is one whose next checkpoint is another than the others'.

Equal records: the ranks are in step. Different ones: a divergence, described from each
rank's ``Detail`` (the ops of its iteration so far and its call site), naming the rank
that differs, the iteration, the first op where it went another way, its source line,
and what the others did there.

Pure data and text: no torch, no store (``exchange.py`` moves these through the store).

>>> a = Record("backward", 7, "k1", 12)
>>> Record.decode(a.encode(3)) == (3, a)
True
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..textsafe import shown

OpFacts = tuple[str, str, str, int, tuple[int, ...]]  # (op, module, file, line, shape)


@dataclass(frozen=True)
class Record:
    """A rank's checkpoint: ``kind`` ("backward", "collective", "ddp_init", "ddp_forward"
    or "end"), its ``iteration``, ``what`` must agree across ranks there, ``ops`` the
    number of ops of this iteration so far (shown, not compared: one rank's side
    computations count there too)."""

    kind: str
    iteration: int
    what: str
    ops: int = 0

    @property
    def shape(self) -> str:
        """The record without its iteration: what a rank remembers as verified, to skip
        the wait at the same checkpoint of a later iteration (see ``exchange``)."""
        return f"{self.kind}|{self.what}"

    @property
    def compared(self) -> tuple[object, ...]:
        """What must be equal on every rank. The end of the run, whatever the iteration:
        rank 0 saving a last checkpoint after the last step counts one iteration more."""
        if self.kind == "end":
            return (self.kind, self.what)
        return (self.kind, self.iteration, self.what)

    def agrees(self, other: Record) -> bool:
        return self.compared == other.compared

    def encode(self, n: int) -> str:
        return json.dumps([n, self.kind, self.iteration, self.what, self.ops])

    @staticmethod
    def decode(text: str | bytes) -> tuple[int, Record]:
        n, kind, iteration, what, ops = json.loads(text)
        return int(n), Record(str(kind), int(iteration), str(what), int(ops))


@dataclass(frozen=True)
class Detail:
    """What a rank did up to a checkpoint, for the description of a divergence: its
    record, the call site of the checkpoint (``file``, ``line``: the collective's call or
    the ``backward()`` line), the ops of its iteration so far, and at a backward the ops of
    the graph it runs through (the loss's) and the parameters it reaches; ops as (op,
    module, file, line, shape), in the order they ran."""

    rank: int
    record: Record
    file: str = ""
    line: int = 0
    ops: tuple[OpFacts, ...] = ()
    graph: tuple[OpFacts, ...] = ()
    params: tuple[str, ...] = ()

    def encode(self) -> str:
        return json.dumps({"rank": self.rank, "record": self.record.encode(0),
                           "file": self.file, "line": self.line,
                           "ops": [list(o) for o in self.ops],
                           "graph": [list(o) for o in self.graph],
                           "params": list(self.params)})

    @staticmethod
    def decode(text: str | bytes) -> Detail:
        d = json.loads(text)
        return Detail(int(d["rank"]), Record.decode(d["record"])[1], str(d["file"]),
                      int(d["line"]), _ops(d["ops"]), _ops(d.get("graph", [])),
                      tuple(str(p) for p in d.get("params", [])))


def _ops(rows: list[Any]) -> tuple[OpFacts, ...]:
    return tuple((str(op), str(module), str(file), int(line), tuple(int(d) for d in shape))
                 for op, module, file, line, shape in rows)


# Checkpoints of every rank where the graph so far must agree, and what they come before.
GRAPH_KINDS = {
    "backward": "backward(), where DDP's all-reduce would wait for a gradient",
    "ddp_forward": "the DDP module's forward, where DDP broadcasts its buffers",
    "ddp_init": "DistributedDataParallel(), where it broadcasts the module's state",
}


def odd_ones(records: dict[int, Record]) -> tuple[list[int], list[int]]:
    """(the ranks that went another way, the ranks they are compared with): the largest
    group of agreeing ranks is the reference; a tie goes to the group holding the lowest
    rank (rank 0 in a job of two)."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for rank in sorted(records):
        r = records[rank]
        groups.setdefault(r.compared, []).append(rank)
    counts = Counter({k: len(v) for k, v in groups.items()})
    best = max(groups, key=lambda k: (counts[k], -min(groups[k])))
    reference = groups[best]
    others = sorted(r for r in records if r not in reference)
    return others, reference


def describe(records: dict[int, Record], details: dict[int, Detail]) -> str:
    """One paragraph naming the divergence: the rank(s) that differ, the iteration, the
    first op (or checkpoint) where they went another way with its line, and what the
    others did there. ``details`` may lack ranks that did not answer."""
    odd, reference = odd_ones(records)
    if not odd:
        return "the ranks agree"
    rank, ref = odd[0], reference[0]
    mine, theirs = records[rank], records[ref]
    who = _ranks(odd)
    others = _ranks(reference)
    iteration = mine.iteration
    if mine.kind != theirs.kind or mine.iteration != theirs.iteration:
        then = (f"{who} {_checkpoint(mine, details.get(rank))} while {others} "
                f"{_checkpoint(theirs, details.get(ref))}")
        where = ""
        if mine.iteration == theirs.iteration:
            where = _first_difference(details.get(rank), details.get(ref))
        if where:
            return f"ranks diverged at iteration {iteration}: {where}; then {then}"
        return f"ranks diverged: {then}"
    if mine.kind == "collective":
        return (f"ranks diverged at iteration {iteration}: {who} called "
                f"{_checkpoint(mine, details.get(rank), verb=False)} where {others} called "
                f"{_checkpoint(theirs, details.get(ref), verb=False)}")
    if mine.kind in GRAPH_KINDS:
        where = _first_difference(details.get(rank), details.get(ref))
        reach = _parameters(details.get(rank), details.get(ref))
        return (f"ranks diverged at iteration {iteration}: "
                + (where or f"{who}'s forward pass took another path than {others}'s")
                + (f"; {reach}" if reach else "")
                + f" (caught before {GRAPH_KINDS[mine.kind]})")
    return f"ranks diverged at iteration {iteration}: {who} and {others} differ"


def _ranks(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def _site(file: str, line: int) -> str:
    if not file:
        return ""
    return f" at {shown(_short(file))}:{line}"


def _short(path: str) -> str:
    """A path as the user reads it: relative to the working directory when below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _checkpoint(r: Record, d: Detail | None, verb: bool = True) -> str:
    site = _site(d.file, d.line) if d is not None else ""
    if r.kind == "collective":
        text = f"{r.what}{site}"
        return f"called {text} in iteration {r.iteration}" if verb else text
    if r.kind == "backward":
        return f"started backward(){site} in iteration {r.iteration} after {r.ops} ops"
    if r.kind == "ddp_forward":
        return f"called the DDP module{site} in iteration {r.iteration} after {r.ops} ops"
    if r.kind == "ddp_init":
        return f"built DistributedDataParallel{site} in iteration {r.iteration}"
    if r.kind == "end":
        return f"ended the script after iteration {max(r.iteration - 1, 0)}"
    return f"reached {r.kind} in iteration {r.iteration}"


def _first_difference(mine: Detail | None, theirs: Detail | None) -> str:
    """``op 5: F.linear (module head_b) at demo.py:31, where rank 0 ran F.linear (module
    head_a) at demo.py:29``; "" when a detail is missing."""
    if mine is None or theirs is None:
        return ""
    # Two backward passes: the graphs they run through (one rank's side computations are
    # no difference); else the iterations' ops as they ran, up to where each rank is.
    a, b = (mine.graph, theirs.graph) if mine.graph and theirs.graph else (mine.ops, theirs.ops)
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            return (f"rank {mine.rank} ran {_op(x)} as op {i + 1} of the iteration, where "
                    f"rank {theirs.rank} ran {_op(y)}")
    return ""


def _parameters(mine: Detail | None, theirs: Detail | None, most: int = 4) -> str:
    """``rank 1's backward() reaches head_b.weight, which rank 0's does not``."""
    if mine is None or theirs is None:
        return ""
    extra = [p for p in mine.params if p not in theirs.params]
    missing = [p for p in theirs.params if p not in mine.params]
    parts = []
    for names, whose, other in ((extra, mine.rank, theirs.rank),
                                (missing, theirs.rank, mine.rank)):
        if names:
            shown_names = ", ".join(shown(n) for n in names[:most]) + (
                f" and {len(names) - most} more" if len(names) > most else "")
            parts.append(f"rank {whose}'s backward() reaches {shown_names}, which rank "
                         f"{other}'s does not")
    return "; ".join(parts)


def _op(o: OpFacts | None) -> str:
    if o is None:
        return "nothing more"
    op, module, file, line, shape = o
    in_module = f" [{shown(module)}]" if module else ""
    return f"{shown(op)}{in_module}{_site(file, line)} -> {tuple(shape)}"
