"""Helpers for the demo tests: run a demo's ``main`` in-process, optionally recorded."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import dyngraph
from dyngraph import demos


def load_main(name: str) -> Callable[..., list[float]]:
    """The demo's ``main(steps, ...)``, without running its ``__main__`` block."""
    return runpy.run_path(str(demos.path(name)), run_name=f"dyngraph_demo_{name}")["main"]


# BLAS pinned to one thread: on a busy 2-core machine its default threads oversubscribe
# the cores and made the transformer's matmuls 20x slower (44 s instead of 2 s).
ONE_THREAD_ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "MKL_NUM_THREADS": "1"}


def run_script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python ARGS...`` in a fresh interpreter with BLAS on one thread."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=ONE_THREAD_ENV)


def train(name: str, steps: int | None = None, **kwargs) -> tuple[list[float], str]:
    """Run the demo's ``main`` in a fresh interpreter: (losses, what it printed)."""
    call = "main(**kwargs)" if steps is None else f"main({steps}, **kwargs)"
    code = (
        "import json, runpy, sys\n"
        f"main = runpy.run_path(sys.argv[1], run_name='dyngraph_demo')['main']\n"
        f"kwargs = json.loads(sys.argv[2])\n"
        f"losses = {call}\n"
        "print('LOSSES=' + json.dumps(losses))\n"
    )
    result = run_script("-c", code, str(demos.path(name)), json.dumps(kwargs))
    assert result.returncode == 0, result.stderr
    printed, _, losses = result.stdout.rpartition("LOSSES=")
    return json.loads(losses), printed


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

