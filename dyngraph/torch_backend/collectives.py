"""Collectives as events, and the store of the job: the torch side of ``dyngraph.ranks``,
kept with the rest of the PyTorch backend (the one place that imports torch).

Imported only once the script has imported torch (``runtime.RankRuntime`` waits for it).

- The collectives the script calls (``dist.all_reduce``, ``broadcast``, ``all_gather``,
  ``reduce_scatter``, ``barrier`` and their kin, the ``*_object`` ones included) are
  wrapped where the script finds them, on the ``torch.distributed`` package: each call
  first passes its checkpoint (``exchange``: compared with the other ranks before it can
  hang), then runs unchanged, then becomes a ``Collective`` event with its call site,
  shapes, the group's sequence number and a summary of what went in and came out (the
  PyTorch backend's statistics, in the recording's stats mode).
- The collectives PyTorch makes itself, from C++ (DDP's bucketed all-reduce in backward,
  its broadcasts of buffers), are read from PyTorch's flight recorder, which the runtime
  switches on for the job (``TORCH_FR_BUFFER_SIZE``), once per backward pass: every entry
  of a group whose sequence number no wrapped call accounts for is one.
- After a backward pass through DDP, each parameter's ``.grad`` is what the all-reduce
  left (the same on every rank): recorded as one more ``GradAccumulated`` per parameter,
  after the backward's collectives, so that the ranks' gradients can be compared.

Nothing here changes what a call computes: the wrappers call the original with the
script's own arguments; statistics are taken with the recording's capture paused.
"""

from __future__ import annotations

import inspect
import json
import os
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist

from ..capture import events as ev
from ..capture.rows import row_of
from ..capture.tracing import now_ns, tracer
from . import backend as torch_backend
from .ids import id_of
from .stats import SUMMARIZERS, dtype_name, shape_of

# name -> (argument holding what goes in, argument holding what comes out, attributes)
SPECS: dict[str, tuple[str | None, str | None, tuple[str, ...]]] = {
    "all_reduce": ("tensor", "tensor", ("op",)),
    "all_reduce_coalesced": ("tensors", "tensors", ("op",)),
    "broadcast": ("tensor", "tensor", ("src", "group_src")),
    "reduce": ("tensor", "tensor", ("dst", "group_dst", "op")),
    "all_gather": ("tensor", "tensor_list", ()),
    "all_gather_into_tensor": ("input_tensor", "output_tensor", ()),
    "reduce_scatter": ("input_list", "output", ("op",)),
    "reduce_scatter_tensor": ("input", "output", ("op",)),
    "gather": ("tensor", "gather_list", ("dst", "group_dst")),
    "scatter": ("scatter_list", "tensor", ("src", "group_src")),
    "all_to_all": ("input_tensor_list", "output_tensor_list", ()),
    "all_to_all_single": ("input", "output", ()),
    "barrier": (None, None, ()),
    "monitored_barrier": (None, None, ()),
    "all_gather_object": (None, None, ()),
    "broadcast_object_list": (None, None, ("src", "group_src")),
    "gather_object": (None, None, ("dst", "group_dst")),
    "scatter_object_list": (None, None, ("src", "group_src")),
}
_FR_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16",
              "BFloat16": "bfloat16", "Long": "int64", "Int": "int32", "Short": "int16",
              "Char": "int8", "Byte": "uint8", "Bool": "bool"}


@contextmanager
def quiet() -> Iterator[None]:
    """The PyTorch capture passes what runs inside on unrecorded: statistics taken here
    are not ops of the script."""
    capture = torch_backend.capture
    if capture is None:
        yield
        return
    capture._quiet(1)
    try:
        yield
    finally:
        capture._quiet(-1)


def summaries(tensors: list[torch.Tensor]) -> list[Any]:
    """The backend's summaries of ``tensors`` in the recording's stats mode."""
    with quiet():
        return SUMMARIZERS[tracer.stats](tensors)


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def group_of(group: Any) -> Any:
    """The process group a call with ``group=`` runs on (None: the default one)."""
    return group if group is not None else dist.group.WORLD


