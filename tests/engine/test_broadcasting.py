"""Property tests: binary ops on any pair of broadcastable shapes give gradients summed back
to each input's shape, equal to PyTorch's (or to central differences without torch)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import dyngraph as dg

OPS = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (b * b + 1),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "pow": lambda L, a, b: (a * a + 1) ** b,
}
SHAPES = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


def _grads(L, fn, arrays, probe):
    ins = [L.from_numpy(a.copy()).requires_grad_() for a in arrays]
    out = fn(L, *ins)
    (out * L.from_numpy(probe)).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ins]


@settings(max_examples=25, deadline=None)
@given(shapes=SHAPES, op=st.sampled_from(sorted(OPS)), seed=st.integers(0, 2**16))
def test_broadcast_gradients(shapes, op, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes.input_shapes]  # float64
    probe = rng.standard_normal(shapes.result_shape)
    out, grads = _grads(dg, OPS[op], arrays, probe)
    assert out.shape == shapes.result_shape
    for g, a in zip(grads, arrays, strict=True):
        assert g.shape == a.shape and g.dtype == np.float64
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t_out, t_grads = _grads(torch, OPS[op], arrays, probe)
        np.testing.assert_allclose(out, t_out, rtol=1e-10, atol=1e-12)
        for g, tg in zip(grads, t_grads, strict=True):
            np.testing.assert_allclose(g, tg, rtol=1e-9, atol=1e-12)
        return
    # Without torch: central differences on the first input.
    eps, a = 1e-6, arrays[0]
    for idx in np.ndindex(a.shape):
        old = a[idx]
        vals = []
        for x in (old + eps, old - eps):
            a[idx] = x
            with dg.no_grad():
                o = OPS[op](dg, *[dg.from_numpy(v) for v in arrays])
            vals.append(float((o.detach().numpy() * probe).sum()))
        a[idx] = old
        assert grads[0][idx] == pytest.approx((vals[0] - vals[1]) / (2 * eps), rel=1e-3,
                                              abs=1e-5)
