"""The debugger app: one screen for a live script or a recorded trace.

Attributes down, messages up. A timer pulls the source's new events (live: from a queue a
daemon thread fills) into the model and posts what ``messages.translate`` makes of them;
handlers redraw every pane from the model inside ``batch_update()``. Keys call the
source's commands; the source moves the model's cursor or, at a live run's frontier, tells
the child to go on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from dyngraph.capture.graph import Graph

from . import messages as msg
from .breakpoints import Breakpoint
from .breakpoints_dialog import BreakpointsDialog
from .console_screen import ConsoleScreen, ConsoleState
from .export import Exporter
from .find_screen import FindScreen
from .frame_fetcher import FrameFetcher, FrameViewArrived
from .help_screen import HelpScreen
from .inspector import Inspector, ValuesScreen, values_text
from .iteration_bar import DiffScreen, IterationBar, diff_text
from .model import Model
from .output_pane import OutputPane
from .prompt_screen import PromptScreen
from .source_view import SourceView
from .sources import LIVE_ONLY, Source, SourceState
from .status_line import StatusLine, status_text
from .timeline import Timeline
from .variables_pane import VariablesPane

try:  # the graph pane is its own module; a text list stands in if it is missing
    from .graph_canvas import GraphCanvas
except ImportError:  # pragma: no cover - only while the canvas is not installed
    GraphCanvas = None  # type: ignore[assignment,misc]

POLL_HZ = 20
SPARK_ITERATIONS = 200  # iterations a gradient-norm sparkline covers
RUNNING_REDRAW = 0.25  # seconds between full redraws while a live script streams
EXPORT_DIR = Path("dyngraph-export")


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
            text.append(f"{'▶' if node.id == current else ' '} t{node.id:<6} {node.label:<12} "
                        f"{tuple(node.shape)!s:<14} {node.module}\n", style)
        self.update(text)


class _ValuesFetched(Message):
    def __init__(self, title: str, array: Any) -> None:
        super().__init__()
        self.title = title
        self.array = array


class _Exported(Message):
    def __init__(self, iteration: int, paths: list[Path], error: BaseException | None) -> None:
        super().__init__()
        self.iteration = iteration
        self.paths = paths
        self.error = error


class _SourceClosed(Message):
    pass


class _NormsReady(Message):
    def can_replace(self, message: Message) -> bool:
        return isinstance(message, _NormsReady)


PALETTE_HELP = {
    "next_op": "run to the next forward op or backward step",
    "next_iteration": "run to the first op of the next iteration",
    "finish_forward": "run to the end of the forward pass (backward start)",
    "finish_backward": "run to the end of the backward pass",
    "continue": "run until a breakpoint (or the end)",
    "breakpoint": "toggle a breakpoint on the selected op, or the source line under the cursor",
    "breakpoints_dialog": "list, add and remove breakpoints of every kind",
    "break_on_nan": "stop at the first op or gradient that makes a NaN/Inf",
    "step_back": "one step back through what already happened",
    "step_forward": "one step forward through history (at the frontier: run one op)",
    "prev_iteration": "show the previous iteration's whole graph",
    "next_iteration_history": "show the next recorded iteration's whole graph",
    "graph_mode": "switch the graph pane between the forward and the backward graph",
    "collapse_module": "fold or unfold the selected node's module in the graph pane",
    "find_node": "find a node by op, name, module or id",
    "export_iteration": "write this iteration's graph as DOT and SVG (./dyngraph-export)",
    "iteration_diff": "what this iteration added, removed or reshaped against the previous",
    "full_values": "show every value of the selected tensor",
    "toggle_output": "show or hide the script's stdout/stderr",
    "console": "a Python prompt in the paused frame (live runs)",
    "add_watch": "add a watch expression, re-evaluated at every pause (live runs)",
    "frame_up": "select the caller's frame in the variables pane (up the stack)",
    "frame_down": "select the callee's frame in the variables pane (down the stack)",
    "interrupt_evaluation": "stop a watch or console evaluation running in the script",
    "focus_timeline": "move the focus to the timeline",
}


class DebuggerApp(App[int]):
    """``DebuggerApp(source).run()``; the exit value is the script's exit status (or 0)."""

    CSS_PATH = "app.tcss"
    TITLE = "dyngraph"
    BINDINGS = [
        Binding("n", "step_op", "Next op", id="next_op"),
        Binding("i", "next_iteration", "Next iter", id="next_iteration"),
        Binding("f", "finish_forward", "Finish fwd", id="finish_forward"),
        Binding("F", "finish_backward", "Finish bwd", id="finish_backward"),
        Binding("c", "continue", "Continue", id="continue"),
        Binding("b", "toggle_breakpoint", "Break", id="breakpoint"),
        Binding("B", "breakpoints", "Breakpoints", id="breakpoints_dialog"),
        Binding("x", "toggle_nan", "NaN break", id="break_on_nan"),
        Binding("left", "step_back", "Back", id="step_back", key_display="←"),
        Binding("right", "step_forward", "Fwd", id="step_forward", key_display="→"),
        Binding("left_square_bracket", "prev_iteration", "Prev iter", id="prev_iteration",
                key_display="["),
        Binding("right_square_bracket", "next_iteration_history", "Next iter (history)",
                id="next_iteration_history", key_display="]"),
        Binding("g", "toggle_graph", "Fwd/Bwd graph", id="graph_mode"),
        Binding("z", "collapse", "Collapse", id="collapse_module"),
        Binding("slash", "find", "Find", id="find_node", key_display="/"),
        Binding("e", "export", "Export", id="export_iteration"),
        Binding("d", "diff", "Diff", id="iteration_diff"),
        Binding("v", "values", "Values", id="full_values"),
        Binding("o", "toggle_output", "Output", id="toggle_output"),
        Binding("exclamation_mark", "console", "Console", id="console", key_display="!"),
        Binding("w", "add_watch", "Watch", id="add_watch"),
        Binding("u", "frame_up", "Up frame", id="frame_up", show=False),
        Binding("D", "frame_down", "Down frame", id="frame_down", show=False),
        Binding("ctrl+c", "interrupt_evaluation", "Interrupt evaluation",
                id="interrupt_evaluation", show=False),
        Binding("question_mark", "help", "Help", id="help", key_display="?"),
        Binding("q", "quit", "Quit", id="quit"),
        # The graph pane keeps arrows and tab for itself (pan, next node): esc leaves it.
        Binding("escape", "focus_timeline", "To timeline", id="focus_timeline", show=False),
    ]

    def __init__(self, source: Source, *, export_dir: str | Path | None = None,
                 poll_hz: float = POLL_HZ, title: str = "",
                 notices: Iterable[str] = ()) -> None:
        super().__init__()
        self.notices = list(notices)
        self.source = source
        self.model: Model = source.model
        self.export_dir = Path(export_dir) if export_dir else None
        self.poll_hz = poll_hz
        self.sub_title = title
        self.graph_mode = "forward"
        self.selected: int | None = None
        self.graph: Graph | None = None
        self._last_cursor = -2
        self._last_state: SourceState | None = None
        self._quitting = False
        self._norms_busy = False
        self._norms_again = False
        self._loading = True
        self._last_full = 0.0
        self._graph_title = ""
        self._exporter = Exporter(self._export_done)
        self.redraws = 0
        self.frames = FrameFetcher(source, self.post_message)
        self.console_state = ConsoleState()

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
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#timeline").border_title = "timeline"
        self.query_one("#output").display = False
        self.query_one("#output").border_title = "output"
        if not self.source.live:
            self.query_one(VariablesPane).add_class("replay")
        self._tick()
        self.refresh_view()
        self.query_one(Timeline).focus()
        for notice in self.notices:
            self.notify(notice, severity="warning", timeout=10)
        self.set_interval(1 / self.poll_hz, self._tick)

    # -- events in -----------------------------------------------------------------------
    def _tick(self) -> None:
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
            self._start_norms()
        self._loading = loading
        state = self._state()
        if state != self._last_state and not events:
            self.refresh_view()

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
        self.query_one(OutputPane).add(message.chunks)

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
            self.query_one(OutputPane).add([("stderr", message.traceback.rstrip("\n") + "\n")])
        self.refresh_view()

    def on_run_ended(self, message: msg.RunEnded) -> None:
        self._start_norms()
        self.query_one(OutputPane).flush_partial()
        if self.source.live:
            self.notify(f"the script ended with status {message.status}", timeout=5)
        self.refresh_view()

    def on_source_failed(self, message: msg.SourceFailed) -> None:
        self.notify(f"lost the script: {message.error}", severity="error", timeout=10)
        self.refresh_view()

    # -- drawing -------------------------------------------------------------------------
    def refresh_light(self) -> None:
        """Redraw what is cheap: the status line and the iteration bar."""
        if not self._panes_ready():
            return
        info = self.model.cursor_iteration()
        index = info.index if info else 0
        self.query_one(IterationBar).show(self.model.iterations, index, None)
        self._show_status(index)

    def refresh_view(self) -> None:
        """Redraw every pane from the model (cheap: one pass over one iteration)."""
        if not self._panes_ready():
            return
        model = self.model
        self.redraws += 1
        self._last_full = time.monotonic()
        with self.batch_update():
            graph = model.graph_at_cursor() or Graph(iteration=1)
            self.graph = graph
            current = model.current_node_id()
            moved = model.cursor != self._last_cursor
            self._last_cursor = model.cursor
            if moved or self.selected not in graph.nodes:
                self.selected = current
            canvas = self.query_one("#graph")
            canvas.show(graph, current=current, mode=self.graph_mode)  # type: ignore[attr-defined]
            title = _graph_title(graph, self.graph_mode)
            if title != self._graph_title:  # setting a title redraws the pane
                canvas.border_title = self._graph_title = title
            if moved and GraphCanvas is not None and current in graph.nodes:
                canvas.selected = current  # type: ignore[attr-defined]
            self._show_inspector()
            self._show_variables()
            self._show_source(graph, current)
            info = model.cursor_iteration()
            timeline = self.query_one(Timeline)
            timeline.show(model.events, info.rows or [] if info else [], model.cursor)
            index = info.index if info else 0
            diff = model.diff(index) if info is not None and info.changed else None
            self.query_one(IterationBar).show(model.iterations, index, diff)
            self._show_status(index)

    def _panes_ready(self) -> bool:
        """False while the screen is not up (at exit, a batch may still be in the queue)."""
        try:
            self.query_one("#graph")
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
        self.query_one(StatusLine).update_text(status_text(
            status=state.status, reason=reason, description=description,
            event=model.current_event, iteration=index, iterations=model.iteration_count,
            live=self.source.live, behind=behind,
            breakpoints=sum(1 for b in bps if b.kind != "nan"),
            nan_break=any(b.kind == "nan" for b in bps), mode=self.graph_mode))

    def _show_source(self, graph: Graph, current: int | None) -> None:
        node = graph.nodes.get(current) if current is not None else None
        event = self.model.current_event
        file = (node.file if node is not None and node.file else getattr(event, "file", ""))
        line = node.line if node is not None and node.file else getattr(event, "line", 0)
        frame = self._selected_frame()
        if frame is not None:
            file, line = frame.file, frame.line
        view = self.query_one(SourceView)
        if not file and view.file:
            file, line = view.file, 0
        lines = {b.line for b in self.source.breakpoints.values()
                 if b.kind == "line" and file and _same(b.file, file)}
        view.show(file, line, lines)

    def _show_inspector(self) -> None:
        graph = self.graph
        node = graph.nodes.get(self.selected) if graph is not None and self.selected else None
        history = (self.model.grad_history(node, SPARK_ITERATIONS) if node is not None
                   else ())
        inputs: list[str] = []
        if node is not None and graph is not None:
            for src in graph.inputs_of(node.id):
                other = graph.nodes.get(src)
                if other is not None:
                    inputs.append(f"{other.label} t{src}")
        self.query_one(Inspector).show(node, history, inputs)

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
        pane = self.query_one(VariablesPane)
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
        breakpoint() or of an exception (the op's line is elsewhere there)."""
        view = self.frames.current
        if view is None or not view.frames or self._python_note():
            return None
        if view.frame > 0 or self._state().reason in ("breakpoint", "exception"):
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

    def action_interrupt_evaluation(self) -> None:
        if self.frames.started_at or self.console_state.busy:
            self.source.interrupt_evaluation()
            self.notify("interrupting the evaluation in the script", timeout=3)
        else:
            self.notify("press q (or ctrl+q) to quit", timeout=3)

    def select_node(self, node_id: int | None) -> None:
        """Show ``node_id`` in the inspector (and highlight it in the graph pane)."""
        self.selected = node_id
        if GraphCanvas is not None and node_id is not None:
            canvas = self.query_one("#graph")
            if canvas.selected != node_id:  # type: ignore[attr-defined]
                canvas.selected = node_id  # type: ignore[attr-defined]
        self._show_inspector()

    # -- selection from panes ------------------------------------------------------------
    def on_graph_canvas_node_selected(self, message: Any) -> None:
        if message.node_id != self.selected:
            self.selected = message.node_id
            self._show_inspector()

    def on_timeline_event_chosen(self, message: Timeline.EventChosen) -> None:
        event = self.model.events[message.index]
        for attr in ("output", "node", "tensor"):
            node_id = getattr(event, attr, None)
            if isinstance(node_id, int):
                self.select_node(node_id)
                return

    def on_source_view_line_chosen(self, message: SourceView.LineChosen) -> None:
        if message.file:
            self.source.run_to_line(message.file, message.line)
            self.refresh_view()

    # -- stepping ------------------------------------------------------------------------
    def _command(self, name: str, *args: Any) -> None:
        if self._quitting:
            return
        try:
            getattr(self.source, name)(*args)
        except Exception as exc:  # e.g. the child is gone: say so, keep the UI
            self.notify(f"{name}: {exc}", severity="error")
        self.refresh_view()

    def action_step_op(self) -> None:
        self._command("step_op")

    def action_next_iteration(self) -> None:
        self._command("next_iteration")

    def action_finish_forward(self) -> None:
        self._command("finish_forward")

    def action_finish_backward(self) -> None:
        self._command("finish_backward")

    def action_continue(self) -> None:
        self._command("continue_")

    def action_step_back(self) -> None:
        if not self.source.step_back():
            self.bell()
        self.refresh_view()

    def action_step_forward(self) -> None:
        self._command("step_forward")

    def action_prev_iteration(self) -> None:
        info = self.model.cursor_iteration()
        if info is None or not self.source.goto_iteration(info.index - 1):
            self.bell()
        self.refresh_view()

    def action_next_iteration_history(self) -> None:
        info = self.model.cursor_iteration()
        if info is None or not self.source.goto_iteration(info.index + 1):
            self.bell()
        self.refresh_view()

    # -- breakpoints ---------------------------------------------------------------------
    def action_toggle_breakpoint(self) -> None:
        view = self.query_one(SourceView)
        if self.focused is view and view.file:
            bp = Breakpoint.at_line(view.file, view.cursor_line)
        else:
            node = self.graph.nodes.get(self.selected) if self.graph and self.selected else None
            if node is None or node.kind != "op":
                self.notify("select an op node (or a line in the source pane) first",
                            severity="warning")
                return
            bp = Breakpoint.op(node.op)
        self._toggle(bp)

    def action_toggle_nan(self) -> None:
        self._toggle(Breakpoint.nan())

    def _toggle(self, bp: Breakpoint) -> None:
        try:
            on = self.source.toggle_breakpoint(bp)
        except Exception as exc:
            self.notify(f"breakpoint: {exc}", severity="error")
            return
        self.notify(f"breakpoint {'set' if on else 'removed'}: {bp}", timeout=3)
        self.refresh_view()

    def action_breakpoints(self) -> None:
        dialog = BreakpointsDialog(self.source, self.query_one(SourceView).file)
        self.push_screen(dialog, lambda changed: self.refresh_view())

    # -- views ---------------------------------------------------------------------------
    def action_toggle_graph(self) -> None:
        self.graph_mode = "backward" if self.graph_mode == "forward" else "forward"
        self.refresh_view()

    def action_collapse(self) -> None:
        canvas = self.query_one("#graph")
        for name in ("action_toggle_module", "action_toggle_collapse", "action_collapse"):
            action = getattr(canvas, name, None)
            if action is not None:
                action()
                return
        self.notify("collapsing modules needs the graph canvas", severity="warning")

    def action_find(self) -> None:
        if self.graph is None or not self.graph.nodes:
            self.bell()
            return
        self.push_screen(FindScreen(self.graph), self._found)

    def _found(self, node_id: int | None) -> None:
        if node_id is not None:
            self.select_node(node_id)

    def action_focus_timeline(self) -> None:
        self.query_one(Timeline).focus()

    def action_toggle_output(self) -> None:
        pane = self.query_one(OutputPane)
        pane.display = not pane.display
        pane.unseen = 0

    def action_diff(self) -> None:
        info = self.model.cursor_iteration()
        if info is None:
            return
        index = info.index
        diff = self.model.diff(index)
        text = diff_text(index, diff, self.model.graph(index - 1), self.model.graph(index))
        self.push_screen(DiffScreen(text))

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.key_bindings()))

    def action_values(self) -> None:
        node = self.graph.nodes.get(self.selected) if self.graph and self.selected else None
        if node is None:
            self.bell()
            return
        title = f"{node.label} t{node.id}"
        source = self.source

        def fetch() -> None:
            try:
                array = source.fetch_values(node.id)
            except Exception as exc:
                array = None
                title_ = f"{title}: {exc}"
            else:
                title_ = title
            self.post_message(_ValuesFetched(title_, array))

        threading.Thread(target=fetch, name="dyngraph-values", daemon=True).start()

    def on__values_fetched(self, message: _ValuesFetched) -> None:
        self.push_screen(ValuesScreen(values_text(message.array, message.title)))

    def action_export(self) -> None:
        graph = self.graph
        if graph is None or not graph.nodes:
            self.bell()
            return
        self.notify(f"exporting iteration {graph.iteration} …", timeout=2)
        self._exporter.submit(graph, self.export_dir or EXPORT_DIR, self.graph_mode)

    def _export_done(self, iteration: int, paths: list[Path], error: BaseException | None
                     ) -> None:
        self.post_message(_Exported(iteration, paths, error))

    def on__exported(self, message: _Exported) -> None:
        if message.error is not None:
            self.notify(f"export of iteration {message.iteration} failed: {message.error}",
                        severity="error")
        elif self.export_dir is None or not self.source.live:
            self.notify("wrote " + ", ".join(str(p) for p in message.paths), timeout=4)

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
        self._show_inspector()
        if self._norms_again:
            self._norms_again = False
            self._start_norms()

    # -- command palette and help -------------------------------------------------------
    def key_bindings(self) -> list[Binding]:
        return [b for b in self.BINDINGS if isinstance(b, Binding)]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.key_bindings():
            if b.action in ("quit", "help"):
                continue
            yield SystemCommand(f"{b.description} ({b.key_display or b.key})",
                                PALETTE_HELP.get(b.id or "", b.description),
                                _runner(self, b.action))

    # -- quitting ------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """End the child cleanly (on a daemon thread: it may take a moment), then exit."""
        if self._quitting:
            self.exit(self._exit_status())
            return
        self._quitting = True
        self.query_one(StatusLine).update(Text(" QUITTING … ending the script ",
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


def _graph_title(graph: Graph, mode: str) -> str:
    if mode == "backward":
        reached = len(graph.backward_order)
        if not reached:
            return (f"backward graph · iteration {graph.iteration} · backward has not started "
                    "(g: forward)")
        return f"backward graph · iteration {graph.iteration} · {reached} nodes reached"
    return f"graph · iteration {graph.iteration} · {len(graph.nodes)} nodes"


def _runner(app: DebuggerApp, action: str):
    def run() -> None:
        app.run_action(action)

    return run


def _same(a: str, b: str) -> bool:
    from dyngraph.debug.breakpoints import same_file

    return same_file(a, b)

