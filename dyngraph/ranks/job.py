"""Which rank of which job this process is, and where each rank's trace goes.

torchrun tells every worker who it is through the environment: ``RANK`` and
``WORLD_SIZE`` (with ``LOCAL_RANK``, ``TORCHELASTIC_RUN_ID`` and
``TORCHELASTIC_RESTART_COUNT``). dyngraph reads the same variables, so it is a rank of
whatever job it was started in: ``torchrun ... -m dyngraph record SCRIPT`` as much as
``dyngraph record --nproc N SCRIPT`` (which calls torchrun itself).

Each rank writes its own trace beside the name given: ``-o run.dgtrace`` becomes
``run.rank0.dgtrace``, ``run.rank1.dgtrace`` ...; the headers carry rank, world size and
run id, which is how ``view``/``summary``/``export`` find the job's files again (and
leave out a stale ``run.rank3.dgtrace`` of an earlier, larger job).

No torch here: the CLI and the readers use this module in processes that never import it.

>>> job = from_env({"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "abc"})
>>> job.rank, job.world_size, rank_path("run.dgtrace", job.rank)
(1, 2, 'run.rank1.dgtrace')
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import TraceFileError, UserError

SUFFIX = ".dgtrace"
_RANK_FILE = re.compile(r"^(?P<stem>.*)\.rank(?P<rank>\d+)\.dgtrace$")


@dataclass(frozen=True)
class Job:
    """This process as a rank of a torchrun job."""

    rank: int
    world_size: int
    local_rank: int = 0
    run_id: str = ""
    restart: int = 0

    @property
    def prefix(self) -> str:
        """Where this job's dyngraph keys live in the job's c10d store: a run restarted by
        torchrun (``--max-restarts``) starts afresh, never reading its earlier attempt's."""
        return f"dyngraph/{self.run_id}/{self.restart}/"

    def describe(self) -> str:
        return f"rank {self.rank} of {self.world_size}"


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = env.get(name)
    if raw is None:
        if default is None:
            raise UserError(f"{name} is not set")
        return default
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a number: the environment does not name a "
                        "rank of a torchrun job") from None


def from_env(environ: Mapping[str, str] | None = None) -> Job | None:
    """The job this process belongs to (from torchrun's variables), or None when ``RANK``
    and ``WORLD_SIZE`` are not both set. UserError (one line) when they are set wrong."""
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
    if world < 1 or not 0 <= rank < world:
        raise UserError(f"RANK={rank} and WORLD_SIZE={world} do not name a rank of a job")
    # Without torchrun (a launcher that sets only the standard variables) the job is named
    # by its rendezvous address, which every rank shares.
    run_id = env.get("TORCHELASTIC_RUN_ID") or (
        f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}")
    return Job(rank, world, _int(env, "LOCAL_RANK", rank), run_id,
               _int(env, "TORCHELASTIC_RESTART_COUNT", 0))


def rank_path(path: str, rank: int) -> str:
    """The trace of rank ``rank`` for ``-o path``: ``run.dgtrace`` -> ``run.rank0.dgtrace``
    (a name without the suffix gets it: ``out/run`` -> ``out/run.rank0.dgtrace``)."""
    stem = path[: -len(SUFFIX)] if path.endswith(SUFFIX) else path
    return f"{stem}.rank{rank}{SUFFIX}"


def rank_of_path(path: str) -> int | None:
    """``3`` for ``run.rank3.dgtrace``; None for a name that is not a rank's."""
    m = _RANK_FILE.match(os.path.basename(path))
    return int(m.group("rank")) if m else None


def sibling_paths(path: str) -> list[str]:
    """The rank files of the job ``path`` names, in rank order: ``path`` is one rank's
    file (``run.rank1.dgtrace``), the name given to ``-o`` (``run.dgtrace``, when no such
    file exists but its rank files do) or a folder holding one job's rank files. An empty
    list when ``path`` is none of these (a single process's trace)."""
    if os.path.isdir(path):
        found = sorted(glob.glob(os.path.join(glob.escape(path), f"*.rank*{SUFFIX}")))
        stems = {_RANK_FILE.match(f).group("stem") for f in found  # type: ignore[union-attr]
                 if _RANK_FILE.match(f)}
        if len(stems) > 1:
            names = ", ".join(sorted(os.path.basename(s) for s in stems))
            raise UserError(f"{path} holds the traces of several jobs ({names}): name one "
                            f"of its files")
        if not stems:
            return []
        stem = stems.pop()
    else:
        m = _RANK_FILE.match(path)
        if m:
            stem = m.group("stem")
        elif not os.path.exists(path):
            stem = path[: -len(SUFFIX)] if path.endswith(SUFFIX) else path
        else:
            return []
    files = [f for f in glob.glob(f"{glob.escape(stem)}.rank*{SUFFIX}") if _RANK_FILE.match(f)]
    return sorted(files, key=lambda f: rank_of_path(f) or 0)


@dataclass(frozen=True)
class JobFiles:
    """The rank files of one job, as their headers describe them. ``paths[r]`` is rank
    ``r``'s trace (None where it is missing); ``left_out`` are files beside them that
    belong to another run (an earlier job under the same name)."""

    paths: tuple[str | None, ...]
    run_id: str
    left_out: tuple[str, ...] = ()

    @property
    def world_size(self) -> int:
        return len(self.paths)

    def present(self) -> list[tuple[int, str]]:
        return [(r, p) for r, p in enumerate(self.paths) if p is not None]


def read_job(path: str) -> JobFiles | None:
    """The job ``path`` names (see ``sibling_paths``), checked by the files' headers: the
    run of the file named (or of rank 0's, for a folder or the ``-o`` name) is the job.
    None when ``path`` names no job's files."""
    files = sibling_paths(path)
    if not files:
        return None
    headers = {f: _header(f) for f in files}
    chosen = path if path in headers else files[0]
    wanted = headers[chosen]
    if wanted is None:
        readable = [f for f in files if headers[f] is not None]
        if not readable:
            raise UserError(f"none of the job's traces can be read ({', '.join(files)})")
        chosen = readable[0]
        wanted = headers[chosen]
    assert wanted is not None
    run_id, world = wanted[1], wanted[2]
    paths: list[str | None] = [None] * max(world, 1)
    left_out = []
    for f in files:
        h = headers[f]
        rank = rank_of_path(f)
        same = h is None or (h[1] == run_id and h[2] == world)
        if rank is None or rank >= len(paths) or not same:
            left_out.append(f)
            continue
        paths[rank] = f
    return JobFiles(tuple(paths), run_id, tuple(left_out))


def _header(path: str) -> tuple[int, str, int] | None:
    """(rank, run id, world size) from a trace's header; None if it cannot be read."""
    from ..capture.tracereader import iter_events

    events = iter_events(path)
    try:
        header = next(events)
    except (TraceFileError, OSError, StopIteration):
        return None
    finally:
        events.close()  # type: ignore[attr-defined]  # (a generator: its file closes now)
    return (header.rank, header.run_id, header.world_size)  # type: ignore[attr-defined]
