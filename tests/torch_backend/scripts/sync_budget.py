"""Counts dyngraph's own host reads of torch tensors while it captures three small models.

Every reading method of ``torch.Tensor`` (``item``, ``tolist``, ``bool``, ``float``,
``int``, ``index``, ``cpu``, ``numpy``) is wrapped; a call counts when code of the
dyngraph package made it. After every training step the script notes the count, and at
the end prints one line:
``READS {"mlp": [reads in steps 2 and 3], "mlp_first": reads in step 1, ...}``.

The models: an MLP, a GPT block (pre-norm attention with a causal mask, GELU MLP) and an
LSTM cell unrolled over inputs of a different length each step.
"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import dyngraph

PACKAGE = os.path.dirname(os.path.abspath(dyngraph.__file__)) + os.sep
HERE = os.path.abspath(__file__)
reads = {"n": 0, "depth": 0}


def by_dyngraph() -> bool:
    """Did dyngraph's own code make this read? (Not the script's, and not torch's own
    code that dyngraph runs for the script: an optimizer's ``step`` reads its step count.)"""
    return sys._getframe(2).f_code.co_filename.startswith(PACKAGE)


def counted(name):
    original = getattr(torch.Tensor, name)

    def read(self, *args, **kwargs):
        # (a read of the script's passes through the capture's mode, which calls this
        # again: only the outermost call is the read)
        if reads["depth"]:
            return original(self, *args, **kwargs)
        reads["depth"] += 1
        try:
            if by_dyngraph():
                reads["n"] += 1
            return original(self, *args, **kwargs)
        finally:
            reads["depth"] -= 1

    read.__name__ = name
    setattr(torch.Tensor, name, read)


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads) \
            .permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        att = att.masked_fill(torch.ones(t, t).tril() == 0, float("-inf"))
        x = x + self.proj((F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def mlp_steps():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 8), torch.randint(0, 4, (5,))
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        yield loss


def gpt_steps():
    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, target = torch.randn(2, 6, 16), torch.randn(2, 6, 16)
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        yield loss


def lstm_steps():
    cell, head = nn.LSTMCell(4, 8), nn.Linear(8, 1)
    opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-2)
    for length in (3, 6, 4):  # a different graph every step
        xs = torch.randn(length, 2, 4)
        h = c = torch.zeros(2, 8)
        opt.zero_grad()
        for x in xs:
            h, c = cell(x, (h, c))
        loss = head(h).pow(2).mean()
        loss.backward()
        opt.step()
        yield loss


WORKLOADS = {"mlp": mlp_steps, "gpt": gpt_steps, "lstm": lstm_steps}


if __name__ == "__main__":
    for method in ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "cpu",
                   "numpy"):
        counted(method)
    torch.manual_seed(0)
    found = {}
    for name, steps in WORKLOADS.items():
        per_step = []
        for loss in steps():
            before = reads["n"]
            print(f"{name} loss {loss.item():.4f}")  # (the script's own read: not counted)
            assert reads["n"] == before
            per_step.append(before)
        found[name] = [b - a for a, b in zip(per_step, per_step[1:], strict=False)]
        found[name + "_first"] = per_step[0]
        reads["n"] = 0
    print("READS " + json.dumps(found))
