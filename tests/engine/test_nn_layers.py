"""nn layers against PyTorch: identical weights in both (loaded from torch's state dict),
then outputs, input gradients and parameter gradients compared; state-dict keys, repr."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    # Tiny ops: torch's intra-op threads only oversubscribe the shared cores (an LSTM call
    # took 0.5 s with two threads on a busy machine, 2 ms with one).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _flat(out):
    if isinstance(out, tuple):
        return [o for item in out for o in _flat(item)]
    return [] if out is None else [out]


def _convert(a, lib):
    if isinstance(a, tuple):
        return tuple(_convert(x, lib) for x in a)
    if isinstance(a, np.ndarray):
        return lib.tensor(a, requires_grad=a.dtype.kind == "f")
    return a


def compare(ours, theirs, *arrays, kwargs=None, atol=1e-5, rtol=1e-4):
    """Load torch's weights into ours, run both, compare outputs and all gradients."""
    kwargs = kwargs or {}
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(),
                            strict=True):
        assert tuple(a.shape) == tuple(b.shape), name
    ours.load_state_dict(theirs.state_dict())
    ours_in = [_convert(a, dg) for a in arrays]
    theirs_in = [_convert(a, torch) for a in arrays]
    ours_out = _flat(ours(*ours_in, **kwargs.get("ours", {})))
    theirs_out = _flat(theirs(*theirs_in, **kwargs.get("theirs", {})))
    assert len(ours_out) == len(theirs_out)
    loss_ours, loss_theirs = 0, 0
    for o, t in zip(ours_out, theirs_out, strict=True):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol)
        probe = RNG.standard_normal(tuple(t.shape)).astype(np.float32)
        loss_ours = loss_ours + (o * dg.tensor(probe)).sum()
        loss_theirs = loss_theirs + (t * torch.tensor(probe)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for o, t in zip(ours_in, theirs_in, strict=True):
        if isinstance(o, dg.Tensor) and o.requires_grad:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=atol * 10,
                                       rtol=rtol * 10)
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        ref = theirs_params[name].grad
        if ref is None:
            assert p.grad is None or not p.grad.numpy().any(), name
            continue
        np.testing.assert_allclose(p.grad.numpy(), ref.numpy(), atol=atol * 10, rtol=rtol * 10,
                                   err_msg=name)
    return ours_out


def test_linear():
    compare(nn.Linear(4, 3), torch.nn.Linear(4, 3), _randn(2, 5, 4))
    compare(nn.Linear(4, 3, bias=False), torch.nn.Linear(4, 3, bias=False), _randn(4))


def test_embedding_with_padding_idx():
    idx = np.array([[0, 3, 9], [3, 3, 1]])
    compare(nn.Embedding(10, 4, padding_idx=3), torch.nn.Embedding(10, 4, padding_idx=3), idx)


@pytest.mark.parametrize("args", [
    ((6,), {}), (((3, 6),), {"eps": 1e-3}), ((6,), {"elementwise_affine": False}),
    ((6,), {"bias": False}),
])
def test_layer_norm(args):
    shape, kwargs = args
    compare(nn.LayerNorm(*shape, **kwargs), torch.nn.LayerNorm(*shape, **kwargs),
            _randn(2, 3, 6))


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_recurrent_cells(cell):
    ours, theirs = getattr(nn, cell)(5, 4), getattr(torch.nn, cell)(5, 4)
    assert list(ours.state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    x = _randn(3, 5)
    compare(ours, theirs, x)  # zero initial state
    if cell == "LSTMCell":
        compare(ours, theirs, x, (_randn(3, 4), _randn(3, 4)))
        hx_ours = (dg.tensor(_randn(4)), dg.tensor(_randn(4)))
        unbatched = ours(dg.tensor(x[0]), hx_ours)
        ref = theirs(torch.tensor(x[0]), tuple(torch.tensor(h.detach().numpy()) for h in hx_ours))
        np.testing.assert_allclose(unbatched[1].detach().numpy(), ref[1].detach().numpy(),
                                   atol=1e-6)
    else:
        compare(ours, theirs, x, _randn(3, 4))
        compare(ours, theirs, x[0], _randn(4))


def test_rnn_cell_relu_and_no_bias():
    compare(nn.RNNCell(3, 2, nonlinearity="relu", bias=False),
            torch.nn.RNNCell(3, 2, nonlinearity="relu", bias=False), _randn(4, 3), _randn(4, 2))


def _causal(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


@pytest.mark.parametrize("case", ["plain", "causal_bool", "float_mask", "padding", "both",
                                  "no_weights", "per_head", "cross", "seq_first", "unbatched"])
def test_multihead_attention(case):
    e, h, n, length = 8, 2, 3, 5
    batch_first = case != "seq_first"
    ours = nn.MultiheadAttention(e, h, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(e, h, batch_first=batch_first)
    x = _randn(n, length, e) if batch_first else _randn(length, n, e)
    pad = np.zeros((n, length), dtype=bool)
    pad[0, 3:] = True
    pad[2, 4] = True
    both: dict = {}
    if case == "causal_bool":
        both = {"attn_mask": _causal(length)}
    elif case == "float_mask":
        both = {"attn_mask": _randn(length, length)}
    elif case == "padding":
        both = {"key_padding_mask": pad}
    elif case == "both":
        both = {"attn_mask": _causal(length), "key_padding_mask": pad}
    elif case == "no_weights":
        both = {"need_weights": False}
    elif case == "per_head":
        both = {"average_attn_weights": False}
    kw = {"ours": {k: dg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in both.items()},
          "theirs": {k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                     for k, v in both.items()}}
    if case == "cross":
        compare(ours, theirs, x, _randn(n, 4, e), _randn(n, 4, e))
        return
    if case == "unbatched":
        x = x[0]

    # Self-attention: the same tensor as query, key and value.
    class Self(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, t, **k):
            return self.inner(t, t, t, **k)

    class TorchSelf(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, t, **k):
            return self.inner(t, t, t, **k)

    compare(Self(ours), TorchSelf(theirs), x, kwargs=kw)


def test_multihead_attention_parameter_names():
    keys = list(nn.MultiheadAttention(8, 2).state_dict())
    assert keys == list(torch.nn.MultiheadAttention(8, 2).state_dict())
    assert keys == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1}, {"groups": 2, "bias": False},
                                    {"padding": "same", "dilation": 2}])
