"""In-place ops: optimizer updates under no_grad, PyTorch's leaf error, graph rebasing."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.capture.tracing import subscribe

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."


@pytest.mark.parametrize("update", [
    lambda p: p.add_(1.0), lambda p: p.sub_(p * 0 + 1, alpha=0.5), lambda p: p.mul_(2),
    lambda p: p.div_(2), lambda p: p.zero_(), lambda p: p.fill_(3), lambda p: p.clamp_(0, 1),
    lambda p: p.copy_(dg.zeros(3)), lambda p: p.normal_(), lambda p: p.uniform_(-1, 1),
    lambda p: p.__iadd__(1), lambda p: p.masked_fill_(dg.tensor([True, False, True]), 0.0),
    lambda p: p.__setitem__(0, 5.0),
])
def test_in_place_on_a_leaf_requiring_grad(update):
    p = dg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF):
        update(p)
    with dg.no_grad():
        result = update(p)
    assert result is None or result is p
    assert p.is_leaf and p.requires_grad


def test_leaf_error_matches_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=LEAF):
        torch.ones(2, requires_grad=True).add_(1)


def test_optimizer_style_updates_change_data_in_place_and_emit_no_events():
    p = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (p * p).sum().backward()
    data = p.detach().numpy()
    seen = []
    with subscribe(seen.append, stats="none"), dg.no_grad():
        p.sub_(p.grad, alpha=0.1)
        p.mul_(0.5).add_(1.0)
        p.grad.zero_()
        p -= 0.0
    assert p.detach().numpy() is data  # the same array, changed in place
    np.testing.assert_allclose(p.numpy() if not p.requires_grad else p.detach().numpy(),
                               (np.array([1, 2, 3]) * 0.8) * 0.5 + 1, rtol=1e-6)
    assert [e for e in seen if e.kind == "op"] == []
    np.testing.assert_array_equal(p.grad.numpy(), [0, 0, 0])


def test_in_place_on_a_plain_tensor_outside_no_grad():
    buf = dg.zeros(3)
    buf.add_(dg.ones(3)).mul_(4)
    buf[1] = -1.0
    np.testing.assert_array_equal(buf.numpy(), [4, -1, 4])


def test_in_place_on_a_view_changes_the_base_as_in_pytorch():
    w = dg.zeros(2, 3)
    with dg.no_grad():
        w[0].fill_(1.0)
        w.detach()[1, 2] = 7.0
    np.testing.assert_array_equal(w.numpy(), [[1, 1, 1], [0, 0, 7]])


def test_in_place_on_a_non_leaf_is_recorded_and_differentiates_like_pytorch():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.add_(1)
        y.mul_(x)
        y[0] = 0.0
        y += x
        y.sum().backward()
        return y.detach().numpy().copy(), x.grad.numpy().copy(), y.grad_fn is not None

    y, g, has_fn = run(dg)
    np.testing.assert_allclose(y, [1, 12, 24])
    np.testing.assert_allclose(g, [1, 10, 14])
    assert has_fn
    torch = pytest.importorskip("torch")
    ty, tg, _ = run(torch)
    np.testing.assert_allclose(y, ty)
    np.testing.assert_allclose(g, tg)


def test_setitem_with_a_value_that_requires_grad():
    v = dg.tensor([5.0, 6.0], requires_grad=True)
    buf = dg.zeros(2, 3)
    buf[:, 1] = v
    (buf * dg.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [1, 4])
    assert buf.grad_fn.name() == "CopySlices"


def test_in_place_on_a_tensor_saved_for_backward_raises_pytorchs_error():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = h * h  # saves h
    h.mul_(100)  # h's memory changes: the saved values are gone
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient "
                       r"computation has been modified by an inplace operation: "
                       r"\[torch.FloatTensor \[2\]\], which is output 0 of Mul, is at "
                       r"version 1; expected version 0 instead\."):
        y.sum().backward()


CAST = "result type Float can't be cast to the desired output type Long"
GROW = r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"


@pytest.mark.parametrize("lib", ["dyngraph", "torch"])
def test_in_place_dtype_and_shape_errors_are_pytorchs(lib):
    L = dg if lib == "dyngraph" else pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=CAST):
        L.arange(3).add_(0.5)
    with pytest.raises(RuntimeError, match=GROW):
        L.ones(3).mul_(L.ones(2, 3))
    x = L.ones(3, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match=GROW):
        x += L.ones(2, 3)  # in a graph too: the tensor never grows
    assert tuple(x.shape) == (3,)


def test_fill_and_zero_on_a_non_leaf_keep_it_in_the_graph_with_zero_gradient():
    x = dg.ones(3, requires_grad=True)
    y = x * 2
    y.zero_()
    assert y.requires_grad and y.grad_fn is not None
    z = x * 3
    z.fill_(5.0)
    (y + z * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 5, 5])
    np.testing.assert_allclose(z.detach().numpy(), [5, 5, 5])
