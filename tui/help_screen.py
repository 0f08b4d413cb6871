"""The help screen (``?``): how the debugger works, then every key and what it does."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .keys import GROUPS, KEYS

INTRO = (
    "dyngraph steps through a define-by-run graph as it is built, as pdb steps through "
    "lines. Live, the script starts paused before its first line, its source on screen: "
    "move the cursor there and press b to set a line breakpoint, then c to run to it. Every "
    "op the script runs adds a node to the graph; the timeline lists them, the inspector "
    "shows the selected one."
)
NOTES: tuple[tuple[str, str], ...] = (
    ("Where it stops",
     "n pauses after one op has run: its output is in the inspector and its line is "
     "marked. A line breakpoint stops after the first op that line runs (a line without "
     "ops, such as an import or a print, never stops); an op breakpoint after each op of "
     "that name; a module breakpoint on entering the module; nan at the op that first "
     "makes a NaN or Inf. Breakpoints take the same text everywhere: op:matmul, "
     "module:encoder.*, train.py:42, iter:3, nan, grad>100, and op, module or line ones a "
     "condition: op:exp if max > 1e3. On the command line: dyngraph debug --break "
     "module:encoder --break train.py:42 train.py."),
    ("History",
     "← and → walk through what already ran while the script waits where it is (the status "
     "line says how far behind you are); n, c and the other run keys first catch up, then "
     "run the script on. [ and ] show whole iterations; : (or a click on the iteration bar) "
     "goes to any iteration, live even to one that has not run yet. A ◆ in the iteration "
     "bar marks an iteration whose graph changed structure (ops, wiring, shapes, not values "
     "or slice offsets); d lists what changed."),
    ("Panes",
     "Tab and shift+tab go round the panes (the focused one has its title inverted), s "
     "jumps to the source; m maximizes the focused pane (m or esc restores it). In the "
     "graph pane the arrows and hjkl pan, < and > go to the previous and next node, J/K "
     "follow edges, . centres, +/- zoom; a big model opens folded by module: enter opens "
     "the folded box under the selection in place, z folds the module around it again, W "
     "shows the whole module-level picture with names. Enter on a timeline row selects "
     "its node; enter on a source line runs to it."),
    ("More",
     "Ctrl+P opens the command palette with every action, and Screenshot (saved to the "
     "working directory). R restarts the script with the same breakpoints. A live run keeps "
     "the history of its last million events or so; older iterations stay in the iteration "
     "bar, their details let go."),
    ("Python at the pause (live runs)",
     "The variables pane shows the paused frame's locals (enter on a tensor selects its "
     "node); u/D move up/down the call stack; w adds a watch expression (delete on its row "
     "removes it); ! opens a Python console in the selected frame. Code runs in the "
     "script's process; ctrl+c interrupts it. Names assigned at the console stay in the "
     "console's namespace across pauses but are not written back into the frame (CPython "
     "3.11 cannot reliably write a function's locals): mutate objects instead. A "
     "breakpoint() in the script pauses there with the console open."),
)


def help_body() -> Group:
    """The whole help text (pure: tests and snapshots read it)."""
    parts: list[Text | Table] = [Text(INTRO + "\n")]
    for group, title in GROUPS.items():
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True, min_width=5)
        table.add_column()
        for key in (k for k in KEYS if k.group == group):
            # Text cells: a str cell is markup, and the keys include "[" and "]".
            table.add_row(Text(key.display or key.key), Text(key.help))
        parts += [Text(title, "bold underline"), table, Text("")]
    for title, text in NOTES:
        parts += [Text(title, "bold underline"), Text(text + "\n")]
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="close_help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96; max-width: 100%; height: 90%; border: thick $accent; background: $surface;
        padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "dyngraph debugger — help (esc to close, ↑↓ to scroll)"
            yield Static(help_body())

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
