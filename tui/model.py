"""UI-side state of a debugging session: the event history, a cursor into it, and views.

The model knows events and the graph model (``dyngraph.capture.graph``), never widgets. Live and
replay sessions feed it the same way (``ingest``); the cursor then moves through what is
known, so one can step backwards in both (in a live session the script stays paused at the
frontier while the cursor looks at the past).

Ingesting is cheap per event (a few list appends): a 200,000-event trace must open in well
under a second. Graphs are built lazily per iteration and cached; the graph *at the cursor*
is a filtered view of its iteration's graph (nodes not yet created at the cursor dropped,
gradients not yet computed hidden), so stepping either way costs one pass over one
iteration, never a rebuild of the run.

>>> model = Model()
>>> model.ingest(events)              # doctest: +SKIP
>>> model.move_to(model.next_step())  # doctest: +SKIP
>>> model.graph_at_cursor().nodes     # doctest: +SKIP
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from dyngraph.capture import events as ev
from dyngraph.capture.graph import Graph, GraphBuilder, GraphDiff, GraphNode, diff_graphs

from .graph_as_of import AsOf, graph_as_of, without_grad  # noqa: F401 - (``graph_as_of`` re-exported)

# Events a step lands on: the moments that change one node.
STEP_KINDS = frozenset({"op", "backward_step"})
# Events that belong to an iteration's graph (everything else is bookkeeping or output).
GRAPH_KINDS = frozenset({
    "tensor", "module_call", "op", "backward_start", "backward_step", "grad", "backward_end",
    "optimizer_step", "iteration_end", "breakpoint", "exception", "compile",
})
_GRAPH_CACHE = 8
QUIET_PAUSES = frozenset({"step", "start", "held"})


@dataclass(frozen=True, slots=True)
class Dropped(ev.Event):
    """Stands in for an event let go to bound memory (``Model.max_events``)."""

    kind = "dropped"


DROPPED = Dropped(seq=0, iteration=-1)


@dataclass(slots=True)
class IterationInfo:
    """Where one iteration sits in the history. ``end`` is the index of its IterationEnd."""

    index: int
    start: int
    end: int | None = None
    structure_key: str = ""
    changed: bool = False
    rows: list[int] | None = None  # history indices of the iteration's timeline rows
    dropped: bool = False  # its events were let go to bound memory
    backward_end: int | None = None  # index of its BackwardEnd: its graph is whole from there
    # index of its first BackwardStart: the forward graph is whole from there
    backward_start: int | None = None
    recompiles: int = 0  # torch.compile recompiled this often in it (the compile lane)

    @property
    def complete(self) -> bool:
        return self.end is not None

    def backward_done(self, cursor: int) -> bool:
        """Has backward finished at history index ``cursor``? (The IterationEnd only comes
        just before the next op, but the graph is whole once backward ends.)"""
        return any(i is not None and i <= cursor for i in (self.backward_end, self.end))


class Model:
    """Event history + cursor + lazily built per-iteration graphs."""

    def __init__(self, max_events: int | None = None) -> None:
        # A live run may go on for hours: past ``max_events`` graph events, the oldest
        # complete iterations are let go (their timeline rows and graphs, not their
        # place in the iteration bar). None keeps everything (a trace is bounded).
        self.max_events = max_events
        self._held = 0  # graph events currently held
        self._dropped_upto = 0  # iterations[:n] were considered for dropping
        self.events: list[ev.Event] = []
        self._seqs: list[int] = []
        # History indices of step events, in order: a step back across 15,000 gradient
        # accumulations (one per parameter) is a bisection, not a scan.
        self._steps: list[int] = []
        self.iterations: list[IterationInfo] = []
        self._by_index: dict[int, IterationInfo] = {}
        self.cursor = -1
        self.header: ev.Header | None = None
        self.run_end: ev.RunEnd | None = None
        self.exception: ev.ExceptionRaised | None = None
        self.output: list[tuple[str, str]] = []
        self._graphs: OrderedDict[int, Graph] = OrderedDict()
        self._open: tuple[int, int, GraphBuilder] | None = None  # (iteration, next index, b)
        self._norms: dict[int, dict[tuple, float]] = {}
        # Copies of the cursor graph's nodes without their gradients, made once per node.
        self._stripped: tuple[Graph | None, dict[int, GraphNode]] = (None, {})
        self._view: Graph | None = None  # the cursor's graph, refilled as the cursor moves
        self._as_of: AsOf | None = None  # how to refill it by what changed since last time
        self._inputs: tuple[tuple[Graph | None, int], dict[int, list[int]]] = ((None, 0), {})
        self._diffs: dict[int, GraphDiff] = {}  # of complete iterations (they stay so)

    # -- ingest --------------------------------------------------------------------------
    def ingest(self, events: Iterable[ev.Event]) -> int:
        """Append events to the history; returns how many were added.

        About a microsecond per event: a fast live stream and a big trace both pass here
        on the UI thread, so the loop keeps its lookups local and does little per event.
        """
        events = events if isinstance(events, list) else list(events)
        history = self.events
        n0 = len(history)
        history.extend(events)
        self._seqs.extend([e.seq for e in events])
        iterations = self.iterations
        by_index = self._by_index
        graph_kinds = GRAPH_KINDS
        info = iterations[-1] if iterations else None
        current = info.index if info is not None else None
        rows = info.rows if info is not None else None
        held = 0
        steps = self._steps
        step_kinds = STEP_KINDS
        for i, event in enumerate(events, n0):
            kind = event.kind
            if kind in graph_kinds:
                if (event.iteration == 0 and current is None and kind == "breakpoint"
                        and event.reason in QUIET_PAUSES):  # type: ignore[attr-defined]
                    continue  # the pause before the first op: no setup iteration of its own
                held += 1
                if kind in step_kinds:
                    steps.append(i)
                if event.iteration != current:
                    info = IterationInfo(event.iteration, i, rows=[])
                    iterations.append(info)
                    by_index[info.index] = info
                    current, rows = info.index, info.rows
                # A pause from stepping only says where the cursor is (the status line and
                # the marked row show that); listing one after every `n` drowned the ops.
                if kind != "breakpoint" or event.reason not in QUIET_PAUSES:  # type: ignore[attr-defined]
                    rows.append(i)  # type: ignore[union-attr]
                if kind == "iteration_end":
                    info.end = i  # type: ignore[union-attr]
                    info.structure_key = event.structure_key  # type: ignore[attr-defined,union-attr]
                    # Setup (iteration 0) is no baseline: iteration 1 is not "changed".
                    prev = by_index.get(current - 1) if current != 1 else None  # type: ignore[operator]
                    info.changed = (prev is not None  # type: ignore[union-attr]
                                    and prev.structure_key != info.structure_key)  # type: ignore[union-attr]
                elif kind == "backward_start":
                    if info.backward_start is None:  # type: ignore[union-attr]
                        info.backward_start = i  # type: ignore[union-attr]
                elif kind == "backward_end":
                    if info.backward_end is None:  # type: ignore[union-attr]
                        info.backward_end = i  # type: ignore[union-attr]
                elif kind == "exception":
                    self.exception = event  # type: ignore[assignment]
                elif kind == "compile" and event.what == "recompile":  # type: ignore[attr-defined]
                    info.recompiles += 1  # type: ignore[union-attr]
            elif kind == "output":
                self.output.append((event.stream, event.text))  # type: ignore[attr-defined]
            elif kind == "header":
                self.header = event  # type: ignore[assignment]
            elif kind == "run_end":
                self.run_end = event  # type: ignore[assignment]
        if self.max_events is not None:
            self._held += held
            if self._held > self.max_events:
                self._drop_oldest()
        return len(events)

    def _drop_oldest(self) -> None:
        """Let go of the oldest complete iterations until under ``max_events``."""
        assert self.max_events is not None
        keep = self.cursor_iteration()
        history = self.events
        iterations = self.iterations
        k = self._dropped_upto
        while self._held > self.max_events * 0.8 and k < len(iterations) - 1:
            info = iterations[k]
            k += 1
            if info.dropped or not info.complete or info is keep:
                continue
            for i in info.rows or ():
                history[i] = DROPPED
            self._held -= len(info.rows or ())
            info.dropped = True
            self._graphs.pop(info.index, None)
        self._dropped_upto = k

    # -- positions -----------------------------------------------------------------------
    @property
    def frontier(self) -> int:
        """Index of the newest event."""
        return len(self.events) - 1

    @property
    def at_frontier(self) -> bool:
        return self.cursor >= self.last_step()

    @property
    def current_event(self) -> ev.Event | None:
        return self.events[self.cursor] if 0 <= self.cursor < len(self.events) else None

    def index_of_seq(self, seq: int) -> int:
        """History index of the event with ``seq`` (or the last one before it)."""
        return max(bisect.bisect_right(self._seqs, seq) - 1, -1)

    def move_to(self, index: int) -> None:
        self.cursor = max(-1, min(index, self.frontier))

    def find(self, start: int, predicate, step: int = 1) -> int | None:
        """First history index from ``start`` (inclusive) going by ``step`` that matches."""
        events = self.events
        i = start
        while 0 <= i < len(events):
            if predicate(events[i]):
                return i
            i += step
        return None

    def next_step(self, start: int | None = None) -> int | None:
        start = self.cursor + 1 if start is None else start
        k = bisect.bisect_left(self._steps, start)
        if k < len(self._steps) and self.events[self._steps[k]].kind in STEP_KINDS:
            return self._steps[k]
        return self.find(start, lambda e: e.kind in STEP_KINDS)  # history let go of

    def prev_step(self) -> int | None:
        k = bisect.bisect_left(self._steps, self.cursor) - 1
        if k >= 0 and self.events[self._steps[k]].kind in STEP_KINDS:
            return self._steps[k]
        return self.find(self.cursor - 1, lambda e: e.kind in STEP_KINDS, step=-1)

    def last_step(self) -> int:
        """Index of the newest step event (or of the newest event when there is none)."""
        i = self.find(self.frontier, lambda e: e.kind in STEP_KINDS, step=-1)
        return self.frontier if i is None else i

    # -- iterations ----------------------------------------------------------------------
    @property
    def iteration_count(self) -> int:
        return len(self.iterations)

    def iteration(self, index: int) -> IterationInfo | None:
        return self._by_index.get(index)

    def cursor_iteration(self) -> IterationInfo | None:
        """The iteration the cursor is in (the first one before any graph event)."""
        event = self.current_event
        if event is not None and event.iteration in self._by_index:
            return self._by_index[event.iteration]
        if not self.iterations:
            return None
        if self.cursor < self.iterations[0].start:
            return self.iterations[0]
        # Bookkeeping events after an IterationEnd carry the next number: use the last
        # iteration that started at or before the cursor.
        starts = [info.start for info in self.iterations]
        return self.iterations[max(bisect.bisect_right(starts, self.cursor) - 1, 0)]

    # -- graphs --------------------------------------------------------------------------
    def graph(self, index: int) -> Graph | None:
        """Iteration ``index``'s forward graph with every event known so far."""
        info = self._by_index.get(index)
        if info is None:
            return None
        if info.complete:
            graph = self._graphs.get(index)
            if graph is None:
                fed = self._open is not None and self._open[0] == index
                if fed:
                    graph = self._feed_open(index)
                    self._open = None
                else:
                    graph = self._build(info, info.end + 1)  # type: ignore[operator]
                self._graphs[index] = graph
                if len(self._graphs) > _GRAPH_CACHE:
                    self._graphs.popitem(last=False)
                if fed:
                    self._refill_view(index)
            else:
                self._graphs.move_to_end(index)
            return graph
        # The open iteration grows: feed its builder only the events since last time.
        if self._open is None or self._open[0] != index:
            self._open = (index, info.start, GraphBuilder())
        fed = self._open[1]
        graph = self._feed_open(index)
        if self._open[1] != fed:
            self._refill_view(index)
        return graph

    def _refill_view(self, index: int) -> None:
        """Refill the cursor's view after iteration ``index``'s graph took in more events:
        building it sets gradients on the nodes themselves, which the view, holding some
        of those nodes, must not show before the cursor gets there."""
        view = self._view
        if view is not None and view.iteration == index and view.nodes and (
                self._as_of is not None and self._as_of.graph is not None):
            self.graph_at_cursor()

    def settle(self) -> None:
        """Cache the graphs the UI has or is about to build before the gradient norms'
        thread reads the cache (a trace that finished loading): the open iteration's, built
        as the events came, and the cursor's. Without this the thread built the
        50,000-node iteration a second time (0.25 s of CPU) while the first picture was
        being drawn. Call on the UI thread."""
        for info in (self._by_index.get(self._open[0]) if self._open is not None else None,
                     self.cursor_iteration()):
            if info is not None and info.complete:
                self.graph(info.index)

    def strip_ahead(self, graph: Graph, nodes: list[GraphNode], seq: int) -> None:
        """Make the gradient-free copies of ``nodes`` (a snapshot of ``graph``'s, those
        created by event ``seq``) that the graph at the cursor shows before backward
        reaches them, ahead of need: on a worker, while a trace loads. A jump to the end
        of a 50,000-node forward pass then refills the view without copying 50,000
        nodes (0.1 s). Copies made before or after backward set a node's gradient are
        alike (the gradient fields are the ones cleared)."""
        stripped = self._stripped
        if stripped[0] is not graph:  # (the UI thread makes the same swap in its turn)
            stripped = self._stripped = (graph, {})
        cache = stripped[1]
        for node in nodes:
            if node.seq <= seq and node.id not in cache:
                cache[node.id] = without_grad(node)

    def _feed_open(self, index: int) -> Graph:
        assert self._open is not None
        _, pos, builder = self._open
        events = self.events
        end = len(events)
        kinds = GRAPH_KINDS
        # One ``add_all`` over the chunk, not ``add`` per event: a big trace loading feeds
        # 100,000 events here.
        builder.add_all([e for e in events[pos:end]
                         if e.kind in kinds and e.iteration == index])
        self._open = (index, end, builder)
        graph = builder.finished[-1] if builder.finished else builder.current
        graph.iteration = index
        return graph

    def _build(self, info: IterationInfo, end: int) -> Graph:
        builder = GraphBuilder()
        events = self.events
        for i in info.rows or ():
            if i >= end:
                break
            builder.add(events[i])
        graph = builder.finished[-1] if builder.finished else builder.current
        graph.iteration = info.index
        return graph

    def backward_done(self) -> bool:
        """Has the cursor's iteration finished its backward pass, as of the cursor?"""
        info = self.cursor_iteration()
        return info is not None and info.backward_done(self.cursor)

    def graph_at_cursor(self) -> Graph | None:
        """The cursor's iteration as it was at the cursor.

        A copy (the iteration's own graph is never changed), and the same Graph object for
        as long as the cursor stays in one iteration: its contents are replaced on each call.
        """
        info = self.cursor_iteration()
        if info is None:
            return None
        graph = self.graph(info.index)
        if graph is None:
            return None
        seq = self.events[self.cursor].seq if self.cursor >= 0 else -1
        if self._stripped[0] is not graph:
            self._stripped = (graph, {})
        view = self._view
        if view is None or view.iteration != info.index:
            view = self._view = Graph(iteration=info.index)
        as_of = self._as_of
        if as_of is None or as_of.graph is not graph or (as_of.stale() and not as_of.grow()):
            self._as_of = AsOf.of(graph)
        if self._as_of is not None:
            return self._as_of.fill(seq, view, self._stripped[1])
        return graph_as_of(graph, seq, self._stripped[1], into=view)

    def inputs_of(self, node_id: int) -> list[int]:
        """The inputs of a node of the cursor's iteration (its full graph, indexed once:
        a scan of 100,000 edges per redraw was most of a step's time)."""
        info = self.cursor_iteration()
        graph = self.graph(info.index) if info is not None else None
        if graph is None:
            return []
        (seen, done), index = self._inputs
        edges = graph.edges
        if seen is not graph or done > len(edges):
            done, index = 0, {}
        # Edges are only ever appended: while a big trace loads, index what came since.
        for e in edges[done:] if done else edges:
            index.setdefault(e.dst, []).append(e.src)
        self._inputs = ((graph, len(edges)), index)
        return index.get(node_id, [])

    def compile_event_at_cursor(self) -> ev.CompileEvent | None:
        """The compile event the cursor is on, or that the pause at the cursor is about
        (a ``compile:`` breakpoint)."""
        event = self.current_event
        if isinstance(event, ev.BreakpointHit) and event.reason == "compile":
            i = self.index_of_seq(event.at_seq)
            event = self.events[i] if i >= 0 else None
        return event if isinstance(event, ev.CompileEvent) else None

    def current_node_id(self) -> int | None:
        """The node the cursor's event made or touched."""
        event = self.current_event
        if event is None:
            return None
        for attr in ("output", "node", "tensor", "root"):
            value = getattr(event, attr, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        if isinstance(event, ev.BreakpointHit | ev.ExceptionRaised):
            op = self.find(self.index_of_seq(event.at_seq), lambda e: e.kind in STEP_KINDS, -1)
            if op is not None:
                return getattr(self.events[op], "output", getattr(self.events[op], "node", None))
        return None

    def diff(self, index: int) -> GraphDiff | None:
        """What iteration ``index`` added/removed against the previous one, once both are
        whole (complete, or past the end of their backward pass)."""
        info, prev = self._by_index.get(index), self._by_index.get(index - 1)
        if index - 1 == 0:  # setup is no baseline
            return None
        if info is None or prev is None or not (
                info.backward_done(len(self.events)) and prev.backward_done(len(self.events))):
            return None
        done = info.complete and prev.complete  # then it can no longer change: keep it
        if done and index in self._diffs:
            return self._diffs[index]
        old, new = self.graph(index - 1), self.graph(index)
        if old is None or new is None:
            return None
        diff = diff_graphs(old, new)
        if done:
            self._diffs[index] = diff
        return diff

    # -- gradient norms across iterations ------------------------------------------------
    def iteration_norms(self, index: int) -> dict[tuple, float]:
        """``GraphNode.key -> gradient norm`` for a complete iteration (cached)."""
        norms = self._norms.get(index)
        if norms is None:
            info = self._by_index.get(index)
            if info is None or not info.complete:
                return {}
            graph = self._graphs.get(index) or self._build(info, info.end + 1)  # type: ignore[operator]
            norms = {}
            for n in graph.nodes.values():
                g = n.grad
                if g is not None:
                    # A gradient with NaN/Inf has no norm: record NaN so it shows as "!".
                    norms[n.key] = g.norm if g.finite and g.norm is not None else float("nan")
            self._norms[index] = norms
        return norms

    def has_norms(self, index: int) -> bool:
        return index in self._norms

    def grad_history(self, node: GraphNode, limit: int = 200) -> list[float | None]:
        """The node's gradient norm in each complete iteration (the last ``limit``).

        Only iterations whose norms were computed already (``iteration_norms``, which the
        app runs on a background thread) count; the others are gaps.
        """
        done = [info.index for info in self.iterations if info.complete][-limit:]
        norms = self._norms
        key = node.key
        return [norms[i].get(key) if i in norms else None for i in done]
