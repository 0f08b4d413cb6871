"""What the debugger's keys do: the actions of ``DebuggerApp`` (``tui/app.py``).

The app draws; this base class holds its actions (stepping, breakpoints, views, values,
export, restart, the command palette) and the workers they start. Keys and their help live
in ``tui/keys.py``. A new pane adds itself to ``DebuggerApp.compose`` and ``refresh_view``;
a new key adds a ``Key`` and an ``action_`` method here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen

from dyngraph.capture.graph import Graph
from dyngraph.capture.paths import shared_graph
from dyngraph.textsafe import shown

from .afterwards import out_dir, shown_path
from .breakpoints import Breakpoint
from .breakpoints_dialog import BreakpointsDialog
from .export import Exporter
from .find_screen import FindScreen
from .help_screen import HelpScreen
from .inspector import ValuesScreen, grad_missing, values_text
from .iteration_bar import DiffScreen, GotoScreen, diff_text
from .keys import HELP_BY_ID, bindings
from .model import Model
from .output_pane import OutputPane
from .source_view import SourceView
from .sources import Source
from .timeline import Timeline


class _ValuesFetched(Message):
    def __init__(self, title: str, array: Any, why_none: str = "") -> None:
        super().__init__()
        self.title = title
        self.array = array
        self.why_none = why_none


class _Exported(Message):
    def __init__(self, iteration: int, paths: list[Path], error: BaseException | None) -> None:
        super().__init__()
        self.iteration = iteration
        self.paths = paths
        self.error = error


class _Restarted(Message):
    def __init__(self, source: Source | None, error: BaseException | None) -> None:
        super().__init__()
        self.source = source
        self.error = error


class DebuggerActions(App[int]):
    """The debugger's actions; ``DebuggerApp`` adds the panes and the drawing."""

    BINDINGS = bindings()

    source: Source
    model: Model
    graph: Graph | None
    selected: int | None
    graph_mode: str
    export_dir: Path | None
    _quitting: bool
    _exporter: Exporter

    # -- provided by DebuggerApp ---------------------------------------------------------
    @property
    def main(self) -> Screen:
        raise NotImplementedError

    def refresh_view(self) -> None:
        raise NotImplementedError

    def select_node(self, node_id: int | None) -> None:
        raise NotImplementedError

    def swap_source(self, source: Source) -> None:
        raise NotImplementedError

    def selected_node(self) -> Any:
        return self.graph.nodes.get(self.selected) if self.graph and self.selected else None

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every notice, from any screen, shown literally: they quote names, paths and the
        script's exceptions (``KeyError: '[/]'``), which Textual would read as markup."""
        super().notify(shown(message, multiline=True), title=shown(title), severity=severity,
                       timeout=timeout, markup=False)

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

    def action_goto_iteration(self) -> None:
        info = self.model.cursor_iteration()
        last = self.model.iterations[-1].index if self.model.iterations else 0
        self.push_screen(GotoScreen(info.index if info else 0, last, self.source.live),
                         self.jump_to_iteration)

    def jump_to_iteration(self, index: int | None) -> None:
        """Show iteration ``index``: from history, or (live) run until it begins."""
        if index is None or self._quitting:
            return
        if self.source.goto_iteration(index):
            self.refresh_view()
            return
        known = self.model.iterations[-1].index if self.model.iterations else 0
        if self.source.live and index > known and self._state_status() != "finished":
            self.notify(f"running to iteration {index} …", timeout=3)
            self._command("run_to_iteration", index)
            return
        self.notify(f"there is no iteration {index}: the "
                    f"{'run' if self.source.live else 'trace'} has {known}",
                    severity="warning")

    def _state_status(self) -> str:
        try:
            return self.source.state.status
        except Exception:
            return "finished"

    def action_restart(self) -> None:
        """Live: a fresh run of the script with the same breakpoints; replay: the first op."""
        if self._quitting:
            return
        if not self.source.live:
            self.source.rewind()
            self.notify("back at the first op", timeout=3)
            self.refresh_view()
            return
        old = self.source
        self.notify(f"restarting with {len(old.breakpoints)} breakpoint(s) …", timeout=3)

        def restart() -> None:
            try:
                new = old.restarted()
            except Exception as exc:
                self.post_message(_Restarted(None, exc))
            else:
                self.post_message(_Restarted(new, None))

        threading.Thread(target=restart, name="dyngraph-restart", daemon=True).start()

    def on__restarted(self, message: _Restarted) -> None:
        if message.source is None:
            self.notify(f"restart failed: {message.error}", severity="error", timeout=10)
            return
        if self._quitting:
            message.source.close()
            return
        self.swap_source(message.source)
        self.notify("restarted: paused before the script's first line", timeout=4)

    # -- breakpoints ---------------------------------------------------------------------
    def action_toggle_breakpoint(self) -> None:
        view = self.main.query_one(SourceView)
        if self.focused is view and view.file:
            bp = Breakpoint.at_line(view.file, view.cursor_line)
        else:
            node = self.selected_node()
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
        why = self.source.bp_warnings.get(bp) if on else None
        if why:  # set, but it cannot hit as things stand: say so, with the nearest match
            self.notify(f"breakpoint set: {bp}, but {why}", severity="warning", timeout=8)
        else:
            self.notify(f"breakpoint {'set' if on else 'removed'}: {bp}", timeout=3)
        self.refresh_view()

    def action_breakpoints(self) -> None:
        dialog = BreakpointsDialog(self.source, self.main.query_one(SourceView).file)
        self.push_screen(dialog, lambda changed: self.refresh_view())

    # -- views ---------------------------------------------------------------------------
    def action_toggle_graph(self) -> None:
        self.graph_mode = "backward" if self.graph_mode == "forward" else "forward"
        self.refresh_view()

    def action_collapse(self) -> None:
        canvas = self.main.query_one("#graph")
        for name in ("action_toggle_module", "action_toggle_collapse", "action_collapse"):
            action = getattr(canvas, name, None)
            if action is not None:
                action()
                return
        self.notify("collapsing modules needs the graph canvas", severity="warning")

    def action_overview(self) -> None:
        self._canvas_action("action_toggle_overview", "the whole-graph view")

    def action_centre_graph(self) -> None:
        self._canvas_action("action_centre_current", "centring the graph")

    def _canvas_action(self, name: str, what: str) -> None:
        action = getattr(self.main.query_one("#graph"), name, None)
        if action is None:
            self.notify(f"{what} needs the graph canvas", severity="warning")
            return
        action()

    def action_find(self) -> None:
        if self.graph is None or not self.graph.nodes:
            self.bell()
            return
        self.push_screen(FindScreen(self.graph), self._found)

    def _found(self, node_id: int | None) -> None:
        if node_id is not None:
            self.select_node(node_id)

    def action_focus_source(self) -> None:
        from .source_view import SourceView

        source = self.main.query_one(SourceView)
        if source.display:
            source.focus()

    def action_focus_timeline(self) -> None:
        if self.main.maximized is not None:
            self.main.minimize()
            return
        self.main.query_one(Timeline).focus()

    def action_maximize(self) -> None:
        screen = self.main
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            screen.maximize(screen.focused)
            self.notify("m or esc restores the layout", timeout=2)

    def action_toggle_variables(self) -> None:
        self.main.toggle_class("-vars")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """V is for short terminals only (where the variables pane has no room): the
        footer shows it exactly when it does something."""
        if action == "toggle_variables":
            return bool(self.screen_stack) and self.main.has_class("-short")
        return True

    def action_toggle_output(self) -> None:
        pane = self.main.query_one(OutputPane)
        pane.display = not pane.display
        pane.unseen = 0

    def action_diff(self) -> None:
        info = self.model.cursor_iteration()
        if info is None:
            return
        index = info.index
        model = self.model
        diff = model.diff(index)
        why_not = ""
        if index == 0:
            why_not = "setup (the work before the first differentiable op): nothing to compare"
        elif index == 1 and model.iteration(0) is not None:
            why_not = ("the first iteration: setup before it (iteration 0) is no baseline, "
                       "nothing to compare it with")
        elif model.iteration(index - 1) is None:
            why_not = "the first iteration recorded: nothing to compare it with"
        elif not info.backward_done(len(model.events)):
            why_not = ("still being built (its backward pass has not finished): "
                       "F runs to the end of backward, then d compares")
        text = diff_text(index, diff, model.graph(index - 1), model.graph(index), why_not)
        self.push_screen(DiffScreen(text))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # -- values --------------------------------------------------------------------------
    def action_values(self) -> None:
        self._fetch_values(grad=False)

    def action_grad_values(self) -> None:
        self._fetch_values(grad=True)

    def _fetch_values(self, grad: bool) -> None:
        node = self.selected_node()
        if node is None:
            self.bell()
            return
        title = f"{'gradient of ' if grad else ''}{node.label} t{node.id}"
        why_none = ""
        if grad and node.grad is None:
            why_none = grad_missing(node, self.model.backward_done())
        source = self.source

        def fetch() -> None:
            array, why = None, why_none
            if not why:
                try:
                    array = source.fetch_values(node.id, grad=grad)
                except Exception as exc:
                    why = f"could not fetch them: {exc}"
                if array is None and not why:
                    why = source.no_values_reason(grad)
            self.post_message(_ValuesFetched(title, array, why))

        threading.Thread(target=fetch, name="dyngraph-values", daemon=True).start()

    def on__values_fetched(self, message: _ValuesFetched) -> None:
        width = max(self.size.width * 9 // 10 - 4, 20)
        self.push_screen(ValuesScreen(values_text(message.array, message.title, width,
                                                  message.why_none)))

    # -- files ---------------------------------------------------------------------------
    def action_export(self) -> None:
        graph = self.graph
        if graph is None or not graph.nodes:
            self.bell()
            return
        self.notify(f"exporting iteration {graph.iteration} …", timeout=2)
        header = self.model.header
        if header is not None and header.script and os.path.isabs(header.script):
            # A picture to share: files named relative to the script, as record does.
            graph = shared_graph(graph, os.path.dirname(header.script))
        self._exporter.submit(graph, self.export_dir or self.files_dir(), self.graph_mode)

    def files_dir(self) -> Path:
        """``dyngraph-out/`` beside the script or the trace: where exports and screenshots
        go unless told otherwise."""
        near = getattr(self, "files_near", None)
        if near is None and self.source.live and self.model.header is not None:
            near = self.model.header.script  # (a replay's script may be anyone's folder)
        return out_dir(near)

    def action_screenshot(self) -> None:
        """S: the screen as an SVG in ``dyngraph-out/``."""
        self.deliver_screenshot(path=str(self.files_dir()))

    def _export_done(self, iteration: int, paths: list[Path], error: BaseException | None
                     ) -> None:
        self.post_message(_Exported(iteration, paths, error))

    def on__exported(self, message: _Exported) -> None:
        if message.error is not None:
            self.notify(f"export of iteration {message.iteration} failed: {message.error}",
                        severity="error")
        elif self.export_dir is None or not self.source.live:
            self.notify("wrote " + ", ".join(shown_path(p) for p in message.paths),
                        timeout=6)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Screenshot (S, or the palette's): an SVG in ``dyngraph-out/`` beside the script
        or trace (or ``path``, created when missing), and a notice saying where it went or
        why it could not be written."""
        try:
            if path:
                os.makedirs(os.path.expanduser(path), exist_ok=True)
            written = self.save_screenshot(filename, path or str(self.files_dir()),
                                           time_format)
        except OSError as exc:
            self.notify(f"could not save the screenshot: {exc.strerror or exc}",
                        title="Screenshot", severity="error", timeout=8)
            return None
        self.notify(f"saved {shown_path(Path(written))}", title="Screenshot", timeout=6)
        return written

    # -- command palette -----------------------------------------------------------------
    def key_bindings(self) -> list[Binding]:
        return [b for b in self.BINDINGS if isinstance(b, Binding)]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.key_bindings():
            if b.action in ("quit", "help"):
                continue
            yield SystemCommand(f"{b.description} ({b.key_display or b.key})",
                                HELP_BY_ID.get(b.id or "", b.description),
                                _runner(self, b.action))


def _runner(app: App[Any], action: str) -> Callable[[], None]:
    def run() -> None:
        app.run_action(action)

    return run
