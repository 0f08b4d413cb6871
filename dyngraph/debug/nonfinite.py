"""Which forward op first made a NaN or an Inf: the forward half of the ``nan`` check.

The agent sees every op's output and every tensor entering an iteration, with its values.
An op is blamed when it *produces* a non-finite value from inputs without one; values that
came in non-finite only carry it along. What is meant is not blamed (both backends, since
this judges events, not tensors):

- an Inf copied from a constant argument (``masked_fill(mask, float("-inf"))``);
- an Inf held by data entering the iteration (a leaf that needs no gradient: an additive
  ``-inf`` mask built before the loop);
- an Inf computed from data: by an op whose inputs and output need no gradient
  (``torch.log(torch.tril(ones))``, word_language_model's causal mask; ``1 / degree``
  before ``v[v == inf] = 0``, pytorch/examples' gcn and gat). It is remembered like a
  leaf-held mask and what it feeds is judged as usual: a NaN made from it still fails;
- the memory of a tensor of the ``empty`` family not written yet (torchdiffeq's
  Runge-Kutta buffer): no data at all (a backend hands on ``arrays.UNWRITTEN`` as its value).
  An op that reads such a tensor and gives non-finite values passes them on unjudged; an
  op whose output is finite again (the buffer filled) is judged as any other from then on.
  A backward pass started from a non-finite value that came that way fails: a loss is data.

A NaN is blamed wherever it is made from values without one, data or not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..capture import events as ev
from ..capture.arrays import UNWRITTEN
from ..capture.rows import Row, event_of
from .breakpoints import all_finite, nonfinite_counts
from .describe import counts, describe_op
from .settled import settled


class ForwardChecks:
    """The agent's forward NaN/Inf judging (a mixin: the state is the agent's, reset per
    iteration). ``_nan``/``_inf``: tensors of this iteration holding NaN / Inf, already
    accounted for; ``_bad_leaves``: tensors that came in non-finite, reported at their
    first use; ``_unwritten``: tensors holding unwritten memory; ``_needs_grad``: tensors
    entering the iteration that need a gradient (op outputs say so in their rows)."""

    _matcher: Any
    _value_id: int
    _value: Any
    _args: tuple[Any, ...]
    _ops: dict[int, Row]
    _nan: set[int]
    _inf: set[int]
    _bad_leaves: dict[int, str]
    _unwritten: set[int]
    _needs_grad: set[int]
    _const_inf: set[int]

    def _value_of(self, tensor_id: int) -> np.ndarray | None:
        return self._value if self._value_id == tensor_id else None  # type: ignore[no-any-return]

    def _check_nan_op(self, e: ev.Op, value: np.ndarray | None) -> tuple[str, str] | None:
        """Report the op that *produces* a NaN, or an Inf, from inputs without one (see
        the module's docstring for what is meant and not blamed). ``value`` None: judge
        by the exact summary alone (``readchecks``)."""
        if value is None:
            s = e.summary
            if s is None or not (s.nan or s.inf):
                return None
            nan, inf = s.nan, s.inf
        elif all_finite(value, e.summary):
            return None
        else:
            nan, inf = nonfinite_counts(value)
        inputs = e.inputs
        nans, infs = self._nan, self._inf
        nan_in = any(i in nans for i in inputs)
        inf_in = any(i in infs for i in inputs) or self._constant_inf(e)
        made = (nan and not nan_in) or (inf and not (nan_in or inf_in))
        unwritten = self._unwritten
        if made and unwritten and any(i in unwritten for i in inputs):
            unwritten.add(e.output)  # unwritten memory passed on: nothing to judge yet
            return None
        if nan:
            nans.add(e.output)
        if inf:
            infs.add(e.output)
        if made and (nan or self._needs_gradient(e)):
            return ("nan", f"first NaN/Inf: {describe_op(e)} produced {counts(nan, inf)} "
                           f"from {'finite inputs' if not (nan_in or inf_in) else 'no NaN'}")
        for i in inputs:  # a leaf that came in non-finite: report it at its first use
            leaf = self._bad_leaves.pop(i, None)
            if leaf is not None:
                return ("nan", f"{leaf}; first used by {describe_op(e)}")
        return None

    def _needs_gradient(self, e: ev.Op) -> bool:
        """Does the op's output, or any of its inputs, need a gradient? (No: the op computed
        data, a mask, and an Inf in it is meant.)"""
        if e.requires_grad:
            return True
        ops, leaves = self._ops, self._needs_grad
        for i in e.inputs:
            row = ops.get(i)
            if (row is not None and row[8]) or i in leaves:
                return True
        return False

    def _constant_inf(self, e: ev.Op) -> bool:
        if e.output in self._const_inf:  # (noted as the op ran: ``readchecks``)
            return True
        args = self._args if self._value_id == e.output else ()
        for tid, arg in zip(e.inputs, args, strict=False):
            if tid < 0 and isinstance(arg, (float, np.ndarray, np.floating)):
                a = np.asarray(arg)
                if a.dtype.kind == "f" and np.isinf(a).any():
                    return True
        return False

    def _unwritten_root(self, root: int) -> str:
        """The description of a backward pass that starts from a non-finite value read out
        of memory nobody wrote (or of NaN written into a part of an ``empty`` tensor)."""
        row = self._ops.get(root)
        made = describe_op(event_of(row)) if row is not None else f"tensor #{root}"  # type: ignore[arg-type]
        return (f"first NaN/Inf: backward starts from {made}, which holds NaN/Inf that came "
                "out of the unwritten memory of a tensor of the empty family (torch.empty), "
                "or were written into a part of one")

    def _on_tensor(self, r: Row) -> None:
        if self._matcher.nan is None:
            return
        tensor = r[3]
        if r[7] or r[8]:  # requires_grad, is_param
            self._needs_grad.add(tensor)
        value = self._value_of(tensor)
        if value is UNWRITTEN:
            self._unwritten.add(tensor)
            return
        if value is None or settled(r[9]) or all_finite(value):
            return
        e: ev.TensorCreated = event_of(r)  # type: ignore[assignment]
        nan, inf = nonfinite_counts(value)
        if nan:
            self._nan.add(e.tensor)
        if inf:
            self._inf.add(e.tensor)
        if not nan and not (e.requires_grad or e.is_param):
            return  # data holding Inf (an additive -inf mask): meant, not a failure
        what = f"{'parameter' if e.is_param else 'tensor'} {e.name or '#' + str(e.tensor)}"
        # The op that uses it is announced next: stop there, where there is a line to show.
        self._bad_leaves[e.tensor] = (f"first NaN/Inf: {what} {tuple(e.shape)} holds "
                                      f"{counts(nan, inf)} as it enters iteration {e.iteration}")
