"""sqrt is finite at 0 but its gradient there is infinite: the first Inf is in backward."""
import dyngraph as torch

x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
y = torch.sqrt(x)  # @sqrt
loss = (y * 2).sum()  # @loss
loss.backward()
print("grad", x.grad)
