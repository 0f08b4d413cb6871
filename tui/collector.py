"""Python's cyclic collector held off while the debugger builds big structures.

Loading a 50,000-node iteration and drawing it make hundreds of thousands of tuples,
lists and nodes that all live on and hold no cycles. With the collector running, its
young collections walked them again and again while they were built: a pass over 70,000
edges took 0.20 s instead of 0.03 s. The exporters and the trace decoder pause it the same
way (``dyngraph.capture.collector``, which counts the pauses of all threads); it runs again, as
usual, afterwards.
"""

from __future__ import annotations

import gc
import threading

from dyngraph.capture.collector import pause, paused, resume

__all__ = ["FREEZE_ABOVE", "Hold", "paused"]

FREEZE_ABOVE = 50_000  # events: a trace this big is frozen once loaded (see ``Hold``)


class Hold:
    """The collector off while a trace loads (the decoding thread's events, the model's
    graph: all of it lives on), and, for a big trace, its objects frozen once loaded
    (``gc.freeze``): the next full collection would otherwise walk a million of them,
    likely during the first key the user presses; they live as long as the app anyway.
    """

    def __init__(self) -> None:
        self._released = threading.Lock()  # taken by the one release that counts
        pause()

    def release(self, events: int = 0) -> None:
        """Collect as usual again (once; later calls, from any thread, do nothing)."""
        if not self._released.acquire(blocking=False):
            return
        if events > FREEZE_ABOVE:
            gc.freeze()
        resume()
