"""The debugger pane frames each module call on its own, as the exports do."""

from __future__ import annotations

from dyngraph.tui import canvas_layout as cl

import dyngraph
import dyngraph.nn as nn


def shared_loop(repeats: int) -> dyngraph.capture.graph.Graph:
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(2)])
    with dyngraph.trace() as t:
        h = dyngraph.randn(2, 4)
        for _ in range(repeats):
            for block in blocks:
                h = h + block(h)
        h.sum().backward()
    return t.iterations[0].graph


def test_the_debugger_pane_frames_each_call() -> None:
    canon = cl.Canonical()
    canon.update(shared_loop(2))
    view, _ = cl.build_view(canon.sigs, cl.Collapse(), compact=False)
    labels = sorted(c.label for c in view.clusters)
    assert labels == ["0 #1", "0 #2", "0.0 #1", "0.0 #2", "0.1 #1", "0.1 #2",
                      "1 #1", "1 #2", "1.0 #1", "1.0 #2", "1.1 #1", "1.1 #2"]
    collapsed, _ = cl.build_view(canon.sigs, cl.Collapse(depth=0), compact=False)
    assert sorted(n.label for n in collapsed.nodes if n.kind == "module") == [
        "0 #1 (×2 ops)", "0 #2 (×2 ops)", "1 #1 (×2 ops)", "1 #2 (×2 ops)"]
