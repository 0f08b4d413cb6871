"""The debugger's keys: one table for the bindings, the footer, the help screen and the
command palette, so a key's name, what it does and where it shows are written once.

Each key has an ``id`` (users can remap it), a short footer label and a sentence that
teaches what it does. The footer shows the keys a session needs all the time, in the order
a pdb user reaches for them (a narrow terminal cuts the footer's tail: the rarest keys go
last); every key is in the help screen (``?``) and the command palette (ctrl+p).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True, slots=True)
class Key:
    key: str
    action: str
    label: str
    id: str
    help: str
    display: str = ""
    footer: bool = True
    group: str = "run"


KEYS: tuple[Key, ...] = (
    # -- running the script --------------------------------------------------------------
    Key("n", "step_op", "Next op", "next_op",
        "run the next op (or backward step), then pause: its node is highlighted, its line "
        "marked"),
    Key("i", "next_iteration", "Next iter", "next_iteration",
        "run to the first op of the next iteration"),
    Key("c", "continue", "Continue", "continue",
        "run until a breakpoint hits, a NaN appears (with x on) or the script ends"),
    Key("f", "finish_forward", "Finish fwd", "finish_forward",
        "run to the end of this forward pass: pause as backward starts", footer=False),
    Key("F", "finish_backward", "Finish bwd", "finish_backward",
        "run to the end of this backward pass: every gradient of the iteration is in",
        footer=False),
    Key("R", "restart", "Restart", "restart",
        "run the script again from the start, with the same breakpoints (a replay goes back "
        "to its first op)"),
    # -- breakpoints ---------------------------------------------------------------------
    Key("b", "toggle_breakpoint", "Break", "breakpoint",
        "set or clear a breakpoint: on the source line under the cursor when the source pane "
        "has focus, else on the selected node's op", group="breakpoints"),
    Key("B", "breakpoints", "Breakpoints", "breakpoints_dialog",
        "list, add and remove breakpoints of every kind (op, module, line, iteration, nan, "
        "gradient norm), typed as on the command line: module:encoder, train.py:42, grad>100",
        group="breakpoints"),
    Key("x", "toggle_nan", "NaN break", "break_on_nan",
        "stop at the first op or backward step that produces a NaN or Inf",
        group="breakpoints"),
    # -- moving through history ----------------------------------------------------------
    Key("left", "step_back", "Back", "step_back",
        "one step back through what already ran (the script stays where it is)",
        display="←", group="history"),
    Key("right", "step_forward", "Fwd", "step_forward",
        "one step forward through history; at the script's position, run the next op",
        display="→", group="history"),
    Key("left_square_bracket", "prev_iteration", "Prev iter", "prev_iteration",
        "show the previous iteration's whole graph", display="[", footer=False,
        group="history"),
    Key("right_square_bracket", "next_iteration_history", "Next iter (history)",
        "next_iteration_history", "show the next recorded iteration's whole graph",
        display="]", footer=False, group="history"),
    Key("colon", "goto_iteration", "Go to iter", "goto_iteration",
        "jump to an iteration by number: its whole graph, as far as it ran", display=":",
        group="history"),
    # -- looking -------------------------------------------------------------------------
    Key("d", "diff", "Diff", "iteration_diff",
        "what this iteration added, removed, reshaped or rewired against the previous one",
        group="look"),
    Key("v", "values", "Values", "full_values",
        "every value of the selected tensor (while paused, or recorded with --values small)",
        group="look"),
    Key("G", "grad_values", "Grad values", "full_gradient",
        "every value of the selected tensor's gradient (live, while paused)", footer=False,
        group="look"),
    Key("g", "toggle_graph", "Fwd/Bwd graph", "graph_mode",
        "switch the graph pane between the forward graph and the backward (gradient) graph",
        footer=False, group="look"),
    Key("z", "collapse", "Collapse", "collapse_module",
        "fold the module around the selected node into one box, or open a folded box (enter "
        "on a folded box opens it in place too); on a member of an opened run, fold the run",
        footer=False, group="look"),
    Key("W", "overview", "Whole graph", "graph_overview",
        "the fit view: the whole picture (a big model's module level) shrunk to the graph "
        "pane, each box named where a name fits, the selection marked ▸ (W again: back; a "
        "click jumps there)", footer=False, group="look"),
    Key("full_stop", "centre_graph", "Centre", "graph_centre",
        "centre the graph pane on the selected node (or the current op)", display=".",
        footer=False, group="look"),
    Key("slash", "find", "Find", "find_node",
        "find a node by op, parameter name, module or t<id>", display="/", footer=False,
        group="look"),
    Key("s", "focus_source", "Source", "focus_source",
        "to the source pane (pudb's s); tab and shift+tab go round every pane", footer=False,
        group="look"),
    Key("m", "maximize", "Maximize", "maximize_pane",
        "fill the screen with the focused pane; m or esc again restores the layout",
        footer=False, group="look"),
    Key("V", "toggle_variables", "Variables", "toggle_variables",
        "a short terminal has no room for the variables pane beside the inspector: V shows "
        "it in the inspector's place, V again goes back (in the footer only then)",
        group="python"),
    Key("o", "toggle_output", "Output", "toggle_output",
        "show or hide what the script printed (stdout and stderr)", footer=False,
        group="look"),
    Key("e", "export", "Export", "export_iteration",
        "write this iteration's graph as DOT and SVG to dyngraph-out/ beside the script or "
        "trace", footer=False, group="look"),
    Key("S", "screenshot", "Screenshot", "screenshot",
        "save the screen as an SVG in dyngraph-out/ beside the script or trace",
        footer=False, group="look"),
    # -- Python at the pause (live runs) -------------------------------------------------
    Key("exclamation_mark", "console", "Console", "console",
        "a Python prompt in the paused frame (live runs; ctrl+c interrupts what it runs)",
        display="!", group="python"),
    Key("w", "add_watch", "Watch", "add_watch",
        "add a watch expression, evaluated in the selected frame at every pause (live runs)",
        footer=False, group="python"),
    Key("u", "frame_up", "Up frame", "frame_up",
        "select the caller's frame in the variables pane (up the stack)", footer=False,
        group="python"),
    Key("D", "frame_down", "Down frame", "frame_down",
        "select the callee's frame in the variables pane (down the stack)", footer=False,
        group="python"),
    Key("ctrl+c", "interrupt_evaluation", "Break in", "interrupt_evaluation",
        "as in pdb: pause a running script at its next op (or stop a watch or console "
        "evaluation); ctrl+c twice within a second quits", display="^c", footer=False,
        group="run"),
    # -- the session ---------------------------------------------------------------------
    Key("question_mark", "help", "Help", "help", "this screen", display="?", group="session"),
    Key("q", "quit", "Quit", "quit", "end the script and leave", group="session"),
)

GROUPS = {
    "run": "Run the script",
    "breakpoints": "Breakpoints",
    "history": "Move through what already ran",
    "look": "Look closer",
    "python": "Python at the pause",
    "session": "Session",
}


# The footer's first keys: an 80-column terminal cuts its tail, and help and quit must
# never be what is cut.
FOOTER_FIRST = ("next_op", "next_iteration", "continue", "breakpoint", "toggle_variables",
                "help", "quit")


def bindings() -> list[Binding]:
    """The app's bindings, footer keys first (the footer shows them in this order)."""
    first = [k for i in FOOTER_FIRST for k in KEYS if k.id == i]
    ordered = first + [k for k in KEYS if k.footer and k not in first] + [
        k for k in KEYS if not k.footer and k not in first]
    out = [Binding(k.key, k.action, k.label, id=k.id, show=k.footer,
                   key_display=k.display or None) for k in ordered]
    # The graph pane keeps the arrows for itself (pan): esc leaves it, as tab does.
    out.append(Binding("escape", "focus_timeline", "To timeline", id="focus_timeline",
                       show=False))
    return out


HELP_BY_ID = {k.id: k.help for k in KEYS}
HELP_BY_ID["focus_timeline"] = "leave the graph pane (or a maximized pane) for the timeline"
