"""The rank logic inside the script's process: started by the debug runtime's child when
the environment names a rank of a torchrun job (``job.from_env``).

It names the rank in the trace's header, waits for the script to import torch (then
wraps the collectives: ``collectives.py``), and takes part in the checkpoints
(``exchange.py``) at the script's collectives, at the start of every backward pass and at
the end of the run. What it finds goes back through two callbacks the debug runtime
gives it: ``on_divergence(text)`` on the script's thread, at the checkpoint (the agent
pauses there: ``check`` and ``record`` stop, ``debug`` shows it), and
``on_remote(text)`` from the watcher thread, when another rank found it while this one
was busy (possibly inside a collective that will never return).

``compare=False`` (``--ranks-may-differ``) records per rank and its collectives but
compares nothing: for jobs whose ranks run different graphs by design (pipeline stages).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from ..capture.imports import after_import
from ..capture.rows import Row
from ..capture.tracing import Handle, tracer
from .exchange import Exchange
from .job import Job
from .records import Detail, Record

FR_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FR_ENTRIES = 64  # the flight recorder's ring, when dyngraph switches it on
# The places of an op row's fields (see dyngraph.capture.rows), and a tensor row's.
_OP, _INPUTS, _SHAPE, _MODULE, _FILE, _LINE = 3, 4, 6, 10, 11, 12
_TENSOR, _NAME, _GRAD, _IS_PARAM = 3, 4, 7, 8
_output = itemgetter(5)


class RankRuntime:
    def __init__(self, job: Job, *, strict: bool, compare: bool = True,
                 on_divergence: Callable[[str], None] | None = None,
                 on_remote: Callable[[str], None] | None = None,
                 hold: Callable[[str], None] | None = None) -> None:
        self.job = job
        self.strict = strict
        self.compare = compare
        self.on_divergence = on_divergence
        self.on_remote = on_remote
        # ``hold(text)``: pause this rank at its first checkpoint, before it says it is
        # there, so that every other rank waits for it at that checkpoint (``debug``)
        self.hold = hold
        self.collectives: Any = None
        self.exchange: Exchange | None = None
        # (structure key of the iteration so far, the root's place in it) -> (the places
        # of the ops backward() runs through, the parameters it reaches): a training loop
        # asks the same every time
        self._graphs: dict[tuple[str, int], tuple[tuple[int, ...], tuple[str, ...]]] = {}
        self._import: Handle | None = None
        self._fr_env = False
        self._backward_wall = 0.0
        self._finished = False

    # -- start and finish -----------------------------------------------------------------
    def start(self) -> None:
        tracer.job = (self.job.rank, self.job.world_size, self.job.run_id)
        if not any(v in os.environ for v in FR_VARIABLES):
            # PyTorch's flight recorder is how DDP's own collectives are seen; it reads its
            # size when the first process group is made (then the variable goes again).
            os.environ["TORCH_FR_BUFFER_SIZE"] = str(FR_ENTRIES)
            self._fr_env = True
        tracer.boundary_hooks = (*tracer.boundary_hooks, self._boundary)
        if "torch" in sys.modules:
            self._torch_imported()
        else:
            self._import = after_import("torch", self._torch_imported)

    def _torch_imported(self) -> None:
        from ..torch_backend.collectives import Collectives

        self.collectives = Collectives(self._collective, self._world_checkpoint)
        self.collectives.fr_env = self._fr_env
        self.collectives.install()

    def finish(self) -> None:
        """The end checkpoint, PyTorch's last collectives, and everything put back."""
        if self._finished:
            return
        self._finished = True
        try:
            if self.collectives is not None:
                self.collectives.read_flight_recorder()
            ex = self.exchange
            if ex is not None and (self.compare or self.strict):
                record = Record("end", tracer.iteration, "")
                found = ex.end(record, self._detail(record, "", 0))
                if found and self.on_divergence is not None:
                    self.on_divergence(found)
        finally:
            self.stop()

    def stop(self) -> None:
        if self._import is not None:
            self._import.remove()
            self._import = None
        tracer.boundary_hooks = tuple(h for h in tracer.boundary_hooks if h != self._boundary)
        if self.collectives is not None:
            self.collectives.restore_environment()
            self.collectives.remove()
        elif self._fr_env:
            os.environ.pop("TORCH_FR_BUFFER_SIZE", None)
        if self.exchange is not None:
            self.exchange.stop()

    def paused(self, flag: bool) -> None:
        """The debugger paused this rank (True) or let it go on (False)."""
        if self.exchange is not None:
            self.exchange.paused(flag)

    # -- checkpoints ---------------------------------------------------------------------
    def _exchange(self) -> Exchange | None:
        if self.exchange is None and self.collectives is not None:
            from ..torch_backend.collectives import job_store

            found = job_store(self.job.prefix)
            if found is not None:
                store, timeout = found
                self.exchange = Exchange(store, self.job.rank, self.job.world_size,
                                         self.strict, timeout, self.on_remote, self.compare)
                self.exchange.start_watching()
        return self.exchange

    def _boundary(self, kind: str, value: Any) -> None:
        if kind == "backward_start":
            self._backward_wall = time.time()
            self._world_checkpoint("backward", root=value)
        elif kind == "backward_end":
            if self.collectives is not None:
                self.collectives.after_backward((self._backward_wall, time.time()))

    def _world_checkpoint(self, kind: str, root: int | None = None) -> None:
        """A checkpoint of every rank: ``backward`` (before DDP's all-reduce in it: the
        parameters it reaches must agree), ``ddp_init`` and ``ddp_forward`` (before DDP's
        broadcasts: they must come in step)."""
        if not self.compare and not self.strict:
            return
        ex = self._exchange()
        if ex is None:
            return
        ops = tracer.iteration_ops
        key, graph, params = "", tuple[int, ...](), tuple[str, ...]()
        if root is not None and self.compare:
            key, graph, params = self._loss_graph(root)
        file, line, _ = tracer.source(3)
        self._check(ex, "w", range(self.job.world_size),
                    Record(kind, tracer.iteration, key, len(ops)), file, line, graph, params)

    def _loss_graph(self, root: int) -> tuple[str, tuple[int, ...], tuple[str, ...]]:
        """What must agree at a ``backward()``: the parameters it reaches (DDP's
        all-reduce waits for the gradient of every parameter it was not told is unused),
        as a digest; "" when every DDP module in the job finds unused parameters itself.
        With the places of the ops it runs through among the iteration's ops, and the
        parameters' names. Remembered by the iteration's structure key: one lookup per step
        of a training loop. Not the graph's structure: ranks of a data-parallel job may see
        other shapes (a sequence length of their own) or another branch over the same
        parameters, and DDP averages their gradients all the same."""
        ops, tensors = tracer.iteration_ops, tracer.iteration_tensors
        places = dict(zip(map(_output, ops), range(len(ops)), strict=True))
        start = places.get(root)
        memo = (tracer._keys.key(ops, tensors), -1 if start is None else start)
        found = self._graphs.get(memo)
        if found is None:
            # (a root computed before this iteration: every op of it, to say something)
            chosen = tuple(range(len(ops))) if start is None else _ancestors(ops, places, start)
            used = {tid for p in chosen for tid in ops[p][_INPUTS]}
            params = tuple(sorted({t[_NAME] or f"#{t[_TENSOR]}" for t in tensors
                                   if t[_TENSOR] in used and t[_IS_PARAM] and t[_GRAD]}))
            if len(self._graphs) > 256:
                self._graphs.clear()
            found = self._graphs[memo] = (chosen, params)
        chosen, params = found
        tolerant = self.collectives is not None and self.collectives.unused_found()
        return ("" if tolerant else _digest(params)), chosen, params

    def _collective(self, group: str, members: list[int], what: str, file: str,
                    line: int) -> None:
        if not self.compare and not self.strict:
            return
        ex = self._exchange()
        if ex is None:
            return
        record = Record("collective", tracer.iteration, what if self.compare else "",
                        len(tracer.iteration_ops))
        self._check(ex, group, members, record, file, line)

    def _check(self, ex: Exchange, group: str, members: Any, record: Record, file: str,
               line: int, graph: tuple[int, ...] = (), params: tuple[str, ...] = ()) -> None:
        if self.hold is not None:
            hold, self.hold = self.hold, None
            hold(f"{self.job.describe()}, held at its first checkpoint ({_at(record, file, line)}):"
                 f" the other ranks wait for it there")
        found = ex.checkpoint(group, list(members), record,
                              self._detail(record, file, line, graph, params))
        if found and self.on_divergence is not None:
            self.on_divergence(found)

    def _detail(self, record: Record, file: str, line: int, graph: tuple[int, ...] = (),
                params: tuple[str, ...] = ()) -> Callable[[], Detail]:
        """What this rank did up to here, built only if another rank asks (from the
        watcher thread, perhaps while this one is inside a collective): the op list is
        held as it is now (the tracer starts a new list at each iteration's end)."""
        ops, count = tracer.iteration_ops, len(tracer.iteration_ops)
        rank = self.job.rank

        def make() -> Detail:
            return Detail(rank, record, file, line, _op_rows(ops[:count]),
                          _op_rows([ops[p] for p in graph]), params)

        return make


def _at(record: Record, file: str, line: int) -> str:
    where = f" at {os.path.basename(file)}:{line}" if file else ""
    what = {"backward": "backward()", "ddp_init": "DistributedDataParallel()",
            "ddp_forward": "the DDP module's forward"}.get(record.kind, record.what)
    return f"{what}{where}, iteration {record.iteration}"


def _ancestors(ops: list[Row], places: dict[int, int], start: int) -> tuple[int, ...]:
    """The places of the ops the op at ``start`` was computed from (itself included)."""
    seen = {start}
    todo = [start]
    while todo:
        for tid in ops[todo.pop()][_INPUTS]:
            p = places.get(tid)
            if p is not None and p not in seen:
                seen.add(p)
                todo.append(p)
    return tuple(sorted(seen))


def _digest(names: tuple[str, ...]) -> str:
    """The same in every process (Python's own ``hash`` of a string is not)."""
    return hashlib.blake2b("\n".join(names).encode(), digest_size=8).hexdigest()


def _op_rows(rows: list[Row]) -> tuple[tuple[str, str, str, int, tuple[int, ...]], ...]:
    return tuple((r[_OP], r[_MODULE], r[_FILE], r[_LINE], r[_SHAPE]) for r in rows)
