"""Infs a program makes on purpose from data, and the memory of torch.empty before it is
written: `dyngraph check` must pass this. With --nan-from-data it makes a NaN from data,
and with --read-unwritten its loss reads memory nobody wrote: check must catch both.
--dyngraph runs it on dyngraph's own engine."""

import sys

if "--dyngraph" in sys.argv:
    import dyngraph as torch
    import dyngraph.nn as nn
else:
    import torch
    import torch.nn as nn

torch.manual_seed(0)
n = 5
mask = torch.log(torch.tril(torch.ones(n, n)))  # word_language_model's causal mask
if "--nan-from-data" in sys.argv:
    mask = torch.log(torch.tril(torch.ones(n, n)) - 0.5)  # @nan-from-data
x = torch.randn(20, 3)
degree = (x > 0.5).float().sum(1)  # some rows have none
inv = 1 / degree  # pytorch/examples gcn and gat ...
inv[inv == float("inf")] = 0  # ... and the next line
model = nn.Linear(3, n)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    k = torch.empty(4, 3, 3)  # a Runge-Kutta buffer (torchdiffeq): written before it is read
    k.data.fill_(float("nan"))  # (what its memory may hold, made sure of)
    k.data[..., 0] = x[:4]
    first = k * 1.0  # reads the whole buffer while two slots are still unwritten
    k.data[..., 1] = x[4:8]
    k.data[..., 2] = x[8:12]
    h = (k * torch.tensor([0.2, 0.3, 0.5])).sum(-1) + first[..., 0]
    scores = model(torch.cat([x * inv[:, None], h])) + mask[step]
    rows = torch.empty(3, n)  # torchdiffeq's solution: filled row by row, row 0 first
    rows.data.fill_(float("nan"))
    rows[0] = mask[step].clamp(min=-1.0)
    for i in (1, 2):
        rows[i] = scores[i].softmax(-1)  # (these writes are ops of the graph)
    loss = scores.softmax(-1).max(-1).values.mean() + rows.mean() * 1e-3
    if "--read-unwritten" in sys.argv:
        never = torch.empty(3)
        never.data.fill_(float("nan"))
        loss = loss + never.sum()  # @read-unwritten
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}")
