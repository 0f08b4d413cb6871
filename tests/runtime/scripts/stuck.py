"""dyngraph's runtime blocked for good, as a deadlock in it would leave it: the agent's
flush lock is taken and never let go, then the script makes events."""
import dyngraph as torch
from dyngraph.capture.tracing import tracer

print("started", flush=True)
agent = tracer.hooks[0].__self__
agent._flush_lock.acquire()
x = torch.ones(3)
for _ in range(100_000):
    x = x * 1.0  # @blocked
print("never here")
