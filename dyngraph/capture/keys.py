"""The tracer's structure keys: ``structure.structure_key`` of an iteration, remembered by a
cheaper fingerprint of its rows.

Training repeats one structure, so the key is almost always one computed before. The
fingerprint holds everything the key depends on, in the plain values the rows already
carry: per op its op, module, file, line, shape, dtype, grad mode, attribute items and the
positions (in this iteration) of the rows that made its inputs; per entering tensor its
name, kind, shape, dtype and ``requires_grad``. Equal fingerprints give equal keys
(``structure.structure_key`` reads nothing else: an input made outside the iteration is
no edge of its graph, so it is wired as None whichever it is); an iteration whose ids
repeat is keyed directly, without the memo.
"""

from __future__ import annotations

from functools import partial
from operator import itemgetter
from typing import Any

from .rows import Row, events_of
from .structure import structure_key

# (op, module, file, line, shape, dtype, grad_enabled) of an op row (``rows`` layout).
_op_static = itemgetter(3, 10, 11, 12, 6, 7, 14)
_op_inputs = itemgetter(4)
_op_attrs = itemgetter(9)
_op_output = itemgetter(5)
# (name, is_param, shape, dtype, requires_grad) of a tensor row.
_tensor_static = itemgetter(4, 8, 5, 6, 7)
_tensor_id = itemgetter(3)


def fingerprint(ops: list[Row], tensors: list[Row]) -> tuple[Any, ...] | None:
    """The fingerprint of an iteration's op rows and tensor rows (each in order); None if
    it cannot be had (an id made twice).

    Built with ``map`` over the rows, so its loops run in C: an op costs a few tuples. An
    input is wired by position: ``k`` for the k-th op's output, ``-2 - k`` for the k-th
    entering tensor, -1 for a constant, None for a tensor from nowhere.
    """
    position = dict(zip(map(_tensor_id, tensors), range(-2, -2 - len(tensors), -1), strict=True))
    position.update(zip(map(_op_output, ops), range(len(ops)), strict=True))
    if len(position) != len(ops) + len(tensors):
        return None
    position[-1] = -1
    get = position.get
    wiring = tuple(map(tuple, map(partial(map, get), map(_op_inputs, ops))))
    attrs = tuple(map(_op_attrs, ops))
    return (tuple(map(_tensor_static, tensors)), tuple(map(_op_static, ops)), wiring, attrs)


class StructureKeys:
    """``structure_key`` of an iteration's rows, memoised by their fingerprint."""

    __slots__ = ("_memo", "_last", "_last_key")
    LIMIT = 256

    def __init__(self) -> None:
        self._memo: dict[tuple[Any, ...], str] = {}
        self._last: tuple[Any, ...] | None = None
        self._last_key = ""

    def key(self, ops: list[Row], tensors: list[Row]) -> str:
        """The key of an iteration whose op and tensor rows are ``ops`` and ``tensors``."""
        fp = fingerprint(ops, tensors)
        if fp is None:
            return _direct(ops, tensors)
        if fp == self._last:  # the usual case: compared, not hashed
            return self._last_key
        try:
            known = self._memo.get(fp)
        except TypeError:  # an unhashable attribute value
            return _direct(ops, tensors)
        if known is None:
            if len(self._memo) >= self.LIMIT:
                self._memo.clear()
            known = self._memo[fp] = _direct(ops, tensors)
        self._last, self._last_key = fp, known
        return known


def _direct(ops: list[Row], tensors: list[Row]) -> str:
    """``structure_key`` of the events of the rows, in the order they were recorded."""
    return structure_key(events_of(sorted(ops + tensors, key=_seq)))


_seq = itemgetter(1)
