"""An MLP trained two steps: prints which parameters' ``.grad`` is the very tensor autograd
computed for them (a post hook on each node notes where each gradient lived), as
``HANDED [names]``. Plain PyTorch hands over every one here."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
x = torch.randn(16, 32)
computed = {}


def seen(grad_inputs, grad_outputs):
    node = torch._C._current_autograd_node()
    for (nxt, _), g in zip(node.next_functions, grad_inputs, strict=True):
        if g is not None and type(nxt).__name__ == "AccumulateGrad":
            computed[id(nxt.variable)] = g.data_ptr()


for _ in range(2):
    model.zero_grad()
    loss = model(x).square().mean()
    todo = [loss.grad_fn]
    while todo:
        node = todo.pop()
        node.register_hook(seen)
        todo += [n for n, _ in node.next_functions
                 if n is not None and type(n).__name__ != "AccumulateGrad"]
    loss.backward()
print("HANDED", sorted(name for name, p in model.named_parameters()
                       if p.grad.data_ptr() == computed[id(p)]))
