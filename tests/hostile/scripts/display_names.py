"""One training step whose names, output and exception are hostile text (see test_display_*).

A submodule and a parameter are named as Rich markup (``[/enc]``), another module as a
terminal escape that would set the window title (ESC ] 0 ; pwned BEL), a third with
characters a terminal draws as nothing or uses to reorder the line (``enc`` and a zero
width space, a right-to-left mark: its weight showed as ``enc.weight``). The script
prints all three kinds to stdout. ``--raise markup|shape|escape`` ends it with an exception
whose message is markup (``KeyError('[/]')``), square brackets meant literally, or escapes.
``--nan`` makes the first NaN appear inside the module named ``[/enc]``.
"""

import sys

import numpy as np

import dyngraph as torch
from dyngraph import nn

MARKUP = "[/enc]"
ESCAPE = "\x1b]0;pwned\x07"
INVISIBLE = "enc\u200b\u200f"  # a zero width space, a right-to-left mark (issue 23)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        setattr(self, MARKUP, nn.Linear(4, 3))
        setattr(self, ESCAPE, nn.Linear(3, 2))
        setattr(self, INVISIBLE, nn.Linear(2, 2, bias=False))
        self.register_parameter(MARKUP + "w", nn.Parameter(torch.ones(2)))

    def forward(self, x):
        h = getattr(self, MARKUP)(x).tanh()
        out = getattr(self, ESCAPE)(h) * getattr(self, MARKUP + "w")
        return getattr(self, INVISIBLE)(out)


torch.manual_seed(4)  # (six parameters: the five largest gradients, in the summary, are these)
net = Net()
if "--nan" in sys.argv:
    getattr(net, MARKUP).weight.data.fill_(float("nan"))
x = torch.tensor(np.ones((2, 4), dtype=np.float32))
loss = net(x).sum()
loss.backward()
print(f"expected shape [batch, seq] {ESCAPE}\x1b[2J", sys.argv[1:])
print(f"invisible {INVISIBLE}.weight \u2066isolated\u2069 \u061c")

RAISES = {"markup": KeyError("[/]"), "shape": ValueError("expected shape [batch, seq]"),
          "escape": RuntimeError(ESCAPE + "\x1b[2J")}
if "--raise" in sys.argv:
    raise RAISES[sys.argv[sys.argv.index("--raise") + 1]]
