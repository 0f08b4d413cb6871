"""End the process in the way argv[1] names, after one op and one line of output."""
import os
import signal
import sys
import time

import dyngraph as torch

x = torch.ones(3, requires_grad=True)
y = (x * 2).sum()
print("before", flush=True)
mode = sys.argv[1]
if mode == "exit":
    sys.exit(int(sys.argv[2]))
elif mode == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
elif mode == "osexit":
    os._exit(int(sys.argv[2]))
elif mode == "loop":
    while True:
        pass
elif mode == "sleep":
    time.sleep(60)
elif mode == "interrupt":
    raise KeyboardInterrupt
elif mode == "raise":
    raise ValueError("top-level failure")  # @raise
print("after")