def test_conv2d(kwargs):
    compare(nn.Conv2d(4, 6, 3, **kwargs), torch.nn.Conv2d(4, 6, 3, **kwargs), _randn(2, 4, 8, 7),
            atol=1e-4)


def test_conv_net_in_sequential():
    def build(m):
        return m.Sequential(m.Conv2d(1, 3, 3, padding=1), m.ReLU(), m.MaxPool2d(2),
                            m.Flatten(), m.Linear(3 * 3 * 3, 4))

    compare(build(nn), build(torch.nn), _randn(2, 1, 6, 7), atol=1e-4)


def test_activation_and_loss_modules():
    x = _randn(4, 5)
    for name, args in [("ReLU", ()), ("Tanh", ()), ("Sigmoid", ()), ("GELU", ()),
                       ("GELU", ("tanh",)), ("Softmax", (1,)), ("LogSoftmax", (-1,)),
                       ("SiLU", ()), ("LeakyReLU", (0.2,)), ("Identity", ()), ("Flatten", ()),
                       ("ELU", (0.5,)), ("Softplus", (2.0,))]:
        compare(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), x)
    drop_ours, drop_theirs = nn.Dropout(0.5).eval(), torch.nn.Dropout(0.5).eval()
    compare(drop_ours, drop_theirs, x)
    t = np.array([0, 4, 2, 1])
    w = np.abs(_randn(5)) + 0.1
    compare(nn.CrossEntropyLoss(weight=dg.tensor(w), label_smoothing=0.1),
            torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=0.1), x, t)
    compare(nn.NLLLoss(ignore_index=4), torch.nn.NLLLoss(ignore_index=4), x, t)
    y = RNG.uniform(size=(4, 5)).astype(np.float32)
    for name in ("MSELoss", "L1Loss", "BCEWithLogitsLoss", "SmoothL1Loss", "HuberLoss"):
        compare(getattr(nn, name)(), getattr(torch.nn, name)(), x, y)
    compare(nn.MSELoss(reduction="none"), torch.nn.MSELoss(reduction="none"), x, y)
    compare(nn.BCELoss(), torch.nn.BCELoss(), RNG.uniform(0.05, 0.95, (4, 5)).astype(np.float32),
            y)


def test_state_dict_keys_match_torch_for_a_nested_model():
    def build(m):
        return m.ModuleDict({
            "embed": m.Embedding(7, 4),
            "blocks": m.ModuleList([m.Sequential(m.LayerNorm(4), m.Linear(4, 4), m.GELU())
                                    for _ in range(2)]),
            "cell": m.LSTMCell(4, 3),
            "conv": m.Conv2d(2, 2, 3),
            "attn": m.MultiheadAttention(4, 2),
            "loss": m.CrossEntropyLoss(weight=m.Parameter(torch.ones(3)).data
                                       if m is torch.nn else dg.ones(3)),
        })

    ours, theirs = build(nn), build(torch.nn)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    assert [k for k, _ in ours.named_modules()] == [k for k, _ in theirs.named_modules()]
    ours.load_state_dict(theirs.state_dict())
    back = theirs.load_state_dict(
        {k: torch.tensor(v.detach().numpy()) for k, v in ours.state_dict().items()}
    )
    assert not back.missing_keys and not back.unexpected_keys


def test_repr_matches_torch():
    def build(m):
        return m.Sequential(m.Linear(2, 3), m.ReLU(), m.Dropout(0.1), m.LayerNorm(3),
                            m.ModuleList([m.GELU(), m.Softmax(dim=-1)]), m.Embedding(5, 2),
                            m.LSTMCell(3, 4), m.Conv2d(1, 2, 3, stride=2, padding=1),
                            m.MaxPool2d(2), m.MultiheadAttention(4, 2), m.CrossEntropyLoss())

    assert repr(build(nn)) == repr(build(torch.nn))



