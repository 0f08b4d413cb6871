"""The training loop bench/ranks.py times: an MLP trained with SGD, as a DDP job (under
torchrun) or as one process (``--single``: no process group, no DDP). Prints, per rank,
``STEP_MS median`` over the steps after the first ``--warmup``."""

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--warmup", type=int, default=10)
parser.add_argument("--width", type=int, default=256)
parser.add_argument("--single", action="store_true")
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, args.width), nn.ReLU(), nn.Linear(args.width, args.width),
                      nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(),
                      nn.Linear(args.width, 10))
rank = 0
if not args.single:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
generator = torch.Generator().manual_seed(rank)
times = []
for _ in range(args.steps):
    x = torch.randn(64, 128, generator=generator)
    y = torch.randint(0, 10, (64,), generator=generator)
    start = time.perf_counter()
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    times.append(time.perf_counter() - start)
print(f"STEP_MS rank {rank} {statistics.median(times[args.warmup:]) * 1e3:.4f}", flush=True)
if not args.single:
    dist.destroy_process_group()
