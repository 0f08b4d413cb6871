"""Tensor creation, dtypes, attributes, repr, conversions, and the clear-error promise."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dyngraph as dg


def test_default_dtypes_follow_pytorch():
    assert dg.tensor([1.0, 2.0]).dtype == dg.float32
    assert dg.tensor([1, 2]).dtype == dg.int64
    assert dg.tensor([True]).dtype == dg.bool
    assert dg.tensor(np.zeros(2)).dtype == dg.float64  # numpy's float64 is kept
    assert dg.Tensor([1, 2]).dtype == dg.float32  # the Tensor constructor makes floats
    assert dg.arange(3).dtype == dg.int64 and dg.arange(0, 1, 0.25).dtype == dg.float32
    assert dg.full((2,), 3).dtype == dg.int64 and dg.full((2,), 3.0).dtype == dg.float32
    assert dg.full((2,), True).dtype == dg.bool


def test_creation_functions_shapes_dtypes_and_requires_grad():
    cases = {
        "zeros": dg.zeros(2, 3), "ones": dg.ones((2, 3)), "empty": dg.empty(2, 3),
        "full": dg.full((2, 3), 1.5), "rand": dg.rand(2, 3), "randn": dg.randn(2, 3),
        "zeros_like": dg.zeros_like(dg.ones(2, 3)), "ones_like": dg.ones_like(dg.ones(2, 3)),
        "randn_like": dg.randn_like(dg.ones(2, 3)), "full_like": dg.full_like(dg.ones(2, 3), 2),
    }
    for name, t in cases.items():
        assert t.shape == (2, 3) and t.dtype == dg.float32, name
    assert dg.randint(0, 5, (4,)).dtype == dg.int64
    assert dg.randint(5, (2, 2)).shape == (2, 2)
    assert dg.eye(2, 3).numpy().tolist() == [[1, 0, 0], [0, 1, 0]]
    np.testing.assert_allclose(dg.linspace(0, 1, 3).numpy(), [0, 0.5, 1])
    assert dg.zeros(2, dtype=dg.float64, requires_grad=True).requires_grad
    assert dg.ones(2, dtype=dg.int64).dtype == dg.int64
    assert sorted(dg.randperm(5).tolist()) == [0, 1, 2, 3, 4]
    r = dg.rand(1000)
    assert 0 <= r.min().item() and r.max().item() < 1


def test_manual_seed_makes_random_tensors_reproducible():
    dg.manual_seed(3)
    a = dg.randn(4)
    dg.manual_seed(3)
    assert dg.equal(a, dg.randn(4))


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.zeros(3, dtype=np.float32)
    shared, copied = dg.from_numpy(a), dg.tensor(a)
    a[0] = 1
    assert shared[0].item() == 1 and copied[0].item() == 0


def test_attributes_and_methods():
    x = dg.arange(6.0).reshape(2, 3)
    assert x.shape == (2, 3) and x.size() == (2, 3) and x.size(1) == 3 and x.size(-1) == 3
    assert x.dim() == 2 and x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert repr(x.shape) == "dyngraph.Size([2, 3])" and x.shape.numel() == 6
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert x[1, 2].item() == 5.0 and isinstance(x[1, 2].item(), float)
    assert isinstance(x.numpy(), np.ndarray)
    assert x.T.shape == (3, 2) and x.t().shape == (3, 2) and x.mT.shape == (3, 2)
    assert x.is_floating_point() and not dg.arange(2).is_floating_point()
    assert x.device == "cpu" and x.contiguous() is x
    assert [row.tolist() for row in x] == [[0, 1, 2], [3, 4, 5]]
    assert float(dg.tensor(2.5)) == 2.5 and int(dg.tensor(3)) == 3
    assert [10, 20, 30][dg.tensor(1)] == 20
    assert f"{dg.tensor(1.23456):.2f}" == "1.23"


def test_conversions_and_their_gradients():
    x = dg.tensor([1.5, -2.5], requires_grad=True)
    d = x.double()
    assert d.dtype == dg.float64 and d.grad_fn.name() == "ToCopyBackward0"
    (d * 2).sum().backward()
    assert x.grad.dtype == dg.float32
    assert x.long().dtype == dg.int64 and not x.long().requires_grad
    assert x.to(dg.float64).dtype == dg.float64 and x.to("cpu") is x
    assert x.float() is x and x.detach().type_as(d).dtype == dg.float64
    assert dg.arange(3).bool().dtype == dg.bool
    with pytest.raises(NotImplementedError, match="CPU only"):
        x.to("cuda")


def test_integer_arithmetic_promotes_like_pytorch():
    i = dg.arange(3)
    assert (i / 2).dtype == dg.float32 and (i * 2.5).dtype == dg.float32
    assert (i + 1).dtype == dg.int64 and i.sum().dtype == dg.int64
    assert i.sqrt().dtype == dg.float32
    assert (dg.ones(2, dtype=dg.float64) * i[:2]).dtype == dg.float64
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        i.mean()


def test_repr_looks_like_pytorch():
    assert repr(dg.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(dg.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(dg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(dg.ones(2, dtype=dg.float64)) == "tensor([1., 1.], dtype=dyngraph.float64)"
    assert repr(dg.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    assert repr(dg.ones(2, requires_grad=True) * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"
    assert repr(dg.tensor(True)) == "tensor(True)"


def test_scalar_conversion_errors_match_pytorch():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        dg.ones(2).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one"):
        bool(dg.ones(2))
    with pytest.raises(RuntimeError, match="Use tensor.detach\\(\\).numpy\\(\\) instead"):
        dg.ones(2, requires_grad=True).numpy()


def test_op_errors_name_the_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\)"):
        dg.ones(2, 3) @ dg.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        dg.ones(2, 3).reshape(4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        dg.ones(2, 3).sum(2)
    with pytest.raises(RuntimeError, match="cat"):
        dg.cat([dg.ones(2, 3), dg.ones(2, 2)])


def test_missing_pieces_raise_errors_naming_them():
    with pytest.raises(AttributeError, match="dyngraph does not implement Tensor.stft"):
        dg.ones(2).stft(4)
    with pytest.raises(AttributeError, match="dyngraph does not implement torch.fft"):
        dg.fft  # noqa: B018
    with pytest.raises(AttributeError, match="does not implement torch.autograd.Function"):
        dg.autograd.Function  # noqa: B018
    with pytest.raises(NotImplementedError, match="create_graph"):
        (dg.ones(1, requires_grad=True) * 2).sum().backward(create_graph=True)
    with pytest.raises(NotImplementedError, match="view\\(dtype\\)"):
        dg.ones(2).view(dg.int64)
    with pytest.raises(NotImplementedError, match="round\\(decimals"):
        dg.ones(2).round(decimals=1)
    with pytest.raises(NotImplementedError, match="CPU only"):
        dg.device("cuda")
    assert not dg.cuda.is_available()


def test_max_min_return_values_and_indices():
    x = dg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    values, indices = x.max(1)
    assert values.tolist() == [5, 7] and indices.tolist() == [1, 0]
    assert x.min(dim=0).indices.tolist() == [0, 1, 0]
    assert dg.max(x).item() == 7 and dg.max(x, dg.zeros(2, 3)).shape == (2, 3)


def test_max_ties_share_the_gradient_evenly_like_pytorch():
    x = dg.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 0.5, 0.5])


def test_deepcopy_of_a_leaf_and_refusal_for_a_non_leaf():
    x = dg.ones(2, requires_grad=True)
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.detach().numpy() is not x.detach().numpy()
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


def test_numpy_arrays_on_the_left_defer_to_tensor_operators():
    x = dg.ones(2, requires_grad=True)
    y = np.array([2.0, 3.0], dtype=np.float32) * x
    assert isinstance(y, dg.Tensor) and y.requires_grad
    assert isinstance(np.float32(2) + x, dg.Tensor)


def test_where_with_one_argument_and_comparison_with_none():
    idx = dg.where(dg.tensor([0.0, 1.0, 2.0]) > 0.5)
    assert idx[0].tolist() == [1, 2]
    assert (dg.ones(1) == None) is False  # noqa: E711


def test_compatibility_promise_tensor_level_training_loop():
    """The same tensor-level script runs unchanged on dyngraph and PyTorch."""

    def train(torch, x_np, y_np, w_np):
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
        w = torch.tensor(w_np, requires_grad=True)
        b = torch.zeros(1, requires_grad=True)
        losses = []
        for _ in range(50):
            pred = (x @ w + b).tanh()
            loss = ((pred - y) ** 2).mean() + 0.01 * w.abs().sum()
            if w.grad is not None:
                w.grad.zero_()
                b.grad = None
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
                b.sub_(b.grad, alpha=0.1)
            losses.append(loss.item())
        return losses, w.detach().numpy().copy()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = np.tanh(x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32))
    w0 = rng.standard_normal(4).astype(np.float32) * 0.1
    losses, w = train(dg, x, y, w0)
    assert losses[-1] < losses[0] / 2
    torch = pytest.importorskip("torch")
    t_losses, t_w = train(torch, x, y, w0)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w, t_w, rtol=1e-4, atol=1e-5)


def test_multinomial_and_bernoulli_sample_from_the_given_weights():
    dg.manual_seed(0)
    draws = dg.multinomial(dg.tensor([0.0, 1.0, 3.0]), 4000, replacement=True)
    counts = np.bincount(draws.numpy(), minlength=3)
    assert counts[0] == 0 and 0.7 < counts[2] / 4000 < 0.8
    rows = dg.multinomial(dg.ones(2, 5), 5)  # without replacement: a permutation per row
    assert rows.shape == (2, 5) and all(sorted(r) == [0, 1, 2, 3, 4] for r in rows.tolist())
    with pytest.raises(RuntimeError, match="without replacement"):
        dg.multinomial(dg.ones(3), 4)
    with pytest.raises(RuntimeError, match="element < 0"):
        dg.multinomial(dg.tensor([1.0, -1.0]), 1)
    coin = dg.bernoulli(dg.full((4000,), 0.25))
    assert coin.dtype == dg.float32 and 0.2 < coin.mean().item() < 0.3
