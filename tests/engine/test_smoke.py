import numpy as np

import dyngraph as torch


def test_square_sum_backward_gives_twice_x():
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])
