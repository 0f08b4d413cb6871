"""Suite-wide pytest settings."""

from __future__ import annotations

import os


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
