"""Layout coordinates -> a character grid: boxes, orthogonal edges and cluster frames.

Pure and Textual-free, so it is unit-testable and runs in the layout worker. The work is
split in two:

- ``build_scene(view, layout)`` (slow, in the worker) turns a Graphviz layout of a
  ``ViewGraph`` into a ``Scene``: boxes, frames and edge routes placed on a cell grid and
  indexed by row.
- ``render_row(scene, row, x0, width, ...)`` (fast, on the UI thread) composes one visible
  row: ~50 of these make a frame, whatever the size of the graph.

Every primitive carries a ``birth``: the creation index of the graph node that brought it
into being. Rendering with ``upto=n`` draws only what the first ``n`` nodes produced, so a
layout of a whole iteration also draws any prefix of it (the graph as built so far)
without laying out or rasterising again.

>>> grid = rasterize(scene)                  # doctest: +SKIP
>>> print(grid.text)                         # doctest: +SKIP
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.cells import get_character_cell_size

from dyngraph.textsafe import shown

# One terminal cell is about twice as tall as wide: the DOT we lay out measures nodes in
# cells of 0.1 x 0.2 inches (7.2 x 14.4 points), so a layout maps 1:1 onto the grid.
COL_PT = 7.2
ROW_PT = 14.4
MARGIN_X = 1
MARGIN_Y = 2
FRAME_PAD_X = 2  # columns between a cluster's nodes and its frame (= DOT cluster margin)
MAX_LABEL = 40
COMPACT_LABEL = 14

# Edge directions as bits; a cell's glyph is the union of the pieces that cross it.
UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8
GLYPHS = {
    0: " ", UP: "│", DOWN: "│", UP | DOWN: "│", LEFT: "─", RIGHT: "─", LEFT | RIGHT: "─",
    DOWN | RIGHT: "┌", DOWN | LEFT: "┐", UP | RIGHT: "└", UP | LEFT: "┘",
    UP | DOWN | RIGHT: "├", UP | DOWN | LEFT: "┤", LEFT | RIGHT | DOWN: "┬",
    LEFT | RIGHT | UP: "┴", UP | DOWN | LEFT | RIGHT: "┼",
}
ARROW_DOWN, ARROW_UP = "▼", "▲"

BoxStyle = Callable[[int], Hashable]


# -- input: the graph as the canvas draws it ------------------------------------------------
@dataclass(slots=True)
class ViewNode:
    """One box. ``key`` is its DOT node name; ``birth`` the creation index of its first node."""

    key: str
    kind: str  # "op" | "param" | "leaf" | "backward" | "accumulate" | "module"
    label: str
    birth: int
    cluster: int | None = None  # index of the innermost ViewCluster holding it
    module: str = ""  # for kind "module": the collapsed module's path
    # A shared leaf is drawn once per use (see canvas_layout.build_view): every copy, the
    # first included, names the first copy's index here; None for a node drawn once.
    copy_of: int | None = None
    # For a folded run of repeated module calls: how many members its gradient strip shows.
    members: int = 0

    def primary(self, index: int) -> int:
        """The box standing for this one's graph node: the first copy, or itself."""
        return index if self.copy_of is None else self.copy_of


@dataclass(frozen=True, slots=True)
class ViewEdge:
    src: int  # ViewNode indices
    dst: int
    birth: int


@dataclass(slots=True)
class ViewCluster:
    path: str
    label: str
    parent: int | None
    birth: int
    depth: int = 1
    key: str = ""  # the open call (or run) it frames: what closing it names


@dataclass(slots=True)
class ViewGraph:
    nodes: list[ViewNode] = field(default_factory=list)
    edges: list[ViewEdge] = field(default_factory=list)
    clusters: list[ViewCluster] = field(default_factory=list)
    compact: bool = False


# -- labels -------------------------------------------------------------------------------
def sanitize(text: str) -> str:
    """Make user text (tensor and module names) safe to put in cells, one glyph per cell.

    Control characters are shown escaped (``dyngraph.textsafe.shown``: a name must not move
    the cursor or inject escapes), other non-printing characters become ``?``, combining
    marks are folded in by NFC or dropped, so every character spans 1 or 2 cells.

    >>> sanitize("a\\x1b[31mb\\n")
    'a\\\\x1b[31mb\\\\n'
    """
    out = []
    for ch in unicodedata.normalize("NFC", shown(text)):
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cs", "Co", "Zl", "Zp") or ch == "\t":
            out.append("?")
        elif cat in ("Mn", "Me", "Cf") or get_character_cell_size(ch) == 0:
            continue
        else:
            out.append(ch)
    return "".join(out)


