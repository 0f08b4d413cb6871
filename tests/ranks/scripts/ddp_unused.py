"""DDP (find_unused_parameters=False) where rank 1 leaves out the auxiliary head at step 3:
its backward reaches no gradient for the auxiliary head's parameters, for which DDP's
all-reduce on rank 0 then waits (without dyngraph: DDP's error on rank 1 at the next
forward, a broken connection on rank 0)."""

import torch
import torch.distributed as dist
import torch.nn as nn


class WithAux(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 8)
        self.head = nn.Linear(8, 2)
        self.aux = nn.Linear(8, 2)

    def forward(self, x, skip_aux):
        h = torch.tanh(self.body(x))
        out = self.head(h)
        if not skip_aux:
            out = out + 0.1 * self.aux(h)
        return out


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(WithAux())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 6):
    x = torch.randn(4, 6)
    loss = model(x, skip_aux=(rank == 1 and step == 3)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()
