"""The graph pane: an iteration's graph (as built so far) drawn with box-drawing characters.

A line-rendered ScrollView: ``render_line`` composes only the visible rows from a scene
prepared off the UI thread (``raster``), so a frame costs the same at 50 or 5,000 nodes.
Layouts run in a worker and are cached by structure (``canvas_layout``): stepping, or a
new iteration shaped like an earlier one, only moves a highlight.

>>> canvas = GraphCanvas(id="graph")        # doctest: +SKIP
>>> canvas.show(graph, current=node_id)     # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView

from dyngraph.capture.graph import Graph, backward_graph

from . import canvas_layout as cl
from . import overview as ov
from . import raster
from .box_stats import BoxStats
from .canvas_actions import CanvasActions
from .canvas_paint import CanvasPainting

_KINDS = ("op", "param", "leaf", "module", "backward", "accumulate")


class GraphCanvas(CanvasActions, CanvasPainting, ScrollView, can_focus=True,
                  inherit_bindings=False):
    """Draws a ``dyngraph.capture.graph.Graph`` from a Graphviz layout; select nodes, fold modules.

    Plain ←/→ are left to the app (the debugger steps back/forward with them), so the
    canvas pans sideways with h/l and shift+←/→; ↑/↓ and j/k pan vertically.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("h,shift+left", "pan(-4, 0)", "Pan left", show=False,
                id="graph_canvas.pan_left"),
        Binding("l,shift+right", "pan(4, 0)", "Pan right", show=False,
                id="graph_canvas.pan_right"),
        Binding("k,up", "pan(0, -2)", "Pan up", show=False, id="graph_canvas.pan_up"),
        Binding("j,down", "pan(0, 2)", "Pan down", show=False, id="graph_canvas.pan_down"),
        Binding("pageup", "page_up", "Page up", show=False, id="graph_canvas.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="graph_canvas.page_down"),
        Binding("home", "scroll_home", "Top", show=False, id="graph_canvas.top"),
        Binding("end", "scroll_end", "Bottom", show=False, id="graph_canvas.bottom"),
        # Tab and shift+tab leave the pane, as everywhere: nodes are < and >.
        Binding("greater_than_sign", "select_step(1)", "Next node", key_display=">",
                id="graph_canvas.next_node"),
        Binding("less_than_sign", "select_step(-1)", "Previous node", key_display="<",
                id="graph_canvas.previous_node"),
        Binding("J", "follow_edge('input')", "To input", id="graph_canvas.to_input"),
        Binding("K", "follow_edge('consumer')", "To consumer", id="graph_canvas.to_consumer"),
        Binding("full_stop", "centre_current", "Centre", id="graph_canvas.centre_current"),
        Binding("z", "toggle_module", "Fold module", id="graph_canvas.toggle_module"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", show=False, id="graph_canvas.zoom_in"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False, id="graph_canvas.zoom_out"),
        Binding("W", "toggle_overview", "Whole graph", id="graph_canvas.overview"),
        Binding("enter", "choose", "Select", show=False, id="graph_canvas.choose"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"graph-canvas--{k}" for k in _KINDS),
        "graph-canvas--edge", "graph-canvas--frame", "graph-canvas--current",
        "graph-canvas--selected", "graph-canvas--nonfinite", "graph-canvas--status",
        "graph-canvas--viewport",
    }

    DEFAULT_CSS = """
    GraphCanvas { background: $surface; }
    GraphCanvas > .graph-canvas--op { color: $text; }
    GraphCanvas > .graph-canvas--param { color: $accent; }
    GraphCanvas > .graph-canvas--leaf { color: $secondary; }
    GraphCanvas > .graph-canvas--module { color: $warning; text-style: bold; }
    GraphCanvas > .graph-canvas--backward { color: $text; }
    GraphCanvas > .graph-canvas--accumulate { color: $accent; }
    GraphCanvas > .graph-canvas--edge { color: $text-muted; }
    GraphCanvas > .graph-canvas--frame { color: $primary; }
    GraphCanvas > .graph-canvas--current { text-style: bold reverse; }
    GraphCanvas > .graph-canvas--selected { text-style: bold underline; color: $success; }
    GraphCanvas > .graph-canvas--nonfinite { color: $error; text-style: bold; }
    GraphCanvas > .graph-canvas--status { background: $panel; color: $text-muted; }
    GraphCanvas > .graph-canvas--viewport { color: $warning; }
    """

    selected: reactive[int | None] = reactive(None, always_update=True)
    """The selected node's id (a collapsed module is selected through its first node)."""

    class NodeSelected(Message):
        """The user selected a node (Enter, a click, or moving the selection)."""

        def __init__(self, canvas: GraphCanvas, node_id: int, module: str | None = None) -> None:
            super().__init__()
            self.canvas = canvas
            self.node_id = node_id
            self.module = module  # set when the box is a collapsed module

        @property
        def control(self) -> GraphCanvas:
            return self.canvas

    class _LayoutDone(Message, bubble=False):
        def __init__(self, job: cl.Job, entry: cl.Entry | None, error: str | None) -> None:
            super().__init__()
            self.job, self.entry, self.error = job, entry, error

    def __init__(self, *, name: str | None = None, id: str | None = None,  # noqa: A002
                 classes: str | None = None, disabled: bool = False,
                 layout_fn: Callable[[str], Any] | None = None,
                 cache: cl.LayoutCache | None = None,
                 min_interval: float = 0.3, auto_collapse: bool = True) -> None:
        """``layout_fn`` turns DOT into a Layout (default ``dyngraph.exporters.layout``);
        ``cache`` may be shared between canvases; ``min_interval`` is the least time between
        two layouts of a growing graph; ``auto_collapse`` folds deep modules of large graphs.
        """
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.auto_collapse = auto_collapse
        """Collapse deep modules of graphs past ~300 nodes (see canvas_layout.auto_depth)."""
        self.cache = cache or cl.LayoutCache()
        self._layout_fn = layout_fn
        self._min_interval = min_interval
        self._worker: cl.LayoutWorker | None = None
        self._canon = cl.Canonical()
        self._graph: Graph | None = None
        self._mode = "forward"
        self._backward: tuple[tuple[int, int, int], Graph] | None = None
        self._current: int | None = None
        self._entry: cl.Entry | None = None
        self._upto = 0
        self._compact = False
        self._user: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
        self._want_layout = False
        self._inflight: tuple[list[cl.Sig], bool, tuple[frozenset[str], frozenset[str]]] | None
        self._inflight = None
        self._error: str | None = None
        self._status: tuple[object, str] = (None, "")
        self._token = 0
        self._styles: dict[object, Style] = {}
        self._adjacency: tuple[cl.Entry, list[list[int]], list[list[int]]] | None = None
        # Which copy of a shared leaf the user moved to (entry, box): the selection is a
        # graph node, but following edges and scrolling should stay at that copy.
        self._picked: tuple[cl.Entry, int] | None = None
        # Gradient colours: the scale of the graph shown (same log scale as the SVG export).
        self._scale: tuple[object, Any] = (None, None)
        self.overview = False
        """True while the whole graph is shown shrunk to the pane (key ``W``)."""
        self._overview_rows: tuple[object, list[list[ov.Cell]]] | None = None
        self._centre_on: int | None = None  # a node to centre once its box is laid out
        self._urgent = False  # the next layout answers a key: skip the worker's throttle
        self._strips: dict[tuple[object, ...], list[str | None]] = {}  # run strips drawn
        self._stats = BoxStats()  # per box: NaN/Inf, largest gradient norm
        # (token, iteration) of the picture being laid out ahead, and the ``show`` that
        # waits for it (see ``prefetch_forward``)
        self._ahead: tuple[int, int] | None = None
        self._postponed: tuple[Graph, int | None, str] | None = None
        self._painted: tuple[object, ...] = ()  # what ``show`` last painted (see there)

    # -- lifecycle -----------------------------------------------------------------------
    def on_mount(self) -> None:
        self._worker = cl.LayoutWorker(self._worker_done, self.cache, layout_fn=self._layout_fn,
                                       min_interval=self._min_interval)
        if self._want_layout:
            self._request_layout()

    def on_unmount(self) -> None:
        if self._worker is not None:
            self._worker.close()

    def _worker_done(self, job: cl.Job, entry: cl.Entry | None, error: str | None) -> None:
        self.post_message(self._LayoutDone(job, entry, error))  # thread-safe

    def on_graph_canvas__layout_done(self, message: _LayoutDone) -> None:
        message.stop()
        job = message.job
        if job.token == self._token:
            self._inflight = None
        if job.canon is not None:  # a picture laid out ahead (``prefetch_forward``)
            if job.made is not None:
                self._canon.whole = job.made
            if self._ahead is not None and self._ahead[0] == job.token:
                self._ahead = None
            postponed, self._postponed = self._postponed, None
            if postponed is not None:  # the jump that waited for it
                self.show(postponed[0], current=postponed[1], mode=postponed[2])
        else:
            self._error = message.error
        self._match()
        if self._want_layout and self._upto < len(self._canon.sigs) and not message.error:
            self._request_layout()
        if self._centre_on is not None and self.box_of(self._centre_on) is not None:
            self._follow(self._centre_on, centre=True)
            self._centre_on = None
        else:
            self._follow(self.selected if self.selected is not None else self._current)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    # -- the public API ------------------------------------------------------------------
    def show(self, graph: Graph, *, current: int | None = None, mode: str = "forward") -> None:
        """Display ``graph`` (forward, or its backward graph), highlighting node ``current``.

        Cheap when only ``current`` changed or nodes were appended and a layout of the
        structure is cached; otherwise the new nodes are listed in the status line until
        the worker's layout arrives.
        """
        if mode not in ("forward", "backward"):
            raise ValueError(f"mode must be 'forward' or 'backward', got {mode!r}")
        if self._waits_for_ahead(graph, mode):
            self._postponed = (graph, current, mode)
            self.refresh()
            return
        self._postponed = None
        self._graph = graph
        self._mode = mode
        shown = self._backward_of(graph) if mode == "backward" else graph
        changed = self._canon.update(shown)
        if changed or self._entry is None:
            self._match()
            if self._upto < len(self._canon.sigs):
                self._request_layout()
        moved = current != self._current
        self._current = current
        if moved:
            self._follow(current)
        # What the pane draws follows from these: unchanged (a trace loading while the
        # cursor stays put, 20 times a second), the pane is not painted again.
        drawn = (id(graph), mode, len(graph.nodes), len(graph.edges),
                 len(graph.backward_order), len(graph.grad_nodes), id(self._entry),
                 self._upto, current)
        if changed or moved or drawn != self._painted:
            self._painted = drawn
            self.refresh()

    def _waits_for_ahead(self, graph: Graph, mode: str) -> bool:
        """Should showing ``graph`` wait for the picture being laid out ahead? Yes when
        that is this iteration's forward pass and ``graph`` would otherwise take a pass
        over all its nodes here (a jump into it): the worker is making those very
        signatures, and two passes at once only slow each other down."""
        ahead = self._ahead
        if ahead is None or mode != "forward" or graph.iteration != ahead[1]:
            return False
        n, have = len(graph.nodes), len(self._canon.ids)
        return n > 64 and (graph is not self._canon.graph or n > 2 * have + 64)

    @property
    def status(self) -> str:
        """One line about what is not drawn yet (pending layout, failure), or ''."""
        if self._postponed is not None:
            return "laying out the module-level picture…"
        key = (self._error, len(self._canon.sigs), self._upto, id(self._canon.graph))
        if self._status[0] == key:
            return self._status[1]
        text = ""
        missing = len(self._canon.sigs) - self._upto
        if self._error:
            text = f"layout failed: {self._error}"
        elif missing > 0:
            new = [cl.node_label(s, False) for s in self._canon.sigs[self._upto:self._upto + 4]]
            more = "…" if missing > 4 else ""
            text = f"laying out… +{missing} node{'s' * (missing != 1)}: {', '.join(new)}{more}"
        self._status = (key, text)
        return text

    @property
    def laying_out(self) -> bool:
        """Is the picture of the graph shown still being laid out (not failed)?"""
        return self._postponed is not None or (
            not self._error and len(self._canon.sigs) > self._upto)

    @property
    def info(self) -> str:
        """The bottom line when nothing is pending: which layout drew the pane if not
        Graphviz, else the gradient-norm legend (its colours in ``legend``), else ''."""
        if self._entry is not None and self._entry.note:
            return self._entry.note
        scale = self._grad_scale()
        return "‖grad‖ " + "  ".join(text for _, text in scale.legend()) if scale else ""

    def legend(self) -> list[tuple[str, str]]:
        """(fill colour, text) of each gradient-norm bin on the pane, smallest first."""
        scale = self._grad_scale()
        return scale.legend() if scale is not None else []

    def _grad_scale(self) -> Any:
        """The colour scale over the shown graph's gradient norms (None before backward)."""
        graph = self._canon.graph
        # Only gradients move the scale: a forward step (a node more) keeps it.
        key = (id(graph), graph.iteration if graph is not None else 0,
               len(graph.backward_order) if graph is not None else 0)
        if self._scale[0] != key:
            from dyngraph.exporters.colors import GradScale  # lazy: an optional edge

            scale = GradScale.from_graphs([graph]) if graph is not None else None
            self._scale = (key, scale)
        return self._scale[1]

    def unit_info(self, key: str) -> dict[str, object] | None:
        """What the folded box ``key`` (a call, run or index key) stands for, for the
        inspector (``BoxStats.unit_info``); None when no such box is drawn."""
        entry, graph = self._entry, self._canon.graph
        if entry is None or graph is None:
            return None
        box = next((b for b, n in enumerate(entry.scene.view.nodes)
                    if n.kind == cl.UNIT_KIND and n.module == key), None)
        if box is None:
            return None
        self._sync_stats()
        return self._stats.unit_info(entry, graph, self._canon.ids, self._upto, box)

    def _sync_stats(self) -> None:
        self._stats.sync(self._entry, self._canon.graph, self._canon.ids, self._upto,
                         self._canon.index)

    def _strip(self, box: int) -> list[str | None]:
        """The colours of run box ``box``'s gradient strip (``BoxStats.strip``)."""
        key = (box, self._stats_key())
        strip = self._strips.get(key)
        if strip is None:
            entry, graph = self._entry, self._canon.graph
            assert entry is not None and graph is not None
            scale = self._grad_scale()
            strip = self._stats.strip(entry, graph, self._canon.ids, self._upto, box,
                                      scale.fill if scale is not None else lambda _: None)
            if len(self._strips) > 64:
                self._strips.clear()
            self._strips[key] = strip
        return strip

    def _stats_key(self) -> tuple[object, ...]:
        graph = self._canon.graph
        reached = len(graph.backward_order) if graph else 0
        # Before backward, a step adds a node without a gradient: the strips stay.
        return (id(self._entry), id(graph), reached, self._upto if reached else 0)

    def _fill(self, box: int) -> str | None:
        """The gradient-norm colour of a primary box (a module: its largest norm; a run:
        none, its strip says it)."""
        entry = self._entry
        if entry is None or entry.scene.view.nodes[box].members:
            return None
        scale = self._grad_scale()
        if scale is None:
            return None
        self._sync_stats()
        norm = self._stats.norm(box)
        return scale.fill(norm) if norm is not None else None

    @property
    def scene(self) -> raster.Scene | None:
        return self._entry.scene if self._entry is not None else None

    @property
    def compact(self) -> bool:
        return self._compact

    def box_of(self, node_id: int | None) -> int | None:
        """Index of the box drawing node ``node_id`` (its module's box when collapsed).

        A shared leaf drawn once per use (``canvas_layout.COPY_SHARED``) gives its first
        copy; ``copies_of`` lists them all.
        """
        if node_id is None or self._entry is None:
            return None
        i = self._canon.index.get(node_id)
        if i is None or i >= self._upto or i >= len(self._entry.to_box):
            return None
        return self._entry.to_box[i]

    def copies_of(self, box: int) -> list[int]:
        """Every box drawing the same graph node as ``box`` (just ``[box]`` if not copied)."""
        assert self._entry is not None
        nodes = self._entry.scene.view.nodes
        first = nodes[box].copy_of
        if first is None:
            return [box]
        return [i for i, n in enumerate(nodes) if n.copy_of == first]

    def node_of(self, box: int) -> int:
        """The graph node id a box stands for (a collapsed module: its first node; a copy of
        a shared leaf: the leaf)."""
        assert self._entry is not None
        first = self._entry.scene.view.nodes[box].primary(box)
        return self._canon.ids[self._entry.scene.boxes[first].birth]

    def _selected_box(self) -> int | None:
        """The selected node's box: the copy the user picked, else ``box_of``."""
        box = self.box_of(self.selected)
        picked = self._picked
        if box is not None and picked is not None and picked[0] is self._entry and (
                self._entry.scene.view.nodes[picked[1]].primary(picked[1]) == box):
            return picked[1]
        return box

    def _focus_box(self) -> int | None:
        """Where moves start: the selection if any, else the current node."""
        if self.selected is not None:
            return self._selected_box()
        return self.box_of(self._current)

    def visible_lines(self) -> list[str]:
        """The text of the rows currently on screen (for tests and debugging)."""
        return [self.render_line(y).text for y in range(self.size.height)]

    # -- matching the graph to a cached layout -------------------------------------------
    def backward_of(self, graph: Graph) -> Graph:
        """``backward_graph(graph)``, kept while ``graph`` does not change."""
        return self._backward_of(graph)

    def _backward_of(self, graph: Graph) -> Graph:
        key = (id(graph), len(graph.nodes), len(graph.backward_order), len(graph.grad_nodes))
        if self._backward is None or self._backward[0] != key:
            self._backward = (key, backward_graph(graph))
        return self._backward[1]

    def _match(self) -> None:
        sigs = self._canon.sigs
        entry, n = self.cache.best(sigs, self._compact, self._user) if sigs else (None, 0)
        if n == 0:
            entry = None  # nothing in common: say what is pending on the top line instead
        if entry is not self._entry:
            self._adjacency = None
        self._entry, self._upto = entry, n
        if entry is not None:
            scene = entry.scene
            self.virtual_size = Size(scene.width, scene.height + 1)
        else:
            self.virtual_size = Size(0, 0)

    def _request_layout(self) -> None:
        sigs = self._canon.sigs
        if not sigs:
            return
        if self._worker is None or self._worker.busy:
            inflight = self._inflight
            if inflight is not None and inflight[1:] == (self._compact, self._user) and (
                    cl.common_prefix(inflight[0], sigs) == len(sigs)):
                return  # the layout being made covers this graph already
            self._want_layout = True  # picked up when the running layout reports back
            return
        self._want_layout = False
        self._submit(list(sigs))

    def _submit(self, sigs: list[cl.Sig]) -> None:
        assert self._worker is not None
        self._token += 1
        self._inflight = (sigs, self._compact, self._user)
        self._worker.submit(cl.Job(sigs, self._compact, self._user, auto=self.auto_collapse,
                                   token=self._token, urgent=self._urgent))
        self._urgent = False

    def prefetch(self, graph: Graph, *, mode: str = "forward") -> None:
        """Lay out ``graph`` in the background, so that showing it or any graph it grows
        from (the same iteration mid-way, or a later one shaped alike) needs no layout.

        Replay knows each iteration's final graph before the user steps through it:

        >>> canvas.prefetch(model.graph(index))     # doctest: +SKIP
        """
        shown = backward_graph(graph) if mode == "backward" else graph
        canon = cl.Canonical()
        canon.update(shown)
        _, covered = self.cache.best(canon.sigs, self._compact, self._user)
        if not canon.sigs or covered == len(canon.sigs) or self._worker is None:
            return
        mine = self._canon.sigs
        if self._worker.busy and cl.common_prefix(canon.sigs, mine) < len(mine):
            return  # unrelated to what is on screen: that layout goes first
        self._want_layout = False
        self._submit(canon.sigs)

    def prefetch_forward(self, graph: Graph, seq: int,
                         also: Callable[[list[Any]], None] | None = None) -> bool:
        """Lay out, in the background, the module-level picture of ``graph``'s forward
        pass (its nodes created by event ``seq``, its backward's start), signatures
        included: a jump there then draws at once, and takes its signatures from that
        work (``Canonical.whole``) instead of a pass over every node. False when the
        worker is busy (what is on screen goes first): ask again later. ``also`` is
        given the same snapshot of the graph's nodes, in the worker, once the layout is
        made (what else a jump there will need: the model's gradient-free copies).

        For a trace loading: its big iterations' pictures are made while it reads.

        >>> canvas.prefetch_forward(model.graph(index), backward_start_seq)  # doctest: +SKIP
        """
        if self._worker is None or self._worker.busy:
            return False
        # Copies of the lists the graph grows by (here, on the UI thread, while nothing
        # else adds to them); the nodes are shared: their fields a picture reads stay.
        nodes, edges, calls = list(graph.nodes.values()), list(graph.edges), dict(graph.calls)
        iteration = graph.iteration

        def make() -> cl.Canonical:
            return cl.Canonical.forward_of(nodes, edges, calls, iteration, seq)

        def after() -> None:
            if also is not None:
                also(nodes)

        self._token += 1
        self._inflight = None  # (its signatures are made in the worker)
        self._ahead = (self._token, iteration)
        self._worker.submit(cl.Job([], self._compact, self._user, auto=self.auto_collapse,
                                   token=self._token, canon=make, after=after))
        return True
