"""Suite-wide pytest settings: how many workers, and the order that keeps them busy."""

from __future__ import annotations

import compileall
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

# Seconds the slowest test files take on a quiet 2-core machine (estimated: each file's
# share of two whole runs at loads of 4 to 9, with one thread per process and compiled
# bytecode as below, scaled to the 4:45 a quiet run is estimated to take). Only their
# order of size matters: see pytest_collection_modifyitems. A file not listed counts
# as fast; one that has grown slow belongs here.
SLOW_FILES = {
    "tests/torch_backend/test_runtime.py": 35,
    "tests/hostile/test_cli_safety.py": 31,
    "tests/tui/test_app_replay.py": 30,
    "tests/runtime/test_hangs.py": 27,
    "tests/demos/test_training.py": 27,
    "tests/torch_backend/test_true_records.py": 21,
    "tests/torch_backend/test_sync_budget.py": 20,
    "tests/tui/test_app_live.py": 18,
    "tests/tui/test_python_pane.py": 18,
    "tests/runtime/test_cli.py": 16,
    "tests/torch_backend/test_programs.py": 15,
    "tests/compile/test_runtime.py": 15,
    "tests/tui/test_session_ux.py": 15,
    "tests/tui/test_replay_ux.py": 14,
    "tests/compile/test_lane.py": 14,
    "tests/runtime/test_breakpoints.py": 12,
    "tests/tui/test_tmux.py": 12,
    "tests/tui/test_live_ux.py": 12,
    "tests/hostile/test_display_source.py": 11,
    "tests/exporters/test_big_exports.py": 11,
    "tests/hostile/test_display_panes.py": 10,
    "tests/hostile/test_display_cli.py": 10,
    "tests/tui/test_snapshots.py": 9,
    "tests/hostile/test_trace_fuzz.py": 9,
    "tests/exporters/test_export_batch.py": 8,
    "tests/ranks/test_jobs.py": 8,
    "tests/ranks/test_issue_reproduction.py": 8,
    "tests/events/test_collector_pacing.py": 7,
    "tests/runtime/test_inspection.py": 6,
    "tests/runtime/test_process.py": 6,
    "tests/torch_backend/test_debugger_tmux.py": 5,
    "tests/viewer/test_page.py": 5,
    "tests/tui/test_first_picture.py": 5,
}


# One thread each for OpenMP (PyTorch's ops), MKL and OpenBLAS (numpy's), unless the user
# chose: their default is one thread per core, and with one pytest worker per core the
# threads outnumber the cores. OpenMP's threads spin while they wait, so each torch process
# burned CPU for nothing: the LBFGS program of tests/compat took 4.7 s of CPU on two
# threads, 0.33 s on one, at a load of 7. Set here, before any test imports torch; the
# workers and every child inherit it.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# The folders installed as dyngraph and its sub-packages (pyproject.toml's package-dir).
ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = ("dyngraph", "tui", "exporters", "viewer", "demos")


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode for the project's own modules, written as Python writes it by default.

    The suite starts some 1,500 interpreters (the CLI, the scripts it records, the
    debugger's children), each importing dyngraph; where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``, as on the shared 2-core machine) each compiled the
    package anew: 0.15-0.35 s of CPU a process, and each worker rewrote and compiled every
    test module (10 s a worker). The package is compiled here, once, before the workers
    start (a no-op when it is up to date); the workers cache their rewritten test modules."""
    if not hasattr(config, "workerinput"):
        for folder in PACKAGE_FOLDERS:
            if (ROOT / folder).is_dir():
                compileall.compile_dir(ROOT / folder, quiet=1)
    sys.dont_write_bytecode = False


def pytest_xdist_auto_num_workers(config):  # type: ignore[no-untyped-def]
    """``-n auto``: one worker per core, or ``$DYNGRAPH_TEST_WORKERS``. Most of the suite is
    child processes that wait as much as they compute: three workers on two cores took it
    from 6:00 to 5:23, but the debugger's tmux tests, which time key presses (a second
    ctrl+c within a second quits), then failed now and then on a loaded machine."""
    wanted = os.environ.get("DYNGRAPH_TEST_WORKERS", "")
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def balanced_order(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The tests as ``workers`` runs of equal count (xdist's worksteal hands worker i the
    i-th run of the list), each holding an equal share of the slow files, slowest first.

    A worker then ends on fast tests: when one runs dry it steals the tail of another's
    queue, and a tail of fast tests splits evenly, where one slow test left at the end
    (65 s for the compiled var-len demo on a loaded machine) kept the other worker idle.
    A file's tests stay together and in their order: module-scoped fixtures (a recording
    several tests read) run once."""
    files: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        files[file_of(item)].append(item)
    slow = sorted((f for f in files if f in SLOW_FILES), key=lambda f: (-SLOW_FILES[f], f))
    fast = sorted((f for f in files if f not in SLOW_FILES), key=lambda f: (-len(files[f]), f))
    runs: list[list[str]] = [[] for _ in range(workers)]
    seconds = [0.0] * workers
    counts = [0] * workers
    for f in slow:  # the longest first, each to the run with the least work so far
        i = min(range(workers), key=lambda w: (seconds[w], w))
        runs[i].append(f)
        seconds[i] += SLOW_FILES[f]
        counts[i] += len(files[f])
    for f in fast:  # then the many fast files, each to the run with the fewest tests
        i = min(range(workers), key=lambda w: (counts[w], w))
        runs[i].append(f)
        counts[i] += len(files[f])
    return [item for run in runs for f in run for item in files[f]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = balanced_order(items, max(1, workers))
