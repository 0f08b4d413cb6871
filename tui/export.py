"""Writing iteration graphs as DOT + SVG from the debugger (``e``, ``--export-dir``).

Work happens on one daemon thread fed by a queue: rendering runs the layout binary, which
may take seconds on a big graph, and must never hold up the UI or quitting.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

from dyngraph.graph import Graph

Done = Callable[[int, list[Path], BaseException | None], None]


def export_graph(graph: Graph, directory: Path | str, *, graph_kind: str = "forward",
                 svg: bool = True) -> list[Path]:
    """Write ``iter-NNNN.dot`` (and ``.svg``) for ``graph`` into ``directory``.

    >>> export_graph(graph, "dyngraph-export")      # doctest: +SKIP
    [PosixPath('dyngraph-export/iter-0003.dot'), PosixPath('dyngraph-export/iter-0003.svg')]
    """
    from dyngraph.exporters import render, to_dot

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"iter-{graph.iteration:04d}" + ("-backward" if graph_kind == "backward" else "")
    dot_text = to_dot(graph, graph_kind=graph_kind)
    dot_path = out / f"{stem}.dot"
    dot_path.write_text(dot_text, encoding="utf-8")
    written = [dot_path]
    if svg:
        svg_path = out / f"{stem}.svg"
        svg_path.write_bytes(render(dot_text, fmt="svg"))
        written.append(svg_path)
    return written


class Exporter:
    """A queue of graphs to export on one daemon thread; ``done`` is called on that thread."""

    def __init__(self, done: Done) -> None:
        self._queue: queue.SimpleQueue[tuple[Graph, Path, str] | None] = queue.SimpleQueue()
        self._done = done
        self._thread: threading.Thread | None = None

    def submit(self, graph: Graph, directory: Path | str, graph_kind: str = "forward") -> None:
        self._queue.put((graph, Path(directory), graph_kind))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="dyngraph-export",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            graph, directory, kind = item
            try:
                paths = export_graph(graph, directory, graph_kind=kind)
            except BaseException as exc:  # reported in the UI, the thread keeps serving
                self._done(graph.iteration, [], exc)
            else:
                self._done(graph.iteration, paths, None)

    def stop(self) -> None:
        self._queue.put(None)
