"""Find a node (``/``): type part of an op, name or module; enter picks the highlighted one."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from dyngraph.capture.graph import Graph, GraphNode
from dyngraph.textsafe import literal

MAX_SHOWN = 200


def node_line(node: GraphNode) -> Text:
    """One result row; a Text, so names are never read as markup."""
    module = f"  [{node.module}]" if node.module else ""
    return literal(f"{node.label:<14} {tuple(node.shape)!s:<14} t{node.id}{module}")


def search(graph: Graph, query: str, limit: int = MAX_SHOWN) -> list[GraphNode]:
    """Nodes whose op, name, module or id contain ``query`` (case-insensitive), in order."""
    q = query.strip().lower()
    out = []
    for node in graph.nodes.values():
        hay = f"{node.op} {node.name} {node.module} t{node.id} {node.grad_fn}".lower()
        if not q or q in hay:
            out.append(node)
            if len(out) >= limit:
                break
    return out


class FindScreen(ModalScreen[int | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="cancel_find"),
        Binding("down", "down", "Next match", show=False),
        Binding("up", "up", "Previous match", show=False),
    ]
    DEFAULT_CSS = """
    FindScreen { align: center top; }
    FindScreen > Vertical {
        width: 72; height: auto; max-height: 70%; margin-top: 3; border: thick $accent;
        background: $surface;
    }
    FindScreen OptionList { height: auto; max-height: 20; }
    FindScreen #find-note { color: $text-muted; height: auto; padding: 0 1; }
    FindScreen #find-note.-none { color: $warning; }
    """

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "find a node"
            yield Input(placeholder="op, parameter name, module, t<id>", id="find-query")
            yield OptionList(id="find-results")
            yield Label("", id="find-note")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def _fill(self, query: str) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        matches = search(self.graph, query)
        options.add_options([Option(node_line(n), id=str(n.id)) for n in matches])
        options.display = bool(matches)
        note = self.query_one("#find-note", Label)
        note.set_class(not matches, "-none")
        total = len(self.graph.nodes)
        if not matches:
            note.update(Text(f"no node matches {query.strip()!r} (searched op, name, module "
                             f"and t<id> of {total} nodes)"))
        elif len(matches) >= MAX_SHOWN:
            note.update(Text(f"the first {MAX_SHOWN} matches: type more to narrow them"))
        else:
            note.update(Text(f"{len(matches)} of {total} nodes · enter picks, esc cancels"))
        if matches:
            options.highlighted = 0

    @on(Input.Submitted)
    def _submitted(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is None:
            self.dismiss(None)
            return
        option = options.get_option_at_index(options.highlighted)
        self.dismiss(int(option.id) if option.id else None)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id) if event.option.id else None)

    def action_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def action_cancel(self) -> None:
        self.dismiss(None)
