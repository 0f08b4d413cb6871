"""Named regression tests: each was a silently wrong answer or a leaked numpy error,
found by hand or by the differential test (test_differential.py), and fixed.

Expected values and exception types are PyTorch 2.13's, written out so these run without it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn.functional as F


def _values(t):
    return t.detach().numpy().tolist()


# -- dim=0 is a dim, not "every dim" --------------------------------------------------------
def test_amax_dim0_reduces_only_dim0():
    x = dg.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    assert _values(x.amax(dim=0)) == [4.0, 5.0, 3.0]
    assert _values(dg.amin(x, 0)) == [1.0, 0.0, 2.0]
    assert _values(x.amax(dim=(0,), keepdim=True)) == [[4.0, 5.0, 3.0]]
    assert x.amax().item() == 5.0


def test_amax_dim0_gradient_goes_to_each_columns_max():
    x = dg.tensor([[1.0, 5.0], [4.0, 0.0]], requires_grad=True)
    x.amax(0).sum().backward()
    assert _values(x.grad) == [[0.0, 1.0], [1.0, 0.0]]


def test_empty_dim_tuple_reduces_every_dim_as_in_pytorch():
    x = dg.ones(2, 3)
    assert x.sum(dim=()).item() == 6.0
    assert x.mean(dim=[]).item() == 1.0
    assert x.amax(dim=()).shape == ()


def test_repeated_or_out_of_range_dims_raise():
    x = dg.ones(2, 3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum(dim=(0, -2))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 5\)"):
        x.mean(dim=5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.argmax(dim=2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.any(dim=2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.softmax(dim=2)
    with pytest.raises(TypeError):
        x.sum(dim=0.0)


def test_reductions_over_an_empty_dim():
    x = dg.ones(0, 3)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        x.amax(dim=0)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        x.max(dim=0)
    with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
        dg.ones(0).argmax()
    assert x.amax(dim=1).shape == (0,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy "Mean of empty slice" warning
        assert np.isnan(dg.ones(0).mean().item())


# -- indices never wrap ---------------------------------------------------------------------
def test_embedding_negative_index_raises():
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(dg.tensor([-1]), dg.ones(3, 2))
    with pytest.raises(IndexError, match="index out of range in self"):
        dg.nn.Embedding(3, 2)(dg.tensor([[0, 3]]))


def test_gather_and_scatter_add_out_of_range_raise_runtime_error():
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        dg.gather(dg.ones(3), 0, dg.tensor([-1]))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        dg.ones(3).gather(0, dg.tensor([3]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        dg.zeros(3).scatter_add(0, dg.tensor([-1]), dg.ones(1))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        dg.zeros(3).scatter_add(0, dg.tensor([5]), dg.ones(1))


def test_index_select_out_of_range_raises_index_error():
    for bad in (-1, 3):
        with pytest.raises(IndexError, match="index out of range in self"):
            dg.ones(3).index_select(0, dg.tensor([bad]))


def test_loss_targets_out_of_range_raise_but_ignore_index_works():
    logits = dg.zeros(2, 3)
    for bad in (-1, 3):
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            F.cross_entropy(logits, dg.tensor([bad, 0]))
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            F.nll_loss(logits, dg.tensor([0, bad]))
    loss = F.cross_entropy(logits, dg.tensor([-100, 0]))
    assert loss.item() == pytest.approx(np.log(3.0))
    assert F.cross_entropy(logits, dg.tensor([5, 0]), ignore_index=5).item() == pytest.approx(
        np.log(3.0))


# -- integer and bool inputs ------------------------------------------------------------------
def test_integer_std_var_norm_raise_as_in_pytorch():
    x = dg.tensor([1, 2, 4])
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        x.std()
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        x.var(dim=0)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        x.norm()
    with pytest.raises(RuntimeError, match="mean"):
        x.mean()
    assert dg.tensor([1.0, 2.0, 4.0]).std().item() == pytest.approx(1.527525)


def test_integer_sums_products_and_cumsums_are_int64():
    for dtype in (dg.int32, dg.uint8, dg.bool):
        x = dg.tensor([1, 0, 1], dtype=dtype)
        assert x.sum().dtype == dg.int64
        assert x.prod().dtype == dg.int64
        assert x.cumsum(0).dtype == dg.int64
    assert dg.tensor([200, 100], dtype=dg.uint8).sum().item() == 300


def test_integer_logsumexp_and_sigmoid_promote_to_float32():
    x = dg.tensor([1, 0, 2])
    assert x.logsumexp(0).dtype == dg.float32
    assert x.logsumexp(0).item() == pytest.approx(2.4076059)
    assert _values(x.sigmoid()) == pytest.approx([0.7310586, 0.5, 0.8807971])


def test_unary_float_ops_on_bools_are_float32_not_float16():
    x = dg.tensor([True, False])
    assert x.exp().dtype == dg.float32
    assert x.exp()[0].item() == pytest.approx(np.e, rel=1e-6)
    assert dg.tensor([3], dtype=dg.uint8).sqrt().dtype == dg.float32


def test_integer_softmax_is_not_implemented():
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        dg.tensor([1, 2]).softmax(0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.log_softmax(dg.tensor([1, 2]), 0)


def test_and_or_xor_are_bitwise_on_integers():
    a, b = dg.tensor([1, 2, 6]), dg.tensor([3, 1, 4])
    assert _values(a & b) == [1, 0, 4]
    assert _values(a | b) == [3, 3, 6]
    assert _values(a ^ b) == [2, 3, 2]
    assert (dg.tensor([True, False]) & dg.tensor([True, True])).dtype == dg.bool
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu"):
        dg.ones(2) & dg.ones(2)
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~dg.ones(2)


def test_bool_arithmetic_errors_are_pytorchs():
    t = dg.tensor([True, False])
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        _ = -t
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        _ = t - t
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        t.relu()
    with pytest.raises(NotImplementedError, match="abs_cpu"):
        t.abs()
    with pytest.raises(NotImplementedError, match="floor_vml_cpu"):
        t.floor()
    assert t.sign().dtype == dg.bool
    assert t.square().dtype == dg.int64
    assert (t**2).dtype == dg.int64
    assert t.max(0).indices.item() == 0


def test_integer_division_by_zero_raises():
    for bad in (lambda: dg.tensor([1, 2]) // 0, lambda: dg.tensor([1, 2]) % 0,
                lambda: dg.tensor([1, 2]) // dg.tensor([0, 1])):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            bad()
    assert _values(dg.tensor([1.0, -1.0]) // 0) == [float("inf"), float("-inf")]
    assert _values(dg.tensor([1, 2]) / 0) == [float("inf"), float("inf")]


def test_float_alpha_with_integer_tensors_raises():
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point"):
        dg.add(dg.tensor([1]), dg.tensor([1]), alpha=0.5)
    assert dg.add(dg.ones(2), dg.ones(2), alpha=0).sum().item() == 2.0


# -- invalid arguments ------------------------------------------------------------------------
def test_reshape_refuses_bad_shapes():
    x = dg.ones(6)
    with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 0 of shape "
                                           r"\[-2, 3\]"):
        x.reshape(-2, 3)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(TypeError):
        x.reshape(2.0, 3)
    with pytest.raises(TypeError):
        x.view(2, 3.5)
    assert x.reshape(dg.tensor(2), 3).shape == (2, 3)  # a 0-d int tensor is an int


def test_creation_refuses_float_and_negative_sizes():
    with pytest.raises(TypeError):
        dg.zeros(2.0, 3)
    with pytest.raises(TypeError):
        dg.full((2.5,), 1.0)
    for make in (lambda: dg.zeros(-1, 3), lambda: dg.randn(-2), lambda: dg.ones((3, -1))):
        with pytest.raises(RuntimeError, match="negative"):
            make()
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        dg.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        dg.eye(-1)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        dg.randint(5, 5, (2,))


def test_arange_checks_its_step():
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step"):
        dg.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step"):
        dg.arange(5, 0)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        dg.arange(0, 5, 0)
    assert _values(dg.arange(5, 0, -2)) == [5, 3, 1]
    assert dg.arange(3, 3).shape == (0,)


def test_shape_functions_check_their_dims():
    x = dg.ones(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flatten(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.movedim(3, 0)
    with pytest.raises(RuntimeError, match=r"start \(3\) \+ length \(2\) exceeds dimension size"):
        dg.ones(4).narrow(0, 3, 2)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        dg.ones(3).tril()


def test_masked_fill_needs_a_bool_mask():
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        dg.ones(3).masked_fill(dg.ones(3), 0.0)


def test_random_like_of_an_integer_tensor_is_not_implemented():
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
        dg.rand_like(dg.tensor([1]))


# -- numpy's errors never leak --------------------------------------------------------------
def test_broadcast_mismatch_is_pytorchs_runtime_error():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        dg.ones(2, 3) + dg.ones(2, 4)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        dg.where(dg.ones(3) > 0, dg.ones(2), dg.ones(3))


def test_numpy_error_types_never_escape():
    cases = [
        lambda: dg.ones(2, 3).permute(0, 0),
        lambda: dg.ones(2, 3) * dg.ones(4),
        lambda: dg.tensor([2]) ** -1,
        lambda: dg.ones(2).argmax(5),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, IndexError)) as info:
            case()
        assert type(info.value) in (RuntimeError, IndexError), type(info.value)


def test_regression_losses_broadcast_a_mismatched_target_with_a_warning():
    with pytest.warns(UserWarning, match="Using a target size"):
        loss = F.mse_loss(dg.zeros(2, 3), dg.ones(3))
    assert loss.item() == 1.0


# -- found by the differential test ------------------------------------------------------------
def test_zero_dim_tensor_does_not_widen_a_dimensioned_one():
    x = dg.ones(2)
    assert (x * dg.tensor(2.5, dtype=dg.float64)).dtype == dg.float32
    assert (dg.tensor([1, 2], dtype=dg.int32) + dg.tensor(3)).dtype == dg.int32
    assert (dg.tensor([1, 2]) * dg.tensor(0.5, dtype=dg.float64)).dtype == dg.float64
    assert dg.where(dg.tensor(True), x, dg.tensor(1.0, dtype=dg.float64)).dtype == dg.float32
    assert (dg.ones(2, dtype=dg.float64) + dg.ones(2)).dtype == dg.float64
    # a 0-d bool keeps its own errors (the promotion must not turn it into an int first)
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        _ = dg.tensor(True) - dg.tensor([2])


def test_gradient_through_a_promoted_zero_dim_operand_keeps_its_dtype():
    s = dg.tensor(2.0, dtype=dg.float64, requires_grad=True)
    (dg.ones(3) * s).sum().backward()
    assert s.grad.dtype == dg.float64 and s.grad.item() == 3.0


def test_transposes_below_two_dims_are_views_not_the_input():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    assert not x.t().is_leaf
    assert not dg.tensor(1.0, requires_grad=True).t().is_leaf
    s = dg.tensor(1.0, requires_grad=True)
    assert s.mT is s  # PyTorch's 0-d mT is the tensor itself
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        _ = x.mT
    assert x.flatten() is x  # nothing to flatten


def test_cat_refuses_zero_dim_and_skips_legacy_empty_tensors():
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        dg.cat([dg.tensor(1.0), dg.tensor(2.0)])
    x = dg.ones(2, 3, requires_grad=True)
    out = dg.cat([dg.zeros(0), x, dg.zeros(0)], 1)  # PyTorch skips 1-D empty tensors
    assert out.shape == (2, 3)
    out.sum().backward()
    assert x.grad.sum().item() == 6.0
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        dg.cat([dg.ones(2, 3), dg.ones(2, 4)])


def test_ops_on_empty_tensors():
    empty = dg.ones(0, 3)
    assert F.softmax(empty, dim=0).shape == (0, 3)
    assert F.log_softmax(empty, dim=1).shape == (0, 3)
    assert _values(empty.logsumexp(0)) == [float("-inf")] * 3
    assert np.isnan(F.mse_loss(dg.ones(0), dg.ones(0)).item())
    assert np.isnan(dg.ones(0).var().item())
    assert np.isnan(_values(dg.ones(0, 2).std(dim=0))).all()
    w = dg.ones(3, 0, requires_grad=True)
    x = dg.ones(2, 1, 0, requires_grad=True)
    F.linear(x, w).sum().backward()  # numpy's reshape(-1, 0) cannot infer the -1
    assert w.grad.shape == (3, 0) and x.grad.shape == (2, 1, 0)


def test_zero_dim_shape_ops():
    s = dg.tensor(2.0)
    assert s.flip(0).item() == 2.0
    with pytest.raises(IndexError):
        s.flip(1)
    assert s.movedim(0, -1).item() == 2.0
    assert s.flatten(0, -1).shape == (1,)
    with pytest.raises(IndexError):
        s.flatten(1)
    with pytest.raises(TypeError):
        s.permute()


def test_floor_divide_is_recorded_and_fails_only_in_backward():
    a = dg.tensor([3.5, -2.0], requires_grad=True)
    q = a // 2
    assert q.requires_grad and _values(q) == [1.0, -1.0]
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        q.sum().backward()


def test_remainder_gradient():
    a = dg.tensor([3.5, -2.0], requires_grad=True)
    b = dg.tensor([2.0, 1.5], requires_grad=True)
    (a % b).sum().backward()
    assert _values(a.grad) == [1.0, 1.0]
    assert _values(b.grad) == [-1.0, 2.0]


def test_bool_errors_found_by_the_differential_test():
    t = dg.tensor([True, False])
    for bad in (lambda: dg.tensor([1]) - True, lambda: t - 1, lambda: True - dg.tensor([1.0])):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            bad()
    with pytest.raises(NotImplementedError, match="remainder_cpu"):
        _ = t % t
    with pytest.raises(NotImplementedError, match="div_floor_cpu"):
        _ = t // t
    with pytest.raises(NotImplementedError, match='"pow" not implemented'):
        _ = t ** t
    # shapes are checked before dtypes
    with pytest.raises(RuntimeError, match="must match the size"):
        _ = dg.ones(3) & dg.ones(2)


def test_integer_powers():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        _ = dg.tensor([], dtype=dg.int32) ** -2
    base = dg.tensor([0, 1, -1, 2, -2, 3, 5])
    assert _values(base ** dg.tensor([-1, -1, -1, -1, -1, -2, 0])) == [0, 1, -1, 0, 0, 0, 1]
    assert _values(dg.tensor([2]) ** -1.0) == [0.5]


def test_gelu_is_exact_in_float64():
    x = dg.tensor([0.5690339892248151, -0.8308630997659132, -3.747885944780573],
                  dtype=dg.float64)
    want = [0.40704905410845554, -0.1686863843730057, -0.00033418270097711704]
    assert _values(F.gelu(x)) == pytest.approx(want, rel=1e-12)


def test_sign_of_nan_is_zero():
    assert _values(dg.tensor([float("nan"), -2.0, 0.0, 3.0]).sign()) == [0.0, -1.0, 0.0, 1.0]


def test_max_keeps_a_nan_gradient_on_the_max_but_amax_spreads_it():
    x = dg.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    (x.max() * float("nan")).backward()
    assert np.isnan(_values(x.grad)).tolist() == [False, True, True, False]
    x.grad = None
    (x.amax() * float("nan")).backward()
    assert np.isnan(_values(x.grad)).all()


def test_norm_over_three_dims_is_not_a_matrix_norm():
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        dg.ones(2, 3, 4).norm(dim=(0, 1, 2))
    assert dg.ones(2, 3, 4).norm(dim=(0, 1)).shape == (4,)


def test_index_select_out_of_range_on_dim_1_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="INDICES element is out of DATA bounds"):
        dg.ones(2, 3).index_select(1, dg.tensor([-1]))
    with pytest.raises(IndexError, match="index out of range in self"):
        dg.ones(2, 3, 2).index_select(2, dg.tensor([2]))


def test_std_of_equal_values_has_a_zero_gradient():
    x = dg.tensor(0.25, requires_grad=True)
    dg.stack([x, x]).std().backward()
    assert x.grad.item() == 0.0  # PyTorch masks 0/0 where the std is 0


def test_scalar_remainder_tensor_has_no_derivative():
    x = dg.tensor([0.25, 2.0], requires_grad=True)
    y = -1.5 % x
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        y.sum().backward()


def test_a_saved_zero_dim_output_changed_in_place_is_detected():
    # numpy returns scalars for 0-d ops; the saved output must still be the tensor's memory
    for make in (lambda v: dg.sqrt(v.abs() + 0.5), lambda v: v.exp(), lambda v: v.max()):
        v = dg.tensor(0.25, requires_grad=True)
        out = make(v * 1)
        out.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (out * 2).backward()


def test_inplace_errors_on_bools_and_ints_are_pytorchs():
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        dg.tensor([False]).sub_(dg.tensor([True]))
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type"):
        dg.tensor([True, False]).clamp_(0, 2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        dg.tensor([1, 2]).clamp_(-1.0, 1.0)
    empty = dg.zeros(2, 0, dtype=dg.int64)
    empty.add_(empty)  # numpy's 0 strides of an empty array are no overlap
    assert empty.shape == (2, 0)


# -- found by 2,000 differential examples ----------------------------------------------------
def test_index_select_on_an_empty_tensor_raises_pytorchs_runtime_error():
    index = dg.tensor([0])
    with pytest.raises(RuntimeError, match="self indexing axis dim should be positive"):
        dg.zeros(0, 3).index_select(0, index)
    with pytest.raises(RuntimeError, match="INDICES element is out of DATA bounds"):
        dg.zeros(2, 0, 2).index_select(0, dg.tensor([5]))
    with pytest.raises(IndexError, match="index out of range in self"):
        dg.zeros(0).index_select(0, index)


def test_layer_norm_output_changed_in_place_still_differentiates():
    """PyTorch's layer norm saves mean and rstd, not its output."""
    x = dg.tensor([1.0, 2.0, 4.0], requires_grad=True)
    y = F.layer_norm(x, (3,))
    y.add_(1)
    (y * dg.tensor([1.0, 3.0, 2.0])).sum().backward()
    assert np.allclose(_values(x.grad), [-0.5727, 0.8591, -0.2863], atol=1e-4)


