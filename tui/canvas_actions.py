"""The graph pane's actions: selecting, stepping between and following nodes, opening and
folding modules, zooming, the overview, clicks.

A mixin of ``graph_canvas.GraphCanvas``: its state (the laid-out entry, the user's opened
and folded modules) is the canvas's.
"""

from __future__ import annotations

from typing import Any

from textual.events import Click

from dyngraph.capture.folding import RUN_PREFIX

from . import canvas_layout as cl
from . import overview as ov


class CanvasActions:
    """A mixin of the graph canvas: what its keys and clicks do."""

    _entry: Any
    _current: int | None
    _upto: int
    _picked: Any
    _adjacency: Any
    _centre_on: int | None
    _overview_rows: Any
    _user: tuple[frozenset[str], frozenset[str]]
    _urgent: bool
    _compact: bool
    _canon: Any
    selected: Any
    overview: Any

    # -- actions -------------------------------------------------------------------------
    def action_pan(self, dx: int, dy: int) -> None:
        self.scroll_to(self.scroll_x + dx, self.scroll_y + dy, animate=False, immediate=True)

    def _select_box(self, box: int) -> None:
        node = self.node_of(box)
        assert self._entry is not None
        self._picked = (self._entry, box)  # before `selected`: its watcher scrolls to it
        self.selected = node
        module = None
        if self._entry is not None and self._entry.scene.boxes[box].kind == "module":
            module = self._entry.scene.view.nodes[box].module
        self.post_message(self.NodeSelected(self, node, module))

    def _drawn(self, box: int) -> bool:
        assert self._entry is not None
        b = self._entry.scene.boxes[box]
        return b.birth < self._upto and b.width > 0

    def action_select_step(self, step: int) -> None:
        if self._entry is None:
            return
        nodes = self._entry.scene.view.nodes
        count = len(self._entry.scene.boxes)
        start = self.box_of(self.selected)  # a copy steps on from its leaf's first copy
        if start is None:
            start = self.box_of(self._current)
        if start is None:
            start = -1 if step > 0 else count
        box = start + step
        # Tab visits graph nodes: the further copies of a shared leaf are skipped.
        while 0 <= box < count and (not self._drawn(box) or nodes[box].primary(box) != box):
            box += step
        if 0 <= box < count:
            self._select_box(box)

    def _adjacent(self) -> tuple[list[list[int]], list[list[int]]]:
        assert self._entry is not None
        if self._adjacency is None or self._adjacency[0] is not self._entry:
            n = len(self._entry.scene.boxes)
            ins: list[list[int]] = [[] for _ in range(n)]
            outs: list[list[int]] = [[] for _ in range(n)]
            for e in self._entry.scene.view.edges:
                ins[e.dst].append(e.src)
                outs[e.src].append(e.dst)
            self._adjacency = (self._entry, ins, outs)
        return self._adjacency[1], self._adjacency[2]

    def action_follow_edge(self, direction: str) -> None:
        # From a consumer to a shared input lands on that consumer's own copy of it.
        box = self._focus_box()
        if box is None:
            return
        ins, outs = self._adjacent()
        for target in (ins if direction == "input" else outs)[box]:
            if self._drawn(target):
                self._select_box(target)
                return

    def action_centre_current(self) -> None:
        """Centre the selected node (the current op when nothing is selected); a node not
        laid out yet is centred as soon as its layout arrives."""
        node = self.selected if self.selected is not None else self._current
        if node is None:
            return
        if self.overview:
            self.action_leave_overview()
        if self.box_of(node) is None:
            self._centre_on = node
            return
        self._centre_on = None
        self._follow(node, centre=True)
        self.refresh()

    def action_toggle_overview(self) -> None:
        """Show the whole graph shrunk to the pane, or go back to the normal view."""
        self.overview = not self.overview
        self._overview_rows = None
        self.refresh()

    def action_leave_overview(self) -> None:
        if self.overview:
            self.overview = False
            self.refresh()

    def action_choose(self) -> None:
        """Enter: open a folded module (call, run or index group) in place; on a node,
        select it."""
        box = self._selected_box()
        if box is None or self._entry is None:
            return
        node = self._entry.scene.view.nodes[box]
        if node.kind == cl.UNIT_KIND and node.module:
            self._open(node.module)
            return
        self._select_box(box)

    def action_toggle_module(self) -> None:
        """z: open a folded box; on a node, fold the module call around it; on a folded
        member of an opened run, fold the run again."""
        box = self._focus_box()
        if box is None or self._entry is None:
            return
        view = self._entry.scene.view
        node = view.nodes[box]
        frame = view.clusters[node.cluster] if node.cluster is not None else None
        if node.kind == cl.UNIT_KIND and node.module:
            if frame is not None and frame.key.startswith(RUN_PREFIX):
                self._close(frame.key)
            else:
                self._open(node.module)
        elif frame is not None:
            self._close(frame.key or frame.path)

    def _open(self, key: str) -> None:
        collapsed, expanded = set(self._user[0]), set(self._user[1])
        collapsed.discard(key)
        expanded.add(key)
        self._set_user(collapsed, expanded)

    def _close(self, key: str) -> None:
        """Fold ``key`` and forget what was opened inside it (opening a call opens what
        is around it, so a member left open would open its run again)."""
        collapsed, expanded = set(self._user[0]), set(self._user[1])
        expanded.discard(key)
        collapsed.add(key)
        tree = self._entry.tree if self._entry is not None else None
        if tree is not None:
            around = set(tree.runs[key].members) if key in tree.runs else {key}
            for k in list(expanded):
                call = k if k in tree.calls else (
                    tree.runs[k].members[0] if k in tree.runs else None)
                if call is not None and around & set(tree.chain(call)):
                    expanded.discard(k)
        self._set_user(collapsed, expanded)

    def _set_user(self, collapsed: set[str], expanded: set[str]) -> None:
        self._user = (frozenset(collapsed), frozenset(expanded))
        self._urgent = True  # the user waits for it: no throttle
        self._relayout()

    def action_zoom(self, step: int) -> None:
        compact = step < 0
        if compact != self._compact:
            self._compact = compact
            self._relayout()

    def _relayout(self) -> None:
        self._match()
        if self._upto < len(self._canon.sigs):
            self._request_layout()
        self._follow(self.selected if self.selected is not None else self._current)
        self.refresh()

    def on_click(self, event: Click) -> None:
        if self._entry is None:
            return
        if self.overview:  # jump to the clicked part of the graph
            region = self.scrollable_content_region
            sx, sy = ov.scale(self._entry.scene, region.width, max(region.height - 1, 1))
            view = self.scrollable_content_region
            self.overview = False
            self.scroll_to(event.x * sx - view.width / 2, event.y * sy - view.height / 2,
                           animate=False, immediate=True)
            self.refresh()
            return
        col, row = event.x + self.scroll_offset.x, event.y + self.scroll_offset.y
        box = self._entry.scene.box_at(col, row, self._upto)
        if box is not None:
            self._select_box(box)

