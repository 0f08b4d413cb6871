"""The debugger app: one screen for a live script or a recorded trace.

Attributes down, messages up. A timer pulls the source's new events (live: from a queue a
daemon thread fills) into the model and posts what ``messages.translate`` makes of them;
handlers redraw every pane from the model inside ``batch_update()``. Keys call the
source's commands (``tui/app_actions.py``; the keys themselves are in ``tui/keys.py``); the
source moves the model's cursor or, at a live run's frontier, tells the child to go on.

To add a pane: compose it in ``compose``, give it a place in ``app.tcss`` (and in
``_fit_panes``' order for small terminals) and update it in ``refresh_view``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from dyngraph.capture.graph import Graph, backward_graph
from dyngraph.capture.paths import resolve as resolve_path
from dyngraph.debug.breakpoints import reads_per_op
from dyngraph.textsafe import shown

from . import collector
from . import messages as msg
from .app_actions import DebuggerActions
from .console_screen import ConsoleScreen, ConsoleState
from .export import Exporter
from .footer import KeysFooter
from .frame_fetcher import FrameFetcher, FrameViewArrived
from .inspector import Inspector
from .iteration_bar import IterationBar
from .model import STEP_KINDS, Model
from .output_pane import OutputPane
from .prompt_screen import PromptScreen
from .source_view import SourceView, first_code_line
from .sources import LIVE_ONLY, Source, SourceState
from .status_line import StatusLine, status_parts
from .timeline import Timeline
from .variables_pane import VariablesPane

try:  # the graph pane is its own module; a text list stands in if it is missing
    from .graph_canvas import GraphCanvas
except ImportError:  # pragma: no cover - only while the canvas is not installed
    GraphCanvas = None  # type: ignore[assignment,misc]

POLL_HZ = 20
SPARK_ITERATIONS = 200  # iterations a gradient-norm sparkline covers
# Nodes in an iteration past which a trace loading lays out its forward pass's picture
# ahead of need (below, a jump there lays it out in well under a second anyway).
PREFETCH_ABOVE = 2000
RUNNING_REDRAW = 0.25  # seconds between full redraws while a live script streams
PICTURE_FIRST = 3.0  # seconds a trace's loading waits for the picture being laid out
LOADING_ROWS = 0.5  # seconds between the timeline's row counts while a trace loads
SHORT = 36  # rows: fewer, and the variables pane makes room for the others
TINY = (90, 27)  # columns, rows: fewer of either, and the panes share what there is
CTRL_C_AGAIN = 1.0  # seconds: a second ctrl+c this soon quits


class GraphList(Static):
    """Stand-in graph pane: the nodes around the current one, as text."""

    DEFAULT_CSS = "GraphList { height: 1fr; overflow-y: auto; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.selected: int | None = None

    def show(self, graph: Graph, current: int | None = None, mode: str = "forward") -> None:
        nodes = list(graph.nodes.values())
        ids = [n.id for n in nodes]
        at = ids.index(current) if current in ids else len(ids) - 1
        text = Text(f"{mode} graph: {len(nodes)} nodes, {len(graph.edges)} edges\n", "dim")
        for node in nodes[max(at - 12, 0): at + 6]:
            style = "bold reverse" if node.id == current else ("red" if node.has_nonfinite else "")
            text.append(f"{'▶' if node.id == current else ' '} t{node.id:<6} "
                        f"{shown(node.label):<12} {tuple(node.shape)!s:<14} "
                        f"{shown(node.module)}\n", style)
        self.update(text)


class _SourceClosed(Message):
    pass


class _NormsReady(Message):
    def can_replace(self, message: Message) -> bool:
        return isinstance(message, _NormsReady)


class _TraceWoke(Message):
    """The trace's decoding thread has put what a waiting key looks for."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, _TraceWoke)


