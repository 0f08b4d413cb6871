"""Two ranks of a DDP job that stop agreeing at iteration 7: a hang, named before it happens.

A small regression model trained with DistributedDataParallel on gloo (CPU). Its hidden
features are centred on the mean over every rank's batch, which it all-reduces over a
process group of its own (as ``nn.SyncBatchNorm`` does over its group), unless the batch
holds an outlier: then it clips them instead. At iteration 7 rank 1's batch holds one
(a sensor glitch), so rank 1 skips the all-reduce and goes on to backward(), where DDP's
all-reduce waits for rank 0, while rank 0 waits in the centring all-reduce for rank 1.
Without dyngraph the job hangs until the process group's timeout; under dyngraph the
ranks compare where they are before either collective, and the divergence is named at
once: the rank, the iteration, the first op that differs and its line. Needs PyTorch.

    dyngraph check --nproc 2 demos/torch_ddp_divergence.py     # named at iteration 7
    dyngraph record --nproc 2 -o ddp.dgtrace demos/torch_ddp_divergence.py
    dyngraph view ddp.rank0.dgtrace                            # the rank x iteration grid
    torchrun --nproc-per-node 2 demos/torch_ddp_divergence.py --timeout 30    # hangs 30 s

Run by itself (``python demos/torch_ddp_divergence.py``) it is a job of one rank: nothing to
diverge from.
"""

import argparse
import os
import socket
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

OUTLIER = 10.0  # a feature this large is a glitch in the data, not a measurement
GLITCH = 7  # the iteration at which rank 1's batch holds one


class BatchCentering(nn.Module):
    """Subtracts the mean feature over every rank's batch (a SyncBatchNorm in miniature)."""

    def __init__(self, group) -> None:
        super().__init__()
        self.group = group

    def forward(self, h):
        mean = h.detach().mean(0)
        dist.all_reduce(mean, group=self.group)
        return h - mean / dist.get_world_size(self.group)


class Regressor(nn.Module):
    def __init__(self, group) -> None:
        super().__init__()
        self.encode = nn.Linear(8, 32)
        self.center = BatchCentering(group)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        h = F.relu(self.encode(x))
        if x.abs().max() > OUTLIER:  # a glitch in the batch: clip, do not centre
            h = h.clamp(max=1.0)
        else:
            h = self.center(h)
        return self.head(h)


def batch(rank: int, step: int, generator: torch.Generator):
    x = torch.randn(32, 8, generator=generator)
    if rank == 1 and step == GLITCH:
        x[3, 2] = 40.0
    y = torch.stack([x[:, :2].sum(1), x[:, 2:4].sum(1), x[:, 4:6].sum(1), x[:, 6:].sum(1)], 1)
    return x, y


def _alone() -> None:
    """Not started by torchrun: be a job of one rank."""
    if "RANK" in os.environ:
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


def main(steps: int = 10, timeout: float = 600.0) -> list[float]:
    _alone()
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts them too)
    model = nn.parallel.DistributedDataParallel(Regressor(dist.new_group()))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    losses = []
    for step in range(1, steps + 1):
        x, y = batch(rank, step, generator)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if rank == 0:
            print(f"step {step:2d}  loss {losses[-1]:.4f}", flush=True)
    dist.destroy_process_group()
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="the process group's timeout in seconds (default 600)")
    args = parser.parse_args()
    main(args.steps, args.timeout)
