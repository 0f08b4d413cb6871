"""The engine's fast paths (issue 29: the tiny op and the MLP step of ``bench/engine.py``)
compute what the general paths compute: the same values and gradients as PyTorch, the
same errors as ``apply``, named after the same op."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import dyngraph
from dyngraph.debug.describe import locate_exception
from dyngraph.engine.ops import OPS
from dyngraph.engine.tensor import apply


def _chain(lib, n):
    """The bench's tiny-op chain: n alternating add/mul, all sharing one weight."""
    x = lib.ones(4, requires_grad=True)
    w = lib.full((4,), 0.999, requires_grad=True)
    y = x
    for i in range(n):
        y = y * w if i % 2 else y + w
    y.sum().backward()
    return x.grad.detach().numpy(), w.grad.detach().numpy()


def test_a_weight_used_by_a_thousand_ops_gets_pytorchs_gradient():
    # 1,000 contributions reach w: summed in batches of 256 (and a remainder), and the
    # operators take the two-input fast path: both must agree with PyTorch.
    torch = pytest.importorskip("torch")
    for got, want in zip(_chain(dyngraph, 1000), _chain(torch, 1000), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def _mlp_steps(lib, steps=3):
    rng = np.random.default_rng(0)
    sizes = (12, 8, 6, 3)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        params.append(rng.uniform(-0.5, 0.5, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-0.5, 0.5, (fan_out,)).astype(np.float32))
    ps = [lib.tensor(p, requires_grad=True) for p in params]
    x = lib.tensor(rng.standard_normal((5, sizes[0])).astype(np.float32))
    y = lib.tensor(rng.integers(0, sizes[-1], 5))
    losses = []
    for _ in range(steps):
        w1, b1, w2, b2, w3, b3 = ps
        a1 = (x @ w1 + b1).relu()
        a2 = (a1 @ w2 + b2).relu()
        logp = (a2 @ w3 + b3).log_softmax(1)
        loss = -logp.gather(1, y.unsqueeze(1)).mean()
        for p in ps:
            p.grad = None
        loss.backward()
        with lib.no_grad():
            for p in ps:
                p.sub_(p.grad, alpha=0.1)
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in ps]


def test_the_bench_mlp_step_trains_as_pytorch_does():
    torch = pytest.importorskip("torch")
    got_losses, got_params = _mlp_steps(dyngraph)
    want_losses, want_params = _mlp_steps(torch)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    for got, want in zip(got_params, want_params, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_relu_gradient_is_a_select_even_for_infinite_gradients():
    # A NaN input passes its gradient; an infinite or NaN gradient is stopped where the
    # output is 0 (a product with the mask would make NaN there).
    torch = pytest.importorskip("torch")
    values = [1.0, -1.0, float("nan"), 0.0, -0.0, 2.0, -3.0]
    grads = [[1.0, float("inf"), 2.0, float("nan"), -3.0, -1.0, float("-inf")],
             [5.0, 3.0, -2.0, 1.0, 1.0, 4.0, -4.0]]
    for g in grads:
        got, want = [], []
        for lib, out in ((dyngraph, got), (torch, want)):
            x = lib.tensor(values, requires_grad=True)
            x.relu().backward(lib.tensor(g))
            out.append(x.grad.detach().numpy())
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("name, make", [
    ("sub", lambda: (dyngraph.tensor([True]), dyngraph.tensor([False]))),
    ("add", lambda: (dyngraph.ones(3, requires_grad=True), dyngraph.ones(4))),
    ("matmul", lambda: (dyngraph.ones(2, 3), dyngraph.ones(2, 3))),
    ("div", lambda: (dyngraph.ones(2), dyngraph.ones(3))),
])
def test_operator_errors_are_applys_errors_and_name_the_op(name, make):
    symbol = {"sub": "-", "add": "+", "matmul": "@", "div": "/"}[name]
    a, b = make()
    with pytest.raises(Exception) as by_operator:
        eval(f"a {symbol} b")
    with pytest.raises(Exception) as by_apply:
        apply(OPS[name], a, b)
    assert type(by_operator.value) is type(by_apply.value)
    assert str(by_operator.value) == str(by_apply.value)
    assert locate_exception(by_operator.value.__traceback__).op == name
    # nothing of the fast path shows in what the user sees
    shown = "".join(traceback.format_exception(by_operator.value))
    assert "During handling of the above exception" not in shown
