"""The help screen (``?``): every key of the debugger and what it does."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "dyngraph steps through a define-by-run graph as it is built, like pdb steps through "
    "lines. Live, the script starts paused before its first op; left/right walk back and "
    "forth through what already happened while the script waits at the frontier."
)
NOTES = (
    "b sets a breakpoint on the selected node's op, or on the source line under the cursor "
    "when the source pane has focus; enter on a source line runs to it. Panes: click or tab "
    "to focus; enter in the timeline selects that event's node. The graph pane keeps the "
    "arrows, hjkl and tab for itself (pan, next node; J/K follow edges, . centres, z folds a "
    "module, +/- zoom): esc leaves it for the timeline, where ←/→ step again. Ctrl+P opens "
    "the command palette with every action. A live run keeps the history of its last million "
    "events or so; older iterations stay in the iteration bar but their details are let go.\n\n"
    "Live runs only: the variables pane shows the paused frame's locals (enter on a tensor "
    "selects its node), u/D move up/down the call stack, w adds a watch expression (delete "
    "on its row removes it), ! opens a Python console in the selected frame. Code runs in "
    "the script's process; ctrl+c interrupts it. Names assigned at the console stay in the "
    "console's namespace across pauses but are not written back into the frame (CPython "
    "3.11 cannot reliably write a function's locals): mutate objects instead. A breakpoint() "
    "in the script pauses there with the console open."
)


def help_table(bindings: Iterable[Binding]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for b in bindings:
        table.add_row(b.key_display or b.key, b.description)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="close_help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 84; height: 80%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, bindings: Iterable[Binding]) -> None:
        super().__init__()
        self._keys = list(bindings)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "dyngraph debugger — keys (esc to close)"
            yield Static(Text(INTRO + "\n"))
            yield Static(help_table(self._keys))
            yield Static(Text("\n" + NOTES, "dim"))
