"""The graph pane's drawing: ``render_line`` composes one row of the prepared scene
(``raster``), with each box's style (kind, current, selected, NaN/Inf, gradient fill), the
gradient strips of run boxes, the status or legend line, and the overview.

A mixin of ``graph_canvas.GraphCanvas``: its state (the laid-out entry, the stats, the
selection) is the canvas's.
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip

from . import canvas_layout as cl
from . import overview as ov
from . import raster


class CanvasPainting:
    """A mixin of the graph canvas: what it draws."""

    _entry: Any
    _styles: dict[object, Style]
    _current: int | None
    _upto: int
    _overview_rows: Any
    _scale: Any
    selected: Any
    overview: Any

    # -- drawing -------------------------------------------------------------------------
    def _style(self, key: object) -> Style:
        style = self._styles.get(key)
        if style is None:
            if isinstance(key, tuple) and key[0] == "strip":
                style = (self.get_component_rich_style("graph-canvas--nonfinite")
                         if key[1] == "!" else Style(color=key[1]))
            elif isinstance(key, tuple) and key[0] == "label":
                inner = self._style(key[1])
                style = inner if inner.bgcolor is not None else inner + Style(reverse=True)
            elif isinstance(key, tuple):
                # Overlays add their attributes (reverse, underline...); the colour comes
                # from the most telling one: NaN/Inf red beats selection beats the kind.
                kind, current, selected, nonfinite, *fill = key
                style = self.get_component_rich_style(f"graph-canvas--{kind}")
                if fill and fill[0] is not None:
                    from dyngraph.exporters.colors import font_for

                    style += Style(bgcolor=fill[0], color=font_for(fill[0]))
                colour = None
                for name, on in (("current", current), ("selected", selected),
                                 ("nonfinite", nonfinite)):
                    if on:
                        o = self.get_component_rich_style(f"graph-canvas--{name}")
                        style += Style(bold=o.bold, italic=o.italic, underline=o.underline,
                                       reverse=o.reverse)
                        colour = o.color if name != "current" else colour
                if colour is not None:
                    style += Style(color=colour)
            else:
                style = self.get_component_rich_style(f"graph-canvas--{key}")
            self._styles[key] = style
        return style

    def _nonfinite(self, box: int) -> bool:
        """Whether the node(s) a box draws hold NaN/Inf (``box`` is a primary box)."""
        self._sync_stats()
        return self._stats.nonfinite(box)

    def _box_style(self, box: int) -> object:
        if self._entry is None:
            return ("op", False, False, False)
        first = self._entry.scene.view.nodes[box].primary(box)
        return (self._entry.scene.boxes[box].kind, first == self.box_of(self._current),
                first == self.box_of(self.selected), self._nonfinite(first), self._fill(first))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        status = self.status
        if status and y == self.scrollable_content_region.height - 1 and self._entry is not None:
            text = raster.fit(status, max(width, 1)).ljust(width)[:width]
            return Strip([Segment(text, self._style("status"))], width)
        if y == self.scrollable_content_region.height - 1 and self._entry is not None and (
                not status):
            info = self._info_line(width)
            if info is not None:
                return info
        if self.overview and self._entry is not None:
            return self._overview_line(y, width)
        entry = self._entry
        if entry is None:
            message = ""
            if y == 0:
                message = status or ("(empty graph)" if not self._canon.sigs else "")
            return Strip([Segment(raster.fit(message, max(width, 1)).ljust(width)[:width],
                                  self._style("status") if message else Style())], width)
        current, selected = self.box_of(self._current), self.box_of(self.selected)
        flags = self._nonfinite
        boxes, nodes = entry.scene.boxes, entry.scene.view.nodes

        def box_style(b: int) -> object:  # every copy of a shared leaf is styled alike
            first = nodes[b].primary(b)
            return (boxes[b].kind, first == current, first == selected, flags(first),
                    self._fill(first))

        chars, styles = raster.compose_row(entry.scene, y + scroll_y, scroll_x, width,
                                           self._upto, box_style)
        self._paint_strips(y + scroll_y, scroll_x, chars, styles)
        segments, start = [], 0
        for i in range(1, width + 1):
            if i == width or styles[i] != styles[start]:
                style = styles[start]
                segments.append(Segment("".join(chars[start:i]),
                                        self._style(style) if style is not None else None))
                start = i
        return Strip(segments, width)

    def _paint_strips(self, row: int, x0: int, chars: list[str],
                      styles: list[object]) -> None:
        """A run box's bottom border is its gradient strip: ▀ in each member's colour."""
        entry = self._entry
        if entry is None or entry.scene.view.compact or not 0 <= row < entry.scene.height:
            return
        nodes, boxes = entry.scene.view.nodes, entry.scene.boxes
        for c0, _c1, part, bi in entry.scene.row_boxes[row]:
            if part != 2 or not nodes[bi].members or boxes[bi].birth >= self._upto:
                continue
            for k, fill in enumerate(self._strip(bi)):
                col = c0 + 1 + k - x0
                if fill is not None and 0 <= col < len(chars):
                    chars[col] = "▀"
                    styles[col] = ("strip", fill)

    def _info_line(self, width: int) -> Strip | None:
        """The layout note, or the gradient legend as coloured swatches, or None."""
        if self._entry is None:
            return None
        if self._entry.note:
            text = raster.fit(self._entry.note, max(width, 1)).ljust(width)[:width]
            return Strip([Segment(text, self._style("status"))], width)
        legend = self.legend()
        if not legend:
            return None
        from dyngraph.exporters.colors import font_for

        status = self._style("status")
        segments = [Segment(" ‖grad‖ ", status)]
        for fill, text in legend:
            segments.append(Segment(f" {text} ", Style(bgcolor=fill, color=font_for(fill))))
        used = sum(len(s.text) for s in segments)
        if used > width:
            return None
        segments.append(Segment(" " * (width - used), status))
        return Strip(segments, width)

    def _overview_line(self, y: int, width: int) -> Strip:
        assert self._entry is not None
        height = self.scrollable_content_region.height - 1  # the last is the info line
        key = (id(self._entry), self._upto, width, height, self.scroll_offset,
               self.box_of(self._current), self.box_of(self.selected), self._stats_key(),
               self._scale[0])
        if self._overview_rows is None or self._overview_rows[0] != key:
            entry = self._entry
            current, selected = self.box_of(self._current), self.box_of(self.selected)
            nodes = entry.scene.view.nodes

            def style_of(b: int) -> object:
                return self._box_style(b)

            def on_top(b: int) -> bool:
                return nodes[b].primary(b) in (current, selected)

            view = self.scrollable_content_region
            port = (round(self.scroll_x), round(self.scroll_y), view.width, view.height)
            def filled(b: int) -> bool:
                return self._fill(nodes[b].primary(b)) is not None

            def label(b: int) -> str:  # a folded box by its module's name, a node by op
                node = nodes[b]
                if node.kind == cl.UNIT_KIND:
                    return node.label.split(" (×")[0].rstrip()
                return node.label.split(" ")[0]

            rows = ov.overview(entry.scene, width, max(height, 1), self._upto, style_of,
                               on_top, filled, port, label)
            self._overview_rows = (key, rows)
        rows = self._overview_rows[1]
        if y >= len(rows):
            return Strip.blank(width)
        segments, start, cells = [], 0, rows[y]
        for i in range(1, width + 1):
            if i == width or cells[i][1] != cells[start][1]:
                style = cells[start][1]
                text = "".join(c for c, _ in cells[start:i])
                segments.append(Segment(text, self._style(style) if style is not None
                                        else None))
                start = i
        return Strip(segments, width)

    def _follow(self, node_id: int | None, centre: bool = False) -> None:
        box = self._selected_box() if node_id is not None and node_id == self.selected else (
            self.box_of(node_id))
        if box is None or self._entry is None:
            return
        b = self._entry.scene.boxes[box]
        region = Region(b.left, b.top, b.width, b.height)
        if not centre:
            # Leave the view alone while the box is in it; once it leaves, bring it to the
            # middle rather than to the edge, so what comes next is in view too.
            width, height = self.scrollable_content_region.size
            view = Region(round(self.scroll_x), round(self.scroll_y), width, height)
            centre = not view.contains_region(region)
        self.scroll_to_region(region, animate=False, center=centre, spacing=None, force=True,
                              immediate=True)
        if centre:
            # Again once the screen is refreshed: a picture that just grew gets its
            # scrollbars then, and a box centred against the edge is clamped again with
            # them (else it stopped a scrollbar's width short of where it does otherwise).
            self.call_after_refresh(self.scroll_to_region, region, animate=False,
                                    center=True, spacing=None, force=True, immediate=True)

    def watch_selected(self, old: int | None, new: int | None) -> None:
        self._follow(new)
        self.refresh()