def group_name(pg: Any) -> str:
    """"w" for the default group (every rank), else PyTorch's name of the group."""
    return "w" if pg is dist.group.WORLD else str(pg.group_name)


def job_store(prefix: str) -> tuple[Any, float] | None:
    """The job's store (the default process group's, under ``prefix``) and the default
    group's timeout in seconds; None before ``init_process_group``."""
    if not dist.is_initialized():
        return None
    store = dist.PrefixStore(prefix, dist.distributed_c10d._get_default_store())
    try:
        world: Any = dist.group.WORLD
        timeout = world._get_backend(torch.device("cpu")).options._timeout.total_seconds()
    except (RuntimeError, AttributeError):
        timeout = 1800.0
    return store, timeout


class Collectives:
    """Installs the wrappers; ``checkpoint(call)`` is the runtime's (see runtime.py)."""

    def __init__(self, checkpoint: Callable[[str, list[int], str, str, int], None],
                 world_checkpoint: Callable[[str], None]) -> None:
        self.checkpoint = checkpoint
        self.world_checkpoint = world_checkpoint
        self.saved: list[tuple[Any, str, Any]] = []
        self.depth = 0
        self.ddp: weakref.WeakSet[Any] = weakref.WeakSet()
        # group name -> the last sequence number whose collective is recorded
        self.seen: dict[str, int] = {}
        self.covered: dict[str, list[tuple[int, int]]] = {}
        self.fr_env = False  # the flight recorder was switched on by us, not yet off
        self.lost = 0

    # -- install / remove ---------------------------------------------------------------
    def install(self) -> None:
        tracer.add_library(os.path.dirname(torch.__file__))
        for name in SPECS:
            original = dist.__dict__.get(name)
            if original is not None and not getattr(original, "_dyngraph", False):
                self._patch(dist, name, self._wrap(name, original))
        init = dist.__dict__.get("init_process_group")
        if init is not None:
            self._patch(dist, "init_process_group", self._after_init(init))
        ddp = torch.nn.parallel.DistributedDataParallel
        self._patch(ddp, "__init__", self._seeing_ddp(ddp.__init__))
        self._patch(ddp, "forward", self._before(ddp.forward, "ddp_forward", _communicates))

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self.saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)

    def remove(self) -> None:
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved = []

    def _after_init(self, init: Any) -> Any:
        collectives = self

        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            try:
                return init(*args, **kwargs)
            finally:
                collectives.restore_environment()

        return _like(init_process_group, init)

    def restore_environment(self) -> None:
        """The flight recorder reads its size when the first group is made: from then on
        the script's environment is its own again."""
        if self.fr_env:
            self.fr_env = False
            os.environ.pop("TORCH_FR_BUFFER_SIZE", None)

    def _seeing_ddp(self, init: Any) -> Any:
        """DDP's constructor, remembering the module (its gradients are compared after the
        all-reduce) after a checkpoint: it broadcasts the module's state from C++."""
        seen = self.ddp
        before = self._before(init, "ddp_init")

        def __init__(module: Any, *args: Any, **kwargs: Any) -> None:
            before(module, *args, **kwargs)
            seen.add(module)

        return _like(__init__, init)

    def _before(self, method: Any, kind: str,
                when: Callable[[Any], bool] = lambda module: True) -> Any:
        """``method`` after a checkpoint of every rank (if ``when(module)``): DDP's
        constructor and forward make collectives from C++ (broadcasts of the module's
        state and buffers), which no wrapper sees; a rank paused in the debugger holds the
        others before them."""
        collectives = self

        def checked(module: Any, *args: Any, **kwargs: Any) -> Any:
            if (not collectives.depth and tracer.listening and not tracer.other_thread()
                    and when(module)):
                collectives.world_checkpoint(kind)
            return method(module, *args, **kwargs)

        return _like(checked, method)

    def unused_found(self) -> bool:
        """Does every DDP module of the job find unused parameters itself
        (``find_unused_parameters=True``)? Then a rank's backward may reach other
        parameters than another's: DDP all-reduces zeros for those."""
        modules = list(self.ddp)
        return bool(modules) and all(getattr(m, "find_unused_parameters", False)
                                     for m in modules)

    # -- a call of the script's --------------------------------------------------------------
    def _wrap(self, name: str, original: Any) -> Any:
        signature = inspect.signature(original)
        spec = SPECS[name]
        collectives = self

        def collective(*args: Any, **kwargs: Any) -> Any:
            if (collectives.depth or not tracer.listening or not dist.is_initialized()
                    or tracer.other_thread()):
                return original(*args, **kwargs)
            collectives.depth += 1
            try:
                return collectives._call(name, spec, original, signature, args, kwargs)
            finally:
                collectives.depth -= 1

        wrapped = _like(collective, original)
        wrapped._dyngraph = True  # type: ignore[attr-defined]
        return wrapped

    def _call(self, name: str, spec: tuple[str | None, str | None, tuple[str, ...]],
              original: Any, signature: inspect.Signature, args: Any, kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # let torch say what is wrong with the call
        given = bound.arguments
        pg = group_of(given.get("group"))
        if pg is None or dist.distributed_c10d._rank_not_in_group(pg):
            return original(*args, **kwargs)
        ins = _tensors(given.get(spec[0])) if spec[0] else []
        outs = _tensors(given.get(spec[1])) if spec[1] else []
        attrs = {a: _plain(given[a]) for a in spec[2] if given.get(a) is not None}
        if given.get("async_op"):
            attrs["async"] = True
        shapes = tuple(shape_of(t) for t in ins or outs)
        dtypes = tuple(dtype_name(t.dtype) for t in ins or outs)
        file, line, function = tracer.source(3)
        group = group_name(pg)
        members = dist.get_process_group_ranks(pg)
        self.checkpoint(group, members, _what(name, shapes, dtypes, attrs, group), file, line)
        before = summaries(ins[:1]) if ins else [None]
        seq0 = pg._get_sequence_number_for_group()
        wall, t0 = time.time(), now_ns()
        out = original(*args, **kwargs)
        duration = now_ns() - t0
        seq1 = pg._get_sequence_number_for_group()
        after = summaries(outs[:1]) if outs and not attrs.get("async") else [None]
        self.covered.setdefault(group, []).append((seq0, seq1))
        if len(shapes) > 1:
            attrs["shapes"] = shapes
        attrs["group_size"] = len(members)
        self.emit(name, group, seq1, [id_of(t) for t in ins], shapes, dtypes, attrs,
                  file, line, function, wall, duration, before[0], after[0])
        return out

    def emit(self, name: str, group: str, seq: int, inputs: list[int],
             shapes: tuple[tuple[int, ...], ...], dtypes: tuple[str, ...],
             attrs: dict[str, Any], file: str, line: int, function: str, wall: float,
             duration: int, before: Any, after: Any) -> None:
        e = ev.Collective(tracer.next_seq(), tracer.iteration, name, group, seq,
                          dist.get_rank(), tuple(inputs), shapes[0] if shapes else (),
                          dtypes[0] if dtypes else "", attrs, file, line, function, wall,
                          duration, before, after)
        tracer.deliver(row_of(e))

    # -- PyTorch's own collectives, after a backward pass ----------------------------------
    def after_backward(self, during: tuple[float, float]) -> None:
        """Record the collectives PyTorch made since the last look, then DDP's reduced
        gradients if DDP all-reduced in this backward (``during``: its wall-clock span)."""
        reduced = self.read_flight_recorder(during)
        if reduced:
            self.reduced_gradients()

    def read_flight_recorder(self, during: tuple[float, float] | None = None) -> bool:
        """Emit the groups' collectives no wrapped call accounts for; True if one of them
        was an all-reduce inside ``during``."""
        if not dist.is_initialized():
            return False
        behind = {}
        groups: list[Any] = list(dist.distributed_c10d._world.pg_map)
        for pg in groups:
            try:
                seq = pg._get_sequence_number_for_group()
            except RuntimeError:
                continue
            name = group_name(pg)
            if seq > self.seen.get(name, 0):
                behind[str(pg.group_name)] = (name, self.seen.get(name, 0), seq)
        if not behind:
            return False
        entries = self._entries()
        found = False
        for name, first, last in behind.values():
            covered = self.covered.pop(name, [])
            taken = set()
            for e in entries:
                seq = int(e.get("collective_seq_id", 0))
                if (_group_of_entry(e) not in behind or behind[_group_of_entry(e)][0] != name
                        or not first < seq <= last or e.get("is_p2p")):
                    continue
                if any(a < seq <= b for a, b in covered):
                    continue
                taken.add(seq)
                found |= self._emit_entry(name, seq, e, during)
            missing = [s for s in range(first + 1, last + 1) if s not in taken
                       and not any(a < s <= b for a, b in covered)]
            self.lost += len(missing)
            self.seen[name] = last
        return found

    def _entries(self) -> list[dict[str, Any]]:
        try:
            c10d: Any = torch._C._distributed_c10d
            dump = c10d._dump_fr_trace_json(True, False)
            return list(json.loads(dump).get("entries", ()))
        except (RuntimeError, ValueError, AttributeError):
            return []

    def _emit_entry(self, group: str, seq: int, e: dict[str, Any],
                    during: tuple[float, float] | None) -> bool:
        op = str(e.get("profiling_name", "")).partition(":")[2] or "collective"
        shapes = tuple(tuple(int(d) for d in s) for s in e.get("input_sizes", ()))
        dtypes = tuple(_FR_DTYPES.get(str(d), str(d).lower()) for d in e.get("input_dtypes", ()))
        wall = int(e.get("time_created_ns", 0)) / 1e9
        inside = during is not None and during[0] <= wall <= during[1]
        attrs: dict[str, Any] = {"by": "DistributedDataParallel" if inside and len(self.ddp)
                                 else "pytorch"}
        if len(shapes) > 1:
            attrs["shapes"] = shapes
        self.emit(op, group, seq, [], shapes, dtypes, attrs, "", 0, "", wall, 0, None, None)
        return inside and op == "all_reduce"

    def reduced_gradients(self) -> None:
        """Each DDP parameter's ``.grad`` as the all-reduce left it."""
        for ddp in list(self.ddp):
            if not getattr(ddp, "require_backward_grad_sync", True):
                continue
            named = [(n, p) for n, p in ddp.named_parameters() if p.grad is not None]
            found = summaries([p.grad for _, p in named])
            for (n, p), s in zip(named, found, strict=True):
                tracer.grad_accumulated(id_of(p), n, s, p.grad)


def _communicates(ddp: Any) -> bool:
    """Will this forward of a DDP module make a collective (from C++, before the module
    runs)? Its buffers are broadcast before every forward (``broadcast_buffers`` and a
    module with buffers), and its buckets rebuilt once, early in training. A forward that
    makes none (rank 0 evaluating alone, without buffers) is no checkpoint."""
    try:
        if ddp._check_sync_bufs_pre_fwd():
            return True
        return bool(torch.is_grad_enabled() and not ddp._has_rebuilt_buckets)
    except AttributeError:  # another PyTorch: a checkpoint too many does no harm
        return True


def _group_of_entry(e: dict[str, Any]) -> str:
    pg = e.get("process_group") or ("", "")
    return str(pg[0])


def _what(name: str, shapes: tuple[tuple[int, ...], ...], dtypes: tuple[str, ...],
          attrs: dict[str, Any], group: str) -> str:
    """What every member of the group must agree on at a collective, as it is shown:
    ``all_reduce(float32[16]) op=SUM on group 1``."""
    tensors = ", ".join(f"{d}{list(s)}" for s, d in zip(shapes, dtypes, strict=True))
    roots = " ".join(f"{k}={attrs[k]}" for k in ("src", "dst", "group_src", "group_dst", "op")
                     if k in attrs)
    where = "" if group == "w" else f" on group {group}"
    return f"{name}({tensors})" + (f" {roots}" if roots else "") + where


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    name = getattr(value, "name", None)  # a ReduceOp
    return str(name if isinstance(name, str) else value).rpartition(".")[2]


def _like(wrapper: Any, original: Any) -> Any:
    """``wrapper`` under ``original``'s name and docs (``help(dist.all_reduce)`` reads the
    same); ``__wrapped__`` leads back to it."""
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, attr, getattr(original, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = original
    return wrapper
