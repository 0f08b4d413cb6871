"""Traces: a run's events, in memory or from a file, split into iterations with their graphs.

>>> import dyngraph
>>> with dyngraph.trace(stats="cheap") as t:          # doctest: +SKIP
...     train_one_step()
>>> t.iterations[0].graph.nodes                       # doctest: +SKIP

A trace read from a file decodes lazily: ``read_trace`` only indexes the file's frames, and
each frame is decoded (and cached, a few at a time) when an iteration or event in it is
first looked at. So opening a million-event trace takes well under two seconds and holds
about the file's size in memory.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Any, overload

import numpy as np

from . import backends
from . import events as ev
from .graph import Graph, GraphBuilder, GraphDiff, backward_graph
from .rowgraph import pending_graph
from .rows import Row, RowEvents, event_of, events_of
from .sharedgraph import GraphTemplates
from .tracefile import FLAG_VALUES, JSON_VERSION, TraceWriter, encode_events
from .tracereader import FrameRef, read_frames
from .tracing import tracer

_iteration_of = itemgetter(2)  # (a row's)

# Decoded frames kept for looking again. Not more: every decoded object kept alive is one
# more for the cyclic collector to walk (with 64, walking a whole file was a fifth slower).
_CACHED_FRAMES = 16


class LazyEvents(Sequence[ev.Event]):
    """The events of a trace file, decoded a frame at a time when first looked at."""

    def __init__(self, frames: list[FrameRef]) -> None:
        self._frames = frames
        self._starts: list[int] = []
        total = 0
        for f in frames:
            self._starts.append(total)
            total += f.count
        self._len = total
        self._cache: OrderedDict[int, list[ev.Event]] = OrderedDict()
        # frame -> (its rows, each row's iteration): what graphs are built from. A tuple of
        # rows, not a list: a graph keeps its slice until built, and a tuple of rows is left
        # alone by the cyclic collector (a list it walks, reading every row's header: with
        # a million events' worth kept, each full collection took a tenth of a second).
        self._rows: OrderedDict[int, tuple[tuple[Row, ...], list[int]]] = OrderedDict()
        self._lock = threading.Lock()  # a UI may decode in a worker while drawing

    def frame(self, index: int) -> list[ev.Event]:
        """The decoded events of frame ``index`` (safe to call from several threads)."""
        ref = self._frames[index]
        return self._cached(self._cache, index, lambda: ref.decode()
                            if ref.version == JSON_VERSION
                            else events_of(self.frame_rows(index)[0]))

    def frame_rows(self, index: int) -> tuple[tuple[Row, ...], list[int]]:
        """The rows of frame ``index`` and each one's iteration (in order: a frame's
        iterations never go back), decoded once while looked at (as ``frame``)."""
        def decode() -> tuple[tuple[Row, ...], list[int]]:
            rows = tuple(self._frames[index].rows())
            return rows, list(map(_iteration_of, rows))

        return self._cached(self._rows, index, decode)

    def _cached(self, cache: OrderedDict[int, Any], index: int, make: Callable[[], Any]
                ) -> Any:
        """``cache[index]``, made by ``make()`` outside the lock on a miss; the
        ``_CACHED_FRAMES`` most recently used are kept."""
        with self._lock:
            hit = cache.get(index)
            if hit is not None:
                cache.move_to_end(index)
                return hit
        value = make()
        with self._lock:
            cache[index] = value
            if len(cache) > _CACHED_FRAMES:
                cache.popitem(last=False)
        return value

    def iteration_span(self, frame: int, index: int) -> tuple[int, int]:
        """Where iteration ``index``'s rows (and events) are in frame ``frame``."""
        iterations = self.frame_rows(frame)[1]
        lo = bisect.bisect_left(iterations, index)
        return lo, bisect.bisect_right(iterations, index, lo)

    def iteration_rows(self, frame: int, index: int) -> tuple[Row, ...]:
        """The rows of iteration ``index`` in frame ``frame`` (the header's excluded)."""
        rows, iterations = self.frame_rows(frame)
        lo = bisect.bisect_left(iterations, index)
        hi = bisect.bisect_right(iterations, index, lo)
        if frame == 0 and lo == 0 and hi:  # (the first frame begins with the header)
            return tuple([r for r in rows[lo:hi] if r[0] != "header"])
        return rows[lo:hi]

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> ev.Event: ...

    @overload
    def __getitem__(self, i: slice) -> list[ev.Event]: ...

    def __getitem__(self, i: int | slice) -> ev.Event | list[ev.Event]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("event index out of range")
        f = bisect.bisect_right(self._starts, i) - 1
        return self.frame(f)[i - self._starts[f]]

    def __iter__(self) -> Iterator[ev.Event]:
        # A walk through the whole file leaves the cache alone: filling it would evict what
        # is being looked at for frames read once, and keeping tens of thousands of decoded
        # events alive makes the cyclic collector walk them (a walk is then a third slower).
        cache, lock = self._cache, self._lock
        for f, ref in enumerate(self._frames):
            with lock:
                events = cache.get(f)
            yield from ref.decode() if events is None else events

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != self._len:
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<LazyEvents: {self._len} events in {len(self._frames)} frames>"


