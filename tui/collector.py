"""Python's cyclic collector held off while the debugger builds big structures.

Loading a 50,000-node iteration and drawing it make hundreds of thousands of tuples,
lists and nodes that all live on and hold no cycles. With the collector running, its
young collections walked them again and again while they were built: a pass over 70,000
edges took 0.20 s instead of 0.03 s. The exporters (``exporters/batch.py``) and the
trace decoder pause it the same way; it runs again, as usual, afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside. (The collector is one per process: a thread that
    found it enabled enables it again, whatever another thread did meanwhile.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
