"""Sparse COO tensors on dense storage: values, gradients and patterns as PyTorch's for
sparse_coo_tensor, to_sparse, torch.sparse.mm and torch.spmm (a GCN layer's pieces)."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg

INDICES = [[0, 1, 1, 2, 2, 0], [2, 0, 2, 1, 1, 2]]  # (2, 1) twice and (0, 2) twice: summed
VALUES = np.array([3.0, 4.0, 5.0, 1.0, 2.0, -1.0], dtype=np.float32)
DENSE = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)


def _graph(lib, how):
    values = lib.tensor(VALUES, requires_grad=True)
    dense = lib.tensor(DENSE, requires_grad=True)
    adj = lib.sparse_coo_tensor(lib.tensor(INDICES), values, (3, 3))
    if how == "leaf":
        adj = lib.sparse_coo_tensor(lib.tensor(INDICES), lib.tensor(VALUES), (3, 3),
                                    requires_grad=True)
    out = lib.sparse.mm(adj, dense) if how != "spmm" else lib.spmm(adj, dense)
    weights = lib.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    (out * weights).sum().backward()
    grads = {"dense": dense.grad.numpy(), "values": values.grad}
    if how == "leaf":
        grads["adj"] = adj.grad.to_dense().numpy()
    grads["values"] = None if grads["values"] is None else grads["values"].numpy()
    pattern = adj.coalesce()
    return (out.detach().numpy(), adj.detach().to_dense().numpy(), grads,
            pattern.indices().tolist(), pattern.values().detach().tolist(), adj._nnz()
            if how != "leaf" else pattern._nnz())


@pytest.mark.parametrize("how", ["sparse.mm", "spmm", "leaf"])
def test_sparse_products_match_torch(how):
    torch = pytest.importorskip("torch")
    ours, theirs = _graph(dg, how), _graph(torch, how)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_array_equal(ours[1], theirs[1])
    for key, value in theirs[2].items():
        if value is None:
            assert ours[2][key] is None
        else:
            np.testing.assert_allclose(ours[2][key], value, rtol=1e-5, atol=1e-7, err_msg=key)
    assert ours[3:5] == theirs[3:5]


def test_to_sparse_keeps_the_nonzero_pattern_and_a_dense_gradient():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (dg, torch):
        x = lib.tensor([[0.0, 1.5], [2.0, 0.0]], requires_grad=True)
        s = x.to_sparse()
        (s.to_dense() * lib.arange(4.0).reshape(2, 2)).sum().backward()
        results.append((s.is_sparse, s._nnz(), s.indices().tolist(), s.values().tolist(),
                        x.grad.tolist(), str(s.layout).split(".")[-1],
                        str(x.layout).split(".")[-1]))
    assert results[0] == results[1]


def test_hybrid_values_and_legacy_constructor():
    torch = pytest.importorskip("torch")
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    for_both = [(lib.sparse_coo_tensor(lib.tensor([[0, 2, 0]]), lib.tensor(values), (4, 2))
                 .to_dense().tolist(),
                 lib.sparse.FloatTensor(lib.tensor([[1], [0]]), lib.tensor([7.0]),
                                        lib.Size([2, 2])).to_dense().tolist())
                for lib in (dg, torch)]
    assert for_both[0] == for_both[1]


def test_a_gcn_layer_trains_with_spmm():
    rng = np.random.default_rng(1)
    edges = np.array([[0, 1, 2, 3, 1, 2, 0, 3], [1, 0, 3, 2, 2, 1, 3, 0]])
    adj = dg.sparse_coo_tensor(dg.tensor(edges), dg.ones(8) * 0.5, (4, 4))
    features = dg.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    labels = dg.tensor([0, 1, 0, 1])
    weight = dg.nn.Parameter(dg.tensor(rng.standard_normal((3, 2)).astype(np.float32)))
    opt = dg.optim.Adam([weight], lr=0.1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = dg.nn.functional.cross_entropy(dg.spmm(adj, features @ weight), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_bad_sparse_arguments_fail_on_one_line():
    with pytest.raises(RuntimeError, match="out of bounds"):
        dg.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))
    with pytest.raises(RuntimeError, match="number of values"):
        dg.sparse_coo_tensor([[0, 1]], [1.0], (3,))
    with pytest.raises(RuntimeError, match="expected a sparse tensor"):
        dg.ones(2).indices()
