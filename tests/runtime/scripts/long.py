"""Many small ops (several seconds of them): something to pause while it runs."""
import dyngraph as torch

x = torch.ones(4, requires_grad=True)
for step in range(200_000):
    y = (x * 1.0001).sum()  # @loop
    if step % 100 == 99:
        y.backward()
print("finished")
