"""A tiny GPT in the shape of nanoGPT's model.py (issue 22's reproduction): each block's
attention takes q, k and v from one projection, ``q, k, v =
self.c_attn(x).split(self.n_embd, dim=2)``, and runs them through
``F.scaled_dot_product_attention(..., is_causal=True)``.

``main(hooks)`` trains two steps; with a list, tensor hooks (PyTorch's own view of each
gradient) append ``(step, block, piece, norm)`` for each of q, k and v. Run as a script it
sets no hooks."""

import torch
import torch.nn as nn
import torch.nn.functional as F

N_EMBD, N_HEAD, N_LAYER, BLOCK_SIZE, VOCAB = 16, 2, 2, 8, 11


class CausalSelfAttention(nn.Module):
    def __init__(self, hooks, index):
        super().__init__()
        self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
        self.c_proj = nn.Linear(N_EMBD, N_EMBD)
        self.n_embd, self.n_head = N_EMBD, N_HEAD
        self.hooks, self.index, self.step = hooks, index, 0

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        if self.hooks is not None:
            for piece, t in zip("qkv", (q, k, v), strict=True):
                t.register_hook(self._hook(piece))
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)

    def _hook(self, piece):
        step = self.step

        def hook(grad):
            self.hooks.append((step, self.index, piece, float(grad.norm())))

        return hook


class Block(nn.Module):
    def __init__(self, hooks, index):
        super().__init__()
        self.ln_1 = nn.LayerNorm(N_EMBD)
        self.attn = CausalSelfAttention(hooks, index)
        self.ln_2 = nn.LayerNorm(N_EMBD)
        self.mlp = nn.Sequential(nn.Linear(N_EMBD, 4 * N_EMBD), nn.GELU(),
                                 nn.Linear(4 * N_EMBD, N_EMBD))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, hooks=None):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, N_EMBD), wpe=nn.Embedding(BLOCK_SIZE, N_EMBD),
            h=nn.ModuleList([Block(hooks, i) for i in range(N_LAYER)]),
            ln_f=nn.LayerNorm(N_EMBD)))
        self.lm_head = nn.Linear(N_EMBD, VOCAB, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1))
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


def main(hooks=None, steps=2):
    torch.manual_seed(0)
    model = GPT(hooks)
    for step in range(steps):
        for block in model.transformer.h:
            block.attn.step = step
        idx = torch.randint(VOCAB, (3, BLOCK_SIZE))
        targets = torch.randint(VOCAB, (3, BLOCK_SIZE))
        loss = model(idx, targets)
        loss.backward()
        with torch.no_grad():  # (plain SGD: building a torch.optim optimizer costs seconds)
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.1)
                p.grad = None
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
