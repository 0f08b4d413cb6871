"""The version counter: which memory an in-place op changed, and when.

PyTorch gives every storage a version that each in-place op bumps; a tensor saved for
backward remembers the version it was saved at, and backward refuses to use it once that
moved. dyngraph reaches the same verdicts without any cost on the op path (``apply()``
records nothing for it):

- Tensors and graph nodes are numbered by one clock, ``ids``. An in-place op *stamps* the
  memory it changed (keyed by the numpy array that owns it) with the next number, so a
  node was made before the change exactly when its ``out_id`` is lower than the stamp.
- At backward, only nodes older than the newest stamp are looked at (``newest``), and for
  those the arrays their backward closure captured (what the op saved) are matched
  against the stamped memory. A captured array stamped after the node was made is a
  saved tensor modified in place: PyTorch's error.

Only the in-place op and that backward check pay; a training loop whose in-place ops are
the optimizer's updates (stamped before the next forward) checks nothing.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Iterator
from types import FunctionType
from typing import Any

import numpy as np

from ..capture.tracing import tensor_ids as ids  # numbers tensors, graph nodes and stamps

# The most recent stamp: nodes with a higher out_id were made after every in-place op.
newest = 0

MODIFIED_MESSAGE = (
    "one of the variables needed for gradient computation has been modified by an "
    "inplace operation: [{kind} {shape}]{source} is at version {version}; expected version "
    "{expected} instead. Hint: {node} needs it for its gradient; make the in-place op "
    "out of place (y = y.add(1) rather than y.add_(1)), or clone() the tensor before "
    "changing it."
)

_KEEP = 64  # stamps kept per memory block: enough to tell every recent version apart
_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
    "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
}


class _Record:
    """The versions of one memory block (one numpy array that owns its data)."""

    __slots__ = ("ref", "count", "stamps", "fn_name")

    def __init__(self, owner: np.ndarray, key: int) -> None:
        # The callback gets the dead weakref: it drops the record only if still its own.
        self.ref = weakref.ref(owner, functools.partial(_forget, key))
        self.count = 0
        self.stamps: list[int] = []
        # grad_fn name of the tensor owning this memory after the last change (PyTorch
        # names a saved tensor by its current grad_fn in the error); None for a leaf.
        self.fn_name: str | None = None


_records: dict[int, _Record] = {}


def root(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory (numpy views point at it through ``base``;
    one made by ``as_strided``, e.g. ``expand``'s, through a holder's ``base``)."""
    base = array.base
    while base is not None:
        if not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)  # as_strided's DummyArray holds the array
            if not isinstance(base, np.ndarray):
                break
        array = base
        base = array.base
    return array


def _forget(key: int, ref: weakref.ref[np.ndarray]) -> None:
    record = _records.get(key)
    if record is not None and record.ref is ref:
        del _records[key]


def bump(array: np.ndarray, fn_name: str | None = None) -> None:
    """Record that an in-place op just changed ``array``'s memory."""
    global newest
    owner = array if array.base is None else root(array)  # (an optimizer's parameter)
    key = id(owner)
    record = _records.get(key)
    if record is None or record.ref() is not owner:
        record = _records[key] = _Record(owner, key)
    newest = stamp = next(ids)
    record.count += 1
    stamps = record.stamps
    stamps.append(stamp)
    if len(stamps) > 2 * _KEEP:
        del stamps[:-_KEEP]
    record.fn_name = fn_name


def version(array: np.ndarray) -> int:
    """How many in-place ops changed this memory (``tensor._version``)."""
    record = _records.get(id(root(array)))
    return 0 if record is None else record.count


def changed_since(array: np.ndarray, when: int) -> bool:
    """Did an in-place op change ``array``'s memory after clock tick ``when`` (a tensor's
    id: after that tensor was made)?"""
    owner = root(array)
    record = _records.get(id(owner))
    return (record is not None and record.ref() is owner and bool(record.stamps)
            and record.stamps[-1] > when)


def written_into(saved: np.ndarray, memory: np.ndarray) -> None:
    """An in-place op computed ``saved`` out of place, copied it into ``memory`` and just
    bumped its version: a backward that saved ``saved`` (sqrt_'s output) saved, as in
    PyTorch, the tensor itself, so later in-place changes of ``memory`` count against it."""
    key = id(saved)
    ref = weakref.ref(saved, lambda r: _written_into.pop(key, None)
                      if _written_into.get(key, (None,))[0] is r else None)
    _written_into[key] = (ref, root(memory), newest)


