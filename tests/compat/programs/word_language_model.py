"""The word-language-model example, shrunk: a corpus batchified into columns, truncated
backpropagation through time with detached hidden states, gradient clipping, learning-
rate annealing, and both of the example's models: an LSTM with tied weights and a
TransformerModel that subclasses nn.Transformer. Dropout is 0 so both engines agree."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

RESULTS = {"losses": [], "grad_norms": {}}
TEXT = ("the cat sat on the mat and the dog sat on the log while the bird sang in the "
        "tree and the cat watched the bird and the dog watched the cat").split()


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.drop = nn.Dropout(0.0)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight  # tied weights
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return x + self.pe[: x.size(0), :]


class TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                         num_encoder_layers=nlayers, dropout=0.0)
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src, has_mask=True):
        if has_mask and (self.src_mask is None or self.src_mask.size(0) != len(src)):
            self.src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        return F.log_softmax(self.decoder(output), dim=-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        values = rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)
        p.data.copy_(torch.from_numpy(values))


def train(model, data, ntokens, lr, key):
    bptt = 5
    hidden = model.init_hidden(4) if isinstance(model, RNNModel) else None
    for i in range(0, data.size(0) - 1, bptt):
        inputs, targets = get_batch(data, i, bptt)
        model.zero_grad()
        if hidden is not None:
            hidden = repackage_hidden(hidden)
            output, hidden = model(inputs, hidden)
        else:
            output = model(inputs).view(-1, ntokens)
        loss = F.nll_loss(output, targets)
        loss.backward()
        if key not in RESULTS["grad_norms"]:
            RESULTS["grad_norms"][key] = {n: p.grad.norm().item()
                                          for n, p in model.named_parameters()}
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        RESULTS["losses"].append(loss.item())


def main():
    vocab = sorted(set(TEXT))
    ids = torch.tensor([vocab.index(w) for w in TEXT], dtype=torch.int64)
    data = batchify(ids, 4)
    ntokens = len(vocab)
    models = {"lstm": RNNModel(ntokens, 12, 12, 2),
              "transformer": TransformerModel(ntokens, 12, 2, 16, 2)}
    for key, model in models.items():
        numpy_init(model, 0)
        lr = 5.0 if key == "lstm" else 0.5
        for _ in range(3):
            train(model, data, ntokens, lr, key)
            lr /= 2.0


if __name__ == "__main__":
    main()
