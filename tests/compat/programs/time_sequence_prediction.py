"""The time-sequence-prediction example: two LSTMCells predict sine waves, in float64,
trained with LBFGS and a closure, then asked to continue the waves into the future."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

RESULTS = {"losses": [], "grad_norms": {}}


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 8)
        self.lstm2 = nn.LSTMCell(8, 8)
        self.linear = nn.Linear(8, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 8, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 8, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 8, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 8, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def main():
    T, L, N = 20, 24, 6
    x = np.empty((N, L), np.int64)
    x[:] = np.array(range(L)) + np.random.default_rng(2).integers(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype("float64")
    input = torch.from_numpy(data[2:, :-1])
    target = torch.from_numpy(data[2:, 1:])
    test_input = torch.from_numpy(data[:2, :-1])
    test_target = torch.from_numpy(data[:2, 1:])
    seq = Sequence()
    seq.double()
    rng = np.random.default_rng(0)
    for p in seq.parameters():
        p.data.copy_(torch.from_numpy(rng.uniform(-0.35, 0.35, tuple(p.shape))))
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4, line_search_fn="strong_wolfe")
    for _ in range(3):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            if not RESULTS["grad_norms"]:
                RESULTS["grad_norms"] = {n: p.grad.norm().item()
                                         for n, p in seq.named_parameters()}
            RESULTS["losses"].append(loss.item())
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            pred = seq(test_input, future=5)
            loss = criterion(pred[:, :-5], test_target)
            RESULTS.setdefault("test", []).append(loss.item())


if __name__ == "__main__":
    main()
