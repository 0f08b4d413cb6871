"""The breakpoints dialog (``B``): list, add and remove breakpoints of every kind.

The dialog edits the source's breakpoints directly (a live source forwards them to the
child) and dismisses with True when anything changed, so the app redraws.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select
from textual.widgets.option_list import Option

from dyngraph.textsafe import literal, shown

from .breakpoints import KIND_HELP, KINDS, from_dialog


class BreakpointsDialog(ModalScreen[bool]):
    BINDINGS = [
        Binding("escape", "close", "Close", id="close_breakpoints"),
        Binding("delete,backspace,r", "remove", "Remove selected", id="remove_breakpoint"),
    ]
    DEFAULT_CSS = """
    BreakpointsDialog { align: center middle; }
    BreakpointsDialog > Vertical {
        width: 78; height: auto; max-height: 90%; border: thick $accent;
        background: $surface; padding: 0 1;
    }
    BreakpointsDialog OptionList { height: auto; max-height: 12; min-height: 3; }
    BreakpointsDialog Horizontal { height: auto; margin-top: 1; }
    BreakpointsDialog Select { width: 18; }
    BreakpointsDialog Input { width: 1fr; }
    BreakpointsDialog #bp-error { color: $error; height: auto; width: 1fr; }
    BreakpointsDialog #bp-help { color: $text-muted; height: auto; width: 1fr; }
    """

    def __init__(self, source: Any, file: str = "") -> None:
        super().__init__()
        self.source = source
        self.file = file  # the source pane's file: a bare line number means a line in it
        self.changed = False

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "breakpoints"
            box.border_subtitle = "enter: add · del/r: remove · esc: close"
            yield OptionList(id="bp-list")
            with Horizontal():
                yield Select([(k, k) for k in KINDS], value="op", allow_blank=False,
                             id="bp-kind")
                yield Input(placeholder=KIND_HELP["op"], id="bp-value")
                yield Button("Add", id="bp-add", variant="primary")
            yield Label(KIND_HELP["op"], id="bp-help")
            yield Label("", id="bp-error")

    def on_mount(self) -> None:
        self._refresh_list()
        self.query_one("#bp-value", Input).focus()

    def _refresh_list(self) -> None:
        options = self.query_one("#bp-list", OptionList)
        options.clear_options()
        items = sorted(self.source.breakpoints.items())
        if not items:
            options.add_option(Option("no breakpoints yet", id="none", disabled=True))
        warnings = getattr(self.source, "bp_warnings", {})
        for bp_id, spec in items:
            options.add_option(Option(_describe(bp_id, spec, warnings.get(spec, "")),
                                      id=str(bp_id)))
        if items and options.highlighted is None:
            options.highlighted = 0  # r/del act on a row from the start

    @on(Select.Changed, "#bp-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        kind = str(event.value)
        self.query_one("#bp-value", Input).placeholder = KIND_HELP[kind]
        self.query_one("#bp-help", Label).update(Text(KIND_HELP[kind]))

    @on(Button.Pressed, "#bp-add")
    @on(Input.Submitted, "#bp-value")
    def add(self) -> None:
        kind = str(self.query_one("#bp-kind", Select).value)
        field = self.query_one("#bp-value", Input)
        error = self.query_one("#bp-error", Label)
        try:
            spec = from_dialog(kind, field.value, self.file)
        except ValueError as exc:
            error.update(literal(exc))
            return
        if spec in self.source.breakpoints.values():
            error.update(literal(f"already set: {spec}"))
            return
        try:
            self.source.add_breakpoint(spec)
        except Exception as exc:  # the child may refuse it; say why and stay open
            error.update(literal(f"could not add: {exc}"))
            return
        field.value = ""
        self.changed = True
        self._refresh_list()
        why = getattr(self.source, "bp_warnings", {}).get(spec)
        error.update(literal(f"{spec} cannot hit as things stand: {why}") if why else "")
        self.query_one("#bp-help", Label).update(literal(f"added {spec}"))

    def action_remove(self) -> None:
        options = self.query_one("#bp-list", OptionList)
        if isinstance(self.focused, Input) or options.highlighted is None:
            return
        option = options.get_option_at_index(options.highlighted)
        if option.id in (None, "none"):
            return
        self.source.remove_breakpoint(int(option.id))
        self.changed = True
        self._refresh_list()

    def action_close(self) -> None:
        self.dismiss(self.changed)


def _describe(bp_id: int, bp: Any, why: str = "") -> Text:
    """A list row: the breakpoint in the text form the parser reads, what it does, and
    why it cannot hit as things stand (if it cannot)."""
    text = Text.assemble((f"#{bp_id:<3} ", "dim"), (shown(bp), "bold"))
    what = _MEANING.get(bp.kind, "")
    if what:
        text.append(f"  {what}", "dim")
    if why:
        text.append(f"  ⚠ {shown(why)}", "yellow")
    return text


_MEANING = {
    "op": "each time the op runs",
    "module": "on entering the module",
    "line": "after the line's first op",
    "iteration": "at the iteration's first op",
    "nan": "first NaN/Inf in any value or gradient",
    "grad_norm": "a gradient norm above the threshold (the loss's seed not counted)",
}
