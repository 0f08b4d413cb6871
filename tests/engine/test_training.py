"""Whole training runs: an MLP, an LSTM over a batch and a small attention block train for
a few hundred steps in dyngraph and in PyTorch from identical initial weights (loaded
from torch's state dict), and their loss curves agree to float32 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _seeded_single_thread():
    torch.manual_seed(0)  # torch draws the initial weights: keep the runs reproducible
    dg.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: threads only oversubscribe the shared cores
    yield
    torch.set_num_threads(threads)


def _same_init(ours, theirs):
    ours.load_state_dict(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def _train(lib, model, optimizer, steps, loss_fn):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(lib, model)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses)


def _assert_curves_match(ours, theirs, rtol=5e-5):
    # Rounding differs op by op (numpy vs ATen kernels), so the curves drift apart slowly;
    # compare point by point, relative to the loss scale.
    assert np.isfinite(ours).all()
    scale = np.maximum(np.abs(theirs), 1e-3)
    worst = float(np.max(np.abs(ours - theirs) / scale))
    assert worst < rtol, f"largest relative loss difference {worst:.2e}"
    assert ours[-1] < 0.5 * ours[0], "the model did not learn"


def test_mlp_classifier_matches_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16)).astype(np.float32)
    y = (x[:, :4].argmax(axis=1)).astype(np.int64)

    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                             nn.Linear(32, 4))

    def loss_fn(lib, model):
        return lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))

    theirs = build(torch)
    ours = build(dg)
    _same_init(ours, theirs)
    l_ours = _train(dg, ours, dg.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9), 300,
                    loss_fn)
    l_theirs = _train(torch, theirs, torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9),
                      300, loss_fn)
    _assert_curves_match(l_ours, l_theirs)


def test_lstm_over_a_batch_matches_torch():
    rng = np.random.default_rng(1)
    seq = rng.standard_normal((12, 8, 3)).astype(np.float32)  # (time, batch, features)
    target = np.cumsum(seq[:, :, 0], axis=0)[-1:].T.astype(np.float32) / 3  # (batch, 1)

    def build(lib):
        nn = lib.nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = nn.LSTMCell(3, 16)
                self.head = nn.Linear(16, 1)

            def forward(self, xs):
                h = c = None
                for t in range(xs.shape[0]):
                    h, c = self.cell(xs[t], None if h is None else (h, c))
                return self.head(h)

        return Model()

    def loss_fn(lib, model):
        return lib.nn.functional.mse_loss(model(lib.tensor(seq)), lib.tensor(target))

    theirs = build(torch)
    ours = build(dg)
    _same_init(ours, theirs)
    # SGD rather than Adam here: once the loss is ~1e-6 Adam's normalised steps amplify
    # rounding differences chaotically, which would test the optimizer, not the LSTM.
    l_ours = _train(dg, ours, dg.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9), 200,
                    loss_fn)
    l_theirs = _train(torch, theirs, torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9),
                      200, loss_fn)
    _assert_curves_match(l_ours, l_theirs)


def test_attention_block_matches_torch():
    rng = np.random.default_rng(2)
    vocab, length, batch, width = 11, 8, 4, 16
    tokens = rng.integers(0, vocab, (batch, length + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    causal = np.triu(np.ones((length, length), dtype=bool), k=1)

    def build(lib):
        nn = lib.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(vocab, width)
                self.pos = nn.Parameter(lib.zeros(length, width))
                self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
                self.norm = nn.LayerNorm(width)
                self.mlp = nn.Sequential(nn.Linear(width, 32), nn.GELU(), nn.Linear(32, width))
                self.out = nn.Linear(width, vocab)

            def forward(self, idx, mask):
                h = self.embed(idx) + self.pos
                a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
                h = self.norm(h + a)
                h = h + self.mlp(h)
                return self.out(h)

        return Block()

    def loss_fn(lib, model):
        logits = model(lib.tensor(inputs), lib.tensor(causal))
        return lib.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                               lib.tensor(targets).reshape(-1))

    theirs = build(torch)
    ours = build(dg)
    _same_init(ours, theirs)
    l_ours = _train(dg, ours, dg.optim.AdamW(ours.parameters(), lr=3e-3), 200, loss_fn)
    l_theirs = _train(torch, theirs, torch.optim.AdamW(theirs.parameters(), lr=3e-3), 200,
                      loss_fn)
    _assert_curves_match(l_ours, l_theirs, rtol=5e-4)


SCRIPT = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.rnn = nn.GRU(8, 16, batch_first=True)
        self.head = nn.Sequential(nn.LayerNorm(16), nn.Dropout(0.0), nn.Linear(16, 3))

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h[:, -1])


model = Net()
if init is not None:
    model.load_state_dict({k: torch.tensor(v) for k, v in init.items()})
initial = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
opt = optim.Adam(model.parameters(), lr=1e-2)
sched = optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
x, y = torch.tensor(tokens), torch.tensor(labels)
losses = []
for step in range(60):
    model.train()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
'''


def test_the_same_script_runs_under_both_imports():
    """The compatibility promise: one script text, run with ``import torch`` and with
    ``import dyngraph as torch`` (weights handed over through a plain numpy dict)."""
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 10, (16, 5))
    labels = tokens.sum(axis=1) % 3

    def run(lib, init):
        namespace = {"torch": lib, "nn": lib.nn, "F": lib.nn.functional, "optim": lib.optim,
                     "tokens": tokens, "labels": labels, "init": init}
        exec(compile(SCRIPT, "<script>", "exec"), namespace)
        return namespace

    theirs = run(torch, None)
    ours = run(dg, theirs["initial"])
    _assert_curves_match(np.array(ours["losses"]), np.array(theirs["losses"]))
    assert ours["accuracy"] == pytest.approx(theirs["accuracy"])