def cells(text: str) -> list[str]:
    """One entry per terminal cell: a wide character is followed by an empty continuation."""
    out: list[str] = []
    for ch in text:
        out.append(ch)
        if get_character_cell_size(ch) == 2:
            out.append("")
    return out


def fit(text: str, limit: int) -> str:
    """Clip sanitised ``text`` to ``limit`` cells, marking the cut with an ellipsis."""
    text = sanitize(text)
    if len(cells(text)) <= limit:
        return text
    out, used = [], 0
    for ch in text:
        w = get_character_cell_size(ch)
        if used + w > limit - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def fit_tail(text: str, limit: int) -> str:
    """Like ``fit`` but keeps the end: ``…layers.3`` says more than ``encoder.la…``."""
    text = sanitize(text)
    if len(cells(text)) <= limit:
        return text
    kept = fit(text[::-1], limit)[:-1]
    return "…" + kept[::-1]


def box_size(label: str, compact: bool) -> tuple[int, int]:
    """(columns, rows) of a node's box: 3 rows with borders, or 1 row ``[label]``."""
    width = len(cells(label)) + (2 if compact else 4)
    return (max(width, 3 if compact else 5), 1 if compact else 3)


# -- output: primitives on the grid ---------------------------------------------------------
@dataclass(slots=True)
class Box:
    node: int  # ViewNode index
    left: int
    top: int
    width: int
    height: int
    kind: str
    birth: int
    rows: list[list[str]]  # the cells of each of its rows

    @property
    def right(self) -> int:
        return self.left + self.width - 1

    @property
    def bottom(self) -> int:
        return self.top + self.height - 1

    @property
    def centre(self) -> tuple[int, int]:
        return (self.left + self.width // 2, self.top + self.height // 2)


@dataclass(slots=True)
class Frame:
    cluster: int
    left: int
    top: int
    right: int
    bottom: int
    birth: int
    top_cells: list[str]
    label_cells: list[str] = field(default_factory=list)  # drawn over edges, at left + 2


@dataclass(slots=True)
class Scene:
    """A laid-out ViewGraph on a grid; ``boxes[i]`` belongs to ``view.nodes[i]``."""

    view: ViewGraph
    width: int
    height: int
    boxes: list[Box]
    frames: list[Frame]
    # Per row: (c0, c1, part, box) with part 0 top, 1 middle, 2 bottom; frames (c0, c1, part,
    # frame); edge runs (c0, c1, bits_first, bits_mid, bits_last, edge); arrows (col, glyph, edge).
    row_boxes: list[list[tuple[int, int, int, int]]]
    row_frames: list[list[tuple[int, int, int, int]]]
    row_edges: list[list[tuple[int, int, int, int, int, int]]]
    row_arrows: list[list[tuple[int, str, int]]]
    edge_birth: list[int]
    missing: int = 0  # view nodes the layout did not place

    def box_at(self, col: int, row: int, upto: int | None = None) -> int | None:
        """The box index under a cell, if a drawn box covers it."""
        if not 0 <= row < self.height:
            return None
        for c0, c1, _part, b in self.row_boxes[row]:
            if c0 <= col <= c1 and (upto is None or self.boxes[b].birth < upto):
                return b
        return None


@dataclass(slots=True)
class Grid:
    """A rasterised scene: text lines and, per line, (start, end, style) spans."""

    lines: list[str]
    spans: list[list[tuple[int, int, Hashable]]]

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.lines)

    def style_at(self, row: int, col: int) -> Hashable | None:
        for start, end, style in self.spans[row]:
            if start <= col < end:
                return style
        return None


