"""Per-iteration export: ``iter-0001.dot``, ``iter-0001.svg``, ... and ``index.html``.

Graphviz runs once per distinct layout: iterations whose drawing has the same
``DotDoc.layout_key()`` (same structure, labels and clusters) share one ``SvgTemplate``
and only their colours, tooltips and ids are written afresh. Big graphs are collapsed
(modules deeper than some depth become one node each) until they fit ``max_nodes``; a
graph too deep for Graphviz, or whose Graphviz layout fails or runs past ``budget``
seconds, is drawn by dyngraph's own layered layout (``pipeline.svg_template``), and the
picture says so.

Every file is written whole to a temporary name first, and all of them are renamed into
place together once every one is written; if the export fails (Graphviz missing or failing,
the disk), the temporary files are removed and the folder keeps what it held before (an
earlier export's ``index.html`` and every page it links). Files there that dyngraph did
not write are never overwritten.

``IterationExporter`` writes one iteration per call with the same caches (a debugger
exporting each iteration as it completes); both draw through one ``Drawer``.

>>> export_iterations(trace, "out", iterations="changed")   # doctest: +SKIP
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from dyngraph import iterspec
from dyngraph.capture import collector
from dyngraph.capture.graph import Graph, diff_graphs
from dyngraph.errors import UserError

from . import modular
from .colors import GradScale
from .dot import GRAPH_KINDS, _as_kind, build_dot
from .fast import FastPath
from .pipeline import EXPORT_BUDGET, svg_template
from .render import find_dot
from .svg import SvgTemplate
from .view import ViewCache, _ancestor, _depth, owners, seq_order, signature

FORMATS = ("dot", "svg")
DEFAULT_MAX_NODES = 2000
# Layouts (and fast paths) kept for reuse; older ones are laid out again if they return.
KEEP_LAYOUTS = 32
# Structures whose fitting collapse depth is remembered (a few bytes each).
KEEP_DEPTHS = 1024


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# What open() would have given the file: 0666 less the user's umask.
_FILE_MODE = 0o666 & ~_umask()


@dataclass(slots=True)
class IterationInfo:
    """What was exported for one iteration."""

    index: int
    structure_key: str
    changed: bool  # structure differs from the previous iteration (the first: True)
    nodes: int  # nodes in the graph
    drawn: int = 0  # nodes drawn (after collapsing)
    depth: int | None = None  # the collapse depth used
    collapsed: bool = False  # collapsed further than asked, to fit max_nodes or the budget
    layout_reused: bool = False
    layout_note: str = ""  # why dyngraph's own layout drew it ("": Graphviz did)
    added: int = 0
    removed: int = 0
    files: list[str] = field(default_factory=list)
    # Drawn by module (a big graph): (what a module page shows, its file), parents first.
    modules: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class ExportResult:
    out_dir: Path
    iterations: list[IterationInfo]
    layouts: int = 0
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # ("--iterations 1-9: the trace ends ...")


@dataclass(slots=True)
class _Item:
    index: int
    key_of: Callable[[], str]
    get: Callable[[], Graph]
    _key: str | None = None

    @property
    def key(self) -> str:
        """The structure key, looked up when first asked: only the iterations exported
        (and those before them) and a ``changed`` selection need one, and a file trace
        decodes a frame to find it."""
        if self._key is None:
            self._key = self.key_of()
        return self._key


def _items(source: Any) -> list[_Item]:
    """Iterations of a Trace or of a sequence of Graphs.

    A trace's graphs are taken when an export reaches them (``Iteration.graph``: from the
    iteration's rows, in order, so a file's frames are decoded once each); the keys come
    from the iterations' ends. Exporting three iterations of a long trace no longer builds
    every graph of it first (1.9 s for 222,000 events, of which 1.3 s building graphs
    nobody drew); the keys are looked up when needed."""
    if hasattr(source, "iterations"):
        return [_Item(it.index, _key_getter(it), _graph_getter(it))
                for it in source.iterations]
    return [_Item(g.iteration, _key_getter(g), functools.partial(_same, g))
            for g in source]


def _graph_getter(iteration: Any) -> Callable[[], Graph]:
    return lambda: iteration.graph


def _key_getter(iteration_or_graph: Any) -> Callable[[], str]:
    return lambda: iteration_or_graph.structure_key  # type: ignore[no-any-return]


def _same(graph: Graph) -> Graph:
    return graph


def select(spec: str | Iterable[int] | None, items: Sequence[_Item]
           ) -> tuple[list[int], list[str]]:
    """Positions in ``items`` chosen by ``spec`` (``all``, ``changed``, a range spec of
    ``dyngraph.iterspec``: ``1-10,15``, ``5-``, ``-10``, ``last``; or ints), and notes
    on ranges cut to the trace."""
    if spec is None or spec == "all":
        return list(range(len(items))), []
    if spec == "changed":
        return [i for i, it in enumerate(items) if i == 0 or items[i - 1].key != it.key], []
    by_index = {it.index: i for i, it in enumerate(items)}
    available = sorted(by_index)
    if isinstance(spec, str):
        wanted, notes = iterspec.resolve(check_spec(spec), available)
    else:
        wanted, notes = list(spec), []
        missing = [n for n in wanted if n not in by_index]
        if missing:
            raise UserError(f"no iteration {missing[0]} in this trace (it has "
                            f"{iterspec.describe(available) or 'none'})")
    return sorted({by_index[n] for n in wanted}), notes


def check_spec(spec: str) -> tuple[iterspec.Part, ...]:
    """``--iterations``' ranges; UserError for a spec that is none (before any work)."""
    if spec in ("all", "changed"):
        return ()
    try:
        return iterspec.parse(spec)
    except UserError as exc:
        raise UserError(f"{exc} (or all, changed)") from None