class Iteration:
    """One iteration of a trace: its events, forward and backward graphs, structure key."""

    def __init__(self, trace: Trace, index: int) -> None:
        self.trace = trace
        self.index = index
        self._graph: Graph | None = None
        self._backward: Graph | None = None
        self._graph_stamp = -1
        self._last: ev.Event | None = None  # (file traces only)

    @property
    def events(self) -> list[ev.Event]:
        """This iteration's events (the stream header excluded)."""
        return self.trace._iteration_events(self.index)

    @property
    def graph(self) -> Graph:
        """The forward graph (rebuilt if the live trace grew since last asked).

        Asking again costs no decoding: whether the iteration grew is told by the trace's
        bookkeeping, not by its events. Built from the iteration's rows where the trace
        has them (recorded, or read from a file), without event objects, when first
        looked into (``rowgraph.pending_graph``): the rows are decoded now (a damaged
        frame raises here), the nodes made when a field is first read.
        """
        stamp = self.trace._iteration_stamp(self.index)
        if self._graph is None or self._graph_stamp != stamp:
            rows = self.trace._iteration_rows(self.index)
            if rows is not None:
                self._graph = pending_graph(rows, self.index, self.trace._templates)
            else:
                builder = GraphBuilder()
                builder.current.iteration = self.index
                done = builder.add_all(self.events)
                self._graph = done if done is not None else builder.current
            self._graph_stamp = stamp
            self._backward = None
        return self._graph

    @property
    def backward_graph(self) -> Graph:
        graph = self.graph
        if self._backward is None:
            self._backward = backward_graph(graph)
        return self._backward

    @property
    def complete(self) -> bool:
        """True once the iteration ended (an IterationEnd event is in the trace)."""
        return type(self._last_event()) is ev.IterationEnd

    @property
    def structure_key(self) -> str:
        last = self._last_event()
        if type(last) is ev.IterationEnd:
            return last.structure_key
        return self.graph.structure_key

    def _last_event(self) -> ev.Event | None:
        # A file's iteration never changes: its last event is looked up (one frame decoded)
        # once. A live trace's is a list lookup.
        if self._last is not None:
            return self._last
        last = self.trace._iteration_last(self.index)
        if self.trace._frame_spans is not None:
            self._last = last
        return last

    def diff(self, other: Iteration | Graph) -> GraphDiff:
        """What changed from ``other`` (typically the previous iteration) to this one."""
        other_graph = other.graph if isinstance(other, Iteration) else other
        return self.graph.diff(other_graph)

    def __repr__(self) -> str:
        return f"<Iteration {self.index}: {len(self.events)} events>"


