"""The inspector: everything known about the selected node, and its full values on request.

Shows op, module path, ``file:line``, shape and dtype, the value summary
(min/max/mean/std/norm, NaN/Inf counts), a preview of the first values (elided), the
gradient summary once backward reached the node, and a sparkline of the node's gradient
norm across iterations (nodes matched by ``GraphNode.key``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from dyngraph.capture import events as ev
from dyngraph.capture.graph import GraphNode
from dyngraph.textsafe import literal, shown

from .numbers import fmt, norm_of, plural

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], width: int = 40) -> Text:
    """Bars for the last ``width`` values on a log scale (gradient norms span decades);
    a missing value is a gap, a non-finite one a red ``!``."""
    values = list(values)[-width:]
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    text = Text()
    if not finite:
        return text.append("·" * len(values), "dim")
    lo, hi = math.log10(min(finite)), math.log10(max(finite))
    if hi - lo < 1e-9:  # all the same: a flat line in the middle, not the floor
        lo, hi = lo - 1.0, hi + 1.0
    span = hi - lo
    for v in values:
        if v is None:
            text.append(" ")
        elif not math.isfinite(v):
            text.append("!", "bold red")
        elif v <= 0:
            text.append(BARS[0], "cyan")
        else:
            level = round((math.log10(v) - lo) / span * (len(BARS) - 1))
            text.append(BARS[level], "cyan")
    return text


def summary_text(s: ev.Summary) -> Text:
    """min, max, mean, std (of the finite values), the norm (nan/inf when any value is),
    and the NaN and Inf counts."""
    text = Text()
    for name, value in (("min", s.min), ("max", s.max), ("mean", s.mean), ("std", s.std)):
        text.append(f"{name} ", "dim").append(f"{fmt(value)}  ")
    norm = norm_of(s)
    text.append("norm ", "dim").append(f"{fmt(norm)}  ",
                                       "" if norm is None or math.isfinite(norm) else "bold red")
    style = "bold red" if not s.finite else "green"
    text.append(f"NaN {s.nan}  Inf {s.inf}", style)
    if not s.finite and (s.min is not None or s.norm is not None):
        text.append("  (other stats: finite values)", "dim")
    if s.sampled:
        text.append("  (sampled)", "dim")
    return text


def preview_text(s: ev.Summary, limit: int = 8) -> Text:
    """The first values, with an ellipsis when there are more than shown."""
    if not s.preview:
        return Text("no preview (stats off or cheap)", "dim")
    shown = [fmt(v) for v in s.preview[:limit]]
    more = s.numel > len(shown)
    return Text("[" + ", ".join(shown) + (", …" if more else "") + "]"
                + (f"  of {s.numel:,}" if more else ""))


# Cells a row's value loses to the label column ("preview" and its padding) and to the
# pane's scrollbar, when it shows one.
LABEL_ROOM = 11


def grad_missing(node: GraphNode, backward_done: bool, stats: str = "") -> str:
    """Why ``node`` shows no gradient (``stats``: the recording's statistics mode)."""
    if not node.requires_grad:
        return "no gradient (does not require grad)"
    if node.backward_seq:  # its backward node ran
        if stats == "none":
            return "not recorded (the trace was recorded with --stats none)"
        return "no gradient (its backward node ran without one: not used by the loss)"
    if backward_done:
        return "no gradient (backward did not reach it: not used by the loss)"
    return "not yet (backward has not reached it)"


def node_view(node: GraphNode | None, history: Sequence[float | None] = (),
              inputs: Sequence[str] = (), *, backward_done: bool = False,
              width: int = 60, stats: str = "") -> Group | Text:
    """The inspector's renderable for ``node``; ``width`` is the room it has."""
    if node is None:
        return Text("no node selected\n\nstep with n, or pick a node in the graph or timeline",
                    "dim")
    title = literal(node.label, "bold")
    if node.kind != node.label:
        title.append(f"  {shown(node.kind)}", "dim")
    if node.grad_fn:
        title.append(f"  {shown(node.grad_fn)}", "magenta")
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    # Every cell is a Text: a table reads str cells as markup, and these are user names.
    if node.kind == "op":
        table.add_row("module", literal(node.module or "(top level)"))
        where = f"{os.path.basename(node.file)}:{node.line}" if node.file else "?"
        table.add_row("at", literal(f"{where} in {node.function}" if node.function else where))
    elif node.name:
        table.add_row("name", literal(node.name))
    numel = 1
    for d in node.shape:
        numel *= d
    shape = f"{tuple(node.shape)}  {shown(node.dtype)}"
    count = plural(numel, "element")
    if len(shape) + len(count) + 2 <= width - LABEL_ROOM:
        table.add_row("shape", Text(f"{shape}  {count}"))
    else:  # a narrow pane: the count on its own row rather than wrapped mid-phrase
        table.add_row("shape", Text(shape))
        table.add_row("", Text(count))
    if node.attrs:
        table.add_row("attrs", literal(
            ", ".join(f"{k}={v!r}" for k, v in node.attrs.items())[:200]))
    if inputs:
        table.add_row("inputs", literal(", ".join(inputs)))
    s = node.summary
    if s is not None and node.kind not in ("backward", "accumulate"):
        table.add_row("value", summary_text(s))
        table.add_row("preview", preview_text(s))
    elif node.kind not in ("backward", "accumulate"):
        table.add_row("value", Text("no statistics recorded", "dim"))
    if node.grads:  # a backward node with several outputs: the gradient of each
        for k, g in enumerate(node.grads):
            label = f"grad[{k}]"
            if g is not None:
                table.add_row(label, summary_text(g))
            elif stats == "none":
                table.add_row(label, Text("not recorded (--stats none)", "dim"))
            else:
                table.add_row(label, Text("none (that output was not used by the loss)",
                                          "dim"))
    elif node.grad is not None:
        table.add_row("grad", summary_text(node.grad))
        table.add_row("", preview_text(node.grad))
    else:
        table.add_row("grad", Text(grad_missing(node, backward_done, stats), "dim"))
    if any(v is not None for v in history):
        last = next((v for v in reversed(history) if v is not None), None)
        # The bars get what the label column leaves beside "last x".
        tail = f"  last {fmt(last)}"
        line = sparkline(history, max(8, min(40, width - LABEL_ROOM - len(tail))))
        line.append(tail, "dim")
        table.add_row("‖grad‖", line)
        table.add_row("", Text(f"over {plural(len(history), 'iteration')}", "dim"))
    table.add_row("", Text("v: full values · G: full gradient", "dim"))
    return Group(title, table)


def unit_view(info: dict[str, object], width: int = 60) -> Group:
    """The inspector's renderable for a folded box (``GraphCanvas.unit_info``): what it
    stands for, its largest gradient norm and, for a run, each member's along a
    sparkline (``h.0`` on the left)."""
    title = literal(str(info["label"]), "bold")
    title.append(f"  folded {info['kind']}", "dim")
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    table.add_row("holds", Text(f"{plural(int(info['nodes']), 'node')}, "  # type: ignore[call-overload]
                                f"{plural(int(info['ops']), 'op')}"))  # type: ignore[call-overload]
    norm = info.get("norm")
    table.add_row("grad", Text(f"largest norm {fmt(norm)}" if norm is not None else  # type: ignore[arg-type]
                               "no gradient (yet)", "" if norm is not None else "dim"))
    if info.get("nonfinite"):
        table.add_row("", Text(f"{info['nonfinite']} nodes with NaN/Inf", "bold red"))
    members = info.get("members")
    if isinstance(members, list) and members:
        line = sparkline(members, max(8, min(60, width - LABEL_ROOM)))
        table.add_row("members", Text(plural(len(members), "call")))
        table.add_row("‖grad‖", line)
        table.add_row("", Text(f"{info['first']} … {info['last']}, largest norm each",
                               "dim"))
    table.add_row("", Text("enter: open it in place · z: fold its frame", "dim"))
    return Group(title, table)


class Inspector(VerticalScroll):
    """The selected node's details; ``show`` replaces them."""

    DEFAULT_CSS = """
    Inspector { height: 1fr; }
    Inspector > Static { width: 1fr; height: 12; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.node: GraphNode | None = None
        self._shown: tuple | None = None
        self._height = 12
        self._body = Static(node_view(None))

    def compose(self) -> ComposeResult:
        yield self._body

    def show(self, node: GraphNode | None, history: Sequence[float | None] = (),
             inputs: Sequence[str] = (), *, backward_done: bool = False,
             stats: str = "") -> None:
        width = self.content_region.width - 1
        key = None if node is None else (node.id, node.seq, node.backward_seq, node.kind,
                                         node.summary, node.grad, node.grads, tuple(history),
                                         tuple(inputs), backward_done, width, stats)
        if key is not None and key == self._shown:
            return  # the same node in the same state: nothing to redraw
        self._shown = key
        self.node = node
        # The body's height only ever grows, so new contents rarely need a layout pass (one
        # costs a reflow of the whole screen: 100 ms+ while a live run streams).
        view = node_view(node, history, inputs, backward_done=backward_done,
                         width=width if width >= 20 else 60, stats=stats)
        console = self.app.console
        lines = 0
        if width >= 20:  # before the first layout the width is unknown: measure later
            options = console.options.update_width(width)
            lines = len(console.render_lines(view, options, pad=False))
        if lines > self._height:
            self._height = lines
            self._body.styles.height = lines
        self._body.update(view, layout=False)
        self.border_title = f"inspector · t{node.id}" if node is not None else "inspector"

    def show_unit(self, info: dict[str, object]) -> None:
        """Show a folded box (a module call, a run of calls, a group of index ops)."""
        key = ("unit", tuple(sorted((k, repr(v)) for k, v in info.items())))
        if key == self._shown:
            return
        self._shown = key  # type: ignore[assignment]
        self.node = None
        width = self.content_region.width - 1
        self._body.update(unit_view(info, width if width >= 20 else 60), layout=False)
        self.border_title = "inspector · module"

    def show_compile(self, event: ev.CompileEvent, joined: str = "") -> None:
        """A compile event instead of a node (``compile_view``)."""
        from .compile_view import compile_view

        width = self.content_region.width - 1
        key = ("compile", event.seq, joined, width)
        if key == self._shown:
            return
        self._shown = key
        self.node = None
        view = compile_view(event, joined, width if width >= 20 else 60)
        if width >= 20:
            lines = len(self.app.console.render_lines(
                view, self.app.console.options.update_width(width), pad=False))
            if lines > self._height:
                self._height = lines
                self._body.styles.height = lines
        self._body.update(view, layout=False)
        self.border_title = f"inspector · compile {event.what}"


def values_text(array: np.ndarray | None, title: str, width: int = 160,
                why_none: str = "") -> Text:
    """Every value of ``array`` (numpy's layout, elided past 20,000), ``width`` cells wide."""
    title = shown(title)
    if array is None:
        return Text(f"{title}\n\n{shown(why_none or NO_VALUES, multiline=True)}", "dim")
    array = np.asarray(array)
    body = np.array2string(array, threshold=20_000, edgeitems=50,
                           max_line_width=max(width, 20), precision=5)
    head = f"{title}  shape {tuple(array.shape)} {array.dtype}  {plural(array.size, 'element')}"
    return Text.assemble((head + "\n\n", "bold"), body)


NO_VALUES = ("no values available: the script is not paused, the tensor is gone, or the "
             "trace was recorded without --values small")


class ValuesScreen(ModalScreen[None]):
    """Full values of one tensor, fetched from the paused child or the trace."""

    BINDINGS = [Binding("escape,q,v", "dismiss", "Close", id="close_values")]
    DEFAULT_CSS = """
    ValuesScreen { align: center middle; }
    ValuesScreen > VerticalScroll {
        width: 90%; height: 80%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, text: Text) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "values (esc to close)"
            yield Static(self._text)
