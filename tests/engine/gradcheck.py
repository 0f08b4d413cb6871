"""A float64 central-difference gradient checker (torch.autograd.gradcheck's tolerances)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from optable import Spec, as_list

import dyngraph as dg

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3


def _float_outputs(outs: list[Any]) -> list[Any]:
    return [o for o in outs if o.detach().numpy().dtype.kind == "f"]


def check_gradients(fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                    specs: Sequence[Spec], eps: float = EPS, atol: float = ATOL,
                    rtol: float = RTOL) -> None:
    """Raise AssertionError unless the engine's gradients of ``fn(dyngraph, *inputs)``
    match central differences.

    The scalar differentiated is ``sum(out * probe)`` with a fixed random probe per output,
    so a gradient that is wrong in one element, or swapped between elements, shows.
    """
    wrt = [i for i, s in enumerate(specs) if s.differentiable]
    leaves = [dg.from_numpy(a).requires_grad_() if i in wrt else dg.from_numpy(a)
              for i, a in enumerate(arrays)]
    outs = _float_outputs(as_list(fn(dg, *leaves)))
    rng = np.random.default_rng(1)
    probes = [rng.standard_normal(o.detach().numpy().shape) for o in outs]
    total = None
    for o, p in zip(outs, probes, strict=True):
        if o.requires_grad:
            term = (o * dg.from_numpy(p)).sum()
            total = term if total is None else total + term
    assert total is not None, "no output requires grad"
    total.backward()

    def scalar() -> float:
        with dg.no_grad():
            values = _float_outputs(as_list(fn(dg, *[dg.from_numpy(a) for a in arrays])))
        pairs = zip(values, probes, strict=True)
        return float(sum((v.detach().numpy() * p).sum() for v, p in pairs))

    for i in wrt:
        a = arrays[i]
        numeric = np.zeros(a.shape)
        for idx in np.ndindex(a.shape):
            old = a[idx]
            a[idx] = old + eps
            plus = scalar()
            a[idx] = old - eps
            minus = scalar()
            a[idx] = old
            numeric[idx] = (plus - minus) / (2 * eps)
        grad = leaves[i].grad
        analytic = np.zeros(a.shape) if grad is None else grad.detach().numpy()
        assert analytic.shape == a.shape, f"input {i}: grad shape {analytic.shape} != {a.shape}"
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")
