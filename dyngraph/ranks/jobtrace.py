"""A job as a whole: every rank's trace read into one rank x iteration grid.

For each rank and iteration (a ``Cell``): the loss (the value ``backward()`` was called
on), the graph's structure key, op and collective counts, the gradient norm, and whether
the ranks stopped there because they diverged. Across ranks: which cells have another
structure than the others (``odd``), and whether each parameter's gradient after DDP's
all-reduce (recorded per parameter, after the backward's collectives: see
``collectives.py``) is the same on every rank, as it must be.

What ``dyngraph summary``, ``export`` and ``view`` show of a job. No torch, one pass
over each trace, streamed.

>>> job = read("run.rank0.dgtrace")          # doctest: +SKIP
>>> job.divergence                           # doctest: +SKIP
(7, 'ranks diverged at iteration 7: rank 1 ran clamp ...')
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..capture import events as ev
from ..capture.summaries import scalar_of
from ..errors import TraceFileError, UserError
from .job import JobFiles, read_job

DDP = "DistributedDataParallel"


@dataclass
class Cell:
    """One rank's iteration."""

    iteration: int
    ops: int = 0
    collectives: int = 0
    loss: float | None = None
    key: str = ""
    complete: bool = False
    local_norm: float | None = None  # this rank's own gradient (before any all-reduce)
    reduced_norm: float | None = None  # after DDP's all-reduce: the same on every rank
    reduced: dict[str, float] = field(default_factory=dict)  # parameter -> norm after it
    divergence: str = ""  # the ranks were found to diverge here

    @property
    def grad_norm(self) -> float | None:
        return self.reduced_norm if self.reduced_norm is not None else self.local_norm


@dataclass
class RankTrace:
    rank: int
    path: str | None
    cells: dict[int, Cell] = field(default_factory=dict)
    status: int | None = None
    reason: str = ""
    problem: str = ""  # why it could not be read (whole)
    events: int = 0

    @property
    def ended(self) -> bool:
        return self.status is not None


@dataclass
class JobTrace:
    files: JobFiles
    ranks: list[RankTrace]

    @property
    def world_size(self) -> int:
        return self.files.world_size

    @property
    def iterations(self) -> list[int]:
        found: set[int] = set()
        for r in self.ranks:
            found.update(r.cells)
        return sorted(found)

    def cell(self, rank: int, iteration: int) -> Cell | None:
        return self.ranks[rank].cells.get(iteration)

    def odd(self, iteration: int) -> list[int]:
        """The ranks whose graph in ``iteration`` differs from most ranks' (a tie goes to
        the lowest rank's), among the ranks that finished it."""
        keys = {r.rank: c.key for r in self.ranks
                if (c := r.cells.get(iteration)) is not None and c.complete and c.key}
        if len(set(keys.values())) <= 1:
            return []
        counts = Counter(keys.values())
        best = max(counts, key=lambda k: (counts[k], -min(r for r, v in keys.items() if v == k)))
        return sorted(r for r, k in keys.items() if k != best)

    @property
    def divergence(self) -> tuple[int, str] | None:
        """(iteration, description) where the ranks were found to diverge, if they were."""
        found = [(i, c.divergence) for r in self.ranks for i, c in r.cells.items()
                 if c.divergence]
        return min(found) if found else None

    def gradients(self, iteration: int) -> tuple[bool | None, str]:
        """Do the gradients after DDP's all-reduce agree across ranks in ``iteration``?
        (None: none recorded there.) With a one-line reason when they do not."""
        per_rank = {r.rank: c.reduced for r in self.ranks
                    if (c := r.cells.get(iteration)) is not None and c.reduced}
        if len(per_rank) < 2:
            return None, ""
        first = min(per_rank)
        for name, norm in per_rank[first].items():
            for rank, grads in per_rank.items():
                other = grads.get(name)
                if other is None or not _same(other, norm):
                    shown = "missing" if other is None else f"{other:.6g}"
                    return False, (f"{name}: rank {first} {norm:.6g}, rank {rank} {shown}")
        return True, ""


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def read(path: str) -> JobTrace | None:
    """The job whose rank files ``path`` names (see ``job.read_job``); None if none."""
    files = read_job(path)
    if files is None:
        return None
    return JobTrace(files, [_read_rank(r, p) for r, p in enumerate(files.paths)])


def _read_rank(rank: int, path: str | None) -> RankTrace:
    from ..capture.tracereader import iter_events

    trace = RankTrace(rank, path)
    if path is None:
        trace.problem = "no trace"
        return trace
    try:
        _scan(trace, iter_events(path))
    except (TraceFileError, UserError, OSError) as exc:
        trace.problem = str(exc)
    return trace


def _scan(trace: RankTrace, events: object) -> None:
    """One pass over a rank's events (as ``summarize_trace`` reads a single trace)."""
    scalars: dict[int, float | None] = {}
    local: dict[str, float] = {}
    after_ddp = False
    cell: Cell | None = None
    for e in events:  # type: ignore[attr-defined]
        trace.events += 1
        t = type(e)
        if t is ev.Header:
            continue
        if cell is None or cell.iteration != e.iteration:
            cell = trace.cells.setdefault(e.iteration, Cell(e.iteration))
            scalars, local, after_ddp = {}, {}, False
        if t is ev.Op:
            cell.ops += 1
            if e.summary is not None and math.prod(e.shape) == 1:
                scalars[e.output] = scalar_of(e.shape, e.summary)
        elif t is ev.BackwardStart:
            if cell.loss is None:
                cell.loss = scalars.get(e.root)
        elif t is ev.Collective:
            cell.collectives += 1
            after_ddp = after_ddp or e.attrs.get("by") == DDP
        elif t is ev.GradAccumulated and e.summary is not None and e.summary.norm is not None:
            name = e.name or f"#{e.tensor}"
            if after_ddp:
                cell.reduced[name] = e.summary.norm
                cell.reduced_norm = _total(cell.reduced)
            elif name not in local:
                local[name] = e.summary.norm
                cell.local_norm = _total(local)
        elif t is ev.IterationEnd:
            cell.key, cell.complete = e.structure_key, True
        elif t is ev.BreakpointHit and e.reason == "divergence":
            cell.divergence = e.description
        elif t is ev.RunEnd:
            trace.status, trace.reason = e.status, e.reason
    trace.cells = {i: c for i, c in trace.cells.items() if c.ops or c.complete
                   or c.collectives or c.divergence}


def _total(norms: dict[str, float]) -> float:
    return math.sqrt(sum(n * n for n in norms.values()))


