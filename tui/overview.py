"""The whole graph shrunk to the pane: the canvas's overview (fit-to-pane) mode.

A graph of thousands of nodes is hundreds of screens tall; the overview draws every box as
a block of its colour (kind, gradient norm, current, selected, NaN) at its place in the
whole picture, scaled on each axis to fill the pane, with the part the normal view shows
outlined. Nothing here imports Textual.

>>> rows = overview(scene, 80, 24, upto=len(scene.boxes), box_style=style_of)  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable

from .raster import Scene

Cell = tuple[str, Hashable | None]
BLOCK = "█"
VIEWPORT = "viewport"  # the style key of the outline of what the normal view shows


def scale(scene: Scene, width: int, height: int) -> tuple[float, float]:
    """Scene cells per overview cell, across and down (at least 1: never magnified)."""
    return (max(scene.width / max(width, 1), 1.0), max(scene.height / max(height, 1), 1.0))


def overview(scene: Scene, width: int, height: int, upto: float = math.inf,
             box_style: Callable[[int], Hashable] | None = None,
             first: Callable[[int], bool] | None = None,
             filled: Callable[[int], bool] | None = None,
             viewport: tuple[int, int, int, int] | None = None,
             labels: Callable[[int], str] | None = None) -> list[list[Cell]]:
    """``height`` rows of ``width`` (char, style) cells.

    ``box_style(b)`` styles box ``b``: a box is a block of its style's colour, or of its
    background where ``filled(b)`` (a gradient colour); boxes for which ``first(b)`` is
    true are drawn last, on top (the current and selected nodes). ``viewport`` is (left, top, width,
    height) of the normal view, in scene cells. ``labels(b)`` names box ``b``: the name is
    written over its block where one fits (module boxes first: the picture is for finding
    your way), the selected and current boxes marked ``▸``.
    """
    sx, sy = scale(scene, width, height)
    grid: list[list[Cell]] = [[(" ", None)] * width for _ in range(height)]
    drawn = [b for b, box in enumerate(scene.boxes) if box.birth < upto and box.width > 0]
    if first is not None:
        drawn.sort(key=first)  # False before True: the ones that matter land on top
    for b in drawn:
        box = scene.boxes[b]
        style = box_style(b) if box_style is not None else None
        char = " " if filled is not None and filled(b) else BLOCK
        x0, x1 = int(box.left / sx), int(box.right / sx)
        y0, y1 = int(box.top / sy), int(box.bottom / sy)
        for y in range(max(y0, 0), min(y1, height - 1) + 1):
            row = grid[y]
            for x in range(max(x0, 0), min(x1, width - 1) + 1):
                row[x] = (char, style)
    if viewport is not None:
        _outline(grid, viewport, sx, sy)
    if labels is not None:
        _label(grid, scene, drawn, sx, sy, labels, box_style, first)
    return grid


def _label(grid: list[list[Cell]], scene: Scene, drawn: list[int], sx: float, sy: float,
           labels: Callable[[int], str], box_style: Callable[[int], Hashable] | None,
           first: Callable[[int], bool] | None) -> None:
    """Write names over the blocks: marked boxes first, then folded modules, then the
    rest, each only on cells no earlier name took."""
    from .raster import cells, fit

    height, width = len(grid), len(grid[0]) if grid else 0
    taken = [[False] * width for _ in range(height)]

    def rank(b: int) -> tuple[bool, bool]:
        return (not (first is not None and first(b)), scene.boxes[b].kind != "module")

    for b in sorted(drawn, key=rank):
        box = scene.boxes[b]
        marked = first is not None and first(b)
        x0, x1 = int(box.left / sx), min(int(box.right / sx), width - 1)
        y = min(int((box.top + box.height // 2) / sy), height - 1)
        room = x1 - x0 + 1 + (1 if marked else 0)
        text = labels(b)
        if not text or room < 3 or y < 0:
            continue
        text = ("▸" if marked else "") + text
        chars = cells(fit(text, room))
        start = max(x0 - (1 if marked else 0), 0)
        span = range(start, min(start + len(chars), width))
        if any(taken[y][x] for x in span):
            continue
        style = box_style(b) if box_style is not None else None
        for k, x in enumerate(span):
            grid[y][x] = (chars[k], ("label", style))
            taken[y][x] = True


def _outline(grid: list[list[Cell]], viewport: tuple[int, int, int, int], sx: float,
             sy: float) -> None:
    """Corners and edges of the normal view's region, where no box is drawn."""
    height, width = len(grid), len(grid[0]) if grid else 0
    left, top, w, h = viewport
    x0, x1 = int(left / sx), min(int((left + w - 1) / sx), width - 1)
    y0, y1 = int(top / sy), min(int((top + h - 1) / sy), height - 1)
    if x1 <= x0 or y1 <= y0:
        return

    def put(x: int, y: int, ch: str) -> None:
        if 0 <= y < height and 0 <= x < width and grid[y][x][0] == " ":
            grid[y][x] = (ch, VIEWPORT)

    for x in range(x0 + 1, x1):
        put(x, y0, "─")
        put(x, y1, "─")
    for y in range(y0 + 1, y1):
        put(x0, y, "│")
        put(x1, y, "│")
    for x, y, ch in ((x0, y0, "┌"), (x1, y0, "┐"), (x0, y1, "└"), (x1, y1, "┘")):
        put(x, y, ch)
