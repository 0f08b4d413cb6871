"""A virtual list drawn line by line: the base of the timeline and the source view.

Only the visible rows are ever rendered (``render_line``), so a list of 100,000 rows costs
the same per frame as one of 100 (a DataTable of 20k rows took 2.8 s to fill, see NOTES).
A subclass says how many rows there are and what one row looks like.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip


class LineList(ScrollView, can_focus=True, inherit_bindings=False):
    """Rows with a keyboard cursor (``cursor_row``) and one marked row (``mark_row``)."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Select", show=False),
    ]
    COMPONENT_CLASSES = {"linelist--cursor", "linelist--mark"}
    DEFAULT_CSS = """
    LineList { background: $surface; }
    LineList > .linelist--cursor { background: $accent 40%; }
    LineList:focus > .linelist--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: bold;
    }
    LineList > .linelist--mark { background: $warning 30%; text-style: bold; }
    """

    class Chosen(Message):
        """The user picked ``row`` (enter or click)."""

        def __init__(self, sender: LineList, row: int) -> None:
            super().__init__()
            self.sender = sender
            self.row = row

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.row_count = 0
        self.cursor_row = 0
        self.mark_row = -1
        self._width = 0
        self._stale = True

    # -- for subclasses ------------------------------------------------------------------
    def row_text(self, row: int) -> Text:
        raise NotImplementedError

    def set_rows(self, count: int, width: int = 0) -> None:
        """Declare ``count`` rows (``width`` cells at most) and redraw."""
        width = max(width, self._width)
        if (count, width) != (self.row_count, self._width) or self.virtual_size.height != count:
            # A new virtual size costs a layout pass: only when it really changed.
            self.row_count = count
            self._width = width
            self.virtual_size = Size(width, count)
            self.cursor_row = min(self.cursor_row, max(count - 1, 0))
        self._stale = True  # the rows' contents may have changed: redraw all

    def set_mark(self, row: int, *, scroll: bool = True, move_cursor: bool = True) -> None:
        """Mark ``row`` (the current one), move the cursor there and keep it in view."""
        old = (self.mark_row, self.cursor_row, self.scroll_offset.y)
        self.mark_row = row
        if move_cursor and row >= 0:
            self.cursor_row = row
        if scroll and row >= 0:
            self.scroll_to_row(row)
            # Right after set_rows the scroll limits may not know the new size yet.
            self.call_after_refresh(self._keep_in_view, row)
        if old[2] == self.scroll_offset.y and not self._stale:
            # Same scroll position: only the rows that changed look need drawing again.
            for y in {old[0], old[1], self.mark_row, self.cursor_row}:
                if y >= 0:
                    self.refresh_line(y)
        else:
            self.refresh()
        self._stale = False

    def _keep_in_view(self, row: int) -> None:
        if row == self.mark_row:
            self.scroll_to_row(row)

    def scroll_to_row(self, row: int) -> None:
        height = max(self.scrollable_content_region.height, 1)
        top = self.scroll_offset.y
        if not top <= row < top + height:
            self.scroll_to(y=max(row - height // 3, 0), animate=False, immediate=True)

    # -- drawing -------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if row >= self.row_count:
            return Strip.blank(width, base)
        text = self.row_text(row)
        style: Style | None = None
        if row == self.mark_row:
            style = self.get_component_rich_style("linelist--mark")
        segments = list(text.render(self.app.console))
        if row == self.cursor_row and self.has_focus:
            # The focused cursor paints over the row's own colours (as DataTable's does):
            # blue or magenta text on the cursor's background was hard to read.
            cursor = self.get_component_rich_style("linelist--cursor")
            segments = list(Segment.apply_style(segments, post_style=cursor))
            style = cursor if style is None else style + cursor
        strip = Strip(segments, text.cell_len)
        if style is not None:
            strip = strip.apply_style(style)
        strip = strip.crop_extend(scroll_x, scroll_x + width, base + style if style else base)
        return strip.simplify()

    def on_resize(self) -> None:
        # A new size may have pushed the current line out of view (a terminal made smaller).
        if self.mark_row >= 0:
            self.call_after_refresh(self._keep_in_view, self.mark_row)

    def _on_focus(self, event) -> None:  # cursor highlight only shows while focused
        self.refresh()

    def _on_blur(self, event) -> None:
        self.refresh()

    # -- actions -------------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(self.size.height - 1, 1))

    def action_edge(self, end: int) -> None:
        self.move_cursor(self.row_count - 1 if end else 0)

    def move_cursor(self, row: int) -> None:
        if self.row_count == 0:
            return
        self.cursor_row = max(0, min(row, self.row_count - 1))
        self.scroll_to_row(self.cursor_row)
        self.refresh()

    def action_choose(self) -> None:
        if 0 <= self.cursor_row < self.row_count:
            self.post_message(self.Chosen(self, self.cursor_row))

    def on_click(self, event: Click) -> None:
        row = self.scroll_offset.y + event.y
        if 0 <= row < self.row_count:
            self.cursor_row = row
            self.refresh()
            self.post_message(self.Chosen(self, row))

