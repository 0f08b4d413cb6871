"""Default initialisation of the layers and the nn.init functions: values drawn from the
distributions PyTorch uses (no torch needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn


def _uniform_like(values, bound):
    """Values look like U(-bound, bound): inside the bounds, filling them, right spread."""
    values = np.asarray(values, dtype=np.float64).ravel()
    assert np.abs(values).max() <= bound + 1e-7
    assert np.abs(values).max() > 0.9 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.1 * bound
    assert abs(values.mean()) < 0.1 * bound


def test_default_initialisation_follows_torch():
    dg.manual_seed(0)
    fc = nn.Linear(200, 300)
    _uniform_like(fc.weight.detach().numpy(), 1 / math.sqrt(200))
    _uniform_like(fc.bias.detach().numpy(), 1 / math.sqrt(200))
    cell = nn.LSTMCell(20, 64)
    for p in cell.parameters():
        _uniform_like(p.detach().numpy(), 1 / math.sqrt(64))
    emb = nn.Embedding(100, 50, padding_idx=0)
    emb_weight = emb.weight.detach().numpy()
    assert abs(emb_weight[1:].std() - 1) < 0.05 and not emb_weight[0].any()
    ln = nn.LayerNorm(7)
    assert (ln.weight.detach().numpy() == 1).all() and (ln.bias.detach().numpy() == 0).all()
    mha = nn.MultiheadAttention(64, 4)
    _uniform_like(mha.in_proj_weight.detach().numpy(), math.sqrt(6 / (64 + 3 * 64)))
    assert not mha.in_proj_bias.detach().numpy().any()
    assert not mha.out_proj.bias.detach().numpy().any()
    conv = nn.Conv2d(8, 16, 3)
    _uniform_like(conv.weight.detach().numpy(), 1 / math.sqrt(8 * 9))
    for module in (fc, cell, emb, ln, mha, conv):
        assert all(p.dtype == dg.float32 and p.requires_grad for p in module.parameters())


def test_init_functions():
    dg.manual_seed(1)
    w = nn.Parameter(dg.zeros(300, 200))
    nn.init.kaiming_uniform_(w, nonlinearity="relu")
    _uniform_like(w.detach().numpy(), math.sqrt(2) * math.sqrt(3 / 200))
    nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("tanh"))
    _uniform_like(w.detach().numpy(), 5 / 3 * math.sqrt(6 / 500))
    nn.init.normal_(w, 1.0, 0.5)
    assert abs(w.detach().numpy().mean() - 1) < 0.01 and abs(w.detach().numpy().std() - 0.5) < 0.01
    nn.init.kaiming_normal_(w, mode="fan_out")
    assert abs(w.detach().numpy().std() - math.sqrt(2 / (1 + 0.01**2) / 300)) < 0.002
    nn.init.uniform_(w, -2, 3)
    assert w.detach().numpy().min() >= -2 and w.detach().numpy().max() <= 3
    nn.init.trunc_normal_(w, std=2.0, a=-1, b=1)
    assert np.abs(w.detach().numpy()).max() <= 1
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(w.detach().numpy().T @ w.detach().numpy(), np.eye(200), atol=1e-4)
    nn.init.zeros_(w)
    assert not w.detach().numpy().any()
    nn.init.ones_(w)
    assert (w.detach().numpy() == 1).all()
    nn.init.constant_(w, 0.5)
    assert (w.detach().numpy() == 0.5).all()
    assert w.grad is None and w.grad_fn is None
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(dg.zeros(3))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)


def test_more_layers_initialise_like_torch():
    dg.manual_seed(2)
    lstm = nn.LSTM(10, 50, num_layers=2, bidirectional=True)
    for name, p in lstm.named_parameters():
        _uniform_like(p.detach().numpy(), 1 / math.sqrt(50))
        assert name.startswith(("weight_", "bias_"))
    conv = nn.Conv1d(6, 40, 5)
    _uniform_like(conv.weight.detach().numpy(), 1 / math.sqrt(6 * 5))
    _uniform_like(conv.bias.detach().numpy(), 1 / math.sqrt(6 * 5))
    for norm in (nn.BatchNorm2d(5), nn.GroupNorm(1, 5)):
        assert (norm.weight.detach().numpy() == 1).all() and not norm.bias.detach().numpy().any()
    bn = nn.BatchNorm1d(5)
    assert not bn.running_mean.numpy().any() and (bn.running_var.numpy() == 1).all()
    assert bn.num_batches_tracked.numpy().dtype == np.int64 and bn.num_batches_tracked.item() == 0
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64)
    _uniform_like(layer.linear1.weight.detach().numpy(), 1 / math.sqrt(32))
    _uniform_like(layer.self_attn.in_proj_weight.detach().numpy(), math.sqrt(6 / (32 + 96)))