@pytest.mark.parametrize("write", [
    lambda x: x.add_(x[0]),
    lambda x: x.view(-1)[1:].copy_(x.view(-1)[:5]),
    lambda x: x.view(-1).__setitem__(slice(1, None), x.view(-1)[:5]),
    lambda x: x.addcmul_(x[0], x[1]),
    lambda x: x.clamp_(min=x[0]),
    lambda x: x.lerp_(x[0], 0.5),
    lambda x: x.__iadd__(x[1]),
], ids=["add_", "copy_", "setitem", "addcmul_", "clamp_", "lerp_", "+="])
def test_inplace_read_of_partly_overlapping_memory_is_refused(write):
    x = dg.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        write(x)
    assert _values(x) == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_inplace_ops_that_pytorch_allows_on_shared_memory_go_ahead():
    x = dg.arange(6.0).reshape(2, 3)
    x.add_(x)  # exactly the memory it writes
    x[0].copy_(x[1])  # disjoint
    x[0, 0].add_(x[0, 0])
    x.fill_(x[0, 1])  # one value, read first
    x.view(-1)[::2].mul_(x.view(-1)[1::2])  # not dense: PyTorch does not judge it
    assert _values(x) == [[64.0, 8.0, 64.0], [8.0, 64.0, 8.0]]  # PyTorch 2.13's