class Trace:
    """A run's events: ``events`` (header first), ``iterations``, ``values(tensor_id)``.

    Built in memory by ``dyngraph.trace()`` (``events`` is a list that grows while the
    recording runs) or from a file by ``dyngraph.read_trace()`` (``events`` decodes lazily).
    """

    def __init__(self, events: list[ev.Event] | None = None, header: ev.Header | None = None,
                 path: str | None = None) -> None:
        self.events: Sequence[ev.Event] = [] if events is None else events
        if header is None and self.events and type(self.events[0]) is ev.Header:
            header = self.events[0]  # type: ignore[assignment]
        self.header = header
        self.path = path
        # iteration number -> [start, end) positions in events (in-memory traces)
        self._spans: dict[int, list[int]] = {}
        self._scanned = 0
        self._iterations: dict[int, Iteration] = {}
        self._setup: bool | None = None  # does iteration 0 hold graph work? (_has_setup)
        self._setup_stamp = -1
        self._values: dict[int, np.ndarray] | None = None
        self._values_scanned = 0
        # iteration number -> frame indexes (file traces)
        self._frame_spans: dict[int, tuple[int, ...]] | None = None
        # The graphs of iterations that repeat one structure share it (``sharedgraph``).
        self._templates = GraphTemplates()

    @classmethod
    def from_frames(cls, header: ev.Header, frames: list[FrameRef],
                    path: str | None = None) -> Trace:
        trace = cls(LazyEvents(frames), header=header, path=path)  # type: ignore[arg-type]
        spans: dict[int, list[int]] = {}
        for i, f in enumerate(frames):
            # (never a range from the metadata: it may claim four billion iterations)
            for it in f.iterations():
                spans.setdefault(it, []).append(i)
        # (as tuples, which the cyclic collector lets be, unlike a list per iteration)
        trace._frame_spans = dict(zip(spans, map(tuple, spans.values()), strict=True))
        return trace

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<Trace{where}: {len(self.events)} events, {len(self.iterations)} iterations>"

    # -- iterations --------------------------------------------------------------------
    def _scan(self) -> None:
        events = self.events
        spans = self._spans
        if type(events) is RowEvents:  # rows: no event object built to read an iteration
            last = self._scanned
            for i, r in events.rows_from(self._scanned):
                span = spans.get(r[2])
                if span is None:
                    spans[r[2]] = [i, i + 1]
                else:
                    span[1] = i + 1
                last = i + 1
            self._scanned = max(last, 1)
            return
        Header = ev.Header
        for i in range(self._scanned, len(events)):
            e = events[i]
            if type(e) is Header:
                continue
            span = spans.get(e.iteration)
            if span is None:
                spans[e.iteration] = [i, i + 1]
            else:
                span[1] = i + 1
        self._scanned = len(events)

    def _iteration_numbers(self) -> list[int]:
        if self._frame_spans is not None:
            numbers = sorted(self._frame_spans)
        else:
            self._scan()
            numbers = sorted(self._spans)
        if numbers and numbers[0] == 0 and not self._has_setup():
            return numbers[1:]
        return numbers

    def _has_setup(self) -> bool:
        """Did iteration 0 record graph work? The script's output before its first op, or
        a pause at its start, carry iteration 0 too, and make no setup iteration."""
        if self._setup is None or (self._frame_spans is None and self._setup_stamp !=
                                   self._iteration_stamp(0)):
            self._setup_stamp = self._iteration_stamp(0)
            self._setup = any(e.kind in _GRAPH_KINDS for e in self._iteration_events(0))
        return self._setup

    def _iteration_events(self, index: int) -> list[ev.Event]:
        if self._frame_spans is not None:
            lazy: LazyEvents = self.events  # type: ignore[assignment]
            out: list[ev.Event] = []
            for f in self._frame_spans.get(index, ()):
                ref = lazy._frames[f]
                if f and ref.first_iteration == ref.last_iteration == index:
                    out += lazy.frame(f)  # a frame of one iteration's, no header
                elif ref.version == JSON_VERSION:
                    out += [e for e in lazy.frame(f)
                            if e.iteration == index and type(e) is not ev.Header]
                else:  # several iterations: this one's place by bisection of the rows'
                    lo, hi = lazy.iteration_span(f, index)
                    out += [e for e in lazy.frame(f)[lo:hi] if type(e) is not ev.Header]
            return out
        self._scan()
        span = self._spans.get(index)
        if span is None:
            return []
        return [e for e in self.events[span[0]:span[1]]
                if e.iteration == index and type(e) is not ev.Header]

    def _iteration_rows(self, index: int) -> Sequence[Row] | None:
        """Iteration ``index``'s rows (the header excluded), or None for a trace of event
        objects (``Trace(events)``). A file's are a tuple (see ``LazyEvents._rows``)."""
        if self._frame_spans is not None:
            lazy: LazyEvents = self.events  # type: ignore[assignment]
            frames = self._frame_spans.get(index, ())
            if len(frames) == 1:
                return lazy.iteration_rows(frames[0], index)
            out: list[Row] = []
            for f in frames:
                out += lazy.iteration_rows(f, index)
            return tuple(out)
        if type(self.events) is not RowEvents:
            return None
        self._scan()
        span = self._spans.get(index)
        if span is None:
            return []
        log: RowEvents = self.events  # type: ignore[assignment]
        return tuple([r for _, r in log.rows_from(span[0], span[1])
                      if r[2] == index and r[0] != "header"])

    def _iteration_stamp(self, index: int) -> int:
        """A number that changes whenever iteration ``index`` gains events."""
        if self._frame_spans is not None:
            return 0  # a file's iterations are what they are
        self._scan()
        span = self._spans.get(index)
        return 0 if span is None else span[1]

    def _iteration_last(self, index: int) -> ev.Event | None:
        """The last event of iteration ``index``, decoding at most the frames it ends in."""
        if self._frame_spans is not None:
            lazy: LazyEvents = self.events  # type: ignore[assignment]
            for f in reversed(self._frame_spans.get(index, ())):
                rows = lazy.iteration_rows(f, index)
                if rows:
                    return event_of(rows[-1])
            return None
        self._scan()
        span = self._spans.get(index)
        return None if span is None else self.events[span[1] - 1]

    @property
    def iterations(self) -> list[Iteration]:
        """The iterations in the trace, in order; ``index`` is the iteration number (from 1)."""
        out = []
        for n in self._iteration_numbers():
            it = self._iterations.get(n)
            if it is None:
                it = self._iterations[n] = Iteration(self, n)
            out.append(it)
        return out

    def iteration(self, index: int) -> Iteration:
        """The iteration numbered ``index``; KeyError if the trace has none."""
        if index not in self._iteration_numbers():
            raise KeyError(f"no iteration {index} in this trace")
        return self.iterations[self._iteration_numbers().index(index)]

    # -- values ------------------------------------------------------------------------
    def values(self, tensor_id: int) -> np.ndarray | None:
        """The values recorded for ``tensor_id`` (``values="small"``), or None."""
        if self.header is not None and self.header.values == "none":
            return None
        if self._values is None:
            self._values = {}
        if self._frame_spans is not None:
            if self._values_scanned == 0:
                lazy: LazyEvents = self.events  # type: ignore[assignment]
                for f in lazy._frames:
                    if f.flags & FLAG_VALUES:
                        for e in f.decode():
                            if type(e) is ev.TensorValues:
                                self._values[e.tensor] = e.array
                self._values_scanned = 1
        elif type(self.events) is RowEvents:
            log: RowEvents = self.events  # type: ignore[assignment]
            for i, r in log.rows_from(self._values_scanned):
                if r[0] == "values":
                    self._values[r[3]] = r[4]
                self._values_scanned = i + 1
        else:
            events = self.events
            for i in range(self._values_scanned, len(events)):
                e = events[i]
                if type(e) is ev.TensorValues:
                    self._values[e.tensor] = e.array
            self._values_scanned = len(events)
        return self._values.get(tensor_id)

    # -- files -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this trace to a file (the format of ``dyngraph.record``)."""
        header = self.header or tracer.make_header()
        if type(self.events) is RowEvents:
            log: RowEvents = self.events  # type: ignore[assignment]
            log.sync()
            with TraceWriter(path, header) as writer:
                for rows in log.batches:
                    writer.take(rows, at_once=True)  # a frame per batch, as recorded
            return
        events = list(self.events)
        body = events[1:] if events and type(events[0]) is ev.Header else events
        with TraceWriter(path, header) as writer:
            writer.write(body)


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Open a trace file written by ``dyngraph.record`` or ``dyngraph record``.

    Raises ``TraceFileError`` (one line naming the file and the problem) for a damaged,
    foreign, empty or newer-schema file; warns and loads the whole frames of a file cut short.

    >>> t = read_trace("run.dgtrace")                # doctest: +SKIP
    >>> [it.structure_key for it in t.iterations]    # doctest: +SKIP
    """
    header, frames = read_frames(path)
    return Trace.from_frames(header, frames, path=os.fspath(path))


def _check_modes(stats: str, values: str, iteration: str = "backward") -> None:
    if iteration not in ("backward", "step"):
        raise ValueError(f"iteration must be 'backward' or 'step', got {iteration!r}")
    if stats not in ("full", "cheap", "none"):
        raise ValueError(f"stats must be 'full', 'cheap' or 'none', got {stats!r}")
    if values not in ("none", "small"):
        raise ValueError(f"values must be 'none' or 'small', got {values!r}")


def _finish(sole: bool) -> None:
    # Close a pending iteration so the recording ends with its IterationEnd; when someone
    # else listens too, leave their stream's iteration alone.
    if sole:
        tracer.flush_iteration()


@contextmanager
def trace(stats: str = "full", values: str = "none", backend: str = "auto",
          iteration: str = "backward") -> Iterator[Trace]:
    """Record every event in memory while the block runs.

    ``backend`` says whose ops are seen: ``"auto"`` (the numpy engine, and PyTorch once
    imported), ``"torch"`` (PyTorch now; an error if it is not installed) or ``"dyngraph"``
    (the numpy engine only). ``iteration``: where an iteration ends, ``"backward"`` (each
    ``backward()``) or ``"step"`` (each optimizer step); work before the first
    differentiable op is iteration 0, setup.

    >>> import dyngraph
    >>> with dyngraph.trace(stats="cheap") as t:
    ...     x = dyngraph.tensor([1.0, 2.0], requires_grad=True)
    ...     (x * x).sum().backward()
    >>> [e.kind for e in t.events][:3]
    ['header', 'tensor', 'op']
    >>> len(t.iterations[0].graph.nodes)
    3
    """
    _check_modes(stats, values, iteration)
    capture = backends.activate(backend)
    if not tracer.listening:  # the first listener says where iterations end
        tracer.mode = iteration
    log = RowEvents(tracer.make_header(stats, values))
    handle = tracer.attach(sink=log.take, stats=stats, values=values)
    thread = threading.get_ident()

    def pull() -> None:  # the rows still gathering, when read by the recording's thread
        if threading.get_ident() == thread:
            tracer.flush_rows()

    log.pull = pull
    result = Trace(log)  # type: ignore[arg-type]
    try:
        yield result
    finally:
        log.pull = None
        _finish(len(tracer._subscribers) == 1)
        handle.remove()
        capture.remove()


@contextmanager
def record(path: str | os.PathLike[str], stats: str = "cheap", values: str = "none",
           backend: str = "auto", iteration: str = "backward") -> Iterator[TraceWriter]:
    """Write every event to the trace file ``path`` as it happens (``backend`` and
    ``iteration`` as for ``trace``).

    Frames are written at every iteration end (and every ``BATCH_EVENTS`` events), so a run
    killed midway leaves a file that loads up to its last whole frame. The file starts beside
    ``path`` under a temporary name and takes its place with its first recorded frame: a
    block that raises before recording anything leaves an existing trace as it was; one
    that raises later keeps what it recorded. ``path`` must be a new file, an empty one or a
    trace: anything else (a script, a document) is refused with a UserError.

    >>> with dyngraph.record("run.dgtrace"):       # doctest: +SKIP
    ...     train()
    >>> dyngraph.read_trace("run.dgtrace")          # doctest: +SKIP
    """
    _check_modes(stats, values, iteration)
    capture = backends.activate(backend)
    if not tracer.listening:
        tracer.mode = iteration
    try:
        writer = TraceWriter(path, tracer.make_header(stats, values))
    except BaseException:
        capture.remove()
        raise
    sub = tracer.attach(sink=writer.take, stats=stats, values=values)
    failed = False
    try:
        yield writer
    except BaseException:
        failed = True
        raise
    finally:
        _finish(len(tracer._subscribers) == 1)
        sub.remove()
        capture.remove()
        writer.close(keep_existing=failed)  # (only if it recorded nothing: see TraceWriter)


def encode_trace(t: Trace) -> bytes:
    """The bytes of ``t`` as a trace file (one frame), for tests and the wire."""
    return encode_events(list(t.events))


# Events that make an iteration (output, a pause, an exception alone do not).
_GRAPH_KINDS = frozenset({"tensor", "op", "module_call", "backward_start", "backward_step",
                          "grad", "backward_end", "optimizer_step", "iteration_end"})

__all__ = ["Iteration", "LazyEvents", "Trace", "read_trace", "record", "trace"]
