"""Every op in the table against PyTorch: same seeded float32 data into both, compare the
forward (shape, dtype, values) and the gradients of the outputs' sum."""

from __future__ import annotations

import numpy as np
import pytest
from optable import SAMPLES, as_list, make_inputs

import dyngraph as dg

torch = pytest.importorskip("torch")

VALUE_TOL = {"rtol": 1e-5, "atol": 1e-5}
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-4}


def _dtype_name(d) -> str:
    return repr(d).split(".")[-1]


def _inputs(lib, arrays, sample):
    out = []
    for a, spec in zip(arrays, sample.specs, strict=True):
        t = lib.from_numpy(a)  # keeps transposed inputs non-contiguous in both libraries
        if sample.grad and spec.differentiable:
            t.requires_grad_()
        out.append(t)
    return out


def _weighted_total(outs):
    """sum_k (k + 1) * out_k.sum(): pieces of split/unbind must come back in order."""
    total = None
    for k, o in enumerate(outs):
        if o.requires_grad:
            term = o.sum() * (k + 1)
            total = term if total is None else total + term
    return total


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_forward_and_grads_match_pytorch(sample):
    arrays = make_inputs(sample, np.float32)
    dg_in = _inputs(dg, [a.copy() if a.flags.c_contiguous else a.T.copy().T for a in arrays],
                    sample)
    th_in = _inputs(torch, arrays, sample)
    dg_outs = as_list(sample.fn(dg, *dg_in))
    th_outs = as_list((sample.torch_fn or sample.fn)(torch, *th_in))
    assert len(dg_outs) == len(th_outs)
    for d, t in zip(dg_outs, th_outs, strict=True):
        assert tuple(d.shape) == tuple(t.shape)
        assert _dtype_name(d.dtype) == _dtype_name(t.dtype)
        np.testing.assert_allclose(d.detach().numpy(), t.detach().numpy(), equal_nan=True,
                                   **VALUE_TOL)
        assert d.requires_grad == t.requires_grad
    if not sample.grad:
        return
    _weighted_total(dg_outs).backward()
    _weighted_total(th_outs).backward()
    for i, (d, t) in enumerate(zip(dg_in, th_in, strict=True)):
        if not t.requires_grad:
            continue
        assert t.grad is not None and d.grad is not None, f"input {i} got no gradient"
        assert _dtype_name(d.grad.dtype) == _dtype_name(t.grad.dtype)
        np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), err_msg=f"input {i}",
                                   **GRAD_TOL)


def test_grad_fn_names_match_pytorch_for_common_ops():
    x = dg.ones(2, 3, requires_grad=True)
    xt = torch.ones(2, 3, requires_grad=True)
    cases = [lambda L, a: a * 2, lambda L, a: a + 1, lambda L, a: a.sum(),
             lambda L, a: a.mean(), lambda L, a: a.exp(), lambda L, a: a / 2,
             lambda L, a: a.tanh(), lambda L, a: a.relu(), lambda L, a: a[0],
             lambda L, a: L.cat([a, a]), lambda L, a: a.reshape(6)]
    for case in cases:
        ours, theirs = case(dg, x).grad_fn.name(), case(torch, xt).grad_fn.name()
        assert ours == theirs or (ours, theirs) in {
            ("IndexBackward0", "SelectBackward0"),
        }, (ours, theirs)
