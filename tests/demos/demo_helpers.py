"""Helpers for the demo tests: run a demo's ``main`` in-process, optionally recorded."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from dataclasses import dataclass, field

import dyngraph
from dyngraph import demos


def load_main(name: str) -> Callable[..., list[float]]:
    """The demo's ``main(steps, ...)``, without running its ``__main__`` block."""
    return runpy.run_path(str(demos.path(name)), run_name=f"dyngraph_demo_{name}")["main"]


@dataclass
class Recording:
    losses: list[float]
    keys: list[str] = field(default_factory=list)  # structure key per finished iteration
    op_counts: list[int] = field(default_factory=list)  # forward ops per finished iteration
    events: list = field(default_factory=list)


def record(name: str, steps: int, stats: str = "none", **kwargs) -> Recording:
    """Run demo ``name`` for ``steps`` under tracing; one entry per iteration with backward.

    Uses ``dyngraph.trace()`` when it exists, else the tracer's subscribe + build_graphs
    (the same events, fewer conveniences).
    """
    main = load_main(name)
    if hasattr(dyngraph, "trace"):
        with dyngraph.trace(stats=stats) as trace:
            losses = main(steps, **kwargs)
        graphs = [it.graph for it in trace.iterations]
        events = list(trace.events)
    else:  # pragma: no cover - only until dyngraph.trace() lands
        from dyngraph.graph import build_graphs
        from dyngraph.tracing import subscribe, tracer

        events = []
        with subscribe(events.append, stats=stats):
            losses = main(steps, **kwargs)
            tracer.flush_iteration()
        graphs = list(build_graphs(events))
    # Only iterations that ran backward: a demo may run ops afterwards (sampling).
    graphs = [g for g in graphs if g.backward_order][:steps]
    return Recording(
        losses=list(losses),
        keys=[g.structure_key for g in graphs],
        op_counts=[sum(1 for n in g.nodes.values() if n.kind == "op") for g in graphs],
        events=events,
    )