@pytest.mark.parametrize("op", [
    lambda: dg.tensor([1]) & 0.5,
    lambda: dg.tensor([True]) ^ 0.5,
    lambda: dg.tensor([1]).bitwise_or(1.5),
], ids=["int & float", "bool ^ float", "bitwise_or float"])
def test_bitwise_op_with_a_float_scalar_has_no_kernel(op):
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        op()


@pytest.mark.parametrize("op", [
    lambda: dg.tensor([1]).sub_(dg.tensor([True])),
    lambda: dg.tensor([2]).sub_(True),
    lambda: dg.tensor([1.0]).__isub__(dg.tensor(True)),
    lambda: dg.zeros(0, dtype=dg.int64).sub_(dg.tensor(False)),
], ids=["tensor", "python bool", "-=", "empty"])
def test_inplace_subtraction_of_a_bool_is_refused_as_out_of_place(op):
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        op()


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(dg.tensor([1]), x[:1]),
    lambda x: x.__setitem__(dg.tensor([1]), x[0]),
    lambda x: x.__setitem__(dg.tensor([], dtype=dg.int64), x),
    lambda x: x.__setitem__(dg.tensor([0, 1, 2, 3]), x),
], ids=["slice", "0-d", "empty index", "itself"])
def test_index_put_of_values_sharing_memory_is_refused(write):
    x = dg.arange(4.0)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        write(x)


def test_index_put_of_disjoint_memory_and_a_masked_fill_go_ahead():
    x = dg.arange(4.0)
    x[:2][dg.tensor([1])] = x[3]
    assert _values(x) == [0.0, 3.0, 2.0, 3.0]
    x[x > 2] = x[0]
    assert _values(x) == [0.0, 0.0, 2.0, 0.0]


