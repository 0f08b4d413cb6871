"""Suite-wide pytest settings."""

from __future__ import annotations

import os


def pytest_xdist_auto_num_workers(config):  # type: ignore[no-untyped-def]
    """``-n auto``: one worker more than the cores. Most of the suite is child processes
    (scripts under record/check/debug, the debugger in tmux) that wait on each other as
    much as they compute; a third worker on two cores took the suite from 6:00 to 5:23."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1