_written_into: dict[int, tuple[weakref.ref[np.ndarray], np.ndarray, int]] = {}


# -- the backward check ---------------------------------------------------------------
def check_saved(node: Any, tid: int) -> None:
    """Raise PyTorch's error if ``node`` (made at ``tid``) saved memory changed since."""
    backward_fn = node.backward_fn
    if backward_fn is None:
        return
    only_for = node.op.saved_for
    for name, array in _captured(backward_fn, 0):
        if only_for and name in only_for and node.inputs[only_for[name]] is None:
            continue  # kept for an input that needs no gradient: PyTorch would not save it
        owner = root(array)
        since = tid
        link = _written_into.get(id(array))
        if link is not None and link[0]() is array:
            owner, since = link[1], link[2]  # saved an in-place op's result: its memory
        record = _records.get(id(owner))
        if record is None or record.stamps[-1] <= since:
            continue
        expected = record.count - sum(1 for s in record.stamps if s > since)
        raise RuntimeError(MODIFIED_MESSAGE.format(
            kind=type_name(array.dtype),
            shape=list(array.shape), source=_source(node, name, array is owner, record),
            version=record.count, expected=expected, node=node.name(),
        ))


def type_name(dtype: np.dtype) -> str:
    """PyTorch's legacy type name for a dtype: ``torch.FloatTensor`` for float32."""
    return f"torch.{_TYPE_NAMES.get(dtype.name, dtype.name)}"


def _captured(fn: Any, depth: int) -> Iterator[tuple[str, np.ndarray]]:
    """The arrays a backward closure holds, with the names it holds them under.

    Saved state lives in the closure's cells and in defaults bound at creation (``ops.mul``
    binds ``a=a, b=b``); helper closures it calls are followed one level down.
    """
    code = fn.__code__
    defaults = fn.__defaults__
    if defaults:
        names = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
        for name, value in zip(names, defaults, strict=True):
            yield from _arrays(name, value, depth)
    cells = fn.__closure__
    if cells:
        for name, cell in zip(code.co_freevars, cells, strict=True):
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            yield from _arrays(name, value, depth)


def rebind(fn: Any, scalar: Any, array: np.ndarray) -> None:
    """An op on 0-d arrays returns a numpy scalar, which ``apply`` wraps in a new array:
    where the backward closure saved that scalar (its output), make it hold the array the
    output tensor owns, so an in-place change of the output is seen by the check."""
    cells = fn.__closure__
    if cells:
        for cell in cells:
            try:
                if cell.cell_contents is scalar:
                    cell.cell_contents = array
            except ValueError:  # a cell not filled yet
                continue
    defaults = fn.__defaults__
    if defaults and any(d is scalar for d in defaults):
        fn.__defaults__ = tuple(array if d is scalar else d for d in defaults)


def _arrays(name: str, value: Any, depth: int) -> Iterator[tuple[str, np.ndarray]]:
    if type(value) is np.ndarray:
        yield name, value
    elif type(value) is tuple or type(value) is list:
        for item in value:
            if type(item) is np.ndarray:
                yield name, item
    elif type(value) is FunctionType and depth < 1:
        yield from _captured(value, depth + 1)


def _source(node: Any, name: str, whole: bool, record: _Record) -> str:
    """PyTorch's ", which is output 0 of X" (X: the saved tensor's grad_fn), or nothing."""
    forward = node.op.forward.__code__
    params = forward.co_varnames[:forward.co_argcount]
    if name not in params:  # not an input under its own name: the op's output
        return f", which is output 0 of {_short(node.name())},"
    if record.fn_name is None:  # the tensor owning that memory is a leaf
        return ""
    return f", which is output 0 of {_short(record.fn_name if whole else 'AsStridedBackward0')},"


def _short(grad_fn_name: str) -> str:
    """PyTorch's way of naming a grad_fn in this error: ``MulBackward0`` -> ``Mul``."""
    short = re.sub(r"Backward\d*$", "", grad_fn_name)
    return short if short != grad_fn_name else f"torch::autograd::{grad_fn_name}"
