"""Small PyTorch models and one-step trainers the capture tests share (needs torch)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x)))  # @mlp-forward


class Block(nn.Module):
    """A pre-norm GPT block with the attention spelled out."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = att.masked_fill(torch.tril(torch.ones(t, t)) == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class Tagger(nn.Module):
    """An LSTM over a variable-length sequence (its length is the graph's shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.out = nn.Linear(12, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.emb(ids))
        return self.out(h[:, -1])


def mlp_step(seed: int = 0) -> Callable[[], float]:
    torch.manual_seed(seed)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))

    def step() -> float:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def block_step(seed: int = 0) -> Callable[[], float]:
    torch.manual_seed(seed)
    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(2, 6, 16)

    def step() -> float:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    return step


def lstm_step(seed: int = 0) -> Callable[[int], float]:
    torch.manual_seed(seed)
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def step(length: int) -> float:
        ids = torch.randint(0, 10, (4, length))
        opt.zero_grad()
        loss = F.cross_entropy(model(ids), ids[:, 0] % 3)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def autograd_nodes(root: torch.Tensor) -> list[str]:
    """Every backward node of ``root``'s graph except the leaves' (names, walk order)."""
    seen: set[object] = set()
    stack = [root.grad_fn]
    names = []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ != "AccumulateGrad":
            names.append(type(node).__name__)
        stack.extend(n for n, _ in node.next_functions)
    return names
