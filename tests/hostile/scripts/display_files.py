"""Ops whose source file is whatever the arguments name (see test_display_source.py).

Each argument is used as the file name of a compiled line of code, so the trace (or the
live debugger) points the source pane at ``/dev/zero``, a FIFO or a file that is no source.
"""

import sys

import dyngraph as torch

x = torch.ones(3, requires_grad=True)
for name in sys.argv[1:]:
    exec(compile("y = (x * 2).sum()", name, "exec"))
