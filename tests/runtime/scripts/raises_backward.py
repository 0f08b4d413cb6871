"""A gradient hook that raises in the middle of backward."""
import dyngraph as torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3  # @mul
y.register_hook(lambda g: 1 / 0)  # @hook
z = (y * y).sum()
z.backward()  # @backward
