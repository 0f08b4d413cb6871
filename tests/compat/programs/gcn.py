"""A graph convolutional network in the style of pygcn: the normalised adjacency as a
sparse tensor (the legacy torch.sparse.FloatTensor constructor), GraphConvolution layers
with torch.spmm, log-softmax, NLL on the labelled nodes, Adam with weight decay, and an
accuracy on the others."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

RESULTS = {"losses": [], "grad_norms": {}}


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = nn.Parameter(torch.FloatTensor(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.weight.size(1))
        rng = np.random.default_rng(self.weight.size(0))
        self.weight.data.copy_(torch.from_numpy(
            rng.uniform(-stdv, stdv, tuple(self.weight.shape)).astype(np.float32)))
        self.bias.data.copy_(torch.from_numpy(
            rng.uniform(-stdv, stdv, tuple(self.bias.shape)).astype(np.float32)))

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        return torch.spmm(adj, support) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, 0.5, training=False)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def normalized_adjacency(n, rng):
    edges = rng.integers(0, n, (2, 3 * n))
    dense = np.zeros((n, n), np.float32)
    dense[edges[0], edges[1]] = 1.0
    dense = np.maximum(dense, dense.T) + np.eye(n, dtype=np.float32)
    dense /= dense.sum(1, keepdims=True)
    rows, cols = np.nonzero(dense)
    indices = torch.from_numpy(np.vstack((rows, cols)).astype(np.int64))
    values = torch.from_numpy(dense[rows, cols])
    return torch.sparse.FloatTensor(indices, values, torch.Size([n, n]))


def main():
    rng = np.random.default_rng(0)
    n = 30
    adj = normalized_adjacency(n, rng)
    labels = torch.from_numpy(rng.integers(0, 3, n))
    features = torch.from_numpy((rng.standard_normal((n, 8)) +
                                 labels.numpy()[:, None]).astype(np.float32))
    idx_train, idx_test = torch.arange(0, 20), torch.arange(20, n)
    model = GCN(8, 16, 3)
    optimizer = optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    for epoch in range(15):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        if epoch == 0:
            RESULTS["grad_norms"] = {n: p.grad.norm().item() for n, p in model.named_parameters()}
        optimizer.step()
        RESULTS["losses"].append(loss_train.item())
    model.eval()
    output = model(features, adj)
    preds = output[idx_test].max(1)[1]
    RESULTS["test_correct"] = preds.eq(labels[idx_test]).sum().item()


if __name__ == "__main__":
    main()
