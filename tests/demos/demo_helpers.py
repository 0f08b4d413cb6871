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
    """Run demo ``name`` for ``steps`` under ``dyngraph.trace()``.

    Keeps one entry per iteration that ran backward (a demo may run ops afterwards, such
    as the transformer's sampling, which form an iteration of their own).
    """
    main = load_main(name)
    with dyngraph.trace(stats=stats) as trace:
        losses = main(steps, **kwargs)
    trained = [it for it in trace.iterations if it.graph.backward_order][:steps]
    return Recording(
        losses=list(losses),
        keys=[it.structure_key for it in trained],
        op_counts=[sum(1 for n in it.graph.nodes.values() if n.kind == "op") for it in trained],
        events=list(trace.events),
    )

