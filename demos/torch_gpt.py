"""A small GPT in real PyTorch, trained for a few steps on the built-in text.

The same kind of model as the ``transformer`` demo (token and position embeddings, causal
self-attention blocks, a character head), written against PyTorch itself: ``dyngraph debug``
captures real PyTorch ops, backward nodes (``AddmmBackward0`` ...) and AdamW steps. Needs
PyTorch (``pip install "dyngraph[torch]"``).

    python demos/torch_gpt.py --steps 60
    dyngraph demo torch_gpt
"""

import argparse
import math
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = Path(__file__).with_name("transformer_text.txt")
BLOCK = 32  # context length in characters


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("allowed", torch.tril(torch.ones(BLOCK, BLOCK)), persistent=False)

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=2)
        q = q.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        k = k.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        v = v.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dim // self.heads))
        scores = scores.masked_fill(self.allowed[:length, :length] == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).contiguous().view(batch, length, dim)
        return self.proj(out)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, dim: int = 48, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(BLOCK, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, targets=None):
        x = self.token(ids) + self.position(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


@torch.no_grad()
def sample(model, chars: list[str], prompt: str, length: int) -> str:
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([[index[c] for c in prompt]])
    model.eval()
    for _ in range(length):
        logits, _ = model(ids[:, -BLOCK:])
        probs = F.softmax(logits[0, -1] / 0.8, dim=-1)
        ids = torch.cat([ids, torch.multinomial(probs, 1).view(1, 1)], dim=1)
    model.train()
    return "".join(chars[i] for i in ids[0].tolist())


def main(steps: int = 60, seed: int = 0, batch_size: int = 16, sample_length: int = 60,
         compile: bool = False) -> list[float]:
    torch.manual_seed(seed)
    text = TEXT.read_text()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])

    model = GPT(len(chars))
    step_model = torch.compile(model) if compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    losses = []
    every = max(1, steps // 6)
    for step in range(1, steps + 1):
        starts = torch.randint(len(data) - BLOCK - 1, (batch_size,))
        inputs = torch.stack([data[s : s + BLOCK] for s in starts.tolist()])
        targets = torch.stack([data[s + 1 : s + BLOCK + 1] for s in starts.tolist()])

        _, loss = step_model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % every == 0:
            recent = losses[-every:]
            print(f"step {step:4d}  loss {sum(recent) / len(recent):.4f}")
    if sample_length:
        print("sample:", sample(model, chars, "The graph ", sample_length))
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="training steps (default 60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    args = parser.parse_args()
    main(args.steps, args.seed, compile=args.compile)
