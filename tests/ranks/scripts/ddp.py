"""Issue 26's "ordinary gloo DDP script of 15 lines" (its loop), then one of each
collective the issue names: torchrun --nproc-per-node 2 ddp.py"""
import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(10 * rank + step))
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"rank {rank} step {step} loss {loss.item()!r}", flush=True)
t = torch.arange(4.0) + rank
dist.all_reduce(t)
dist.broadcast(t, src=0)
parts = [torch.empty(4) for _ in range(world)]
dist.all_gather(parts, t)
out = torch.empty(2)
dist.reduce_scatter(out, [torch.full((2,), float(r)) for r in range(world)])
dist.barrier()
dist.destroy_process_group()
