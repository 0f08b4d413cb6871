"""A pause whose hit goes up the channel before the script's thread is done pausing: the
agent's pump thread flushes the BreakpointHit the moment it is queued (as it does, on its
timer, when the script's thread loses the CPU right there under load), and the session's
resume comes back while the script's thread is still on its way to waiting for it."""
import time
from collections import deque

import dyngraph as torch
from dyngraph.capture.tracing import tracer

agent = tracer.hooks[0].__self__


class HitSentAtOnce(deque):
    """The agent's queue of rows, waiting after a hit is queued until it has been sent and
    the session had time to answer it."""

    hit_went_first = False

    def append(self, row):
        super().append(row)
        if row[0] == "breakpoint":
            deadline = time.monotonic() + 5.0
            while row in self and time.monotonic() < deadline:  # the pump's next tick
                time.sleep(0.01)
            HitSentAtOnce.hit_went_first = row not in self
            time.sleep(0.3)  # the session's resume arrives and is read


with agent._flush_lock:  # (no flush is taking rows from the old queue meanwhile)
    agent._queue = HitSentAtOnce(agent._queue)

x = torch.ones(3)
torch.breakpoint("here")
print("resumed", float((x * 2.0).sum()), "- the hit went out first:",
      HitSentAtOnce.hit_went_first)