# -- building the scene ---------------------------------------------------------------------
def _bezier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sample a dot spline (1 + 3n control points) into a polyline."""
    if len(points) < 4 or (len(points) - 1) % 3:
        return list(points)
    out = [points[0]]
    for i in range(0, len(points) - 3, 3):
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points[i:i + 4]
        for s in range(1, 7):
            t = s / 6
            u = 1 - t
            a, b, c, d = u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t
            out.append((a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3))
    return out


def _x_at_row(poly: list[tuple[float, float]], row: float) -> float | None:
    """Where a polyline (cell coordinates) crosses a row, if it does."""
    for (xa, ya), (xb, yb) in zip(poly, poly[1:], strict=False):
        if (ya - row) * (yb - row) <= 0 and ya != yb:
            return xa + (xb - xa) * (row - ya) / (yb - ya)
    return None


def _place_boxes(view: ViewGraph, layout: Any) -> list[Box | None]:
    height_pt = float(layout.height)
    boxes: list[Box | None] = []
    for i, node in enumerate(view.nodes):
        nb = layout.nodes.get(node.key)
        if nb is None:
            boxes.append(None)
            continue
        w, h = box_size(node.label, view.compact)
        cx = nb.x / COL_PT + MARGIN_X
        cy = (height_pt - nb.y) / ROW_PT + MARGIN_Y
        left, top = int(math.floor(cx - w / 2 + 0.5)), int(math.floor(cy - h / 2 + 0.5))
        label = cells(node.label)
        if view.compact:
            rows = [["["] + label + [" "] * (w - 2 - len(label)) + ["]"]]
        else:
            pad = w - 4 - len(label)
            rows = [["┌"] + ["─"] * (w - 2) + ["┐"],
                    ["│", " "] + label + [" "] * (pad + 1) + ["│"],
                    ["└"] + ["─"] * (w - 2) + ["┘"]]
        boxes.append(Box(i, max(left, 0), max(top, 0), w, h, node.kind, node.birth, rows))
    return boxes


def _frames(view: ViewGraph, boxes: list[Box | None]) -> list[Frame]:
    rects: list[list[int] | None] = [None] * len(view.clusters)

    def grow(ci: int | None, l: int, t: int, r: int, b: int) -> None:
        while ci is not None:
            rect = rects[ci]
            rects[ci] = [l, t, r, b] if rect is None else [
                min(rect[0], l), min(rect[1], t), max(rect[2], r), max(rect[3], b)]
            ci = view.clusters[ci].parent

    for box in boxes:
        if box is not None and view.nodes[box.node].cluster is not None:
            grow(view.nodes[box.node].cluster, box.left, box.top, box.right, box.bottom)
    # Deepest first, so a parent's frame encloses its children's frames.
    frames = []
    order = sorted(range(len(view.clusters)), key=lambda c: -view.clusters[c].depth)
    for ci in order:
        rect = rects[ci]
        if rect is None:
            continue
        l, t, r, b = rect[0] - FRAME_PAD_X, rect[1] - 1, rect[2] + FRAME_PAD_X, rect[3] + 1
        parent = view.clusters[ci].parent
        if parent is not None:
            grow(parent, l, t, r, b)
        width = r - l + 1
        label = cells(" " + fit_tail(view.clusters[ci].label, max(width - 6, 1)) + " ")
        if width < 7:
            label = []
        top = ["╭"] + ["─"] * (width - 2) + ["╮"]
        frames.append(Frame(ci, max(l, 0), max(t, 0), r, b, view.clusters[ci].birth, top,
                            label))
    return frames


def _route(poly: list[tuple[float, float]], src: Box, dst: Box, ranks: list[int],
           rank_of: dict[int, int], compact: bool) -> tuple[list[int], list[tuple[int, int]],
                                                           int, int, int, str]:
    """The columns an edge takes through each rank, the channels it jogs in, and its ends.

    Returns (cols, channels, start_row, end_row, arrow_row, arrow_glyph): ``cols[i]`` is the
    column in the i-th rank band crossed, ``channels[i]`` the (rank above, rank below) gap
    where it moves from ``cols[i]`` to ``cols[i + 1]``.
    """
    rs, rd = rank_of[src.top], rank_of[dst.top]
    sx = min(max(int(round(poly[0][0])), src.left + 1), src.right - 1)
    ex = min(max(int(round(poly[-1][0])), dst.left + 1), dst.right - 1)
    if compact:
        sx, ex = min(max(sx, src.left), src.right), min(max(ex, dst.left), dst.right)
    if rd > rs:  # the usual case: downwards, from the tail's bottom to the head's top
        cols = [sx]
        for k in range(rs + 1, rd):
            x = _x_at_row(poly, ranks[k] + src.height / 2)
            cols.append(int(round(x)) if x is not None else cols[-1])
        cols.append(ex)
        channels = [(k, k + 1) for k in range(rs, rd)]
        arrow = dst.top - 1 if compact else dst.top
        return cols, channels, src.bottom, dst.top, arrow, ARROW_DOWN
    if rd < rs:  # a reversed edge (a cycle through a collapsed module): upwards
        cols = [sx]
        for k in range(rs - 1, rd, -1):
            x = _x_at_row(poly, ranks[k] + src.height / 2)
            cols.append(int(round(x)) if x is not None else cols[-1])
        cols.append(ex)
        channels = [(k - 1, k) for k in range(rs, rd, -1)]
        arrow = dst.bottom + 1 if compact else dst.bottom
        return cols, channels, src.top, dst.bottom, arrow, ARROW_UP
    # Same rank (a parameter beside its op): up into the channel above, then down into the
    # head like any other input.
    arrow = dst.top - 1 if compact else dst.top
    return [sx, ex], [(rs - 1, rs)], src.top, dst.top, arrow, ARROW_DOWN


def build_scene(view: ViewGraph, layout: Any) -> Scene:
    """Place a laid-out ViewGraph on the grid and route its edges orthogonally.

    ``layout`` is a ``dyngraph.exporters.Layout`` of DOT whose node names are the view
    nodes' keys and whose sizes came from ``box_size`` (points, y growing upwards).
    """
    placed = _place_boxes(view, layout)
    width_pt = float(layout.width)
    boxes = [b for b in placed if b is not None]
    missing = len(placed) - len(boxes)
    ranks = sorted({b.top for b in boxes})
    rank_of = {top: i for i, top in enumerate(ranks)}
    box_h = 1 if view.compact else 3
    bands = ranks + [(ranks[-1] if ranks else 0) + box_h + 3]
    # Channel (k, k + 1) spans the rows between rank k's boxes and rank k+1's.
    def channel_rows(k: int) -> list[int]:
        if k < 0:  # above the first rank
            lo, hi = max(bands[0] - 2, 0), bands[0] - 1
        else:
            lo, hi = bands[k] + box_h, bands[k + 1] - 1
        rows = list(range(lo, hi + 1))
        if view.compact and len(rows) > 1:
            rows = rows[:-1]  # keep the row above a box for the arrowhead
        return rows or [lo]

    paths: dict[tuple[str, str], Any] = {}
    for e in layout.edges:
        paths.setdefault((e.tail, e.head), e.points)
    routes = []
    jogs: dict[int, list[tuple[int, int, int, int]]] = {}
    for ei, edge in enumerate(view.edges):
        src, dst = placed[edge.src], placed[edge.dst]
        if src is None or dst is None or src is dst:
            routes.append(None)
            continue
        path = paths.get((view.nodes[edge.src].key, view.nodes[edge.dst].key))
        poly = [((x / COL_PT) + MARGIN_X, (float(layout.height) - y) / ROW_PT + MARGIN_Y)
                for x, y in _bezier(path)] if path else [src.centre, dst.centre]
        route = _route(poly, src, dst, ranks, rank_of, view.compact)
        routes.append(route)
        cols, channels = route[0], route[1]
        flat = src.top == dst.top
        for i, (k, _) in enumerate(channels):
            a, b = cols[i], cols[i + 1]
            if a != b or flat:
                jogs.setdefault(k, []).append((min(a, b), max(a, b), ei, i))
    jog_row = _assign_tracks(jogs, channel_rows)

    height = max(b.bottom for b in boxes) + 4 if boxes else 1
    width = max([b.right for b in boxes] + [int(width_pt / COL_PT) + 2 * MARGIN_X]) + 3
    frames = _frames(view, placed)
    for f in frames:
        width = max(width, f.right + 2)
        height = max(height, f.bottom + 2)
    scene = Scene(view, width, height, _with_empties(placed), frames,
                  [[] for _ in range(height)], [[] for _ in range(height)],
                  [[] for _ in range(height)], [[] for _ in range(height)],
                  [e.birth for e in view.edges], missing)
    for box in boxes:
        for r in range(box.height):
            part = 3 if box.height == 1 else (0 if r == 0 else 2 if r == box.height - 1 else 1)
            scene.row_boxes[box.top + r].append((box.left, box.right, part, box.node))
    for fi, f in enumerate(frames):
        scene.row_frames[f.top].append((f.left, f.right, 0, fi))
        for r in range(f.top + 1, f.bottom):
            scene.row_frames[r].append((f.left, f.left, 1, fi))
            scene.row_frames[r].append((f.right, f.right, 1, fi))
        if f.bottom > f.top and f.bottom < height:
            scene.row_frames[f.bottom].append((f.left, f.right, 2, fi))
    for ei, route in enumerate(routes):
        if route is not None:
            _emit_route(scene, ei, route, jog_row, channel_rows)
    return scene


def _with_empties(placed: list[Box | None]) -> list[Box]:
    """Boxes indexed like view nodes; an unplaced node gets an empty, invisible box."""
    return [b if b is not None else Box(i, 0, 0, 0, 0, "", math.inf, [])  # type: ignore[arg-type]
            for i, b in enumerate(placed)]


def _assign_tracks(jogs, channel_rows) -> dict[tuple[int, int], int]:
    """Give overlapping horizontal jogs in one channel different rows where there are any."""
    out: dict[tuple[int, int], int] = {}
    for k, items in jogs.items():
        # Middle rows first: the outer ones are where cluster frames run.
        rows = channel_rows(k)
        mid = (len(rows) - 1) / 2
        rows = sorted(rows, key=lambda r: (abs(rows.index(r) - mid), -r))
        ends = [-10**9] * len(rows)
        for lo, hi, ei, i in sorted(items):
            free = [t for t, e in enumerate(ends) if e + 1 < lo]
            t = free[0] if free else min(range(len(rows)), key=ends.__getitem__)
            ends[t] = max(ends[t], hi)
            out[(ei, i)] = rows[t]
    return out


def _emit_route(scene: Scene, ei: int, route, jog_row, channel_rows) -> None:
    cols, channels, start, end, arrow, glyph = route
    points = [(cols[0], start)]
    for i, (k, _) in enumerate(channels):
        row = jog_row.get((ei, i), channel_rows(k)[0])
        if cols[i] != cols[i + 1] or start == end:
            points.append((cols[i], row))
            points.append((cols[i + 1], row))
    points.append((cols[-1], end))
    for (xa, ya), (xb, yb) in zip(points, points[1:], strict=False):
        if (xa, ya) == (xb, yb):
            continue
        if xa == xb:
            lo, hi = min(ya, yb), max(ya, yb)
            for r in range(lo, hi + 1):
                bits = DOWN if r == lo else UP if r == hi else UP | DOWN
                scene.row_edges[r].append((xa, xa, bits, bits, bits, ei))
        else:  # a horizontal jog; diagonal pieces cannot occur
            lo, hi = min(xa, xb), max(xa, xb)
            scene.row_edges[ya].append((lo, hi, RIGHT, LEFT | RIGHT, LEFT, ei))
    if 0 <= arrow < scene.height:
        scene.row_arrows[arrow].append((cols[-1], glyph, ei))


# -- drawing rows ---------------------------------------------------------------------------
def render_row(scene: Scene, row: int, x0: int, width: int, upto: float = math.inf,
               box_style: BoxStyle | None = None) -> tuple[str, list[tuple[int, int, Hashable]]]:
    """Compose cells ``x0 .. x0+width-1`` of one grid row: (text, [(start, end, style)]).

    Span offsets count cells. Only primitives born before ``upto`` are drawn;
    ``box_style(box_index)`` names the style of each box (default ``"box.<kind>"``).
    """
    chars, styles = compose_row(scene, row, x0, width, upto, box_style)
    return "".join(chars), _spans(styles)


def row_runs(scene: Scene, row: int, x0: int, width: int, upto: float = math.inf,
             box_style: BoxStyle | None = None) -> list[tuple[str, Hashable | None]]:
    """The same row as (text, style) runs, ready to become Segments."""
    chars, styles = compose_row(scene, row, x0, width, upto, box_style)
    runs: list[tuple[str, Hashable | None]] = []
    start = 0
    for i in range(1, width + 1):
        if i == width or styles[i] != styles[start]:
            runs.append(("".join(chars[start:i]), styles[start]))
            start = i
    return runs


def compose_row(scene: Scene, row: int, x0: int, width: int, upto: float = math.inf,
                box_style: BoxStyle | None = None) -> tuple[list[str], list[Hashable | None]]:
    """One row as per-cell characters ('' continues a wide character) and styles."""
    chars = [" "] * width
    styles: list[Hashable | None] = [None] * width
    if not 0 <= row < scene.height or width <= 0:
        return chars, styles
    x1 = x0 + width
    for c0, c1, part, fi in scene.row_frames[row]:
        f = scene.frames[fi]
        if c1 < x0 or c0 >= x1 or f.birth >= upto:
            continue
        if part == 1:
            src: list[str] = ["┆"]
        elif part == 0:
            src = f.top_cells
        else:
            src = ["╰"] + ["┄"] * (c1 - c0 - 1) + ["╯"]
        _blit(chars, styles, src, c0, x0, x1, "frame")
    bits: dict[int, int] = {}
    births = scene.edge_birth
    for c0, c1, bf, bm, bl, ei in scene.row_edges[row]:
        if c1 < x0 or c0 >= x1 or births[ei] >= upto:
            continue
        for c in range(max(c0, x0), min(c1, x1 - 1) + 1):
            bits[c] = bits.get(c, 0) | (bf if c == c0 else bl if c == c1 else bm)
    for c, b in bits.items():
        chars[c - x0] = GLYPHS[b]
        styles[c - x0] = "edge"
    for c0, _c1, part, fi in scene.row_frames[row]:
        f = scene.frames[fi]
        if part == 0 and f.label_cells and f.birth < upto:  # a module's name beats an edge
            _blit(chars, styles, f.label_cells, c0 + 2, x0, x1, "frame")
    boxes = scene.boxes
    for c0, c1, part, bi in scene.row_boxes[row]:
        box = boxes[bi]
        if c1 < x0 or c0 >= x1 or box.birth >= upto:
            continue
        src = box.rows[0 if part == 3 else min(part, box.height - 1)]
        style = box_style(bi) if box_style is not None else "box." + box.kind
        _blit(chars, styles, src, c0, x0, x1, style)
        if part in (0, 2) and bits:
            mark, need = ("┬", DOWN) if part == 2 else ("┴", UP)
            for c in range(max(c0 + 1, x0), min(c1 - 1, x1 - 1) + 1):
                if bits.get(c, 0) & need:
                    chars[c - x0] = mark
    for col, glyph, ei in scene.row_arrows[row]:
        if x0 <= col < x1 and births[ei] < upto:
            chars[col - x0] = glyph
            if styles[col - x0] is None or styles[col - x0] == "frame":
                styles[col - x0] = "edge"
    # A wide character cut by the left edge of the view leaves a bare continuation cell.
    if chars[0] == "":
        chars[0] = " "
    if chars[-1] != "" and get_character_cell_size(chars[-1]) == 2:
        chars[-1] = " "
    return chars, styles


def _blit(chars: list[str], styles: list[Hashable | None], src: list[str], c0: int,
          x0: int, x1: int, style: Hashable) -> None:
    a, b = max(c0, x0), min(c0 + len(src), x1)
    if a >= b:
        return
    chars[a - x0:b - x0] = src[a - c0:b - c0]
    styles[a - x0:b - x0] = [style] * (b - a)


def _spans(styles: list[Hashable | None]) -> list[tuple[int, int, Hashable]]:
    out: list[tuple[int, int, Hashable]] = []
    start, current = 0, styles[0] if styles else None
    for i in range(1, len(styles) + 1):
        s = styles[i] if i < len(styles) else object()
        if s != current:
            if current is not None:
                out.append((start, i, current))
            start, current = i, s
    return out


def rasterize(scene: Scene, upto: float = math.inf, box_style: BoxStyle | None = None) -> Grid:
    """The whole scene as a Grid (tests, exports); the canvas renders row by row instead."""
    rows = [render_row(scene, r, 0, scene.width, upto, box_style) for r in range(scene.height)]
    return Grid([t for t, _ in rows], [s for _, s in rows])
