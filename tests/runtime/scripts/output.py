"""Output through Python and straight to the fds, interleaved across stdout and stderr."""
import os
import sys

import dyngraph as torch

print("one")
os.write(1, b"two\n")
print("three", file=sys.stderr)
sys.stdout.write("four\n")
os.write(2, b"five\n")
sys.stdout.buffer.write(b"six\n")
x = torch.ones(2) * 3
print("seven", x.sum().item())
print("argv", sys.argv[1:])
print("cwd", os.getcwd())
print("path0", sys.path[0])
print("name", __name__)
import ctypes  # noqa: E402

ctypes.CDLL(None).printf(b"from C printf\n")
