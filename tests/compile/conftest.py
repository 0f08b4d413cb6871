"""A folder the pytest-xdist workers of one session share: ``test_lane.py`` computes its
costly runs there once, for every worker."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A folder every worker of this session sees (one session's, never an older one's)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent
