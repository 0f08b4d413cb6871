"""Rows: the plain-data form in which the tracer records events.

A row is a tuple ``(kind, seq, iteration, field, ...)``, the fields in the order of
``events.FIELD_NAMES[kind]``; a summary in it is a tuple too (``SUMMARY ROWS`` below), and
so are shapes, id lists, updates and an op's ``attrs``, as a tuple of its ``(name,
value)`` items (``()``: none). Everything in a row is an int, float, str, bool, None, a
tuple of those or (``values`` rows) an ndarray: never a dict, a list or an object, which
would keep the row tracked by the collector (CPython untracks a tuple only if none of its
items is of a type the collector tracks, whether or not that item itself is tracked).

Why not the event objects themselves: a recording keeps every event alive, and CPython's
cyclic garbage collector walks every live instance of a Python class at each of its
collections, over and over as the trace grows (it doubled the cost of recording a chain
of tiny ops). An exact tuple of such plain items is untracked by the collector after its
first collection, and then costs it nothing. Rows are also what the trace file encoder
and the debug channel take, without an object in between.

Event objects are built from rows when someone looks at them (``event_of``,
``events_of``): a subscriber of ``tracing.subscribe``, ``Trace.events``. A summary row
shared by two rows (a gradient handed from one backward step to the next) becomes one
shared ``Summary`` object when both are built together.

Summary rows:

- ``(shape, dtype, norm, nan, inf, sampled)``: a cheap summary (no min, max, mean, std,
  preview);
- ``(shape, dtype, min, max, mean, std, norm, nan, inf, preview, sampled)``: the others.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any

from . import events as ev

Row = tuple[Any, ...]
SummaryRow = tuple[Any, ...]

_new = object.__new__
_make_cheap = ev.Summary.cheap
_make_full = ev._make_full
_FullSummary = ev._FullSummary
_Summary = ev.Summary

# Event fields that hold a summary, and the one that holds a tuple of them.
SUMMARY_FIELDS = frozenset({"summary", "grad_output", "result"})
SUMMARY_TUPLE_FIELDS = frozenset({"grad_inputs", "grad_outputs"})
NO_ATTRS: dict[str, Any] = {}  # every attr-less Op event's attrs: treat as read-only
_attr_dicts: dict[tuple[Any, ...], dict[str, Any]] = {}


def attrs_dict(items: tuple[Any, ...]) -> dict[str, Any]:
    """An Op event's ``attrs`` from its row's items: one shared dict per distinct value
    (they repeat a lot), the empty one ``NO_ATTRS``."""
    if not items:
        return NO_ATTRS
    try:
        d = _attr_dicts.get(items)
    except TypeError:  # (an unhashable value: a row built by hand)
        return dict(items)
    if d is None:
        if len(_attr_dicts) > 10_000:
            _attr_dicts.clear()
        d = _attr_dicts[items] = dict(items)
    return d


def attrs_items(attrs: Any) -> tuple[Any, ...]:
    """A row's attrs: the items of an Op event's ``attrs`` dict."""
    return tuple(attrs.items()) if attrs else ()


# -- summaries ------------------------------------------------------------------------------
def summary_row(s: ev.Summary | SummaryRow | None) -> SummaryRow | None:
    """``s`` as a summary row (a Summary object from a backend that builds them, such as
    PyTorch's; a row or None is returned as it is)."""
    if s is None or type(s) is tuple:
        return s  # type: ignore[return-value]
    if type(s) is _Summary:
        return (s.shape, s.dtype, s.norm, s.nan, s.inf, s.sampled)
    return s.astuple()  # type: ignore[union-attr]


def summary_of(r: SummaryRow | ev.Summary | None) -> ev.Summary | None:
    """The Summary object of a summary row."""
    if type(r) is not tuple:
        return r  # type: ignore[return-value]  # None, or a Summary already
    if len(r) == 6:
        return _make_cheap(*r)
    if r[2] is None and r[3] is None and r[4] is None and r[5] is None and not r[9]:
        return _make_cheap(r[0], r[1], r[6], r[7], r[8], r[10])
    return _make_full(*r)


def summary_builder() -> Callable[[Any], ev.Summary | None]:
    """``summary_of`` that builds one Summary per summary row object: two rows sharing a
    summary row (by identity) get one shared Summary."""
    memo: dict[int, tuple[Any, ev.Summary | None]] = {}
    get = memo.get

    def build(r: Any) -> ev.Summary | None:
        if type(r) is not tuple:
            return r  # type: ignore[no-any-return]
        hit = get(id(r))
        if hit is not None:
            return hit[1]
        s = summary_of(r)
        memo[id(r)] = (r, s)  # (r held: its id stays its own while the memo lives)
        return s

    return build


# -- rows -> events ------------------------------------------------------------------------
def _maker(cls: type[ev.Event]) -> Callable[[Row, Any], ev.Event]:
    """A function building ``cls`` from its row, the summaries through ``S``."""
    names = ev.FIELD_NAMES[cls.kind]
    targets = ", ".join(f"o.{n}" for n in names)
    lines = ["def make(r, S):", "    o = _new(B)", f"    _, {targets}, = r"]
    for n in names:
        if n == "attrs":
            lines.append("    o.attrs = A(o.attrs)")
        elif n in SUMMARY_FIELDS:
            lines.append(f"    o.{n} = S(o.{n})")
        elif n in SUMMARY_TUPLE_FIELDS:
            lines.append(f"    o.{n} = tuple([S(x) for x in o.{n}])")
    lines += ["    o.__class__ = cls", "    return o"]
    namespace: dict[str, Any] = {"_new": _new, "B": ev.builder(cls), "cls": cls,
                                 "A": attrs_dict}
    exec("\n".join(lines) + "\n", namespace)  # generated from the class's own field names
    return namespace["make"]  # type: ignore[no-any-return]


MAKERS: dict[str, Callable[[Row, Any], ev.Event]] = {
    kind: _maker(cls) for kind, cls in ev.EVENT_TYPES.items()}


def event_of(row: Row) -> ev.Event:
    """The event object of one row."""
    return MAKERS[row[0]](row, summary_of)


def events_of(rows: Iterable[Row]) -> list[ev.Event]:
    """The event objects of ``rows``, summaries shared as the rows share them."""
    makers, build = MAKERS, summary_builder()
    return [makers[r[0]](r, build) for r in rows]


# -- events -> rows ------------------------------------------------------------------------
def _getter(cls: type[ev.Event]) -> Callable[[ev.Event, Any], Row]:
    names = ev.FIELD_NAMES[cls.kind]
    get = attrgetter(*names)
    kind = cls.kind
    slots = [i for i, n in enumerate(names) if n in SUMMARY_FIELDS]
    lists = [i for i, n in enumerate(names) if n in SUMMARY_TUPLE_FIELDS]
    attrs = [i for i, n in enumerate(names) if n == "attrs"]
    if not slots and not lists and not attrs:
        return lambda e, convert: (kind, *get(e))

    def row(e: ev.Event, convert: Any) -> Row:
        values = list(get(e))
        for i in slots:
            values[i] = convert(values[i])
        for i in lists:
            values[i] = tuple([convert(s) for s in values[i]])
        for i in attrs:
            values[i] = attrs_items(values[i])
        return (kind, *values)

    return row


_ROWS: dict[type, Callable[[ev.Event, Any], Row]] = {
    cls: _getter(cls) for cls in ev.EVENT_TYPES.values()}


def _row_getter(event: ev.Event) -> Callable[[ev.Event, Any], Row]:
    getter = _ROWS.get(type(event))
    if getter is None:
        cls = next(c for c in ev.EVENT_TYPES.values() if isinstance(event, c))
        getter = _ROWS[cls]
    return getter


def row_of(event: ev.Event) -> Row:
    """The row of an event object (of one of the schema's classes or a subclass)."""
    return _row_getter(event)(event, summary_row)


def rows_of(events: Iterable[ev.Event]) -> list[Row]:
    """The rows of ``events``; a Summary object shared by several events becomes one
    summary row shared by their rows."""
    memo: dict[int, tuple[Any, Any]] = {}

    def convert(s: Any) -> Any:
        if s is None or type(s) is tuple:
            return s
        hit = memo.get(id(s))
        if hit is None:
            hit = memo[id(s)] = (s, summary_row(s))
        return hit[1]

    return [_row_getter(e)(e, convert) for e in events]


# -- an in-memory trace's events -------------------------------------------------------------
class RowEvents(Sequence[ev.Event]):
    """The events of an in-memory trace (``dyngraph.trace``): the header, then the rows
    the tracer hands over in batches (``take``, a tracer sink). A batch is built into event
    objects the first time one of its events is looked at, and kept so; until then it
    costs the cyclic collector nothing.

    ``pull`` (while recording) hands over the rows the tracer is still gathering, so the
    events read include everything recorded so far.
    """

    def __init__(self, header: ev.Event, pull: Callable[[], None] | None = None) -> None:
        self.header = header
        self.batches: list[tuple[Row, ...]] = []
        self._built: list[list[ev.Event] | None] = []
        self.starts: list[int] = []  # index of each batch's first event (the header is 0)
        self._len = 1
        self.pull = pull

    def take(self, rows: list[Row]) -> None:
        # Kept as a tuple: a list stays tracked by the cyclic collector, which visits each
        # of its rows at every full collection (as the trace grows, most of the cost of
        # recording a chain of tiny ops); a tuple of untracked rows is untracked itself.
        self.batches.append(tuple(rows))
        self._built.append(None)
        self.starts.append(self._len)
        self._len += len(rows)

    def sync(self) -> None:
        if self.pull is not None:
            self.pull()

    def batch(self, index: int) -> list[ev.Event]:
        """The events of batch ``index``, built once."""
        built = self._built[index]
        if built is None:
            built = self._built[index] = events_of(self.batches[index])
        return built

    def __len__(self) -> int:
        self.sync()
        return self._len

    def __getitem__(self, i: Any) -> Any:
        n = len(self)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(n))]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        if i == 0:
            return self.header
        b = bisect_right(self.starts, i) - 1
        return self.batch(b)[i - self.starts[b]]

    def __iter__(self) -> Iterator[ev.Event]:
        self.sync()
        yield self.header
        for b in range(len(self.batches)):
            yield from self.batch(b)

    def rows_from(self, start: int, end: int | None = None) -> Iterator[tuple[int, Row]]:
        """(index, row) of every event from index ``start`` on, up to ``end`` (the header
        excluded)."""
        self.sync()
        first_batch = max(bisect_right(self.starts, start) - 1, 0)
        for b in range(first_batch, len(self.batches)):
            first = self.starts[b]
            if end is not None and first >= end:
                return
            rows = self.batches[b]
            stop = len(rows) if end is None else min(len(rows), end - first)
            for j in range(max(0, start - first), stop):
                yield first + j, rows[j]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<RowEvents: {self._len} events in {len(self.batches)} batches>"
