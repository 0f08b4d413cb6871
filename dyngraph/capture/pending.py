"""Statistics not read yet: a row's summary that a backend fills in later.

A backend that computes statistics on a device (PyTorch's, on a GPU) must not read each
one to the host as its op runs: every read there is a synchronisation. It puts a
``Pending`` in the row instead, keeps the device scalars in a buffer of its own, and reads
the whole buffer once (at the iteration's end, at a cap, at a pause, when the run ends),
filling in every ``Pending`` it handed out (``fill``).

Rows are delivered at once (the debug agent checks breakpoints and stepping on them), but
no row holding an unfilled ``Pending`` is encoded: the tracer's batches and the agent's
channel take rows through ``resolved``, which gives the row with its summaries in place,
or None while one is still unread. Trace files never hold a ``Pending``: the format is
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .rows import Row


class _Unread:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD: Any = _Unread()


class Pending:
    """A summary row (or, in an optimizer step's row, its ``updates``) to come."""

    __slots__ = ("row",)

    def __init__(self) -> None:
        self.row: Any = UNREAD

    def astuple(self) -> Pending:
        return self  # (``rows.summary_row`` hands a Pending on as it is)

    def __repr__(self) -> str:
        return f"Pending({self.row!r})"


_P = Pending


def _field(v: Any) -> Any:
    """``v`` with any Pending in it filled in; UNREAD if one is not yet."""
    if type(v) is _P:
        return v.row
    return v


def _tuple(v: Any) -> Any:
    if type(v) is not tuple:
        return v
    for x in v:
        if type(x) is _P:
            break
    else:
        return v
    out = tuple([x.row if type(x) is _P else x for x in v])
    return UNREAD if any(x is UNREAD for x in out) else out


def _op(r: Row) -> Row | None:
    s = r[16]
    if type(s) is not _P:
        return r
    s = s.row
    return None if s is UNREAD else (*r[:16], s, *r[17:])


def _single(index: int) -> Callable[[Row], Row | None]:
    def resolve(r: Row) -> Row | None:
        s = r[index]
        if type(s) is not _P:
            return r
        s = s.row
        return None if s is UNREAD else (*r[:index], s, *r[index + 1:])

    return resolve


def _backward_step(r: Row) -> Row | None:
    out, ins, outs = _field(r[7]), _tuple(r[8]), _tuple(r[12])
    if out is r[7] and ins is r[8] and outs is r[12]:
        return r
    if out is UNREAD or ins is UNREAD or outs is UNREAD:
        return None
    return (*r[:7], out, ins, *r[9:12], outs, *r[13:])


_RESOLVERS: dict[str, Callable[[Row], Row | None]] = {
    "op": _op, "tensor": _single(9), "grad": _single(5), "optimizer_step": _single(5),
    "backward_step": _backward_step,
}


def resolved(row: Row) -> Row | None:
    """``row`` with its pending statistics filled in (the row itself when it holds none);
    None while one of them is unread."""
    resolve = _RESOLVERS.get(row[0])
    return row if resolve is None else resolve(row)


def resolved_prefix(rows: list[Row]) -> list[Row]:
    """The rows up to the first one whose statistics are not read yet, filled in (each
    row ``resolved``). An op row without a Pending, most of a batch, costs one look."""
    out: list[Row] = []
    append = out.append
    for r in rows:
        if r[0] == "op" and type(r[16]) is not _P:
            append(r)
            continue
        done = resolved(r)
        if done is None:
            break
        append(done)
    return out


def is_unread(value: Any) -> bool:
    """Is ``value`` (a summary field of a row) a Pending not filled in yet?"""
    return type(value) is _P and value.row is UNREAD
