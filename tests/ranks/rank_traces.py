"""Hand-made rank traces for the tests of a job's files (no torch, no processes)."""

from __future__ import annotations

from pathlib import Path

from dyngraph.capture import events as ev
from dyngraph.capture.tracefile import TraceWriter


def summary(norm: float, value: float | None = None) -> ev.Summary:
    if value is not None:  # a one-element tensor: its value, as the backends record it
        return ev.Summary((), "float32", value, value, value, 0.0, abs(value), 0, 0, (value,))
    return ev.Summary((4,), "float32", norm=norm)


def write_rank(path: Path, rank: int, world: int, run_id: str, losses: list[float],
               grads: list[float] | None = None, key: str = "k", odd_at: int = 0,
               diverged_at: int = 0, end: bool = True) -> Path:
    """A rank's trace: per iteration a forward op (the loss), a backward, DDP's all-reduce
    (a Collective by DistributedDataParallel) and the reduced gradient of one parameter;
    its structure key is ``key`` except in iteration ``odd_at``; a divergence is found at
    iteration ``diverged_at`` (which then ends the run)."""
    seq = 0

    def n() -> int:
        nonlocal seq
        seq += 1
        return seq

    header = ev.Header(0, 0, script="ddp.py", rank=rank, world_size=world, run_id=run_id)
    writer = TraceWriter(path, header)
    for i, loss in enumerate(losses, start=1):
        out = 100 + i
        events: list[ev.Event] = [
            ev.Op(n(), i, op="mse_loss", output=out, shape=(), summary=summary(0, loss)),
        ]
        if i == diverged_at:
            events.append(ev.BreakpointHit(n(), i, reason="divergence",
                                           description=f"ranks diverged at iteration {i}"))
            writer.write(events)
            break
        grad = (grads or [1.0] * len(losses))[i - 1]
        events += [
            ev.BackwardStart(n(), i, root=out),
            ev.GradAccumulated(n(), i, tensor=1, name="w", summary=summary(grad * (rank + 1))),
            ev.BackwardEnd(n(), i, root=out),
            ev.Collective(n(), i, op="all_reduce", group="w", group_seq=i, rank=rank,
                          shape=(4,), dtype="float32", attrs={"by": "DistributedDataParallel"}),
            ev.GradAccumulated(n(), i, tensor=1, name="w", summary=summary(grad)),
            ev.IterationEnd(n(), i, node_count=3,
                            structure_key=key + ("x" if i == odd_at else "")),
        ]
        writer.write(events)
    if end:
        writer.write([ev.RunEnd(n(), max(len(losses), 1), 0, "finished")])
    writer.close()
    return path


def write_job(folder: Path, world: int, run_id: str = "run-1", **per_rank: dict) -> Path:
    """``folder/run.rank0.dgtrace`` ... for a job of ``world`` ranks; ``per_rank[f"r{k}"]``
    overrides ``write_rank``'s arguments for rank k. Returns the name given to ``-o``."""
    for rank in range(world):
        kwargs = {"losses": [1.0, 0.5, 0.25]}
        kwargs.update(per_rank.get(f"r{rank}", {}))
        write_rank(folder / f"run.rank{rank}.dgtrace", rank, world, run_id, **kwargs)
    return folder / "run.dgtrace"
