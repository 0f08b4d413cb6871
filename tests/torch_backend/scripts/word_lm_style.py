# ruff: noqa  (written as the examples it imitates are, not in this project's style)
"""In the style of pytorch/examples word_language_model (RNNModel, batchify, get_batch,
repackage_hidden, clip_grad_norm_, a hand-written SGD update on p.data), on a small
built-in corpus."""
import argparse
import math
import time

import torch
import torch.nn as nn

CORPUS = ("the quick brown fox jumps over the lazy dog . the dog sleeps . "
          "a fox runs and the dog barks . ") * 20


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super(RNNModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, decoded.size(-1))
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--model', default='LSTM')
    parser.add_argument('--lr', type=float, default=5.0)
    parser.add_argument('--clip', type=float, default=0.25)
    parser.add_argument('--bptt', type=int, default=8)
    parser.add_argument('--batches', type=int, default=6)
    parser.add_argument('--seed', type=int, default=1111)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    words = CORPUS.split()
    vocab = sorted(set(words))
    ids = torch.tensor([vocab.index(w) for w in words], dtype=torch.long)
    train_data = batchify(ids, 4)
    model = RNNModel(args.model, len(vocab), 16, 16, 2)
    criterion = nn.NLLLoss()
    model.train()
    total_loss = 0.
    start_time = time.time()
    hidden = model.init_hidden(4)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        if batch >= args.batches:
            break
        data, targets = get_batch(train_data, i, args.bptt)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-args.lr)
        total_loss += loss.item()
        print('| batch {:3d} | loss {:5.2f} | ppl {:8.2f} | {:5.1f} ms'.format(
            batch, loss.item(), math.exp(loss.item()), (time.time() - start_time) * 1000))


if __name__ == '__main__':
    main()
