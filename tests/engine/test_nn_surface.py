"""nn surface real scripts reach for: the full ``nn.Transformer`` (and subclasses of it),
the decoder layers, channel dropout, ``LSTM.flatten_parameters`` and ``nn.modules``."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn

RNG = np.random.default_rng(0)
SRC = RNG.standard_normal((5, 3, 8)).astype(np.float32)
TGT = RNG.standard_normal((4, 3, 8)).astype(np.float32)
OPTIONS = [{}, {"batch_first": True, "norm_first": True, "activation": "gelu"}]


def _run(lib, model, batch_first):
    src, tgt = (lib.tensor(a.transpose(1, 0, 2).copy() if batch_first else a,
                           requires_grad=True) for a in (SRC, TGT))
    mask = model.generate_square_subsequent_mask(4)
    pad = lib.tensor([[False] * 5, [False] * 4 + [True], [False] * 5])
    out = model(src, tgt, tgt_mask=mask, src_key_padding_mask=pad,
                memory_key_padding_mask=pad)
    probe = np.linspace(0, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))
    (out * lib.tensor(probe)).sum().backward()
    norms = {name: p.grad.norm().item() for name, p in model.named_parameters()}
    return out.detach().numpy(), src.grad.numpy(), tgt.grad.numpy(), norms


@pytest.mark.parametrize("options", OPTIONS, ids=["post-norm", "pre-norm batch-first gelu"])
def test_transformer_matches_torch_with_the_same_weights(options):
    torch = pytest.importorskip("torch")
    import warnings

    sizes = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                 dim_feedforward=16, dropout=0.0, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's nested-tensor notice
        theirs = torch.nn.Transformer(**sizes)
    ours = nn.Transformer(**sizes)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    batch_first = options.get("batch_first", False)
    mine, reference = _run(dg, ours, batch_first), _run(torch, theirs, batch_first)
    for a, b in zip(mine[:3], reference[:3], strict=True):
        np.testing.assert_allclose(a, b, atol=2e-6)
    for name, norm in mine[3].items():
        assert norm == pytest.approx(reference[3][name], rel=1e-5, abs=1e-6), name


def test_transformer_initialises_every_matrix_xavier_uniform():
    model = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=32)
    w = model.decoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert model.encoder.norm.weight.tolist() == [1.0] * 16


class WordModel(nn.Transformer):
    """The classic word-language-model example's way: subclass nn.Transformer, keep its
    encoder, replace its decoder by a Linear."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                         num_encoder_layers=nlayers, dropout=0.0)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)
        self.src_mask = None

    def forward(self, src):
        mask = self.generate_square_subsequent_mask(len(src))
        out = self.encoder(self.input_emb(src), mask=mask)
        return nn.functional.log_softmax(self.decoder(out), dim=-1)


def test_code_that_subclasses_transformer_runs_and_trains():
    dg.manual_seed(0)
    model = WordModel(ntoken=11, ninp=8, nhead=2, nhid=16, nlayers=2)
    assert "decoder.weight" in model.state_dict() and "decoder.layers.0.norm3.weight" \
        not in model.state_dict()
    tokens = dg.tensor(RNG.integers(0, 11, (6, 2)))
    opt = dg.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        out = model(tokens[:-1])
        loss = nn.functional.nll_loss(out.reshape(-1, 11), tokens[1:].reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_decoder_layer_alone_matches_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2)
    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0,
                                                            batch_first=True), 2)
    ours.load_state_dict(theirs.state_dict())
    tgt, memory = TGT.transpose(1, 0, 2).copy(), SRC.transpose(1, 0, 2).copy()
    a = ours(dg.tensor(tgt), dg.tensor(memory), tgt_is_causal=True,
             tgt_mask=nn.Transformer.generate_square_subsequent_mask(4))
    b = theirs(torch.tensor(tgt), torch.tensor(memory), tgt_is_causal=True,
               tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4))
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=2e-6)


@pytest.mark.parametrize("layer,shape", [(nn.Dropout1d, (4, 6, 5)), (nn.Dropout1d, (6, 5)),
                                         (nn.Dropout2d, (4, 6, 3, 3))])
def test_channel_dropout_zeroes_whole_channels_and_scales_the_rest(layer, shape):
    dg.manual_seed(1)
    x = dg.ones(*shape, requires_grad=True)
    drop = layer(p=0.25)
    y = drop(x)
    values = y.detach().numpy().reshape(shape[: 2 if len(shape) > 2 else 1] + (-1,))
    assert set(np.unique(values)) == {0.0, np.float32(1 / 0.75)}
    assert (values.min(-1) == values.max(-1)).all()  # one decision per channel
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    drop.eval()
    assert drop(x) is x


def test_dropout1d_refuses_a_4d_input_as_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as ours:
        nn.Dropout1d()(dg.ones(1, 2, 3, 4))
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Dropout1d()(torch.ones(1, 2, 3, 4))
    assert str(ours.value) == str(theirs.value)


def test_lstm_flatten_parameters_is_a_no_op():
    lstm = nn.LSTM(3, 4, num_layers=2)
    before = {k: v.tolist() for k, v in lstm.state_dict().items()}
    assert lstm.flatten_parameters() is None
    assert {k: v.tolist() for k, v in lstm.state_dict().items()} == before


def test_nn_modules_files_the_classes_where_torch_does():
    from dyngraph.nn.modules.loss import _Loss, _WeightedLoss
    from dyngraph.nn.modules.module import Module

    assert Module is nn.Module and issubclass(nn.CrossEntropyLoss, _WeightedLoss)
    assert issubclass(nn.MSELoss, _Loss) and isinstance(nn.LSTM(2, 2), nn.modules.rnn.RNNBase)
    for name in ("Linear", "Conv2d", "LayerNorm", "Embedding", "Dropout2d", "MaxPool2d",
                 "TransformerDecoderLayer", "Sequential", "BatchNorm1d", "ReLU", "Flatten"):
        assert getattr(nn.modules, name) is getattr(nn, name)
    with pytest.raises(AttributeError, match="dyngraph does not implement torch.nn.modules.Fold"):
        nn.modules.Fold  # noqa: B018
