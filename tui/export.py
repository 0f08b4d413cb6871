"""Writing iteration graphs as DOT + SVG from the debugger (``e``, ``--export-dir``).

Work happens on one daemon thread fed by a queue: rendering runs the layout binary, which
may take seconds on a big graph, and must never hold up the UI or quitting. The thread
keeps one ``IterationExporter`` per (directory, graph kind), so iterations of an
unchanging graph reuse the first one's layout, as ``dyngraph export`` does: a run
exporting every iteration pays Graphviz once per distinct structure, not once per step.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dyngraph.capture.graph import Graph

if TYPE_CHECKING:
    from dyngraph.exporters import IterationExporter

Done = Callable[[int, list[Path], BaseException | None], None]


def _suffix(graph_kind: str) -> str:
    return "-backward" if graph_kind == "backward" else ""


def export_graph(graph: Graph, directory: Path | str, *, graph_kind: str = "forward",
                 svg: bool = True) -> list[Path]:
    """Write ``iter-NNNN.dot`` (and ``.svg``) for ``graph`` into ``directory``, once.

    To export many iterations, keep an ``Exporter`` (or ``IterationExporter``): this lays
    the graph out afresh on every call.

    >>> export_graph(graph, "dyngraph-export")      # doctest: +SKIP
    [PosixPath('dyngraph-export/iter-0003.dot'), PosixPath('dyngraph-export/iter-0003.svg')]
    """
    from dyngraph.exporters import IterationExporter

    formats = ("dot", "svg") if svg else ("dot",)
    return IterationExporter(directory, formats=formats, graph_kind=graph_kind,
                             suffix=_suffix(graph_kind)).write(graph)


class Exporter:
    """A queue of graphs to export on one daemon thread; ``done`` is called on that thread.

    ``done(iteration, paths, error)`` follows each export, except of a graph without nodes
    (the ops-less tail of a run): nothing is written, and there is nothing to announce.
    ``dot``: the layout binary (None: ``$DYNGRAPH_DOT`` or graphviz-pure).
    """

    def __init__(self, done: Done, *, dot: str | None = None) -> None:
        self._queue: queue.SimpleQueue[tuple[Graph, Path, str] | None] = queue.SimpleQueue()
        self._done = done
        self._dot = dot
        self._thread: threading.Thread | None = None
        # Used on the export thread only. Few: the debugger writes one or two directories.
        self._exporters: dict[tuple[Path, str], IterationExporter] = {}

    def submit(self, graph: Graph, directory: Path | str, graph_kind: str = "forward") -> None:
        self._queue.put((graph, Path(directory), graph_kind))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="dyngraph-export",
                                            daemon=True)
            self._thread.start()

    def _exporter(self, directory: Path, kind: str) -> IterationExporter:
        from dyngraph.exporters import IterationExporter

        found = self._exporters.get((directory, kind))
        if found is None:  # a missing binary raises here, and is asked again next time
            found = IterationExporter(directory, graph_kind=kind, dot=self._dot,
                                      suffix=_suffix(kind))
            self._exporters[(directory, kind)] = found
        return found

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            graph, directory, kind = item
            try:
                paths = self._exporter(directory, kind).write(graph)
            except BaseException as exc:  # reported in the UI, the thread keeps serving
                self._done(graph.iteration, [], exc)
            else:
                if paths or graph.nodes:
                    self._done(graph.iteration, paths, None)

    def stop(self) -> None:
        self._queue.put(None)
