"""A plain DDP training loop on gloo: each rank its own data; rank 0 prints the losses
and, every other step, copies the weights aside (what rank 0 alone does is no divergence).

    torchrun --nproc-per-node 2 ddp_steps.py [--steps N] [--pids DIR] [--pause S]

``--varlen`` gives each rank batches of its own size (another graph, the same parameters:
no divergence), ``--pids DIR`` writes DIR/rankN (this process's pid and its parent's) once it runs,
``--pause S`` sleeps S seconds each step (something to kill while it runs), ``--timeout S``
is the process group's, ``--done DIR`` writes DIR/rankN at the end.
"""

import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--pids", default="")
parser.add_argument("--pause", type=float, default=0.0)
parser.add_argument("--timeout", type=float, default=600.0)
parser.add_argument("--done", default="")
parser.add_argument("--varlen", action="store_true")
args = parser.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 5)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
generator = torch.Generator().manual_seed(rank)
if args.pids:
    with open(os.path.join(args.pids, f"rank{rank}"), "w") as f:
        f.write(f"{os.getpid()} {os.getppid()}\n")
for step in range(args.steps):
    batch = 20 + 3 * rank * (step + 1) if args.varlen else 20
    x = torch.randn(batch, 10, generator=generator)
    loss = F.mse_loss(model(x), torch.zeros(batch, 5))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    metric = loss.detach().clone()
    dist.all_reduce(metric)
    if rank == 0 and step % 2 == 0:  # rank 0 alone keeps a copy of the weights: ops of its own
        snapshot = {k: v.detach().clone() for k, v in model.module.state_dict().items()}
    if rank == 0:
        print(f"step {step} loss {loss.item()!r} mean {metric.item() / dist.get_world_size()!r}",
              flush=True)
    time.sleep(args.pause)
dist.barrier()
if args.done:
    with open(os.path.join(args.done, f"rank{rank}"), "w") as f:
        f.write(f"{step + 1} steps\n")
dist.destroy_process_group()
