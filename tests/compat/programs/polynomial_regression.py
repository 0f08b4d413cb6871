"""The classic polynomial-regression example: fit a cubic with a Linear layer on
polynomial features, updating parameters by hand through ``.data`` (the old idiom, with
the deprecated ``add_(alpha, tensor)`` overload) and clipping gradients."""

import warnings

import numpy as np
import torch
import torch.nn.functional as F

RESULTS = {"losses": [], "grad_norms": {}}
POLY_DEGREE = 3
W_TARGET = torch.from_numpy(np.array([[0.5], [-1.2], [0.8]], dtype=np.float32))
B_TARGET = torch.from_numpy(np.array([0.3], dtype=np.float32))


def make_features(x):
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    return x.mm(W_TARGET) + B_TARGET.item()


def get_batch(rng, batch_size=32):
    random = torch.from_numpy(rng.standard_normal(batch_size).astype(np.float32))
    x = make_features(random)
    return x, f(x)


def main():
    fc = torch.nn.Linear(W_TARGET.size(0), 1)
    fc.weight.data.copy_(torch.from_numpy(np.array([[0.1, 0.2, -0.1]], dtype=np.float32)))
    fc.bias.data.fill_(0.0)
    rng = np.random.default_rng(0)
    for batch_idx in range(40):
        batch_x, batch_y = get_batch(rng)
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        if batch_idx == 0:
            RESULTS["grad_norms"] = {n: p.grad.norm().item() for n, p in fc.named_parameters()}
        torch.nn.utils.clip_grad_norm_(fc.parameters(), 5.0)
        for param in fc.parameters():
            if batch_idx % 2:
                param.data -= 0.05 * param.grad
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the deprecated overload, on purpose
                    param.data.add_(-0.05, param.grad)
        RESULTS["losses"].append(loss)


if __name__ == "__main__":
    main()