def drawn_count(graph: Graph, depth: int | None) -> int:
    """How many nodes ``to_dot(graph, depth=depth)`` would draw (before folding and ghosts)."""
    if depth is None:
        return len(graph.nodes)
    count = 0
    collapsed: set[str] = set()
    for path in owners(graph).values():
        if _depth(path) > depth:
            collapsed.add(_ancestor(path, depth))
        else:
            count += 1
    return count + len(collapsed)


def choose_depth(graph: Graph, depth: int | None, max_nodes: int) -> int | None:
    """The deepest collapse depth, no deeper than ``depth``, that draws <= ``max_nodes``."""
    if drawn_count(graph, depth) <= max_nodes:
        return depth
    deepest = max((_depth(m) for m in graph.modules()), default=0)
    d = deepest if depth is None else min(depth, deepest)
    while d > 0 and drawn_count(graph, d) > max_nodes:
        d -= 1
    return d


class _Writer:
    """File writes into one directory that land together or not at all.

    Each file is first written whole to a temporary name beside its target, by one
    background thread (the next iteration is built meanwhile; the OS write releases the
    GIL; at most ``_AHEAD`` writes wait, so memory stays bounded). ``commit()`` renames
    them onto their names once every one is written; ``undo()`` removes the temporary
    files. Until ``commit()``, the directory's existing files are untouched: a failed
    export leaves the previous one (its ``index.html`` and every page it links) as it was.
    """

    _AHEAD = 4

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.written: list[Path] = []  # the targets, in the order they were written
        self._staged: list[Future[str]] = []  # their temporary files, aligned
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dyngraph-export")

    def write(self, name: str, text: str) -> Path:
        path = self.out_dir / name
        unfinished = [f for f in self._staged[-self._AHEAD:] if not f.done()]
        if len(unfinished) >= self._AHEAD:
            unfinished[0].result()
        self.written.append(path)
        self._staged.append(self._pool.submit(_stage, path, text))
        return path

    def commit(self) -> None:
        """Wait for every write, then rename them all into place (UserError if one failed
        or a target may not be replaced: then nothing was)."""
        try:
            staged = [(f.result(), path) for f, path in zip(self._staged, self.written,
                                                           strict=True)]
        except BaseException:
            self.undo()
            raise
        self._staged.clear()
        _commit(staged)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def undo(self) -> None:
        for future in self._staged:
            if future.exception() is None:  # waits; a failed write left no file
                Path(future.result()).unlink(missing_ok=True)
        self._staged.clear()
        self.written.clear()