def test_nan_wins_maximum_and_minimum_and_both_sides_get_its_gradient():
    a = dg.tensor([float("nan"), 1.0, 2.0, 3.0], requires_grad=True)
    b = dg.tensor([1.0, 1.0, 3.0, 2.0], requires_grad=True)
    (dg.maximum(a, b) * dg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert _values(a.grad) == [1.0, 1.0, 0.0, 4.0]
    assert _values(b.grad) == [1.0, 1.0, 3.0, 0.0]


def test_a_nan_max_shares_its_gradient_among_the_nans():
    a = dg.tensor([float("nan"), 1.0, float("nan")], requires_grad=True)
    a.max().backward()
    assert _values(a.grad) == [0.5, 0.0, 0.5]


def test_descending_sort_puts_nan_first_as_the_largest_value():
    nan, inf = float("nan"), float("inf")
    x = dg.tensor([1.0, nan, 3.0, -inf, inf, nan, 3.0, 0.0])
    assert x.sort(descending=True, stable=True).indices.tolist() == [1, 5, 4, 2, 6, 0, 7, 3]
    assert x.topk(3).indices.tolist() == [1, 5, 4]
    assert x.sort(stable=True).indices.tolist() == [3, 7, 0, 2, 6, 4, 1, 5]


def test_index_put_of_a_tensor_into_itself_is_refused_even_when_empty():
    x = dg.tensor([], dtype=dg.int64)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[dg.tensor([], dtype=dg.int64)] = x


@pytest.mark.parametrize("loss", [
    lambda x: x.abs(),
    lambda x: F.l1_loss(x, dg.zeros(2)),
    lambda x: F.smooth_l1_loss(x, dg.zeros(2), beta=0.0),
], ids=["abs", "l1_loss", "smooth_l1 beta=0"])
def test_the_sign_in_a_gradient_of_nan_is_zero_as_in_pytorch(loss):
    x = dg.tensor([float("nan"), -2.0], requires_grad=True)
    loss(x).sum().backward()
    assert _values(x.grad)[0] == 0.0 and _values(x.grad)[1] < 0


def test_relu_of_nan_passes_its_gradient_and_zero_d_l1_of_nan_gives_zero():
    x = dg.tensor([float("nan"), -1.0, 2.0], requires_grad=True)
    x.relu().sum().backward()
    assert _values(x.grad) == [1.0, 0.0, 1.0]
    a, b = dg.tensor(0.25, requires_grad=True), dg.tensor(float("nan"), requires_grad=True)
    F.l1_loss(a, b).backward()
    assert a.grad.item() == 0.0 and b.grad.item() == 0.0


def test_setitem_drops_the_values_leading_ones_as_pytorch():
    x = dg.tensor([4])
    x[0] = x
    assert _values(x) == [4]
    w = dg.tensor(2.0, requires_grad=True)
    z = dg.zeros(2)
    z[1] = (w * 3).reshape(1, 1)
    z.sum().backward()
    assert _values(z) == [0.0, 6.0] and w.grad.item() == 3.0


def test_relu_of_a_zero_d_tensor_differentiates():
    x = dg.tensor(-1.0, requires_grad=True)
    x.relu().backward()
    assert x.grad.item() == 0.0


def test_t_of_a_zero_d_leaf_is_a_view_of_it():
    x = dg.tensor(0.25, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        x.t().add_(1)
    y = dg.tensor(3.0)
    y.t().add_(1)
    assert y.item() == 4.0


def test_prod_over_an_empty_dim_differentiates():
    x = dg.zeros(0, requires_grad=True)
    p = x.prod(dim=-1, keepdim=True)
    (p * dg.tensor([0.25])).sum().backward()
    assert _values(p) == [1.0] and x.grad.shape == (0,)


def test_copy_of_a_grad_float_into_an_int_tensor_does_not_require_grad():
    x = dg.tensor(4)
    x.copy_(dg.tensor(0.25, requires_grad=True))
    assert x.item() == 0 and not x.requires_grad


def test_inplace_negation_of_a_bool_is_pytorchs_runtime_error():
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool"):
        dg.tensor([True]).neg_()


def test_setitem_out_of_bounds_on_a_grad_leaf_is_an_index_error_first():
    # PyTorch takes the view x[..., :, 0] before its leaf check, so the bad index wins.
    x = dg.zeros(0, 1, 0, requires_grad=True)
    with pytest.raises(IndexError, match="out of bounds for dimension 2 with size 0"):
        x[..., :, 0] = 0.5
    y = dg.zeros(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0"):
        y[5] = 0.5
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        y[1] = 0.5


def test_nan_gradients_are_selected_away_where_pytorch_masks_them():
    # relu, clamp and maximum/minimum backward select (PyTorch's where/masked_fill), so a NaN
    # gradient reaching a zeroed position stops there instead of poisoning the input's grad.
    # Found by the differential test: v0.clamp(-1, -1).var() (a 1-element var is NaN).
    nan = float("nan")
    v = dg.tensor(0.25, requires_grad=True)
    (v * 2 + v.clamp(-1.0, -1.0).var(dim=None, keepdim=True).sum()).backward()
    assert v.grad.item() == 2.0
    for f in (lambda x: x.relu(), lambda x: dg.maximum(x, dg.tensor([0.5, -3.0])),
              lambda x: dg.minimum(x, dg.tensor([-3.0, 3.0]))):
        x = dg.tensor([-2.0, 0.25], requires_grad=True)  # the first is zeroed / loses
        (f(x) * dg.tensor([nan, 1.0])).sum().backward()
        assert x.grad.tolist() == [0.0, 1.0]
    x = dg.tensor([nan, -1.0], requires_grad=True)
    x.relu().sum().backward()  # NaN <= 0 is false: the NaN input passes its gradient
    assert x.grad.tolist() == [1.0, 0.0]
    # relu multiplies by its mask when every gradient is finite: an Inf gradient at a zeroed
    # position must still give the select's answer, and large finite ones stay quiet
    for grads, want in (([float("inf"), 1.0, 2.0], [0.0, 1.0, 2.0]),
                        ([3e38, 3e38, -1.0], [0.0, 3e38, -1.0])):
        x = dg.tensor([-2.0, 0.25, 1.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x.relu().backward(dg.tensor(grads))
        assert x.grad.tolist() == pytest.approx(want)


def test_index_put_on_an_expanded_tensor_checks_indices_then_warns_as_pytorch():
    # Found by the differential test: PyTorch's index_put_ refuses a bad index first, and
    # on an expand-ed tensor writes with a deprecation warning instead of refusing.
    v = dg.tensor(4).expand(2)
    v[dg.tensor([], dtype=dg.int64)] = dg.tensor(4)  # writes nothing: no warning either
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0"):
        v[dg.tensor([2])] = dg.tensor(4)
    with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
        v[dg.tensor([0])] = dg.tensor(7)
    assert v.tolist() == [7, 7]


def test_an_inplace_result_saved_for_backward_is_the_tensor_itself():
    # Found by the differential test: sqrt_ saves its result; a later add_ on it must make
    # backward raise PyTorch's version error (the saved copy hid the change).
    v = dg.tensor(2.0, requires_grad=True)
    y = v * 1
    y.sqrt_()
    y.add_(v)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 1"):
        y.backward()
    w = dg.tensor(4.0, requires_grad=True)
    z = w * 1
    z.sqrt_()
    (z * 3).backward()  # nothing changed it since: fine
    assert w.grad.item() == 0.75


def test_pow_with_a_tensor_exponent_saves_its_result_as_pytorch():
    # PowBackward1 saves the result even when the exponent needs no gradient (found by the
    # differential test); PowBackward0 (a number exponent) does not.
    x = dg.tensor([0.5, 2.0], requires_grad=True)
    z = (x * 1).pow(dg.tensor(0.25))
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    y = (x * 1) ** 2
    y.add_(1)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 4.0]


def test_setitem_of_a_tensor_into_its_own_unsqueezed_view_is_a_full_overlap():
    # Found by the differential test: x[None, ...] = x writes each element onto itself
    # (PyTorch accepts it); the size-1 dim's stride places nothing.
    x = dg.tensor([4, 2])
    x[None, ...] = x
    assert x.tolist() == [4, 2]
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        y = dg.tensor([4, 2, 3])
        y[1:] = y[:2]  # a real partial overlap still refused


def test_floor_division_checks_shapes_before_bool_support():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match"):
        dg.tensor([False, True, True]) // dg.tensor(np.array([], bool))


def test_mask_setitem_of_a_one_element_tensor_is_masked_fill_even_from_itself():
    # PyTorch's index_put_ with one mask and a one-element value dispatches to masked_fill_
    # (it reads the value first), so the value may share the target's memory.
    v = dg.tensor([4])
    v[dg.tensor([False])] = v
    w = dg.tensor([4, 5])
    w[dg.tensor([False, True])] = w[:1]
    assert v.tolist() == [4] and w.tolist() == [4, 4]
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        w[dg.tensor([0])] = w[:1]


def test_an_elementwise_inplace_op_on_an_unsqueezed_view_of_its_operand_is_refused():
    # Unlike setitem (above), PyTorch's add_ compares strides as they are: partial overlap.
    v = dg.tensor([4])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        v[None].add_(v)


# -- saved tensors: a backward holds what PyTorch saves, so the version counter agrees -----
_MODIFIED = "modified by an inplace operation"


def test_layer_norm_input_changed_in_place_raises_at_backward():
    # Found by the differential test (an empty input): PyTorch's NativeLayerNormBackward0
    # saves the input; dyngraph's backward held a private centred copy and went on.
    v0 = dg.tensor(np.array([], dtype=np.float32), requires_grad=True)
    v1 = v0 + v0
    v5 = F.layer_norm(v1, (0,))
    v1.add_(v0)
    with pytest.raises(RuntimeError, match=_MODIFIED):
        v5.sum().backward()
    x = dg.tensor([[1.0, 2.0, 4.0], [0.0, 3.0, 1.0]], requires_grad=True)
    y = x * 2
    out = F.layer_norm(y, (3,))
    y.add_(x)
    with pytest.raises(RuntimeError, match=r"\[torch.FloatTensor \[2, 3\]\], which is output "
                                           r"0 of Add, is at version 1; expected version 0"):
        out.sum().backward()


@pytest.mark.parametrize("loss", [
    F.mse_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy_with_logits,
], ids=["mse_loss", "smooth_l1_loss", "huber_loss", "bce_with_logits"])
def test_loss_input_changed_in_place_raises_at_backward(loss):
    # PyTorch's loss nodes save the input and the target; dyngraph's held the difference.
    x = dg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 1
    out = loss(y, dg.tensor([0.0, 1.0, 1.0]))
    y.mul_(2)
    with pytest.raises(RuntimeError, match=_MODIFIED):
        out.backward()


@pytest.mark.parametrize("op", [
    lambda v: v.clamp(-0.5, 0.5), lambda v: v.clamp(min=0.0), lambda v: F.leaky_relu(v),
    lambda v: v.gather(0, dg.tensor([2, 0])),
], ids=["clamp", "clamp_min", "leaky_relu", "gather"])
def test_an_input_pytorch_saves_changed_in_place_raises_at_backward(op):
    # These held a mask or the input's shape where PyTorch saves the input itself.
    x = dg.tensor([0.25, -2.0, 1.5], requires_grad=True)
    y = x * 1
    out = op(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match=_MODIFIED):
        out.sum().backward()


@pytest.mark.parametrize("op", [
    lambda v: v.prod(), lambda v: v.prod(0), lambda v: v.prod(0, keepdim=True),
    lambda v: v[0].prod(),
    lambda v: v[:0].prod(), lambda v: F.softmax(v[:0], dim=0),
    lambda v: F.log_softmax(v[:0], dim=0),
], ids=["prod", "prod_dim", "prod_keepdim", "prod_0d", "prod_empty", "softmax_empty",
        "log_softmax_empty"])
def test_an_output_pytorch_saves_changed_in_place_raises_at_backward(op):
    x = dg.tensor([0.5, 2.0, -1.0], requires_grad=True)
    out = op(x * 1)
    out.add_(1)
    with pytest.raises(RuntimeError, match=_MODIFIED):
        out.sum().backward()


def test_sort_and_topk_values_save_only_the_indices():
    # Unlike gather, PyTorch's SortBackward0 / TopkBackward0 do not save the input.
    x = dg.tensor([0.5, 2.0, -1.0], requires_grad=True)
    y = x * 1
    s = y.sort().values
    t = y.topk(2).values
    assert s.grad_fn.name() == "SortBackward0" and t.grad_fn.name() == "TopkBackward0"
    y.add_(1)
    (s * dg.tensor([1.0, 2.0, 3.0])).sum().backward(retain_graph=True)
    t.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0, 1.0]


def test_logsumexp_over_no_named_dims_without_keepdim_raises_as_pytorch():
    # Found by the differential test: v0.logsumexp(dim=()) on a (1, 1, 1) tensor. PyTorch
    # adds the keepdim maxima into the 0-d result in place, which cannot hold them.
    v0 = dg.tensor(np.full((1, 1, 1), 0.25, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the "
                                           r"broadcast shape \[1, 1, 1\]"):
        v0.logsumexp(dim=())
    assert v0.logsumexp(dim=(), keepdim=True).shape == (1, 1, 1)
    assert dg.tensor(2.0).logsumexp(dim=()).item() == 2.0  # 0-d: nothing to squeeze
    assert dg.zeros(2, 0).logsumexp(dim=[]).item() == float("-inf")  # empty: another path
    with pytest.raises(TypeError, match="must be tuple of ints, not NoneType"):
        v0.logsumexp(None)


@pytest.mark.parametrize("call", [
    lambda x: x.prod(dim=()), lambda x: x.prod((0,)), lambda x: dg.prod(x, dim=None),
    lambda x: x.prod(keepdim=True), lambda x: x.prod(1.0),
], ids=["empty_tuple", "tuple", "none", "keepdim_alone", "float"])
def test_prod_takes_one_int_dim_as_pytorch(call):
    # Was a RuntimeError (a leaked unpacking error), or quietly a product over the tuple.
    with pytest.raises(TypeError, match="prod"):
        call(dg.ones(2, 3))


def test_clamp_with_tensor_bounds_sends_gradients_to_the_bounds():
    # The bounds went in as constants: their .grad stayed None where PyTorch's
    # ClampBackward0 gives each bound the gradient where it is the result (min only while
    # min < max).
    x = dg.tensor([0.5, -1.0, 2.0, 0.0, 0.7], requires_grad=True)
    lo = dg.tensor([0.0, 0.0, 0.0, 0.0, 1.0], requires_grad=True)
    hi = dg.tensor([1.0, 1.0, 1.0, 0.0, 0.0], requires_grad=True)
    y = dg.clamp(x, lo, hi)
    assert y.grad_fn.name() == "ClampBackward0"
    (y * dg.tensor([1.0, 2.0, 3.0, 4.0, 5.0])).sum().backward()
    assert _values(y) == [0.5, 0.0, 1.0, 0.0, 0.0]
    assert _values(x.grad) == [1.0, 0.0, 0.0, 4.0, 0.0]
    assert _values(lo.grad) == [0.0, 2.0, 0.0, 0.0, 0.0]
    assert _values(hi.grad) == [0.0, 0.0, 3.0, 0.0, 5.0]
    w = dg.tensor([0.5, -1.0, 2.0])  # in place, the bound alone needing a gradient
    w.clamp_(min=lo[:3])
    (w * dg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert _values(lo.grad) == [0.0, 4.0, 0.0, 0.0, 0.0]


def test_clamp_tensor_bounds_promote_and_refuse_as_pytorch():
    assert dg.clamp(dg.ones(3, dtype=dg.int64), min=dg.zeros(3)).dtype == dg.float32
    assert dg.clamp(dg.ones(2), min=dg.zeros((), dtype=dg.float64)).dtype == dg.float32
    assert dg.clamp(dg.ones(3), max=dg.ones(2, 3)).shape == (2, 3)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        dg.clamp(dg.ones(3), min=0.0, max=dg.ones(3))
    # PyTorch combines the masks in place in the first pair's shape: a bound that widens
    # the result beyond it makes backward raise.
    x = dg.tensor(0.5, requires_grad=True)
    y = dg.clamp(x, dg.tensor(0.0), dg.ones(3))
    with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the "
                                           r"broadcast shape \[3\]"):
        y.sum().backward()


def test_index_put_into_a_size_zero_dim_is_an_index_error_before_the_value_shape():
    # Found by the differential test: v0[L.tensor([0])] = v1 with v0, v1 empty. PyTorch's
    # advanced index refuses an index into a size-0 dim before comparing the value's shape
    # (dyngraph said RuntimeError: shape mismatch).
    v0 = dg.tensor(np.array([], dtype=np.int64))
    v1 = dg.tensor(np.array([], dtype=np.int64))
    with pytest.raises(IndexError, match="index is out of bounds for dimension with size 0"):
        v0[dg.tensor([0], dtype=dg.int64)] = v1
    x = dg.zeros(2, 0)
    with pytest.raises(IndexError, match="index is out of bounds for dimension with size 0"):
        x[..., dg.tensor([0])] = dg.ones(5)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[dg.tensor([0])] = dg.ones(5)  # dim 0 has size 2: the value's shape is checked


def test_setitem_into_a_strided_size_one_view_of_itself_is_a_partial_overlap():
    # Found by the differential test: v0[..., 0::2] = v0 for v0 of shape (1,). PyTorch
    # compares strides as they are, size-1 dims included: [2] against [1] is a partial
    # overlap (dyngraph ignored size-1 dims and called it full).
    v0 = dg.tensor(np.array([4], dtype=np.int64))
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        v0[..., 0::2] = v0
    # Also found: v0[None] = v0. PyTorch views the value without its leading 1s (0-d
    # here) and expands that: a 0-d tensor expands with every stride 0, against the
    # target's [1, 1]. Only a value that was 0-d to begin with is a fill.
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        v0[None] = v0
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        v0[...] = v0[None]
    v0[None] = v0[0]  # a 0-d value: fill_, which reads it first
    assert v0.tolist() == [4]


@pytest.mark.parametrize("write, refused", [
    (lambda x: x.__setitem__(slice(0, 1), x[None, 0]), True),  # None's stride: dim 0's
    (lambda x: x.__setitem__(slice(0, 1), x[0][None]), False),  # None after the select
    (lambda x: x[0:1].copy_(x.unsqueeze(0)[:, 0]), True),
    (lambda x: x[0:1].copy_(x[0].expand(1, 3)), False),
    (lambda x: x.__setitem__((None, 0), x[0]), True),
    (lambda x: x.__setitem__((None, Ellipsis), x), False),
    (lambda x: x[None].copy_(x.reshape(1, 2, 3)), False),
], ids=["x[0:1]=x[None,0]", "x[0:1]=x[0][None]", "copy_unsqueeze_select", "copy_expand",
        "x[None,0]=x[0]", "x[None,...]=x", "copy_reshape"])
def test_overlap_is_judged_on_pytorchs_strides_of_size_one_dims(write, refused):
    # numpy gives a size-1 dim made by None, unsqueeze or expand a stride of 0; PyTorch
    # the size times the stride of the dim at that position when it was made.
    x = dg.arange(6.0).reshape(2, 3)
    if refused:
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            write(x)
    else:
        write(x)
    assert _values(x) == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_index_put_on_a_leaf_refuses_the_leaf_before_checking_its_indices():
    # Found by the differential test: the empty-dim index check ran before the leaf's.
    v0 = dg.tensor(np.array([], dtype=np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        v0[dg.tensor([0], dtype=dg.int64)] = 0.5


def test_integer_pow_in_place_follows_pytorchs_integer_powers():
    # Found by the differential test: v0.pow_(v0) with v0 = [4, -1]. numpy refuses a
    # negative integer exponent inside a tensor; PyTorch gives 1, -1 or 0 there, as the
    # out-of-place pow already did.
    v0 = dg.tensor(np.array([4, -1], dtype=np.int64))
    v0.pow_(v0)
    assert v0.tolist() == [256, -1]
    w = dg.tensor([1, -1, 2, 0], dtype=dg.int32)
    w.pow_(dg.tensor([-1, -3, -2, -1], dtype=dg.int32))
    assert w.tolist() == [1, -1, 0, 0] and w.dtype == dg.int32
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        dg.tensor([2, 3]).pow_(-1)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        dg.tensor([2, 3]).pow_(2.5)


def test_pow_gradients_at_a_zero_base_follow_pytorchs_masks():
    # Found by the differential test: v3 = v0.relu().abs() ** v0 with v0 = [0.25, -0.26].
    # PyTorch zeroes the exponent's gradient at a zero base only where the exponent is
    # >= 0 (elsewhere inf * log(0) = -inf), and the base's where the exponent is 0.
    v0 = dg.tensor(np.array([0.2514604330062866, -0.26420971751213074], np.float32),
                   requires_grad=True)
    v3 = v0.relu().abs() ** v0
    (v3 * dg.tensor([1.0, -0.5])).sum().backward()
    assert v0.grad.tolist()[1] == float("inf")
    a = dg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
    b = dg.tensor([-1.0, 0.0, 1.0, 2.0], requires_grad=True)
    (a**b).sum().backward()
    assert a.grad.tolist() == [float("-inf"), 0.0, 1.0, 0.0]
    assert b.grad.tolist() == [float("-inf"), 0.0, 0.0, 0.0]
    z = dg.tensor([-0.0], requires_grad=True)  # ** ±0.5 is PyTorch's sqrt / rsqrt
    assert (z ** -0.5).tolist() == [float("-inf")]
    (z**0.5).sum().backward()
    assert z.grad.tolist() == [float("-inf")]


def test_setitem_refuses_to_write_an_element_of_the_view_twice_whatever_the_value():
    # Found by the differential test: v3 = v0.expand(2); v3[:] = 0.5. PyTorch copies a
    # number into the view too (fill_ of a 0-d tensor is a copy_), and refuses a view with
    # internal overlap; dyngraph let numbers through. It judged the tensor, not the view:
    # a row of an expanded matrix may be written.
    v3 = dg.tensor(np.array(4, dtype=np.int64)).expand(2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        v3[:] = 0.5
    x = dg.tensor([4.0, 5.0])
    e = x.expand(2, 2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e[:, 0] = 1.0
    e[0] = dg.tensor([1.0, 2.0])
    e[1:, 1] = 3.0  # one element
    assert x.tolist() == [1.0, 3.0]
    x.expand(2).fill_(7.0)  # fill_ with a number writes, as in PyTorch
    assert x.tolist() == [7.0, 7.0]


def test_masked_fill_and_index_put_on_an_expanded_tensor_write_with_pytorchs_warning():
    x = dg.tensor([4.0, 5.0])
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors"):
        x[:1].expand(2).masked_fill_(dg.tensor([True, False]), 1.0)
    assert x.tolist() == [1.0, 5.0]
    # In a graph the new values went through the whole expanded view, and an element read
    # back unchanged overwrote the one written (y stayed [[4, 5], [4, 5]]).
    w = dg.tensor([4.0, 5.0], requires_grad=True)
    y = (w * 1).expand(2, 2)
    with pytest.warns(UserWarning, match="Use of index_put_ on expanded tensors"):
        y[dg.tensor([0])] = 3.0
    assert y.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        y.sum().backward()  # PyTorch's CopySlices refuses, as for fill_


@pytest.mark.parametrize("op", [
    lambda x: x[dg.tensor([0, 1, 1])], lambda x: x[[0, 1]], lambda x: x[x > 2],
    lambda x: x[:, dg.tensor([0, 2])], lambda x: x.index_select(1, dg.tensor([0, 2])),
    lambda x: dg.where(dg.tensor([True, False, True]), x, 0.0),
    lambda x: x.masked_fill(dg.tensor([True, False, True]), 1.0),
    lambda x: x.scatter_add(1, dg.tensor([[0], [1]]), x[:, :1]),
    lambda x: x.gather(1, dg.tensor([[0], [1]])), lambda x: x.sort(1).values,
], ids=["index", "list", "mask", "mixed", "index_select", "where", "masked_fill",
        "scatter_add", "gather", "sort"])
def test_a_second_backward_through_a_saved_index_raises_as_pytorch(op):
    # PyTorch's nodes for these save the index (or mask) and free it after backward.
    x = dg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = op(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.backward()


def test_a_second_backward_through_nodes_that_save_nothing_works():
    x = dg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    for y in (dg.diag(x[0]).sum(), dg.diag(x).sum(), dg.trace(x[:, :2]),
              dg.diag_embed(x).sum(), x[None, 0, 1:].sum()):
        y.backward()
        y.backward()  # DiagEmbedBackward0, TraceBackward0 ... save only sizes


# -- Python numbers that do not fit a tensor's dtype --------------------------------------
_OVERFLOW = "value cannot be converted to type"


@pytest.mark.parametrize("make", [
    lambda: dg.full((2,), 300, dtype=dg.uint8), lambda: dg.full((2,), 1e40),
    lambda: dg.ones(2, dtype=dg.int32).fill_(2**40), lambda: dg.ones(2).fill_(1e40),
    lambda: dg.ones(2, dtype=dg.int64).fill_(1e30),
    lambda: dg.ones(2, dtype=dg.uint8).new_full((2,), 300),
    lambda: dg.full_like(dg.ones(2, dtype=dg.uint8), 300),
    lambda: dg.ones(2).__setitem__(0, 1e40),
    lambda: dg.ones(2, dtype=dg.uint8).__setitem__(dg.tensor([0]), 300),
    lambda: dg.ones(2).masked_fill(dg.tensor([True, False]), 1e40),
    lambda: dg.ones(2, dtype=dg.uint8).masked_fill_(dg.tensor([True, False]), 300),
    lambda: dg.ones(2, dtype=dg.int32).clamp(max=2**40),
    lambda: dg.where(dg.tensor([True, False]), dg.ones(2, dtype=dg.int32), 2**40),
    lambda: dg.ones(2, dtype=dg.int32) ** 2**40,
    lambda: dg.tensor([4, -1, 300], dtype=dg.uint8),
    lambda: dg.tensor([float("nan")], dtype=dg.int64),
], ids=["full_u8", "full_f32", "fill_i32", "fill_f32", "fill_i64", "new_full", "full_like",
        "setitem_f32", "index_put_u8", "masked_fill_f32", "masked_fill__u8", "clamp_i32",
        "where_i32", "pow_i32", "tensor_u8", "tensor_nan_int"])
def test_a_number_that_does_not_fit_the_dtype_is_pytorchs_runtime_error(make):
    # full(300, uint8) gave 44 and fill_(2**40) on int32 gave 0, silently; others leaked
    # numpy's OverflowError. PyTorch converts such numbers with a check.
    with pytest.raises(RuntimeError, match=_OVERFLOW):
        make()


def test_numbers_pytorch_wraps_or_converts():
    assert dg.tensor([-1], dtype=dg.uint8).tolist() == [255]  # unsigned: down to -max
    assert dg.ones(2, dtype=dg.uint8).fill_(-1).tolist() == [255, 255]
    assert dg.ones(2, dtype=dg.uint8).clamp(min=-1).tolist() == [255, 255]
    assert dg.full_like(dg.ones(2, dtype=dg.int64), 1.5, dtype=dg.float32).tolist() == [1.5] * 2
    assert dg.tensor([1.5, 2**70]).tolist() == [1.5, float(2**70)]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        dg.tensor([2**63])
    # In arithmetic PyTorch wraps an int to the tensor's width (numpy refuses it).
    assert (dg.ones(2, dtype=dg.uint8) + 300).tolist() == [45, 45]
    assert (dg.ones(2, dtype=dg.int32) + 2**31).tolist() == [-2147483647] * 2
    assert (dg.ones(2, dtype=dg.int64) + 2**63).tolist() == [-9223372036854775807] * 2
    assert dg.ones(2, dtype=dg.uint8).add_(300).tolist() == [45, 45]
    assert (dg.ones(2, dtype=dg.int32) / 2**40).dtype == dg.float32
    with pytest.raises(OverflowError):
        dg.ones(2, dtype=dg.int64) + 2**64


def test_an_integer_division_of_nothing_by_zero_is_no_error():
    # Found by the differential test: v0 // L.tensor(0) with v0 an empty int64 tensor.
    # PyTorch raises only when it divides something.
    v0 = dg.tensor(np.array([], dtype=np.int64))
    assert (v0 // dg.tensor(np.array(0, dtype=np.int64))).shape == (0,)
    assert (v0 % dg.tensor(0)).shape == (0,)
    assert (dg.zeros(2, 0, dtype=dg.int64) // dg.tensor([[0], [1]])).shape == (2, 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        dg.tensor([3, 4]) // dg.tensor([1, 0])


def test_integer_division_rounded_toward_zero_stays_exact_and_integral():
    # div(rounding_mode="trunc") of integers went through a float32 division: 123456789
    # / 10 gave 12345679.0 (float32), and a division by zero gave inf.
    q = dg.tensor([123456789, -7, 7, -7, 0]).div(dg.tensor([10, 2, -2, -2, 3]),
                                                 rounding_mode="trunc")
    assert q.dtype == dg.int64 and q.tolist() == [12345678, -3, -3, 3, 0]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        dg.tensor([3]).div(dg.tensor(0), rounding_mode="trunc")
    assert dg.tensor([3.5, -3.5]).div(2, rounding_mode="trunc").tolist() == [1.0, -1.0]


def test_pow_with_a_bool_tensor_exponent_refuses_its_gradient_as_pytorch():
    # Found by the differential test: v2.pow_(L.tensor(False)) then backward. PyTorch's
    # pow backward computes 'exponent - 1', which it refuses for a bool tensor.
    x = dg.tensor([2.0, 3.0], requires_grad=True)
    y = (x * 1).pow_(dg.tensor(False))
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
        y.sum().backward()
    (x ** True).sum().backward()  # a Python bool is a number: fine
    assert x.grad.tolist() == [1.0, 1.0]


def test_prod_gradient_without_zeros_is_result_over_input_as_pytorch():
    # Found by the differential test: v5 = v0.log().prod(-1, keepdim=True) with a NaN in
    # the log. Without a zero PyTorch's gradient is grad * result / input, so the NaN
    # reaches every element; dyngraph's product of the others kept one finite.
    v0 = dg.tensor(np.array([0.2514604330062866, -0.26420971751213074], np.float32),
                   requires_grad=True)
    v2 = v0.log()
    v2.prod(dim=-1, keepdim=True).sum().backward()
    assert np.isnan(v0.grad.numpy()).all()
    x = dg.tensor([0.0, 0.0, float("inf")], requires_grad=True)
    x.prod().backward()  # two zeros: PyTorch's gradient is all zeros (no 0 * inf)
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    y = dg.tensor([[2.0, 0.0], [3.0, 4.0]], requires_grad=True)
    y.prod(1).sum().backward()  # a zero: the product of the others, exact
    assert y.grad.tolist() == [[0.0, 2.0], [4.0, 3.0]]


def test_division_gradient_by_a_tiny_divisor_does_not_underflow():
    # PyTorch's divisor gradient is -grad * ((a / b) / b); dyngraph's b * b underflowed
    # to 0 in float32 for b = 1e-30 and gave -inf.
    a = dg.tensor([1e-30], requires_grad=True)
    b = dg.tensor([1e-30], requires_grad=True)
    (a / b).sum().backward()
    assert b.grad.item() == pytest.approx(-1e30, rel=1e-5)


def test_a_number_to_negative_integer_tensor_powers_follows_pytorchs_integer_powers():
    # Found by the differential test: -2 ** v0 (Python: -(2 ** v0)) with v0 = -2 (int64).
    # A Python int base with an integer tensor exponent is integer pow in PyTorch (1, -1
    # or 0 for negative exponents); numpy refused the negative exponent.
    v0 = dg.tensor(np.array(-2, dtype=np.int64))
    assert (-2 ** v0).item() == 0
    assert (2 ** dg.tensor([-2, -1, 0, 3])).tolist() == [0, 0, 1, 8]
    assert ((-1) ** dg.tensor([-3, -2], dtype=dg.int32)).tolist() == [-1, 1]
    assert (True ** dg.tensor([-1, 2])).tolist() == [1, 1]


def test_bool_powers_follow_pytorch():
    # Found by a sweep of the binary ops over dtypes and operand kinds (the differential
    # test leaves ** with bools out): PyTorch keeps bool ** a Python bool as bool, treats
    # a bool base with an integer tensor exponent as integer pow, and refuses a negative
    # Python exponent of an unsigned tensor before wrapping it (dyngraph gave garbage).
    b = dg.tensor([True, False, True])
    assert (b**True).tolist() == [True, False, True] and (b**True).dtype == dg.bool
    assert (b**False).tolist() == [True, True, True]
    assert (b ** dg.tensor([-3, 0, 2])).tolist() == [1, 1, 1]
    assert (b[0] ** dg.tensor([-3, 0, 2])).dtype == dg.int64
    with pytest.raises(NotImplementedError, match='"pow" not implemented for \'Bool\''):
        b ** b
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        dg.tensor([2, 3], dtype=dg.uint8) ** -2
    c = b**True
    c[0] = False  # the result is its own memory
    assert b.tolist() == [True, False, True]


def test_inplace_results_cast_by_pytorchs_rule_not_numpys():
    # Found by a sweep of the in-place ops over dtypes: PyTorch writes any integer result
    # into any integer tensor (int64 into uint8 wraps); numpy's same_kind refused it.
    x = dg.tensor([0, 3, 250], dtype=dg.uint8)
    x.add_(dg.tensor([-3, 0, 2]))
    assert x.tolist() == [253, 3, 252]
    x.clamp_(min=dg.tensor([1, 1, 1]))
    assert x.tolist() == [253, 3, 252]
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        dg.tensor([1, 2]).add_(0.5)
    with pytest.raises(RuntimeError, match="result type Long can't be cast"):
        dg.tensor([True, False]).add_(dg.tensor([1, 1]))


def test_masked_fill_takes_only_a_zero_dim_value_and_bool_clamp_has_no_kernel():
    # Both were accepted: masked_fill_ broadcast a 1-d value; clamp of a bool tensor by
    # bools returned bools.
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        dg.tensor([1, 2, 3]).masked_fill_(dg.tensor([True, False, True]), dg.tensor([5, 6, 7]))
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        dg.ones(3).masked_fill(dg.tensor([True, False, True]), dg.ones(3))
    b = dg.tensor([True, False])
    with pytest.raises(NotImplementedError, match='"clamp_min_scalar_cpu" not implemented'):
        b.clamp(True)
    with pytest.raises(NotImplementedError, match='"clamp_cpu" not implemented'):
        b.clamp(dg.tensor(False), dg.tensor(True))
    assert b.clamp(0, 1).tolist() == [1, 0]  # an int bound: int64, as in PyTorch


def test_an_operand_saved_only_for_a_gradient_nobody_needs_may_change():
    # Found by the differential test: v2 = a % v0 with only a requiring grad, then v0
    # changed in place: PyTorch saves a and v0 only for v0's gradient, so backward goes
    # on; dyngraph raised the version error. Same for scatter_add's index and einsum.
    a = dg.tensor(0.25, requires_grad=True)
    v0 = dg.tensor([0.5, 0.75])
    v2 = a % v0
    v0[dg.tensor([True, False])] = 0.5
    v2.sum().backward()
    assert a.grad.item() == 2.0
    x = dg.tensor([[1.0, 2.0]], requires_grad=True)
    y = dg.tensor([[3.0], [4.0]])
    z = dg.einsum("ij,jk->ik", x, y)
    x_dup = x.detach()
    with dg.no_grad():
        x_dup.mul_(2)  # x changed: only y's gradient (not needed) would have read it
    z.sum().backward()
    assert x.grad.tolist() == [[3.0, 4.0]]
