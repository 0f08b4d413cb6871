"""Tensor ids for PyTorch tensors: a number from the process-wide counter, kept on the tensor.

``id()`` cannot serve: CPython reuses it for nearly every short-lived tensor. The number
lives in the tensor's ``__dict__`` as ``_dg_id = (id(tensor), number)``: reading it costs an
attribute lookup, and a copy of the tensor (``copy.deepcopy``, a model cloned for an EMA, a
tensor loaded back from a file) carries the pair of another object, so it is seen as
stale and gets a number of its own. The pair holds plain ints, so ``torch.save`` of such a
tensor still loads with ``weights_only=True``.
"""

from __future__ import annotations

from typing import Any

from ..capture.tracing import tensor_ids

_next = tensor_ids.__next__


def id_of(t: Any) -> int:
    """The tensor's id, giving it one if it has none (or a copied, stale one)."""
    pair = t.__dict__.get("_dg_id")
    if pair is not None and pair[0] == id(t):
        return pair[1]  # type: ignore[no-any-return]
    n = _next()
    t._dg_id = (id(t), n)
    return n


def new_id(t: Any) -> int:
    """A fresh id for ``t`` (an op's output; a tensor changed in place in the graph)."""
    n = _next()
    t._dg_id = (id(t), n)
    return n
