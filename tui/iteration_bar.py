"""The iteration bar: "iteration i of N", one cell per iteration, changed ones marked.

A cell is ``·`` when the iteration's structure key equals the previous one's, ``◆`` when it
differs (the graph changed shape), ``…`` for one still running, ``↻`` (red) when
torch.compile recompiled in it; the cursor's iteration is highlighted. When there are more
iterations than cells, the bar shows a window around the current one. ``DiffScreen`` lists
what an iteration added and removed.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Click
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from dyngraph.capture.graph import Graph, GraphDiff, roll_up
from dyngraph.textsafe import shown

from .model import IterationInfo

ROLL_UP = 20  # past this many added or removed nodes, the diff says them in one line first


def bar_text(iterations: Sequence[IterationInfo], current: int, width: int,
             diff: GraphDiff | None = None) -> Text:
    """The bar's one line for ``width`` cells."""
    return bar_layout(iterations, current, width, diff)[0]


def bar_layout(iterations: Sequence[IterationInfo], current: int, width: int,
               diff: GraphDiff | None = None) -> tuple[Text, int, list[int]]:
    """The bar's line, the column of its first cell and the iteration of each cell."""
    n = len(iterations)
    text = Text()
    text.append(" iteration ", "dim")
    if not iterations:  # nothing has run yet
        text.append("–  ", "bold")
    else:
        text.append(f"{current}" if current else "0 setup", "bold")
        text.append(f"/{iterations[-1].index}  ", "dim")
    changed = sum(1 for info in iterations if info.changed)
    recompiled = sum(1 for info in iterations if info.recompiles)
    if diff is not None and not diff.unchanged:
        text.append(f"changed: +{len(diff.added)} −{len(diff.removed)} "
                    f"~{len(diff.reshaped) + len(diff.rewired)} ", "bold yellow")
    room = max(width - text.cell_len - 22 - (15 if recompiled else 0), 4)
    first_cell, shown = 0, []
    if n:
        pos = next((k for k, info in enumerate(iterations) if info.index == current), n - 1)
        lo = max(0, min(pos - room // 2, n - room))
        hi = min(n, lo + room)
        if lo:
            text.append("‹", "dim")
        first_cell = text.cell_len
        shown = [info.index for info in iterations[lo:hi]]
        # Runs of cells with one style become one span: a bar of hundreds of iterations
        # would otherwise render hundreds of spans on every redraw.
        run, run_style = "", ""
        for info in iterations[lo:hi]:
            cell = "…" if not info.complete else (
                "◆" if info.changed else "○" if info.index == 0 else "·")
            style = "yellow" if info.changed else "dim"
            if info.recompiles:
                cell, style = "↻", "bold red"
            if info.index == current:
                style = "bold reverse " + ("red" if info.recompiles else
                                           "yellow" if info.changed else "white")
            if style != run_style and run:
                text.append(run, run_style)
                run = ""
            run += cell
            run_style = style
        if run:
            text.append(run, run_style)
        if hi < n:
            text.append("›", "dim")
    text.append(f"  {changed} changed", "dim")
    if recompiled:
        text.append(f"  {recompiled} recompiled", "red")
    return text, first_cell, shown


class IterationBar(Static, can_focus=True):
    """Click a cell (or focus the bar and press g) to go to an iteration."""

    BINDINGS = [
        Binding("g,enter", "app.goto_iteration", "Go to iteration", id="bar_goto"),
    ]
    DEFAULT_CSS = """
    IterationBar { height: 1; background: $panel; }
    IterationBar:focus { background: $accent 30%; }
    """

    class IterationChosen(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._args: tuple = ((), 0, None)
        self._key: tuple | None = None
        self._cells: tuple[int, list[int]] = (0, [])

    def show(self, iterations: Sequence[IterationInfo], current: int,
             diff: GraphDiff | None = None) -> None:
        self._args = (iterations, current, diff)
        key = (len(iterations), current, diff, self.size.width,
               iterations[-1].complete if iterations else None,
               iterations[-1].recompiles if iterations else 0)
        if key == self._key:
            return
        self._key = key
        self._draw()

    def _draw(self) -> None:
        iterations, current, diff = self._args
        text, first, shown = bar_layout(iterations, current, self.size.width or 80, diff)
        self._cells = (first, shown)
        # One fixed line: no layout pass needed (it would reflow the whole screen).
        self.update(text, layout=False)

    def on_resize(self) -> None:
        self._draw()

    def on_click(self, event: Click) -> None:
        first, shown = self._cells
        if 0 <= event.x - first < len(shown):
            self.post_message(self.IterationChosen(shown[event.x - first]))


class GotoScreen(ModalScreen[int | None]):
    """``:`` — type an iteration number, enter goes there."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel_goto")]
    DEFAULT_CSS = """
    GotoScreen { align: center top; }
    GotoScreen > Vertical {
        width: 60; max-width: 100%; height: auto; margin-top: 3; border: thick $accent;
        background: $surface; padding: 0 1;
    }
    GotoScreen #goto-error { color: $error; width: 1fr; height: auto; }
    GotoScreen #goto-help { color: $text-muted; width: 1fr; height: auto; }
    """

    def __init__(self, current: int, known: int, live: bool) -> None:
        super().__init__()
        self.current, self.known, self.live = current, known, live

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "go to iteration"
            yield Input(placeholder=f"0 … {self.known}" if self.known else "1",
                        id="goto-value", restrict=r"[0-9]*")
            later = "; a later one runs until it begins" if self.live else ""
            now = f"{self.current}" if self.current else "0 (setup)"
            yield Label(f"at {now} of {self.known}: enter a number{later}", id="goto-help")
            yield Label("", id="goto-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text.isdigit():
            self.query_one("#goto-error", Label).update(
                "give an iteration number: 0 (setup), 1, 2, …")
            return
        self.dismiss(int(text))

    def action_cancel(self) -> None:
        self.dismiss(None)


def diff_text(index: int, diff: GraphDiff | None, old: Graph | None, new: Graph | None,
              why_not: str = "") -> Text:
    """The diff screen's text; ``why_not`` says why there is no diff when ``diff`` is None."""
    if diff is None or old is None or new is None:
        return Text(f"iteration {index}: {why_not or 'nothing to compare'}", "dim")
    text = Text.assemble((f"iteration {index} against {index - 1}\n\n", "bold"))
    if diff.unchanged:
        return text.append("same structure: no node added, removed or reshaped", "green")

    def label(graph: Graph, node_id: int) -> str:
        node = graph.nodes[node_id]
        where = f"  {node.module}" if node.module else ""
        return shown(f"{node.label} {tuple(node.shape)}{where}")

    for title, ids, graph, style in (("added", diff.added, new, "green"),
                                     ("removed", diff.removed, old, "red")):
        text.append(f"{title} ({len(ids)})\n", f"bold {style}")
        sign = "+" if title == "added" else "−"
        listed = ids
        if len(ids) > ROLL_UP:  # many: said in one line first, as the exports' ghosts are
            text.append(f"  {sign} {shown(roll_up(graph, ids))}\n", f"bold {style}")
            listed = ids[:ROLL_UP]
        for node_id in listed:
            text.append(f"  {sign} {label(graph, node_id)}\n", style)
        if len(ids) > len(listed):
            text.append(f"  … {len(ids) - len(listed)} more\n", "dim")
    text.append(f"reshaped ({len(diff.reshaped)})\n", "bold yellow")
    for old_id, new_id in diff.reshaped[:500]:
        text.append(f"  ~ {shown(old.nodes[old_id].label)} {tuple(old.nodes[old_id].shape)} → "
                    f"{tuple(new.nodes[new_id].shape)}\n", "yellow")
    if diff.rewired:
        text.append(f"rewired ({len(diff.rewired)}): other inputs, dtype, grad mode or axes\n",
                    "bold yellow")
        for _, new_id in diff.rewired[:500]:
            text.append(f"  ~ {label(new, new_id)}\n", "yellow")
    return text


class DiffScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,d", "dismiss", "Close", id="close_diff")]
    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    DiffScreen > VerticalScroll {
        width: 80%; height: 80%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, text: Text) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "iteration diff (esc to close)"
            yield Static(self._text)
