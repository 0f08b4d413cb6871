"""Every differentiable op's backward against float64 central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients
from optable import SAMPLES, R, make_inputs

import dyngraph as dg
from dyngraph.engine.ops import OpDef
from dyngraph.engine.tensor import apply

DIFFERENTIABLE = [s for s in SAMPLES if s.grad]


@pytest.mark.parametrize("sample", DIFFERENTIABLE, ids=[s.id for s in DIFFERENTIABLE])
def test_gradient_matches_central_differences(sample):
    arrays = make_inputs(sample, np.float64)
    check_gradients(sample.fn, arrays, sample.specs)


def _exp_with_scaled_grad(scale: float) -> OpDef:
    def forward(a):
        out = np.exp(a)
        return out, lambda g: (g * out * scale,)

    return OpDef("exp_scaled", forward, True, "ExpBackward0")


def test_checker_catches_a_gradient_one_percent_wrong():
    bad = _exp_with_scaled_grad(1.01)
    arrays = [np.random.default_rng(0).standard_normal((2, 3))]
    with pytest.raises(AssertionError):
        check_gradients(lambda L, a: apply(bad, a), arrays, (R(2, 3),))


def test_checker_passes_the_same_op_with_the_right_gradient():
    good = _exp_with_scaled_grad(1.0)
    arrays = [np.random.default_rng(0).standard_normal((2, 3))]
    check_gradients(lambda L, a: apply(good, a), arrays, (R(2, 3),))


def test_checker_catches_gradients_swapped_between_elements():
    def forward(a):
        return a * a, lambda g: ((2 * g * a)[::-1],)

    swapped = OpDef("square_swapped", forward, True, "MulBackward0")
    arrays = [np.array([0.3, -1.2, 2.0])]
    with pytest.raises(AssertionError):
        check_gradients(lambda L, a: apply(swapped, a), arrays, (R(3),))


def test_every_differentiable_registered_op_has_a_sample():
    sampled = {s.op for s in SAMPLES}
    # Ops reached only through others (index_put via __setitem__) are tested in test_inplace.
    exempt = {"index_put", "floor_divide", "div_trunc", "remainder", "ceil", "trunc",
              "isfinite", "bitwise_not", "eq", "ne"}
    from dyngraph.engine.ops import OPS
    from dyngraph.engine.ops_nn import NN_OPS  # noqa: F401  (the nn engineer's ops are tested there)

    engine_ops = {name for name, op in OPS.items() if op.forward.__module__ in (
        "dyngraph.engine.ops", "dyngraph.engine.ops_reduce", "dyngraph.engine.ops_shape")}
    # sort and topk are functions over argsort + gather, sampled under their own names.
    assert engine_ops - sampled - exempt == set()
    assert {"sort", "topk"} <= sampled


def test_float64_inputs_stay_float64():
    x = dg.tensor([1.0, 2.0], dtype=dg.float64, requires_grad=True)
    y = (x * 2).exp().sum()
    y.backward()
    assert y.dtype == dg.float64 and x.grad.dtype == dg.float64