def _stage(path: Path, text: str) -> str:
    """Write ``text`` to a new temporary file beside ``path``; its name."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp",
                                   dir=path.parent)
        with os.fdopen(fd, "wb") as f:  # bytes: no newline translation on any OS
            f.write(text.encode("utf-8", "surrogateescape"))
        # mkstemp makes the file private (0600); an export is meant to be shared.
        os.chmod(tmp, _FILE_MODE)
        return tmp
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def _commit(staged: Sequence[tuple[str, Path]]) -> None:
    """Rename temporary files onto their targets; every target is checked first, so a
    refusal (a directory, a file dyngraph did not write) leaves all of them as they were."""
    try:
        for _, path in staged:
            _check_replaceable(path)
        for tmp, path in staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)  # those not renamed, after a failure


def _check_replaceable(path: Path) -> None:
    """UserError unless ``path`` is free or a file of an earlier export (never overwrite a
    user's own ``index.html``)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"cannot write {path}: it exists and is not a regular file; "
                        "nothing was exported")
    if st.st_size and not _written_by_dyngraph(path):
        raise UserError(f"{path} exists and was not written by dyngraph: refusing to "
                        "overwrite it; nothing was exported (choose another -o folder)")


def _written_by_dyngraph(path: Path) -> bool:
    """Does the file begin as dyngraph's DOT, SVG and HTML do?"""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return head.startswith(b"digraph dyngraph") or b"<title>dyngraph" in head


