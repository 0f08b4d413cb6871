"""The iteration bar: "iteration i of N", one cell per iteration, changed ones marked.

A cell is ``·`` when the iteration's structure key equals the previous one's, ``◆`` when it
differs (the graph changed shape), ``…`` for one still running; the cursor's iteration is
highlighted. When there are more iterations than cells, the bar shows a window around the
current one. ``DiffScreen`` lists what an iteration added and removed.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from dyngraph.capture.graph import Graph, GraphDiff

from .model import IterationInfo


def bar_text(iterations: Sequence[IterationInfo], current: int, width: int,
             diff: GraphDiff | None = None) -> Text:
    """The bar's one line for ``width`` cells."""
    n = len(iterations)
    text = Text()
    text.append(" iteration ", "dim")
    text.append(f"{current}", "bold")
    text.append(f"/{n}  ", "dim")
    changed = sum(1 for info in iterations if info.changed)
    if diff is not None and not diff.unchanged:
        text.append(f"changed: +{len(diff.added)} −{len(diff.removed)} "
                    f"~{len(diff.reshaped) + len(diff.rewired)} ", "bold yellow")
    room = max(width - text.cell_len - 22, 4)
    if n:
        pos = next((k for k, info in enumerate(iterations) if info.index == current), n - 1)
        lo = max(0, min(pos - room // 2, n - room))
        hi = min(n, lo + room)
        if lo:
            text.append("‹", "dim")
        # Runs of cells with one style become one span: a bar of hundreds of iterations
        # would otherwise render hundreds of spans on every redraw.
        run, run_style = "", ""
        for info in iterations[lo:hi]:
            cell = "…" if not info.complete else ("◆" if info.changed else "·")
            style = "yellow" if info.changed else "dim"
            if info.index == current:
                style = "bold reverse " + ("yellow" if info.changed else "white")
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
    return text


class IterationBar(Static):
    DEFAULT_CSS = """
    IterationBar { height: 1; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._args: tuple = ((), 0, None)
        self._key: tuple | None = None

    def show(self, iterations: Sequence[IterationInfo], current: int,
             diff: GraphDiff | None = None) -> None:
        self._args = (iterations, current, diff)
        key = (len(iterations), current, diff, self.size.width,
               iterations[-1].complete if iterations else None)
        if key == self._key:
            return
        self._key = key
        # One fixed line: no layout pass needed (it would reflow the whole screen).
        self.update(bar_text(iterations, current, self.size.width or 80, diff), layout=False)

    def on_resize(self) -> None:
        iterations, current, diff = self._args
        self.update(bar_text(iterations, current, self.size.width or 80, diff), layout=False)


def diff_text(index: int, diff: GraphDiff | None, old: Graph | None, new: Graph | None) -> Text:
    if diff is None or old is None or new is None:
        return Text(f"iteration {index}: nothing to compare (first iteration or not complete)",
                    "dim")
    text = Text.assemble((f"iteration {index} against {index - 1}\n\n", "bold"))
    if diff.unchanged:
        return text.append("same structure: no node added, removed or reshaped", "green")

    def label(graph: Graph, node_id: int) -> str:
        node = graph.nodes[node_id]
        where = f"  {node.module}" if node.module else ""
        return f"{node.label} {tuple(node.shape)}{where}"

    for title, ids, graph, style in (("added", diff.added, new, "green"),
                                     ("removed", diff.removed, old, "red")):
        text.append(f"{title} ({len(ids)})\n", f"bold {style}")
        for node_id in ids[:500]:
            text.append(f"  {'+' if title == 'added' else '−'} {label(graph, node_id)}\n", style)
        if len(ids) > 500:
            text.append(f"  … {len(ids) - 500} more\n", "dim")
    text.append(f"reshaped ({len(diff.reshaped)})\n", "bold yellow")
    for old_id, new_id in diff.reshaped[:500]:
        text.append(f"  ~ {old.nodes[old_id].label} {tuple(old.nodes[old_id].shape)} → "
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