class DebuggerApp(DebuggerActions):
    """``DebuggerApp(source).run()``; the exit value is the script's exit status (or 0)."""

    CSS_PATH = "app.tcss"
    TITLE = "dyngraph"
    def __init__(self, source: Source, *, export_dir: str | Path | None = None,
                 poll_hz: float = POLL_HZ, title: str = "",
                 notices: Iterable[str] = (), files_near: str | None = None) -> None:
        """``files_near``: the script or trace beside which ``dyngraph-out/`` takes the
        files the session writes (exports, screenshots)."""
        super().__init__()
        self.files_near = files_near
        self.notices = list(notices)
        self.source = source
        self.model: Model = source.model
        self.export_dir = Path(export_dir) if export_dir else None
        self.poll_hz = poll_hz
        self.sub_title = title
        self.graph_mode = "forward"
        self.selected: int | None = None
        self.selected_unit: str | None = None  # a folded box picked in the graph pane
        # The compile event the inspector shows instead of a node (the compile lane):
        # picked in the timeline, or the one the cursor is on.
        self.compile_event: Any = None
        self._joined: tuple[int, str] = (-1, "")
        self.graph: Graph | None = None
        self._last_cursor = -2
        self._last_state: SourceState | None = None
        self._quitting = False
        self._norms_busy = False
        self._norms_again = False
        self._loading = True
        self._picture_since: float | None = None  # the loading waits for a picture since
        self._prefetched: set[int] = set()  # iterations whose picture was laid out ahead
        self._last_full = 0.0
        self._timeline_at = 0.0
        self._graph_title = ""
        self._ctrl_c = -10.0  # when ctrl+c was last pressed (a second one quits)
        self._exporter = Exporter(self._export_done)
        self.redraws = 0
        self.frames = FrameFetcher(source, self.post_message)
        self.console_state = ConsoleState()
        self._listen(source)

    # -- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield IterationBar(id="iterbar")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield GraphCanvas(id="graph") if GraphCanvas is not None else GraphList(id="graph")
                yield SourceView(id="source")
            with Vertical(id="right"):
                yield Inspector(id="inspector")
                yield VariablesPane(id="variables")
                yield Timeline(id="timeline")
        yield OutputPane(id="output")
        yield KeysFooter(compact=True)

    def on_unmount(self) -> None:
        # However the app ends (q, or an exit nobody asked the source about): a trace
        # still loading held the collector paused, and its decoding thread waited, for
        # the rest of the process.
        self.source.app_ended()

    def on_mount(self) -> None:
        self.main.query_one("#timeline").border_title = "timeline"
        self.main.query_one("#output").display = False
        self.main.query_one("#output").border_title = "output"
        if not self.source.live:
            self.main.query_one(VariablesPane).add_class("replay")
            # A trace names its files: show only Python sources from it, never /etc/shadow.
            view = self.main.query_one(SourceView)
            view.python_only = True
            model, near = self.model, self.files_near

            def resolve(file: str) -> str:  # (relative to the trace's script: see paths)
                script = model.header.script if model.header is not None else ""
                return resolve_path(file, script, near)

            view.resolve = resolve
        self._fit_panes(self.size.width, self.size.height)
        self._tick()
        self.refresh_view()
        # Live, the first screen is pdb's: the script's source, focused, so `b` sets a line
        # breakpoint before anything runs. A replay opens on its first op's timeline row.
        first = SourceView if self.source.live else Timeline
        self.main.query_one(first).focus()
        for notice in self.notices:
            self.notify(notice, severity="warning", timeout=10)
        self.set_interval(1 / self.poll_hz, self._tick)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_panes(event.size.width, event.size.height)

    def _fit_panes(self, width: int, height: int) -> None:
        """Small terminals (app.tcss): below SHORT rows the variables pane makes way (V
        shows it in the inspector's place, and the footer says so); below TINY the right
        column narrows, the graph keeps ten rows and the output pane shrinks."""
        if not self.screen_stack:
            return
        screen = self.main
        short = height < SHORT
        if short != screen.has_class("-short"):
            screen.set_class(short, "-short")
            self.refresh_bindings()  # V appears in the footer, or goes
        screen.set_class(height < TINY[1] or width < TINY[0], "-tiny")

    # -- events in -----------------------------------------------------------------------
    def _tick(self) -> None:
        if self._picture_first():
            return
        try:
            events = self.source.pump()
        except Exception as exc:  # a broken channel must not kill the UI
            self.post_message(msg.SourceFailed(exc))
            return
        for message in msg.translate(events):
            self.post_message(message)
        error = getattr(self.source, "error", None)
        if error is not None:
            self.source.error = None  # type: ignore[attr-defined]
            self.post_message(msg.SourceFailed(error))
        loading = getattr(self.source, "loading", False)
        if self._loading and not loading:
            self.model.settle()  # (the norms read the graph built while loading)
            self._start_norms()
        self._loading = loading
        state = self._state()
        if state != self._last_state and not events:
            self.refresh_view()
        self._prefetch_picture()

    def _listen(self, source: Source) -> None:
        if hasattr(source, "wake"):  # (a replay: see ``ReplaySource._decode``)
            source.wake = lambda: self.post_message(_TraceWoke())  # (thread-safe)

    def on__trace_woke(self, message: _TraceWoke) -> None:
        self._tick()  # the key's target is in: no need to wait for the timer

    def _picture_first(self) -> bool:
        """Does the loading of a trace wait while the graph pane lays out the picture
        the user moved to? Both want the one interpreter (the decoding thread waits when
        the app takes no more), and the picture is what the user waits for; for at most
        ``PICTURE_FIRST`` seconds at a time, so that a layout of minutes stalls nothing."""
        now = time.monotonic()
        hold = getattr(self.source, "hold", None)
        if self.source.live or hold is None or not getattr(self.source, "loading", False) \
                or getattr(self.source, "waiting", False) \
                or GraphCanvas is None or not self._panes_ready() \
                or not self.main.query_one("#graph").laying_out:  # type: ignore[attr-defined]
            waits = False
            self._picture_since = None
        else:
            if self._picture_since is None:
                self._picture_since = now
            waits = now - self._picture_since < PICTURE_FIRST
        if hold is not None:
            hold(waits)
        return waits

    def _state(self) -> SourceState:
        try:
            return self.source.state
        except Exception as exc:
            return SourceState("finished", "error", f"lost the script: {exc}")

    def on_events_arrived(self, message: msg.EventsArrived) -> None:
        # While a live script streams, the graph, inspector and source follow at a few
        # frames a second (each redraw pays for the new part of the graph); the status line
        # and the iteration bar keep up with every batch. Pauses redraw everything at once.
        now = time.monotonic()
        if self.source.live and self._state().status == "running" \
                and now - self._last_full < RUNNING_REDRAW:
            self.refresh_light()
            return
        # A trace loading behind a cursor that stays put: what the cursor shows is as it
        # was (the events after it change nothing before it); the rest follows twice a
        # second. Each full redraw paid for the panes and its chunk of the graph, most of
        # the time it took to reach the picture a waiting ``f`` asked for.
        # While a command waits for the trace (``f`` at once), nothing but the status
        # changes until it lands: no full redraw at all.
        if not self.source.live and getattr(self.source, "loading", False) \
                and self.model.cursor == self._last_cursor and (
                    now - self._last_full < LOADING_ROWS
                    or getattr(self.source, "waiting", False)):
            # (The graph is brought up to date all the same: building it gives nodes
            # the gradients backward gave them, which the cursor's view must not show.)
            with collector.paused():
                self.model.graph_at_cursor()
            self.refresh_light()
            return
        self.refresh_view()

    def on_paused(self, message: msg.Paused) -> None:
        if self._norms_again and not self._norms_busy:
            self._norms_again = False
            self._start_norms()
        self.refresh_view()
        if message.reason == "breakpoint" and self.source.live \
                and not isinstance(self.screen, ConsoleScreen):
            self.action_console()  # breakpoint() in the script: the console is ready

    def on_output_arrived(self, message: msg.OutputArrived) -> None:
        self.main.query_one(OutputPane).add(message.chunks)

    def on_iterations_completed(self, message: msg.IterationsCompleted) -> None:
        # Sparkline norms cost a graph build per iteration on a background thread that
        # competes for the GIL: not while a trace loads or a live script streams.
        if getattr(self.source, "loading", False) or self._state().status == "running":
            self._norms_again = True
        else:
            self._start_norms()
        if self.export_dir is not None:
            for index in message.indices:
                graph = self.model.graph(index)
                if graph is not None:
                    self._exporter.submit(graph, self.export_dir)

    def on_script_raised(self, message: msg.ScriptRaised) -> None:
        if not self.source.live:  # a replay opens on the whole run: no news to announce
            return
        where = f" at {Path(message.file).name}:{message.line}" if message.file else ""
        self.notify(f"{message.type}: {message.message}{where}", title="the script raised",
                    severity="error", timeout=8)
        if message.traceback:
            self.main.query_one(OutputPane).add([("stderr", message.traceback.rstrip("\n") + "\n")])
        self.refresh_view()

    def on_run_ended(self, message: msg.RunEnded) -> None:
        self._start_norms()
        self.main.query_one(OutputPane).flush_partial()
        if self.source.live:
            self.notify(f"the script ended with status {message.status}", timeout=5)
        self.refresh_view()

    def on_source_failed(self, message: msg.SourceFailed) -> None:
        if self.source.live:
            self.notify(f"lost the script: {message.error}", severity="error", timeout=10)
        else:  # a replay's trace was damaged past what loaded (the error names the file)
            self.notify(f"{message.error}; showing what loaded before it",
                        title="damaged trace", severity="error", timeout=30, markup=False)
        self.refresh_view()

    # -- drawing -------------------------------------------------------------------------
    def refresh_light(self) -> None:
        """Redraw what is cheap: the status line and the iteration bar."""
        if not self._panes_ready():
            return
        info = self.model.cursor_iteration()
        index = info.index if info else 0
        try:  # (a trace's chunk may arrive while the app closes, its panes going)
            bar = self.main.query_one(IterationBar)
        except NoMatches:
            return
        bar.show(self.model.iterations, index, None)
        self._show_status(index)

    def refresh_view(self) -> None:
        """Redraw every pane from the model (cheap: one pass over one iteration)."""
        if not self._panes_ready():
            return
        model = self.model
        self.redraws += 1
        self._last_full = time.monotonic()
        with self.batch_update(), collector.paused():
            found = model.graph_at_cursor()
            graph = found if found is not None else Graph(iteration=1)  # (empty is falsy)
            self.graph = graph
            current = model.current_node_id()
            moved = model.cursor != self._last_cursor
            self._last_cursor = model.cursor
            if moved or self.selected not in graph.nodes:
                self.selected, self.selected_unit = current, None
            if moved:
                self.compile_event = model.compile_event_at_cursor()
            canvas = self.main.query_one("#graph")
            canvas.show(graph, current=current, mode=self.graph_mode)  # type: ignore[attr-defined]
            title = _graph_title(found, self.graph_mode)
            if title != self._graph_title:  # setting a title redraws the pane
                canvas.border_title = self._graph_title = title
            if moved and GraphCanvas is not None and current in graph.nodes:
                canvas.selected = current  # type: ignore[attr-defined]
            self._show_inspector()
            self._show_variables()
            self._show_source(graph, current)
            info = model.cursor_iteration()
            # While a trace loads, the cursor's iteration gains rows every tick, and each
            # new row count lays the whole screen out again (27 ms a time at 50,000
            # nodes; 50-80 ms at 200x50): the timeline takes them in twice a second, and
            # at once on a move; not while a key waits for the trace (``f`` at once),
            # which moves the cursor, and so the rows, once it lands.
            now = time.monotonic()
            if moved or not getattr(self.source, "loading", False) or (
                    now - self._timeline_at >= LOADING_ROWS
                    and not getattr(self.source, "waiting", False)):
                self._timeline_at = now
                timeline = self.main.query_one(Timeline)
                timeline.show(model.events, info.rows or [] if info else [], model.cursor)
            index = info.index if info else 0
            diff = model.diff(index) if info is not None and info.changed else None
            self.main.query_one(IterationBar).show(model.iterations, index, diff)
            self._show_status(index)

    def _prefetch_picture(self) -> None:
        """A replay: once the cursor's iteration has its whole forward pass in and is big,
        its module-level picture is laid out in the background while the trace goes on
        loading, so a jump to it (``f``, the end of the iteration) draws at once. Asked
        on every tick until the layout worker is free for it."""
        model = self.model
        info = model.cursor_iteration()
        if (self.source.live or info is None or info.backward_start is None
                or info.index in self._prefetched or GraphCanvas is None
                or not self._panes_ready()):
            return
        graph = model.graph(info.index)
        if graph is None or len(graph.nodes) <= PREFETCH_ABOVE or (
                model.cursor >= info.backward_start):  # (there already: drawn as usual)
            self._prefetched.add(info.index)
            return
        seq = model.events[info.backward_start].seq

        def strip(nodes: list[Any]) -> None:
            model.strip_ahead(graph, nodes, seq)

        if self.main.query_one(GraphCanvas).prefetch_forward(graph, seq, also=strip):
            self._prefetched.add(info.index)

    @property
    def main(self) -> Screen:
        """The debugger's own screen. Handlers reach its panes through it: a worker's result
        (norms, a layout, fetched values) may arrive while a dialog is on top, and
        ``App.query_one`` would search the dialog."""
        return self.screen_stack[0]

    def _panes_ready(self) -> bool:
        """False while the screen is not up (at exit, a batch may still be in the queue)."""
        try:
            self.main.query_one("#graph")
        except Exception:
            return False
        return True

    def _show_status(self, index: int) -> None:
        state = self._state()
        self._last_state = state
        model = self.model
        reason, description = state.reason, state.description
        behind = 0
        if self.source.live and state.status != "running":
            frontier = self.source.frontier_index()
            if model.cursor < frontier:
                behind = frontier - model.cursor
                reason, description = self.source.last_move
        if state.status == "finished" and not description:
            from .sources import describe_ending

            description = describe_ending(model)
        bps = self.source.breakpoints.values()
        self.main.query_one(StatusLine).update_parts(*status_parts(
            status=state.status, reason=reason, description=description,
            event=model.current_event, iteration=index,
            iterations=model.iterations[-1].index if model.iterations else 0,
            live=self.source.live, behind=behind,
            breakpoints=sum(1 for b in bps if b.kind != "nan"),
            nan_break=any(b.kind == "nan" for b in bps), mode=self.graph_mode,
            per_op_reads=self.source.live and reads_per_op(bps),
            notes=self.source.notes, warnings=self.source.breakpoint_notes()))

    def _show_source(self, graph: Graph, current: int | None) -> None:
        node = graph.nodes.get(current) if current is not None else None
        event = self.model.current_event
        file = (node.file if node is not None and node.file else getattr(event, "file", ""))
        line = node.line if node is not None and node.file else getattr(event, "line", 0)
        if self.compile_event is not None:
            from .compile_view import focus_line

            file, line = focus_line(self.compile_event)
        frame = self._selected_frame()
        follows = "the current op's line" if file else ""
        if frame is not None:
            file, line = frame.file, frame.line
            follows = f"frame {frame.index}: {frame.function} (u/D move, as in the variables)"
        view = self.main.query_one(SourceView)
        header = self.model.header
        if not file and header is not None and header.script and self._before_first_op():
            # Like pdb's first screen: the script, its first statement marked.
            file = header.script
            line = first_code_line(view.lines_of(file))
            follows = "the script's first statement"
        elif not file and view.file:
            file, line = view.file, 0
            follows = "no line: no op at this event"
        subtitle = f"follows {follows}" if follows else ""
        if view.border_subtitle != subtitle:  # (setting it redraws the pane)
            view.border_subtitle = subtitle
        lines = {b.line for b in self.source.breakpoints.values()
                 if b.kind == "line" and file and _same(b.file, file)}
        view.show(file, line, lines)

    def _before_first_op(self) -> bool:
        model = self.model
        event = model.current_event
        return (event is None or event.kind not in STEP_KINDS) and model.prev_step() is None

    def _show_inspector(self) -> None:
        if self.compile_event is not None:
            self.main.query_one(Inspector).show_compile(self.compile_event,
                                                        self._joined_ops(self.compile_event))
            return
        if self.selected_unit is not None and GraphCanvas is not None:
            info = self.main.query_one("#graph").unit_info(self.selected_unit)  # type: ignore[attr-defined]
            if info is not None:
                self.main.query_one(Inspector).show_unit(info)
                return
        graph = self.graph
        if graph is not None and self.graph_mode == "backward":
            # autograd's graph: a node of no forward op (TBackward0, a checkpoint's) too
            pane: Any = self.main.query_one("#graph")
            graph = (pane.backward_of(graph) if hasattr(pane, "backward_of")
                     else backward_graph(graph))
        node = graph.nodes.get(self.selected) if graph is not None and self.selected else None
        history = (self.model.grad_history(node, SPARK_ITERATIONS) if node is not None
                   else ())
        inputs: list[str] = []
        if node is not None and graph is not None:
            # (the forward graph's inputs are indexed once by the model)
            srcs = (self.model.inputs_of(node.id) if self.graph_mode == "forward"
                    else graph.inputs_of(node.id))
            for src in srcs:
                other = graph.nodes.get(src)
                if other is not None:
                    inputs.append(f"{other.label} t{src}")
        header = self.model.header
        self.main.query_one(Inspector).show(node, history, inputs,
                                       backward_done=self.model.backward_done(),
                                       stats=header.stats if header is not None else "")

    # -- Python at the pause: variables, watches, console ---------------------------------
    def _python_note(self) -> str:
        """Why the variables pane has no values to show now ("" when it has)."""
        if not self.source.live:
            return LIVE_ONLY
        state = self._state()
        if state.status == "running":
            return "running … the variables show when the script pauses"
        if state.status == "finished":
            return "the script has ended: there is no frame to show"
        if self.model.cursor < self.source.frontier_index():
            return ("looking back in history: variables exist only at the live pause "
                    "(→ or n returns to it)")
        return ""

    def _show_variables(self) -> None:
        pane = self.main.query_one(VariablesPane)
        note = self._python_note()
        if note:
            pane.show_note(note)
            return
        self.frames.sync()
        view = self.frames.current
        if view is not None:
            graph = self.graph
            pane.show_view(view, graph.nodes if graph is not None else ())
        else:
            pane.show_note(self.frames.error or "reading the frame …")

    def _selected_frame(self) -> Any:
        """The frame the source pane follows: one moved to up the stack, or the line of a
        breakpoint(), of an exception, or of a rank of a job held at a checkpoint or at a
        divergence (the op's line is elsewhere there: the script went on past its last op)."""
        view = self.frames.current
        if view is None or not view.frames or self._python_note():
            return None
        if view.frame > 0 or self._state().reason in ("breakpoint", "exception", "held",
                                                      "divergence"):
            return view.frames[view.frame]
        return None

    def on_frame_view_arrived(self, message: FrameViewArrived) -> None:
        if self.frames.arrived(message):
            self._show_variables()
            self._show_source(self.graph or Graph(iteration=1), self.model.current_node_id())

    def on_variables_pane_node_chosen(self, message: VariablesPane.NodeChosen) -> None:
        self.select_node(message.node_id)

    def on_variables_pane_watch_removed(self, message: VariablesPane.WatchRemoved) -> None:
        self.source.remove_watch(message.watch_id)
        self.frames.request()

    def action_frame_up(self) -> None:
        if not self.frames.move(+1):
            self.bell()

    def action_frame_down(self) -> None:
        if not self.frames.move(-1):
            self.bell()

    def action_add_watch(self) -> None:
        if not self.source.live:
            self.notify(LIVE_ONLY, severity="warning")
            return

        def add(expression: str | None) -> None:
            if expression:
                self.source.add_watch(expression)
                self.frames.request()

        self.push_screen(PromptScreen("watch expression", "loss.item(), h.norm(), "
                                      "self.fc.weight.grad", "evaluated in the selected frame "
                                      "at every pause; delete on its row removes it"), add)

    def action_console(self) -> None:
        if not self.source.live:
            self.notify(LIVE_ONLY, severity="warning")
            return
        frames = self.frames
        view = frames.current
        where = ""
        if view is not None and view.frames:
            f = view.frames[view.frame]
            where = f" · {f.function} at {Path(f.file).name}:{f.line} (frame {f.index})"
        index, source = frames.frame, self.source
        self.push_screen(ConsoleScreen(
            self.console_state, lambda text: source.evaluate(text, index),
            source.interrupt_evaluation, f"console{where}"), lambda _: frames.request())

    async def action_interrupt_evaluation(self) -> None:
        """ctrl+c, as in pdb and gdb: interrupt an evaluation; else break into a running
        script at its next op; a second ctrl+c within a second quits."""
        now = time.monotonic()
        again, self._ctrl_c = now - self._ctrl_c < CTRL_C_AGAIN, now
        if self.frames.started_at or self.console_state.busy:
            self.source.interrupt_evaluation()
            self.notify("interrupting the evaluation in the script", timeout=3)
        elif again:
            await self.action_quit()
        elif self.source.break_in():
            self.notify("breaking in: the script pauses at its next op (ctrl+c again "
                        "within a second quits)", timeout=3)
        else:
            self.notify("ctrl+c again within a second quits (so does q)", timeout=3)

    def _joined_ops(self, event: Any) -> str:
        """The op lane's ops at the line a compile event is about (found once per event)."""
        if self._joined[0] != event.seq:
            from dyngraph.compile_lane.report import join_text, ops_at_line

            from .compile_view import focus_line

            file, line = focus_line(event)
            self._joined = (event.seq, join_text(ops_at_line(self.model.events, file, line)))
        return self._joined[1]

    def select_node(self, node_id: int | None) -> None:
        """Show ``node_id`` in the inspector (and highlight it in the graph pane)."""
        self.compile_event = None
        self.selected, self.selected_unit = node_id, None
        if GraphCanvas is not None and node_id is not None:
            canvas = self.main.query_one("#graph")
            if canvas.selected != node_id:  # type: ignore[attr-defined]
                canvas.selected = node_id  # type: ignore[attr-defined]
        self._show_inspector()

    def swap_source(self, source: Source) -> None:
        """Go on with ``source`` (a restarted run) as if the app had just opened on it."""
        old = self.source
        self.source = source
        self.model = source.model
        self.selected, self.graph = None, None
        self._last_cursor, self._last_state = -2, None
        self._norms_busy = self._norms_again = False
        self._loading = True
        self._prefetched = set()
        self.frames = FrameFetcher(source, self.post_message)  # watches go with the old run
        self._listen(source)
        output = self.main.query_one(OutputPane)
        output.flush_partial()
        output.write_line("── restarted ──")
        threading.Thread(target=old.close, name="dyngraph-close", daemon=True).start()
        self.refresh_view()
        self.main.query_one(SourceView).focus()

    # -- selection from panes ------------------------------------------------------------
    def on_iteration_bar_iteration_chosen(self, message: IterationBar.IterationChosen) -> None:
        self.jump_to_iteration(message.index)

    def on_graph_canvas_node_selected(self, message: Any) -> None:
        if (message.node_id != self.selected or message.module != self.selected_unit
                or self.compile_event is not None):
            self.compile_event = None
            self.selected = message.node_id
            self.selected_unit = message.module
            self._show_inspector()

    def on_timeline_event_chosen(self, message: Timeline.EventChosen) -> None:
        event = self.model.events[message.index]
        if event.kind == "compile":  # the compile lane: its own view, and its line
            self.compile_event = event
            self._show_inspector()
            self._show_source(self.graph or Graph(iteration=1), None)
            return
        for attr in ("output", "node", "tensor"):
            node_id = getattr(event, attr, None)
            if isinstance(node_id, int):
                self.select_node(node_id)
                return

    def on_source_view_line_chosen(self, message: SourceView.LineChosen) -> None:
        if message.file:
            self.source.run_to_line(message.file, message.line)
            self.refresh_view()

    # -- gradient norms across iterations (for sparklines) --------------------------------
    def _start_norms(self) -> None:
        if self._norms_busy:
            self._norms_again = True
            return
        self._norms_busy = True
        threading.Thread(target=self._compute_norms, name="dyngraph-norms", daemon=True).start()

    def _compute_norms(self) -> None:
        model = self.model
        # Newest first, and only as many as a sparkline shows.
        done = [info for info in list(model.iterations) if info.complete][-SPARK_ITERATIONS:]
        for info in reversed(done):
            if not model.has_norms(info.index):
                model.iteration_norms(info.index)
        self.post_message(_NormsReady())

    def on__norms_ready(self, message: _NormsReady) -> None:
        self._norms_busy = False
        if self._panes_ready():
            self._show_inspector()
        if self._norms_again:
            self._norms_again = False
            self._start_norms()

    # -- quitting ------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """End the child cleanly (on a daemon thread: it may take a moment), then exit."""
        if self._quitting:
            self.exit(self._exit_status())
            return
        self._quitting = True
        self.main.query_one(StatusLine).update(Text(" QUITTING … ending the script ",
                                               "bold white on red"))
        self._exporter.stop()

        def close() -> None:
            try:
                self.source.close()
            finally:
                self.post_message(_SourceClosed())

        threading.Thread(target=close, name="dyngraph-close", daemon=True).start()
        self.set_timer(8.0, lambda: self.exit(self._exit_status()))

    def on__source_closed(self, message: _SourceClosed) -> None:
        self.exit(self._exit_status())

    def _exit_status(self) -> int:
        end = self.model.run_end
        return end.status if end is not None else 0


def _graph_title(graph: Graph | None, mode: str) -> str:
    """The graph pane's title: which iteration (None: no op has run, so none)."""
    if graph is None:
        return "graph · before the first op"
    which = f"iteration {graph.iteration}" if graph.iteration else "setup (iteration 0)"
    if mode == "backward":
        reached = len(graph.backward_order)
        if not reached:
            return f"backward graph · {which} · backward has not started (g: forward)"
        return f"backward graph · {which} · {reached} nodes reached"
    return f"graph · {which} · {len(graph.nodes)} nodes"


def _same(a: str, b: str) -> bool:
    from dyngraph.debug.breakpoints import same_file

    return same_file(a, b)