def export_iterations(
    source: Any,
    out_dir: str | os.PathLike[str],
    *,
    formats: Sequence[str] = FORMATS,
    iterations: str | Iterable[int] | None = "all",
    graph_kind: str = "forward",
    depth: int | None = None,
    diff: bool = False,
    show_shapes: bool = False,
    fold_repeats: bool = False,
    whole: bool = False,
    dot: str | os.PathLike[str] | None = None,
    budget: float = EXPORT_BUDGET,
    max_nodes: int = DEFAULT_MAX_NODES,
    index: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ExportResult:
    """Write each chosen iteration's graph as DOT and/or SVG, plus ``index.html``.

    ``source``: a ``dyngraph.Trace`` or a sequence of ``Graph``. ``iterations``: ``"all"``,
    ``"changed"`` (structure differs from the previous iteration), ``"1-10,15"`` or ints.
    ``diff``: mark what changed since the previous iteration. One colour scale spans all
    chosen iterations, so a colour means the same gradient norm on every page.
    ``whole``: draw a graph past ``modular.FOLD_ABOVE`` nodes as one picture of every op
    instead of by module (a module-level page plus one page per module).
    """
    formats = _check(formats, graph_kind, depth)
    items = _items(source)
    chosen, notes = select(iterations, items)
    if "svg" in formats:
        find_dot(dot)  # a missing binary fails here, before anything is written
    out, created = _make_folder(out_dir)
    result = None
    try:
        scale = GradScale.from_graphs(items[i].get() for i in chosen)
        # No cyclic GC during the export loop: it makes many short-lived, acyclic objects
        # while the caller's graphs (often every iteration of a run) sit in memory, and
        # each automatic full collection walks all of them. Measured: 100 iterations of a
        # 500-node graph took 45 ms each with GC on, 16 ms off.
        with collector.paused():
            result = _export(items, chosen, out, scale, formats=formats,
                             graph_kind=graph_kind, depth=depth, diff=diff,
                             show_shapes=show_shapes, fold_repeats=fold_repeats,
                             whole=whole, dot=dot,
                             budget=budget, max_nodes=max_nodes, index=index,
                             progress=progress)
        result.notes = notes
        return result
    finally:
        if created and (result is None or not result.files):
            try:
                out.rmdir()  # only if still empty: we leave no trace of a failed export
            except OSError:
                pass


def _make_folder(out_dir: str | os.PathLike[str]) -> tuple[Path, bool]:
    """The output folder, made if needed, and whether it was; UserError (one line) for an
    empty name (which would mean the current folder), a name too long, or a file there."""
    if not os.fspath(out_dir):
        raise UserError("no output folder given: name one with -o DIR")
    out = Path(out_dir)
    try:
        created = not out.is_dir()
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserError(f"cannot create {out}: a file of that name exists") from None
    except OSError as exc:
        raise UserError(f"cannot create {str(out)[:80]}: {exc.strerror or exc}") from None
    return out, created


def _check(formats: Sequence[str], graph_kind: str, depth: int | None) -> tuple[str, ...]:
    """The formats as a tuple; a UserError for any option out of range."""
    formats = tuple(formats)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise UserError(f"unknown format {bad[0] if bad else ''!r}: choose from dot, svg")
    if graph_kind not in GRAPH_KINDS:
        raise UserError(f"unknown graph kind {graph_kind!r}: choose from {', '.join(GRAPH_KINDS)}")
    if depth is not None and depth < 0:
        raise UserError(f"--depth must be 0 or more, got {depth}")
    return formats


class IterationExporter:
    """Writes iterations one call at a time, keeping layouts for the next calls.

    For a debugger that exports each iteration as it completes: an iteration whose drawing
    has the layout of one written before (up to ``KEEP_LAYOUTS`` distinct ones) costs no
    Graphviz run, as in ``export_iterations``. Unlike that batch, which spans one colour
    scale over all its iterations, each file here has its own scale (later iterations are
    not known yet); a file is byte for byte what ``export_iterations([graph], ...)``
    writes for that graph alone. Files are written atomically (a temporary name renamed
    into place) with the user's usual permissions; no ``index.html``. Not thread-safe:
    call ``write`` from one thread at a time.

    >>> exporter = IterationExporter("out", formats=("dot", "svg"))   # doctest: +SKIP
    >>> exporter.write(graph)                                         # doctest: +SKIP
    [PosixPath('out/iter-0001.dot'), PosixPath('out/iter-0001.svg')]
    """

    def __init__(self, out_dir: str | os.PathLike[str], *, formats: Sequence[str] = FORMATS,
                 graph_kind: str = "forward", depth: int | None = None,
                 show_shapes: bool = False, fold_repeats: bool = False, whole: bool = False,
                 dot: str | os.PathLike[str] | None = None, budget: float = EXPORT_BUDGET,
                 max_nodes: int = DEFAULT_MAX_NODES, suffix: str = "") -> None:
        self.out_dir = Path(out_dir)
        self.formats = _check(formats, graph_kind, depth)
        self.suffix = suffix  # after the iteration number: iter-0001{suffix}.svg
        if "svg" in self.formats:
            find_dot(dot)  # a missing binary fails here, before anything is written
        self._drawer = Drawer(svg="svg" in self.formats, graph_kind=graph_kind, depth=depth,
                              show_shapes=show_shapes, fold_repeats=fold_repeats,
                              whole=whole, diff_legend=False, dot=dot, budget=budget,
                              max_nodes=max_nodes)
        self._last_key: str | None = None
        self.last: IterationInfo | None = None  # what the last write drew

    @property
    def layouts(self) -> int:
        """How many times Graphviz laid a graph out so far."""
        return self._drawer.layouts

    def write(self, graph: Graph) -> list[Path]:
        """Write ``graph``'s files (none for a graph without nodes); return their paths.

        A failure (Graphviz, the disk) raises UserError and leaves none of this call's
        files behind; the exporter stays usable.
        """
        if not graph.nodes:
            return []
        key = graph.structure_key
        info = IterationInfo(graph.iteration, key, key != self._last_key, len(graph.nodes))
        name = f"iter-{graph.iteration:04d}{self.suffix}"
        scale = GradScale.from_graphs([graph])
        drawn = self._drawer.pages(graph, info, scale, None, name)
        if drawn is None:
            drawn = [(name, *self._drawer.draw(graph, info, scale))]
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create {self.out_dir}: {exc.strerror or exc}") from None
        staged: list[tuple[str, Path]] = []
        try:
            for stem, dot_text, svg_text in drawn:
                for ext, text in _texts(self.formats, dot_text, svg_text):
                    path = self.out_dir / f"{stem}.{ext}"
                    staged.append((_stage(path, text), path))
        except BaseException:
            for tmp, _ in staged:  # the .dot of an iteration whose .svg failed: not half of it
                Path(tmp).unlink(missing_ok=True)
            raise
        _commit(staged)  # both files, or (an earlier export's stay) neither
        written = [path for _, path in staged]
        info.files.extend(path.name for path in written)
        self._last_key, self.last = key, info
        return written


def _export(items: list[_Item], chosen: list[int], out: Path, scale: GradScale | None, *,
            formats: tuple[str, ...], graph_kind: str, depth: int | None, diff: bool,
            show_shapes: bool, fold_repeats: bool, whole: bool,
            dot: str | os.PathLike[str] | None,
            budget: float, max_nodes: int, index: bool,
            progress: Callable[[int, int], None] | None) -> ExportResult:
    writer = _Writer(out)
    result = ExportResult(out, [])
    graphs: list[Graph] = []  # each exported iteration's, for index.html's viewer
    drawer = Drawer(svg="svg" in formats, graph_kind=graph_kind, depth=depth,
                    show_shapes=show_shapes, fold_repeats=fold_repeats, whole=whole,
                    diff_legend=diff,
                    dot=dot, budget=budget, max_nodes=max_nodes)
    try:
        for done, pos in enumerate(chosen):
            item = items[pos]
            graph = item.get()
            if not graph.nodes:  # e.g. the ops-less tail of a run after its last backward
                continue
            # Setup (iteration 0: loading data, an evaluation ...) is nobody's baseline.
            base = pos > 0 and items[pos - 1].index != 0
            prev = items[pos - 1].get() if diff and base else None
            info = IterationInfo(item.index, item.key,
                                 not base or items[pos - 1].key != item.key, len(graph.nodes))
            name = f"iter-{item.index:04d}"
            drawn = drawer.pages(graph, info, scale, prev, name)
            if drawn is None:
                drawn = [(name, *drawer.draw(graph, info, scale, prev))]
            for stem, dot_text, svg_text in drawn:
                for ext, text in _texts(formats, dot_text, svg_text):
                    writer.write(f"{stem}.{ext}", text)
                    info.files.append(f"{stem}.{ext}")
            result.iterations.append(info)
            graphs.append(graph)
            if progress is not None:
                progress(done + 1, len(chosen))
        if index and result.iterations:
            from .html import index_html

            writer.write("index.html", index_html(result.iterations, graphs,
                                                  graph_kind=graph_kind))
        writer.commit()
    except BaseException:
        writer.undo()
        raise
    finally:
        writer.close()
    result.layouts = drawer.layouts
    result.files = list(writer.written)
    return result


class Drawer:
    """One iteration's DOT and SVG text, with the caches that make the next one cheap.

    Kept across iterations: laid-out ``SvgTemplate``s (by ``DotDoc.layout_key()``), fast
    paths (by the graph's signature, colour scale and legend), the view cache and the
    collapse depth that fits each structure. Layouts and fast paths are bounded to the
    ``KEEP_LAYOUTS`` most recently used: a run whose graph changes every iteration must not
    keep every layout. ``export_iterations`` and ``IterationExporter`` both draw with one.
    """

    def __init__(self, *, svg: bool, graph_kind: str, depth: int | None, show_shapes: bool,
                 fold_repeats: bool, diff_legend: bool, dot: str | os.PathLike[str] | None,
                 whole: bool = False,
                 budget: float, max_nodes: int) -> None:
        self.svg, self.graph_kind, self.depth = svg, graph_kind, depth
        self.show_shapes, self.fold_repeats, self.whole = show_shapes, fold_repeats, whole
        self.diff_legend = diff_legend
        self.dot, self.budget, self.max_nodes = dot, budget, max_nodes
        self.layouts = 0  # Graphviz layouts run so far
        self.templates: _Recent[str, SvgTemplate] = _Recent(KEEP_LAYOUTS)
        self.fast_paths: _Recent[tuple[object, ...], FastPath] = _Recent(KEEP_LAYOUTS)
        self.views = ViewCache()
        # layout key -> "" or why dyngraph's layered layout drew it instead of Graphviz
        self.notes: _Recent[str, str] = _Recent(KEEP_LAYOUTS)
        # structure key -> (the depth that fits,); a tuple, since the depth may be None
        self.fallback: _Recent[str, tuple[int | None]] = _Recent(KEEP_DEPTHS)

    def draw(self, graph: Graph, info: IterationInfo, scale: GradScale | None,
             prev: Graph | None = None) -> tuple[str, str | None]:
        """(DOT text, SVG text or None without svg) of ``graph``; fills in ``info``.

        ``scale``: the colour scale (None: no gradients). ``prev``: diff against it.
        """
        known = self.fallback.get(info.structure_key)
        if known is None:
            known = (choose_depth(graph, self.depth, self.max_nodes),)
            self.fallback[info.structure_key] = known
        d = known[0]
        kind, fold, shapes = self.graph_kind, self.fold_repeats, self.show_shapes

        if prev is not None:
            change = graph.diff(prev)
            info.added, info.removed = len(change.added), len(change.removed)
        fast, ordered, shown = None, None, None
        if kind != "both" and (prev is None or _plain_diff(graph, prev, kind)):
            shown = graph if kind == "forward" else _as_kind(graph, kind)
            ordered = seq_order(shown)
            legend = scale is not None or self.diff_legend or _nonfinite(shown)
            # The scale is part of the key: a fast path paints with the scale it was made with.
            fast = self.fast_paths.get((legend, scale, signature(shown, ordered, d, fold, shapes)))
        if fast is not None and ordered is not None:
            dot_text, svg_text = fast.render(ordered, f"dyngraph iteration {info.index}",
                                             self.svg)
            info.layout_reused = svg_text is not None
            if fast.template is not None:
                info.layout_note = self.notes.get(fast.template.key) or ""
            info.depth, info.drawn, info.collapsed = d, len(fast.order), d != self.depth
            return dot_text, svg_text
        # Integer index arithmetic (get_batch's unbind, add, getitem, stack) is one box.
        units = modular.index_units(graph) if kind == "forward" else None
        doc = build_dot(graph, depth=d, diff_against=prev, show_shapes=shapes,
                        fold_repeats=fold, graph_kind=kind, grad_scale=scale,
                        diff_legend=self.diff_legend, cache=self.views,
                        title=f"dyngraph iteration {info.index}", units=units)
        template: SvgTemplate | None = None
        if self.svg:
            template = self.templates.get(doc.layout_key())
            info.layout_reused = template is not None
            if template is None:
                template, note = svg_template(doc, dot=self.dot, budget=self.budget)
                self.templates[template.key] = template
                self.notes[template.key] = note
                self.layouts += 1
            info.layout_note = self.notes.get(template.key) or ""
        info.depth, info.drawn, info.collapsed = d, len(doc.nodes()), d != self.depth
        svg_text = template.render(doc) if template is not None else None
        if doc.shape is not None and shown is not None and ordered is not None:
            # Later iterations of this shape take the fast path.
            sig = signature(shown, ordered, d, fold, shapes)
            self.fast_paths[(bool(doc.legend), scale, sig)] = FastPath(
                doc, doc.shape, ordered, "n", scale, template)
        return doc.text(), svg_text


    def pages(self, graph: Graph, info: IterationInfo, scale: GradScale | None,
              prev: Graph | None, stem: str) -> list[tuple[str, str, str | None]] | None:
        """A big graph drawn by module (``exporters.modular``): (file stem, DOT, SVG) of
        its module-level page, then of each module's page; None when the graph is drawn
        whole (small enough, a ``depth`` asked for, or both graph kinds)."""
        kind = self.graph_kind
        if kind == "both" or self.depth is not None or self.whole or (
                len(graph.nodes) <= modular.FOLD_ABOVE):
            return None
        shown = graph if kind == "forward" else _as_kind(graph, kind)
        old = _as_kind(prev, kind) if prev is not None else None
        if old is not None:
            change = graph.diff(prev)  # type: ignore[arg-type]
            info.added, info.removed = len(change.added), len(change.removed)
        out: list[tuple[str, str, str | None]] = []
        for page in modular.pages(shown, stem):
            main = not page.label
            title = f"dyngraph iteration {info.index}" + (f", {page.label}" if page.label
                                                         else ", by module")
            doc = build_dot(page.graph, units=page.units, graph_kind="forward",
                            diff_against=old if main else None, show_shapes=self.show_shapes,
                            grad_scale=scale, diff_legend=self.diff_legend, title=title)
            svg_text = None
            if self.svg:
                template = self.templates.get(doc.layout_key())
                if template is None:
                    template, note = svg_template(doc, dot=self.dot, budget=self.budget)
                    self.templates[template.key] = template
                    self.notes[template.key] = note
                    self.layouts += 1
                svg_text = template.render(doc)
                if main:
                    info.layout_note = self.notes.get(template.key) or ""
            if main:
                info.drawn, info.collapsed = len(doc.nodes()), bool(page.units)
            else:
                info.modules.append((page.label, f"{page.stem}.svg" if self.svg
                                     else f"{page.stem}.dot"))
            out.append((page.stem, doc.text(), svg_text))
        return out


def _nonfinite(graph: Graph) -> bool:
    return any(n.has_nonfinite for n in graph.nodes.values())


K = TypeVar("K")
V = TypeVar("V")


class _Recent(Generic[K, V]):
    """A dict that keeps only its ``size`` most recently used entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)


def _plain_diff(graph: Graph, prev: Graph, graph_kind: str) -> bool:
    """True when a diff against ``prev`` would mark nothing in the drawing."""
    return diff_graphs(_as_kind(prev, graph_kind), _as_kind(graph, graph_kind)).unchanged


def _texts(formats: Sequence[str], dot_text: str, svg_text: str | None
           ) -> list[tuple[str, str]]:
    """(extension, text) of each file to write, in ``FORMATS`` order."""
    out = [("dot", dot_text)] if "dot" in formats else []
    if "svg" in formats and svg_text is not None:
        out.append(("svg", svg_text))
    return out
