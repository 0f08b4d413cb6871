"""``dyngraph check``'s judging, done when the statistics are read, not per op.

A backend that keeps statistics on the device (PyTorch's: ``torch_backend.deferred``) reads
them once per iteration. ``check`` must still name the op that first produced a NaN or an
Inf, with the words the per-op judging uses (``nonfinite.ForwardChecks``) and without a
host read per op. So, in this mode, a row whose statistics are pending (an op, a tensor
entering, a backward step, a leaf's gradient) is not judged by the per-op checks (they
see no value for it) but queued, with backward's starts and ends, and judged in order as
soon as its statistics are filled in, after each read. Rows of a backend that summarises
at once (the numpy engine, where a read costs nothing) go the per-op way, as before. The
statistics are exact (never sampled) and hold the NaN/Inf counts and the norms; the one
thing a row lacks, whether an op's constant argument was infinite (``masked_fill(m,
-inf)``), the array hook notes as the op runs, from the Python numbers themselves.

The per-op mode (the debugger's NaN and gradient-norm breakpoints) stops at the op
itself; this one stops the script at the read that found it, naming the same op.
"""

from __future__ import annotations

import math
from typing import Any

from ..capture import events as ev
from ..capture.arrays import UNWRITTEN
from ..capture.pending import resolved
from ..capture.rows import Row, event_of, summary_of
from .describe import counts
from .settled import _norm_of, settled

_BOUNDS = frozenset({"backward_start", "backward_end"})


