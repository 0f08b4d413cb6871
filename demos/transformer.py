"""A tiny character-level, decoder-only Transformer trained on a built-in text.

Token and position embeddings, two blocks of causal self-attention and an MLP (each
behind a layer norm, with residual connections), then a linear head over the characters.
After training it writes a short sample. Every op of attention is spelled out (``qkv``,
the causal mask, softmax), so stepping through one block shows how attention is built.

    python demos/transformer.py --steps 300
"""

import argparse
import contextlib
import math
from pathlib import Path

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

TEXT = Path(__file__).with_name("transformer_text.txt")
BLOCK = 32  # context length in characters


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        # 1 where a position may look (itself and the past), 0 where it may not. Built in
        # numpy so that no op runs at construction time and lands in iteration 1's graph.
        allowed = np.tril(np.ones((BLOCK, BLOCK), dtype=np.float32))
        self.register_buffer("allowed", torch.from_numpy(allowed))

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=2)
        # (batch, length, dim) -> (batch, heads, length, head_dim)
        q = q.reshape(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        k = k.reshape(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        v = v.reshape(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dim // self.heads))
        future = self.allowed[:length, :length] == 0
        weights = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, length, dim)
        return self.proj(out)


class MLP(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.expand = nn.Linear(dim, 4 * dim)
        self.contract = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.contract(F.gelu(self.expand(x)))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int, dim: int = 32, heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(BLOCK, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.token(ids) + self.position(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def sample(model, chars: list[str], prompt: str, length: int, rng: np.random.Generator) -> str:
    """Continue ``prompt`` one character at a time, drawing from the model's softmax."""
    index = {c: i for i, c in enumerate(chars)}
    ids = [index[c] for c in prompt]
    # dyngraph's one addition to PyTorch's API: with no backward() to end an iteration,
    # mark each character as one, so the debugger shows one forward pass at a time.
    one_character = getattr(torch, "iteration", contextlib.nullcontext)
    model.eval()
    with torch.no_grad():
        for _ in range(length):
            with one_character():
                context = torch.tensor([ids[-BLOCK:]])
                logits = model(context)[0, -1]
                probs = F.softmax(logits / 0.8, dim=0).numpy().astype(np.float64)
            ids.append(int(rng.choice(len(chars), p=probs / probs.sum())))
    model.train()
    return "".join(chars[i] for i in ids)


def main(steps: int = 300, seed: int = 0, batch_size: int = 16, sample_length: int = 120
         ) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    text = TEXT.read_text()
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text], dtype=np.int64)

    model = TinyGPT(len(chars))
    optimizer = optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    every = max(1, steps // 10)
    for step in range(1, steps + 1):
        starts = rng.integers(0, len(data) - BLOCK - 1, batch_size)
        windows = np.stack([data[s : s + BLOCK + 1] for s in starts])
        inputs, targets = torch.from_numpy(windows[:, :-1]), torch.from_numpy(windows[:, 1:])

        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % every == 0:
            print(f"step {step:4d}  loss {np.mean(losses[-every:]):.4f}")
    if sample_length:
        print("sample:", sample(model, chars, "The graph ", sample_length, rng))
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
