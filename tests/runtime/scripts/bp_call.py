"""dyngraph.breakpoint() between two ops."""
import dyngraph
import dyngraph as torch

x = torch.ones(3, requires_grad=True)
y = x * 2  # @before
dyngraph.breakpoint("after the scale")  # @call
z = y.sum()  # @after
print("done")