@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kwargs", [
    {}, {"num_layers": 2, "batch_first": True}, {"bidirectional": True, "bias": False},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
])
def test_recurrent_layers(kind, kwargs):
    ours, theirs = getattr(nn, kind)(3, 4, **kwargs), getattr(torch.nn, kind)(3, 4, **kwargs)
    assert repr(ours) == repr(theirs)
    x = _randn(5, 2, 3)  # (time, batch) or (batch, time): both are fine shapes here
    compare(ours, theirs, x)
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h0 = _randn(count, x.shape[1] if not kwargs.get("batch_first") else x.shape[0], 4)
    state = (h0, _randn(*h0.shape)) if kind == "LSTM" else h0
    compare(ours, theirs, x, state)
    compare(ours, theirs, x[:, 0] if not kwargs.get("batch_first") else x[0])  # unbatched


def test_rnn_relu_layer():
    ours, theirs = nn.RNN(3, 4, nonlinearity="relu"), torch.nn.RNN(3, 4, nonlinearity="relu")
    assert repr(ours) == repr(theirs)
    compare(ours, theirs,
            _randn(6, 2, 3))


@pytest.mark.parametrize("kind,shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
                                        ("BatchNorm2d", (4, 3, 2, 5))])
@pytest.mark.parametrize("kwargs", [{}, {"affine": False}, {"momentum": None},
                                    {"track_running_stats": False}, {"bias": False}])
def test_batch_norm_train_and_eval(kind, shape, kwargs):
    ours, theirs = getattr(nn, kind)(3, **kwargs), getattr(torch.nn, kind)(3, **kwargs)
    assert repr(ours) == repr(theirs)
    for _ in range(3):  # training steps move the running statistics
        compare(ours, theirs, _randn(*shape) * 2 + 1)
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(),
                            strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    ours.eval()
    theirs.eval()
    compare(ours, theirs, _randn(*shape))


def test_batch_norm_needs_more_than_one_value_per_channel():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(dg.randn(1, 3))
    assert nn.BatchNorm1d(3).eval()(dg.randn(1, 3)).shape == dg.Size([1, 3])


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "activation": "gelu"},
                                    {"batch_first": True}])
def test_transformer_encoder(kwargs):
    def build(m):
        layer = m.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kwargs)
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(8), enable_nested_tensor=False)

    ours, theirs = build(nn), build(torch.nn)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    np.testing.assert_array_equal(mask.numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(5).numpy())
    pad = np.zeros((3, 5), dtype=bool)
    pad[1, 3:] = True
    shape = (3, 5, 8) if kwargs.get("batch_first") else (5, 3, 8)
    compare(ours, theirs, _randn(*shape), kwargs={
        "ours": {"mask": mask, "src_key_padding_mask": dg.tensor(pad)},
        "theirs": {"mask": torch.tensor(mask.numpy()), "src_key_padding_mask": torch.tensor(pad)}},
        atol=1e-4)


@pytest.mark.parametrize("case", [
    ("AvgPool2d", (2,), {}), ("AvgPool2d", (3,), {"stride": 2, "padding": 1}),
    ("AvgPool2d", (3,), {"stride": 1, "padding": 1, "count_include_pad": False}),
    ("AdaptiveAvgPool2d", ((1, 1),), {}), ("AdaptiveAvgPool2d", ((3, 2),), {}),
    ("AdaptiveAvgPool2d", (4,), {}),
])
def test_average_pooling(case):
    name, args, kwargs = case
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    compare(ours, theirs, _randn(2, 3, 7, 5))
    compare(ours, theirs, _randn(3, 6, 6))


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1}, {"groups": 2, "bias": False},
                                    {"padding": "same", "dilation": 2}])
def test_conv1d(kwargs):
    ours, theirs = nn.Conv1d(4, 6, 3, **kwargs), torch.nn.Conv1d(4, 6, 3, **kwargs)
    assert repr(ours) == repr(theirs)
    compare(ours, theirs, _randn(2, 4, 9), atol=1e-4)
    compare(ours, theirs, _randn(4, 9), atol=1e-4)


@pytest.mark.parametrize("args", [((2, 4), {}), ((4, 4), {"affine": False}), ((1, 4), {}),
                                  ((2, 4), {"bias": False})])
def test_group_norm(args):
    pos, kwargs = args
    ours, theirs = nn.GroupNorm(*pos, **kwargs), torch.nn.GroupNorm(*pos, **kwargs)
    assert repr(ours) == repr(theirs)
    compare(ours, theirs, _randn(3, 4, 5, 2))
    # (4 groups of (3, 4): one value per group, whose gradient is 0 in exact arithmetic
    # and rounding noise times 1/sqrt(eps) = 316 in both libraries: up to ~2e-4 apart,
    # by the inputs the file's shared generator happens to give this test)
    compare(ours, theirs, _randn(3, 4), atol=1e-3)
