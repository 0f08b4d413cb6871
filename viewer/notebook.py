"""The viewer in a notebook: ``dyngraph.show(trace)`` and the ``%%dyngraph`` cell magic.

With the ``dyngraph[notebook]`` extra installed (anywidget), the page is a widget: its
scripts and style are the widget's module, the trace's parts its ``data`` (JupyterLab,
Notebook 7, VS Code, Colab and marimo all run anywidget's). Without it, the same page is
shown as self-contained HTML (a sandboxed ``<iframe srcdoc>``: its script runs isolated
from the notebook's page, and loads nothing from a network).

>>> import dyngraph
>>> with dyngraph.trace() as t:                  # doctest: +SKIP
...     train_step()
>>> dyngraph.show(t)                             # doctest: +SKIP

In a notebook, after ``import dyngraph`` (or ``%load_ext dyngraph``)::

    %%dyngraph --stats full --iterations 1-20 --graph backward
    for step in range(20):
        ...
"""

from __future__ import annotations

import argparse
import html
import os
import shlex
import sys
from collections.abc import Iterable
from typing import Any

from dyngraph import iterspec
from dyngraph.errors import UserError

from .data import GRAPH_KINDS, ViewerData
from .page import json_block, page_html, script_text, style_text

HEIGHT = 620  # pixels: the viewer's height below a cell

# The widget's module: the page's scripts, and anywidget's render() mounting them.
_RENDER = """
function dgMount(model, el) {
  el.textContent = "";
  const box = document.createElement("div");
  box.style.height = model.get("height") + "px";
  box.setAttribute("data-lm-suppress-shortcuts", "true");
  el.appendChild(box);
  return DG.mount(box, DG.embeddedSource(model.get("data")), {});
}
export default {
  render({ model, el }) {
    dgMount(model, el);
    model.on("change:data", () => dgMount(model, el));
  },
};
"""


def widget_module() -> str:
    """The ES module an anywidget runs: the viewer's scripts and the render function."""
    return script_text() + "\n" + _RENDER


def viewer_data(source: Any, *, graph: str = "forward",
                iterations: str | Iterable[int] | None = None) -> ViewerData:
    """``source``: a ``Trace``, a trace file's path, or ``ViewerData`` as it is.

    ``iterations`` means what ``dyngraph export --iterations`` means (see ``_chosen``); a
    range cut to the trace leaves a note in the result's ``notes``."""
    if isinstance(source, ViewerData):
        return source
    if graph not in GRAPH_KINDS:
        raise UserError(f"unknown graph {graph!r}: choose from {', '.join(GRAPH_KINDS)}")
    parts = _parts(iterations)  # a typo is refused before a file is read
    title = "dyngraph"
    if isinstance(source, (str, os.PathLike)):
        from dyngraph.capture.traces import read_trace

        title = f"dyngraph: {os.path.basename(os.fspath(source))}"
        source = read_trace(source)
    if not hasattr(source, "iterations"):
        raise UserError(f"show() needs a trace or a trace file, not {type(source).__name__}")
    chosen, notes = _chosen(iterations, parts, source)
    data = ViewerData.from_trace(source, graph_kind=graph, iterations=chosen, title=title)
    data.notes = notes
    return data


def _parts(spec: str | Iterable[int] | None) -> tuple[iterspec.Part, ...]:
    """A range spec's parts (none for all, changed or ints); UserError for a typo."""
    if not isinstance(spec, str) or spec in ("all", "changed"):
        return ()
    try:
        return iterspec.parse(spec)
    except UserError as exc:
        raise UserError(f"{exc} (or all, changed)") from None


def _chosen(spec: str | Iterable[int] | None, parts: tuple[iterspec.Part, ...], trace: Any
            ) -> tuple[list[int] | None, list[str]]:
    """The iteration indexes ``spec`` names (None: all) and notes on ranges cut to the
    trace. ``spec``: ``"all"``, ``"changed"`` (the first iteration, the first after setup,
    and each whose structure differs from the one before it: what ``export`` and
    ``summary`` take), a range spec of ``dyngraph.iterspec`` (``1-10,15``, ``5-``,
    ``-10``, ``last``) or ints."""
    if spec is None or spec == "all":
        return None, []
    available = [it.index for it in trace.iterations]
    if spec == "changed":
        out: list[int] = []
        before: tuple[int, str] | None = None  # (index, structure key) of the one before
        for it in trace.iterations:
            key = it.structure_key
            if before is None or before[0] == 0 or key != before[1]:
                out.append(it.index)  # (setup is nobody's baseline)
            before = (it.index, key)
        return out, []
    if isinstance(spec, str):
        return iterspec.resolve(parts, available)
    wanted = sorted({int(i) for i in spec})
    have = set(available)
    missing = [i for i in wanted if i not in have]
    if missing:
        raise UserError(f"no iteration {missing[0]} in this trace (it has "
                        f"{iterspec.describe(available) or 'none'})")
    return wanted, []


