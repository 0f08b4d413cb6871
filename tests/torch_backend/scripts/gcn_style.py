"""A graph convolutional network in the style of pytorch/examples' gcn (and gat): a sparse,
symmetrically normalised adjacency built with `torch.diag(v).to_sparse()` after `1 / degree`
and `v[v == inf] = 0`, sparse matrix products, Adam, NLL loss. Synthetic Cora-like data."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
nodes, features, classes = 120, 16, 4
x = (torch.rand(nodes, features) < 0.2).float()
x[:3] = 0  # nodes without features: their scale is 1 / 0
labels = torch.randint(0, classes, (nodes,))
edges = torch.randint(0, nodes, (2, 300))

scale = 1 / x.sum(1)
scale[scale == float("inf")] = 0
x = torch.diag(scale).to_sparse() @ x

adjacency = torch.sparse_coo_tensor(edges, torch.ones(edges.shape[1]), (nodes, nodes))
adjacency = torch.eye(nodes) + adjacency
degree = torch.sqrt(1 / torch.sum(adjacency, dim=1))
degree[degree == float("inf")] = 0
degree = torch.diag(degree).to_sparse()
adjacency = (degree @ adjacency @ degree).to_sparse()


class GraphConv(nn.Module):
    def __init__(self, inputs, outputs):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(inputs, outputs))
        nn.init.xavier_uniform_(self.kernel)

    def forward(self, h, adj):
        return torch.sparse.mm(adj, h @ self.kernel)


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gc1 = GraphConv(features, 8)
        self.gc2 = GraphConv(8, classes)

    def forward(self, h, adj):
        h = F.dropout(F.relu(self.gc1(h, adj)), 0.5, self.training)
        return F.log_softmax(self.gc2(h, adj), dim=1)


model = GCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
train = torch.arange(80)
for epoch in range(4):
    model.train()
    optimizer.zero_grad()
    loss = F.nll_loss(model(x, adjacency)[train], labels[train])
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")
model.eval()
with torch.no_grad():
    accuracy = (model(x, adjacency)[80:].argmax(1) == labels[80:]).float().mean()
print(f"accuracy {accuracy.item():.4f}")
