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

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from dyngraph.capture.folding import RUN_PREFIX
from dyngraph.capture.graph import Graph, backward_graph

from . import canvas_layout as cl
from . import overview as ov
from . import raster
from .box_stats import BoxStats

_KINDS = ("op", "param", "leaf", "module", "backward", "accumulate")


class GraphCanvas(ScrollView, can_focus=True, inherit_bindings=False):
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

    # -- drawing -------------------------------------------------------------------------
    def _style(self, key: object) -> Style:
        style = self._styles.get(key)
        if style is None:
            if isinstance(key, tuple) and key[0] == "strip":
                style = (self.get_component_rich_style("graph-canvas--nonfinite")
                         if key[1] == "!" else Style(color=key[1]))
            elif isinstance(key, tuple) and key[0] == "label":
                inner = self._style(key[1])
                style = inner if inner.bgcolor is not None else inner + Style(reverse=True)
            elif isinstance(key, tuple):
                # Overlays add their attributes (reverse, underline...); the colour comes
                # from the most telling one: NaN/Inf red beats selection beats the kind.
                kind, current, selected, nonfinite, *fill = key
                style = self.get_component_rich_style(f"graph-canvas--{kind}")
                if fill and fill[0] is not None:
                    from dyngraph.exporters.colors import font_for

                    style += Style(bgcolor=fill[0], color=font_for(fill[0]))
                colour = None
                for name, on in (("current", current), ("selected", selected),
                                 ("nonfinite", nonfinite)):
                    if on:
                        o = self.get_component_rich_style(f"graph-canvas--{name}")
                        style += Style(bold=o.bold, italic=o.italic, underline=o.underline,
                                       reverse=o.reverse)
                        colour = o.color if name != "current" else colour
                if colour is not None:
                    style += Style(color=colour)
            else:
                style = self.get_component_rich_style(f"graph-canvas--{key}")
            self._styles[key] = style
        return style

    def _nonfinite(self, box: int) -> bool:
        """Whether the node(s) a box draws hold NaN/Inf (``box`` is a primary box)."""
        self._sync_stats()
        return self._stats.nonfinite(box)

    def _box_style(self, box: int) -> object:
        if self._entry is None:
            return ("op", False, False, False)
        first = self._entry.scene.view.nodes[box].primary(box)
        return (self._entry.scene.boxes[box].kind, first == self.box_of(self._current),
                first == self.box_of(self.selected), self._nonfinite(first), self._fill(first))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        status = self.status
        if status and y == self.scrollable_content_region.height - 1 and self._entry is not None:
            text = raster.fit(status, max(width, 1)).ljust(width)[:width]
            return Strip([Segment(text, self._style("status"))], width)
        if y == self.scrollable_content_region.height - 1 and self._entry is not None and (
                not status):
            info = self._info_line(width)
            if info is not None:
                return info
        if self.overview and self._entry is not None:
            return self._overview_line(y, width)
        entry = self._entry
        if entry is None:
            message = ""
            if y == 0:
                message = status or ("(empty graph)" if not self._canon.sigs else "")
            return Strip([Segment(raster.fit(message, max(width, 1)).ljust(width)[:width],
                                  self._style("status") if message else Style())], width)
        current, selected = self.box_of(self._current), self.box_of(self.selected)
        flags = self._nonfinite
        boxes, nodes = entry.scene.boxes, entry.scene.view.nodes

        def box_style(b: int) -> object:  # every copy of a shared leaf is styled alike
            first = nodes[b].primary(b)
            return (boxes[b].kind, first == current, first == selected, flags(first),
                    self._fill(first))

        chars, styles = raster.compose_row(entry.scene, y + scroll_y, scroll_x, width,
                                           self._upto, box_style)
        self._paint_strips(y + scroll_y, scroll_x, chars, styles)
        segments, start = [], 0
        for i in range(1, width + 1):
            if i == width or styles[i] != styles[start]:
                style = styles[start]
                segments.append(Segment("".join(chars[start:i]),
                                        self._style(style) if style is not None else None))
                start = i
        return Strip(segments, width)

    def _paint_strips(self, row: int, x0: int, chars: list[str],
                      styles: list[object]) -> None:
        """A run box's bottom border is its gradient strip: ▀ in each member's colour."""
        entry = self._entry
        if entry is None or entry.scene.view.compact or not 0 <= row < entry.scene.height:
            return
        nodes, boxes = entry.scene.view.nodes, entry.scene.boxes
        for c0, _c1, part, bi in entry.scene.row_boxes[row]:
            if part != 2 or not nodes[bi].members or boxes[bi].birth >= self._upto:
                continue
            for k, fill in enumerate(self._strip(bi)):
                col = c0 + 1 + k - x0
                if fill is not None and 0 <= col < len(chars):
                    chars[col] = "▀"
                    styles[col] = ("strip", fill)

    def _info_line(self, width: int) -> Strip | None:
        """The layout note, or the gradient legend as coloured swatches, or None."""
        if self._entry is None:
            return None
        if self._entry.note:
            text = raster.fit(self._entry.note, max(width, 1)).ljust(width)[:width]
            return Strip([Segment(text, self._style("status"))], width)
        legend = self.legend()
        if not legend:
            return None
        from dyngraph.exporters.colors import font_for

        status = self._style("status")
        segments = [Segment(" ‖grad‖ ", status)]
        for fill, text in legend:
            segments.append(Segment(f" {text} ", Style(bgcolor=fill, color=font_for(fill))))
        used = sum(len(s.text) for s in segments)
        if used > width:
            return None
        segments.append(Segment(" " * (width - used), status))
        return Strip(segments, width)

    def _overview_line(self, y: int, width: int) -> Strip:
        assert self._entry is not None
        height = self.scrollable_content_region.height - 1  # the last is the info line
        key = (id(self._entry), self._upto, width, height, self.scroll_offset,
               self.box_of(self._current), self.box_of(self.selected), self._stats_key(),
               self._scale[0])
        if self._overview_rows is None or self._overview_rows[0] != key:
            entry = self._entry
            current, selected = self.box_of(self._current), self.box_of(self.selected)
            nodes = entry.scene.view.nodes

            def style_of(b: int) -> object:
                return self._box_style(b)

            def on_top(b: int) -> bool:
                return nodes[b].primary(b) in (current, selected)

            view = self.scrollable_content_region
            port = (round(self.scroll_x), round(self.scroll_y), view.width, view.height)
            def filled(b: int) -> bool:
                return self._fill(nodes[b].primary(b)) is not None

            def label(b: int) -> str:  # a folded box by its module's name, a node by op
                node = nodes[b]
                if node.kind == cl.UNIT_KIND:
                    return node.label.split(" (×")[0].rstrip()
                return node.label.split(" ")[0]

            rows = ov.overview(entry.scene, width, max(height, 1), self._upto, style_of,
                               on_top, filled, port, label)
            self._overview_rows = (key, rows)
        rows = self._overview_rows[1]
        if y >= len(rows):
            return Strip.blank(width)
        segments, start, cells = [], 0, rows[y]
        for i in range(1, width + 1):
            if i == width or cells[i][1] != cells[start][1]:
                style = cells[start][1]
                text = "".join(c for c, _ in cells[start:i])
                segments.append(Segment(text, self._style(style) if style is not None
                                        else None))
                start = i
        return Strip(segments, width)

    def _follow(self, node_id: int | None, centre: bool = False) -> None:
        box = self._selected_box() if node_id is not None and node_id == self.selected else (
            self.box_of(node_id))
        if box is None or self._entry is None:
            return
        b = self._entry.scene.boxes[box]
        region = Region(b.left, b.top, b.width, b.height)
        if not centre:
            # Leave the view alone while the box is in it; once it leaves, bring it to the
            # middle rather than to the edge, so what comes next is in view too.
            width, height = self.scrollable_content_region.size
            view = Region(round(self.scroll_x), round(self.scroll_y), width, height)
            centre = not view.contains_region(region)
        self.scroll_to_region(region, animate=False, center=centre, spacing=None, force=True,
                              immediate=True)

    def watch_selected(self, old: int | None, new: int | None) -> None:
        self._follow(new)
        self.refresh()

    # -- actions -------------------------------------------------------------------------
    def action_pan(self, dx: int, dy: int) -> None:
        self.scroll_to(self.scroll_x + dx, self.scroll_y + dy, animate=False, immediate=True)

    def _select_box(self, box: int) -> None:
        node = self.node_of(box)
        assert self._entry is not None
        self._picked = (self._entry, box)  # before `selected`: its watcher scrolls to it
        self.selected = node
        module = None
        if self._entry is not None and self._entry.scene.boxes[box].kind == "module":
            module = self._entry.scene.view.nodes[box].module
        self.post_message(self.NodeSelected(self, node, module))

    def _drawn(self, box: int) -> bool:
        assert self._entry is not None
        b = self._entry.scene.boxes[box]
        return b.birth < self._upto and b.width > 0

    def action_select_step(self, step: int) -> None:
        if self._entry is None:
            return
        nodes = self._entry.scene.view.nodes
        count = len(self._entry.scene.boxes)
        start = self.box_of(self.selected)  # a copy steps on from its leaf's first copy
        if start is None:
            start = self.box_of(self._current)
        if start is None:
            start = -1 if step > 0 else count
        box = start + step
        # Tab visits graph nodes: the further copies of a shared leaf are skipped.
        while 0 <= box < count and (not self._drawn(box) or nodes[box].primary(box) != box):
            box += step
        if 0 <= box < count:
            self._select_box(box)

    def _adjacent(self) -> tuple[list[list[int]], list[list[int]]]:
        assert self._entry is not None
        if self._adjacency is None or self._adjacency[0] is not self._entry:
            n = len(self._entry.scene.boxes)
            ins: list[list[int]] = [[] for _ in range(n)]
            outs: list[list[int]] = [[] for _ in range(n)]
            for e in self._entry.scene.view.edges:
                ins[e.dst].append(e.src)
                outs[e.src].append(e.dst)
            self._adjacency = (self._entry, ins, outs)
        return self._adjacency[1], self._adjacency[2]

    def action_follow_edge(self, direction: str) -> None:
        # From a consumer to a shared input lands on that consumer's own copy of it.
        box = self._focus_box()
        if box is None:
            return
        ins, outs = self._adjacent()
        for target in (ins if direction == "input" else outs)[box]:
            if self._drawn(target):
                self._select_box(target)
                return

    def action_centre_current(self) -> None:
        """Centre the selected node (the current op when nothing is selected); a node not
        laid out yet is centred as soon as its layout arrives."""
        node = self.selected if self.selected is not None else self._current
        if node is None:
            return
        if self.overview:
            self.action_leave_overview()
        if self.box_of(node) is None:
            self._centre_on = node
            return
        self._centre_on = None
        self._follow(node, centre=True)
        self.refresh()

    def action_toggle_overview(self) -> None:
        """Show the whole graph shrunk to the pane, or go back to the normal view."""
        self.overview = not self.overview
        self._overview_rows = None
        self.refresh()

    def action_leave_overview(self) -> None:
        if self.overview:
            self.overview = False
            self.refresh()

    def action_choose(self) -> None:
        """Enter: open a folded module (call, run or index group) in place; on a node,
        select it."""
        box = self._selected_box()
        if box is None or self._entry is None:
            return
        node = self._entry.scene.view.nodes[box]
        if node.kind == cl.UNIT_KIND and node.module:
            self._open(node.module)
            return
        self._select_box(box)

    def action_toggle_module(self) -> None:
        """z: open a folded box; on a node, fold the module call around it; on a folded
        member of an opened run, fold the run again."""
        box = self._focus_box()
        if box is None or self._entry is None:
            return
        view = self._entry.scene.view
        node = view.nodes[box]
        frame = view.clusters[node.cluster] if node.cluster is not None else None
        if node.kind == cl.UNIT_KIND and node.module:
            if frame is not None and frame.key.startswith(RUN_PREFIX):
                self._close(frame.key)
            else:
                self._open(node.module)
        elif frame is not None:
            self._close(frame.key or frame.path)

    def _open(self, key: str) -> None:
        collapsed, expanded = set(self._user[0]), set(self._user[1])
        collapsed.discard(key)
        expanded.add(key)
        self._set_user(collapsed, expanded)

    def _close(self, key: str) -> None:
        """Fold ``key`` and forget what was opened inside it (opening a call opens what
        is around it, so a member left open would open its run again)."""
        collapsed, expanded = set(self._user[0]), set(self._user[1])
        expanded.discard(key)
        collapsed.add(key)
        tree = self._entry.tree if self._entry is not None else None
        if tree is not None:
            around = set(tree.runs[key].members) if key in tree.runs else {key}
            for k in list(expanded):
                call = k if k in tree.calls else (
                    tree.runs[k].members[0] if k in tree.runs else None)
                if call is not None and around & set(tree.chain(call)):
                    expanded.discard(k)
        self._set_user(collapsed, expanded)

    def _set_user(self, collapsed: set[str], expanded: set[str]) -> None:
        self._user = (frozenset(collapsed), frozenset(expanded))
        self._urgent = True  # the user waits for it: no throttle
        self._relayout()

    def action_zoom(self, step: int) -> None:
        compact = step < 0
        if compact != self._compact:
            self._compact = compact
            self._relayout()

    def _relayout(self) -> None:
        self._match()
        if self._upto < len(self._canon.sigs):
            self._request_layout()
        self._follow(self.selected if self.selected is not None else self._current)
        self.refresh()

    def on_click(self, event: Click) -> None:
        if self._entry is None:
            return
        if self.overview:  # jump to the clicked part of the graph
            region = self.scrollable_content_region
            sx, sy = ov.scale(self._entry.scene, region.width, max(region.height - 1, 1))
            view = self.scrollable_content_region
            self.overview = False
            self.scroll_to(event.x * sx - view.width / 2, event.y * sy - view.height / 2,
                           animate=False, immediate=True)
            self.refresh()
            return
        col, row = event.x + self.scroll_offset.x, event.y + self.scroll_offset.y
        box = self._entry.scene.box_at(col, row, self._upto)
        if box is not None:
            self._select_box(box)