class HtmlViewer:
    """The page as self-contained HTML output (no anywidget): a sandboxed iframe."""

    def __init__(self, data: ViewerData, height: int = HEIGHT) -> None:
        self.data = data
        self.height = height

    def page(self) -> str:
        return page_html(self.data.everything(), title=self.data.title or "dyngraph")

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.page(), quote=True)}" '
                f'style="width:100%;height:{int(self.height) + 4}px;border:1px solid #ddd" '
                'sandbox="allow-scripts" title="dyngraph viewer"></iframe>')


def make_widget(data: ViewerData, height: int = HEIGHT) -> Any:
    """An anywidget showing ``data``; ImportError without the notebook extra."""
    import anywidget
    import traitlets

    class ViewerWidget(anywidget.AnyWidget):  # type: ignore[misc]
        _esm = widget_module()
        _css = style_text()
        data = traitlets.Dict().tag(sync=True)
        height = traitlets.Int(HEIGHT).tag(sync=True)

    return ViewerWidget(data=data.everything(), height=height)


def viewer(source: Any, *, graph: str = "forward", iterations: str | Iterable[int] | None = None,
           height: int = HEIGHT, widget: bool | None = None) -> Any:
    """The viewer object for ``source`` (see ``show``): an anywidget when anywidget is
    installed (``widget=None``) or asked for (``True``), else an ``HtmlViewer``."""
    data = viewer_data(source, graph=graph, iterations=iterations)
    if widget is not False:
        try:
            return make_widget(data, height)
        except ImportError:
            if widget:
                raise UserError("the notebook widget needs anywidget: "
                                "pip install 'dyngraph[notebook]'") from None
    return HtmlViewer(data, height)


def show(source: Any, *, graph: str = "forward", iterations: str | Iterable[int] | None = None,
         height: int = HEIGHT, widget: bool | None = None) -> Any:
    """Display the viewer for a trace (or a trace file's path) below the cell.

    Returns None once displayed (so a last line ``dyngraph.show(t)`` shows it once); outside
    IPython, returns the viewer object (``viewer()`` always does).

    ``graph``: "forward" or "backward"; ``iterations``: what ``export --iterations``
    takes ("all", the default; "changed"; "1-10,15", "5-", "-10", "last") or a list of
    indexes (a range past the trace's end is cut to it, with a note on stderr);
    ``widget``: None picks the anywidget when installed, False forces the self-contained
    HTML.
    """
    data = viewer_data(source, graph=graph, iterations=iterations)
    for note in data.notes:
        print(f"dyngraph.show: note: {note}", file=sys.stderr)
    shown = viewer(data, height=height, widget=widget)
    try:
        from IPython.display import display
    except ImportError:  # not in IPython: the caller gets the object to display
        return shown
    display(shown)
    return None


# -- the cell magic ------------------------------------------------------------------------
def _magic_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%dyngraph", add_help=False, exit_on_error=False)
    p.add_argument("--stats", choices=("full", "cheap", "none"), default="full")
    p.add_argument("--iterations", default="all")
    p.add_argument("--graph", choices=GRAPH_KINDS, default="forward")
    p.add_argument("--backend", choices=("auto", "torch", "dyngraph"), default="auto")
    p.add_argument("--height", type=int, default=HEIGHT)
    return p


def dyngraph_magic(line: str, cell: str) -> Any:
    """``%%dyngraph [--stats full|cheap|none] [--iterations SPEC] [--graph forward|backward]
    [--backend auto|torch|dyngraph]``: record the cell's ops and show the viewer below it.
    The recording is kept in ``_dyngraph_trace`` (and the viewer in ``_dyngraph_viewer``)."""
    from IPython import get_ipython

    import dyngraph

    try:
        args = _magic_parser().parse_args(shlex.split(line))
        _parts(args.iterations)  # a typo is refused before the cell runs
    except (argparse.ArgumentError, SystemExit, ValueError, UserError) as exc:
        print(f"%%dyngraph: {exc}")
        return None
    ip = get_ipython()
    with dyngraph.trace(stats=args.stats, backend=args.backend) as t:
        ip.run_cell(cell)  # an error is shown by IPython; what ran before it is still shown
    ip.user_ns["_dyngraph_trace"] = t
    try:
        data = viewer_data(t, graph=args.graph, iterations=args.iterations)
        shown = viewer(data, height=args.height)
    except UserError as exc:
        print(f"%%dyngraph: {exc}")
        return None
    for note in data.notes:
        print(f"%%dyngraph: note: {note}")
    ip.user_ns["_dyngraph_viewer"] = shown
    from IPython.display import display

    display(shown)
    return None


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext dyngraph``: register ``%%dyngraph``."""
    ip.register_magic_function(dyngraph_magic, magic_kind="cell", magic_name="dyngraph")


__all__ = ["HtmlViewer", "dyngraph_magic", "json_block", "load_ipython_extension", "show",
           "viewer", "viewer_data"]