class ReadChecks:
    """A mixin of the agent (its state and its ``_pause`` are the agent's)."""

    _matcher: Any
    _nan: set[int]
    _inf: set[int]
    _unwritten: set[int]
    _needs_grad: set[int]
    _bad_leaves: dict[int, str]
    _leaf_names: dict[int, str]
    _judged_handed: set[int]  # (``_handed`` and ``_leaf_sq`` of the per-op judging)
    _judged_sq: dict[int, float]
    _ops: dict[int, Row]
    judge_at_read: bool
    _unjudged: list[Row]
    _const_inf: set[int]

    def _queue_judging(self, row: Row) -> bool:
        """Queue ``row`` for judging if its statistics are pending (True: the per-op
        checks must not see its values); judge what is ready."""
        waits = resolved(row) is not row
        if waits or row[0] in _BOUNDS:
            self._unjudged.append(row)
            self._judge_ready()
        return waits

    def _judge_ready(self) -> None:
        """Judge the queued rows whose statistics are known, in order."""
        rows = self._unjudged
        i = 0
        while i < len(rows):
            done = resolved(rows[i])
            if done is None:
                break
            i += 1
            hit = self._judge(done)
            if hit is not None:
                del rows[:i]
                self._pause(hit[0], hit[1], done[1])  # type: ignore[attr-defined]
                return
        del rows[:i]

    def _note_arrays(self, kind: str, tensor_id: int, payload: Any) -> None:
        """The array hook in this mode: the per-op checks' (``_see_array``: no value is
        read there), and what a pending row cannot say."""
        self._see_array(kind, tensor_id, payload)  # type: ignore[attr-defined]
        if kind == "op":
            for a in payload[1]:
                if type(a) is float and math.isinf(a):
                    self._const_inf.add(tensor_id)
                    break
        elif kind == "value" and payload is UNWRITTEN:
            self._unwritten.add(tensor_id)

    # -- the judging ----------------------------------------------------------------------
    def _judge(self, r: Row) -> tuple[str, str] | None:
        kind = r[0]
        m = self._matcher
        if kind == "op":
            if m.nan is not None and not settled(r[16]):
                return self._check_nan_op(event_of(r), None)  # type: ignore[attr-defined,arg-type]
        elif kind == "tensor":
            if m.nan is not None:
                return self._judge_tensor(r)
        elif kind == "backward_step":
            return self._judge_step(r)
        elif kind == "grad":
            return self._judge_leaf(r)
        elif kind == "backward_start":  # (an unwritten root stops at once: ``agent``)
            self._judged_sq = {}
            self._judged_handed = set()
        elif kind == "backward_end":
            return self._global_norm(r)
        return None

    def _global_norm(self, r: Row) -> tuple[str, str] | None:
        m = self._matcher
        sq = self._judged_sq
        if not (m.global_norm and sq):
            return None
        total = math.sqrt(sum(sq.values()))
        if total <= m.global_threshold:
            return None
        top = max(sq, key=sq.__getitem__)
        return ("grad_norm", f"global gradient norm {total:.4g} > {m.global_threshold:g} "
                             f"at the end of backward (iteration {r[2]}); largest: "
                             f"{self._leaf_name(top)} ({math.sqrt(sq[top]):.4g})")  # type: ignore[attr-defined]

    def _judge_tensor(self, r: Row) -> tuple[str, str] | None:
        tensor = r[3]
        if r[7] or r[8]:
            self._needs_grad.add(tensor)
        s = summary_of(r[9])
        if tensor in self._unwritten or s is None or not (s.nan or s.inf):
            return None
        e: ev.TensorCreated = event_of(r)  # type: ignore[assignment]
        nan, inf = s.nan, s.inf
        if nan:
            self._nan.add(tensor)
        if inf:
            self._inf.add(tensor)
        if not nan and not (e.requires_grad or e.is_param):
            return None
        what = f"{'parameter' if e.is_param else 'tensor'} {e.name or '#' + str(tensor)}"
        self._bad_leaves[tensor] = (f"first NaN/Inf: {what} {tuple(e.shape)} holds "
                                    f"{counts(nan, inf)} as it enters iteration {e.iteration}")
        return None

    def _judge_step(self, r: Row) -> tuple[str, str] | None:
        m = self._matcher
        node = r[3]
        gid = node if r[10] < 0 else r[10]
        seeded = gid not in self._judged_handed
        self._judged_handed.update(r[13] or r[6])
        slots = r[12] or (r[7],)
        tids = r[11] or (node,)
        if m.nan is not None:
            hit = self._nan_grads(r, slots)
            if hit is not None:
                return hit
        if m.node_norm and not seeded:
            worst = max(((n, tid) for tid, s in zip(tids, slots, strict=False)
                         if (n := _norm_of(s)) is not None), default=None,
                        key=lambda x: x[0])
            if worst is not None and worst[0] > m.node_threshold:
                norm, tid = worst
                into = self._describe_node(tid if tid >= 0 else node, r[4])  # type: ignore[attr-defined]
                return ("grad_norm", f"gradient norm {norm:.4g} > {m.node_threshold:g} "
                                     f"flowing into {into}")
        return None

    def _nan_grads(self, r: Row, slots: tuple[Any, ...]) -> tuple[str, str] | None:
        """``_check_nan_grads`` from the summaries alone (same judgement, same words)."""
        e: ev.BackwardStep = event_of(r)  # type: ignore[assignment]
        nans = self._nan
        if nans and (e.node in nans or any(i in nans for i in e.inputs)):
            return None
        for s in slots:
            got = summary_of(s)
            if got is not None and (got.nan or got.inf):
                return None  # a non-finite gradient coming in was reported where it was made
        inf_ok = e.node in self._inf or any(i in self._inf for i in e.inputs)
        for index, s in enumerate(e.grad_inputs):
            if s is None or not (s.nan or s.inf):
                continue
            if s.nan or not inf_ok:
                return ("nan", f"first NaN/Inf in backward: {e.grad_fn} produced "
                               f"{counts(s.nan, s.inf)} in the gradient for input {index} of "
                               f"{self._describe_node(e.node, e.op)}")  # type: ignore[attr-defined]
        return None

    def _judge_leaf(self, r: Row) -> tuple[str, str] | None:
        m = self._matcher
        if not (m.node_norm or m.global_norm):
            return None
        norm = _norm_of(r[5])
        if norm is None:
            return None
        tensor, name = r[3], r[4]
        self._judged_sq[tensor] = norm * norm
        self._leaf_names[tensor] = name
        if norm > m.node_threshold:
            shown = name or f"#{tensor}"
            return ("grad_norm", f"gradient norm {norm:.4g} > {m.node_threshold:g} in "
                                 f".grad of {shown}{self._used_by(tensor)}")  # type: ignore[attr-defined]
        return None
