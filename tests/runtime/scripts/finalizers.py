"""Garbage that speaks: every training step leaves objects in reference cycles whose
finalizers print, log or warn. The collector runs them wherever its next collection falls,
inside dyngraph's flushes of events included. ``python finalizers.py`` ends in a second.

Arguments: ENGINE (dyngraph or torch), STEPS, KINDS (comma-separated: print, stderr, log,
warn, resource, weakref; default all of them).
"""
import gc
import logging
import sys
import warnings
import weakref

engine = sys.argv[1] if len(sys.argv) > 1 else "dyngraph"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
kinds = (sys.argv[3] if len(sys.argv) > 3 else "print,stderr,log,warn,resource,weakref")
kinds = kinds.split(",")
if engine == "torch":
    import torch
else:
    import dyngraph as torch

logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(message)s")
warnings.simplefilter("always")  # (ResourceWarning included: every one is shown)
log = logging.getLogger("finalizers")


class Cycle:
    """Refers to itself: only the cyclic collector frees it, whenever it next runs."""

    def __init__(self, kind, step):
        self.me = self
        self.kind = kind
        self.step = step
        if kind == "resource":
            self.file = open(__file__)  # never closed: a ResourceWarning when collected
        if kind == "weakref":
            weakref.finalize(self, print, "weakref finalizer", step)

    def __del__(self):
        if self.kind == "print":
            print("finalized", self.step)
        elif self.kind == "stderr":
            print("finalized on stderr", self.step, file=sys.stderr)
        elif self.kind == "log":
            log.warning("finalized by logging %d", self.step)
        elif self.kind == "warn":
            warnings.warn(f"finalized with a warning {self.step}", stacklevel=1)


model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.ones(32, 8)
for step in range(steps):
    for kind in kinds:
        Cycle(kind, step)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
gc.collect()
print("done", steps)
