"""The variables pane: the paused frame's locals and the watch expressions, pudb-style.

Shows the user's call stack (the selected frame marked), the watches evaluated in that
frame, then one row per variable: name, type and a one-line summary (tensors: shape,
dtype, requires_grad, min/max/mean, NaN/Inf counts and, when the tensor is in the graph
on screen, its node ``tN``: enter selects it). The app fills it from a ``FrameView`` the
child sent for the current pause, or with a message saying why there is none (running,
ended, looking back in history, a replay).
"""

from __future__ import annotations

from collections.abc import Container

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from dyngraph.debug.inspection import FrameView, TensorInfo, WatchValue
from dyngraph.textsafe import literal, shown

from .inspector import fmt

MAX_STACK_LINES = 6  # frames listed; deeper stacks show the ones around the selected frame


def tensor_cell(info: TensorInfo, in_graph: bool) -> Text:
    """``(3, 8) float32 t11 requires_grad min .. max .. mean .. NaN 0 Inf 0``: the node id
    comes early, where a narrow pane still shows it."""
    s = info.summary
    text = Text(f"{tuple(s.shape)} {s.dtype}")
    if in_graph and info.node is not None:
        text.append(f" t{info.node}", "bold cyan")
    if info.requires_grad:
        text.append(" requires_grad", "magenta")
    if s.min is not None:
        text.append(f"  min {fmt(s.min)} max {fmt(s.max)} mean {fmt(s.mean)}")
    text.append(f"  NaN {s.nan} Inf {s.inf}", "bold red" if not s.finite else "dim")
    if s.sampled:
        text.append(" (sampled)", "dim")
    return text


def stack_text(view: FrameView, width: int = 60) -> Text:
    frames = view.frames
    start = max(0, min(view.frame - MAX_STACK_LINES // 2, len(frames) - MAX_STACK_LINES))
    text = Text()
    if start > 0:
        text.append(f"  … {start} inner frame(s)\n", "dim")
    for f in frames[start:start + MAX_STACK_LINES]:
        mark = "▶" if f.index == view.frame else " "
        where = shown(f"{f.file.rsplit('/', 1)[-1]}:{f.line}")
        line = Text(f"{mark} {f.index} ", "bold" if f.index == view.frame else "")
        line.append(shown(f.function), "bold yellow" if f.index == view.frame else "yellow")
        line.append(f"  {where}", "dim")
        text.append_text(line)
        text.append("\n")
    rest = len(frames) - start - MAX_STACK_LINES
    if rest > 0:
        text.append(f"  … {rest} outer frame(s)\n", "dim")
    text.append("u/D: up/down the stack · w: watch · !: console", "dim")
    return text


class VariablesPane(Vertical):
    """Stack, watches and variables of the paused frame."""

    BINDINGS = [
        Binding("delete,backspace", "remove_watch", "Remove watch", id="remove_watch",
                show=False),
    ]
    DEFAULT_CSS = """
    VariablesPane { height: 1fr; }
    VariablesPane > #vars-stack { height: auto; max-height: 9; }
    VariablesPane > #vars-note { height: auto; color: $text-muted; }
    VariablesPane > DataTable { height: 1fr; }
    """

    class NodeChosen(Message):
        """Enter on a tensor that is in the graph: select its node."""

        def __init__(self, node_id: int) -> None:
            super().__init__()
            self.node_id = node_id

    class WatchRemoved(Message):
        def __init__(self, watch_id: int) -> None:
            super().__init__()
            self.watch_id = watch_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: FrameView | None = None
        self.note = ""
        self._rows: list[tuple[str, int | None]] = []  # per row: ("watch"|"var", id/node)
        self._shown_key: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="vars-stack")
        yield Static("", id="vars-note")
        table: DataTable[Text] = DataTable(id="vars-table", cursor_type="row", zebra_stripes=False)
        yield table

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("name", key="name")
        table.add_column("type", key="type")
        table.add_column("value", key="value")
        self.border_title = "variables"
        self.show_note("")

    # -- what the app calls ----------------------------------------------------------------
    def show_note(self, note: str) -> None:
        """No frame to show: say why (and show no values)."""
        if self.view is None and note == self.note and self._shown_key == ("note",):
            return
        self.view = None
        self.note = note
        self._shown_key = ("note",)
        self._show_note_only(note)
        self.border_title = "variables"

    def _show_note_only(self, note: str) -> None:
        stack, table = self.query_one("#vars-stack", Static), self.query_one(DataTable)
        stack.update("")
        stack.display = table.display = False
        self.query_one("#vars-note", Static).update(literal(note, "dim"))  # may quote errors
        table.clear()
        self._rows = []

    def show_view(self, view: FrameView, in_graph: Container[int], note: str = "") -> None:
        """The rows of ``view``; tensors whose id is ``in_graph`` get their node id."""
        key = (view, note, tuple(n for n in _nodes(view) if n in in_graph))
        if key == self._shown_key:
            return
        self._shown_key = key
        self.view = view
        self.note = note
        if not view.frames:
            self._show_note_only("no frame of the script's own code here (it has not started "
                                 "yet)")
            return
        stack, table = self.query_one("#vars-stack", Static), self.query_one(DataTable)
        stack.display = table.display = True
        stack.update(stack_text(view))
        extra = note or (f"{view.hidden} more variables not shown" if view.hidden else "")
        self.query_one("#vars-note", Static).update(Text(extra, "dim"))
        self._fill(view, in_graph)
        frame = view.frames[view.frame]
        self.border_title = literal(f"variables · {frame.function} · frame {view.frame}")

    def _fill(self, view: FrameView, in_graph: Container[int]) -> None:
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        rows: list[tuple[str, int | None]] = []
        for w in view.watches:
            table.add_row(Text(shown(w.expression), "bold green"), Text("watch", "green"),
                          watch_cell(w, in_graph))
            rows.append(("watch", w.id))
        for v in view.variables:
            if v.tensor is not None:
                value = tensor_cell(v.tensor, v.tensor.node in in_graph)
                node = v.tensor.node if v.tensor.node in in_graph else None
            else:
                value, node = Text(shown(v.text)), None
            table.add_row(Text(shown(v.name), "bold"), Text(shown(v.type), "cyan"), value)
            rows.append(("var", node))
        self._rows = rows
        if rows:
            table.move_cursor(row=min(max(cursor, 0), len(rows) - 1), animate=False)

    # -- keys ----------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        kind, ident = self._row(event.cursor_row)
        if kind == "var" and ident is not None:
            self.post_message(self.NodeChosen(ident))
        else:
            self.app.bell()

    def action_remove_watch(self) -> None:
        kind, ident = self._row(self.query_one(DataTable).cursor_row)
        if kind == "watch" and ident is not None:
            self.post_message(self.WatchRemoved(ident))
        else:
            self.app.bell()

    def _row(self, index: int) -> tuple[str, int | None]:
        return self._rows[index] if 0 <= index < len(self._rows) else ("", None)


def watch_cell(w: WatchValue, in_graph: Container[int]) -> Text:
    if w.error is not None:
        return Text(shown(w.error), "red")
    if w.tensor is not None:
        return tensor_cell(w.tensor, w.tensor.node in in_graph)
    return Text(shown(w.value or ""))


def _nodes(view: FrameView) -> list[int]:
    nodes = [v.tensor.node for v in view.variables if v.tensor is not None and v.tensor.node]
    return nodes + [w.tensor.node for w in view.watches if w.tensor is not None and w.tensor.node]
