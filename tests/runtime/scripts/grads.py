"""Large gradients: d(loss)/d(y) is about 2e6 per element, the gradient of w about 2e9."""
import dyngraph as torch

w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
for _step in range(2):
    y = w * 1000.0  # @scale
    loss = (y * y).sum()  # @square
    loss.backward()
