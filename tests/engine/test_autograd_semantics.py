"""Autograd rules, with PyTorch's error messages (checked against torch when installed)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture.tracing import subscribe
from dyngraph.engine.autograd import FREED_MESSAGE


def raises_like_torch(snippet, message):
    """Run ``snippet(lib)`` with dyngraph (and torch, if installed): both raise ``message``."""
    with pytest.raises(RuntimeError, match=re.escape(message)):
        snippet(dg)
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(RuntimeError, match=re.escape(message)):
        snippet(torch)


# -- leaves, grad_fn ----------------------------------------------------------------------
def test_leaves_and_non_leaves():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    c = dg.tensor([3.0, 4.0])
    y = x * c
    assert x.is_leaf and c.is_leaf and not y.is_leaf
    assert x.grad_fn is None and y.grad_fn.name() == "MulBackward0"
    assert y.requires_grad and not (c * 2).requires_grad
    (fn_x, _), (fn_c, _) = y.grad_fn.next_functions
    assert fn_x.name() == "AccumulateGrad" and fn_x.variable is x and fn_c is None
    z = y.sum()
    assert z.grad_fn.next_functions[0][0] is y.grad_fn


def test_grad_only_on_leaves_and_the_non_leaf_warning():
    x = dg.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])
    with pytest.warns(UserWarning, match=r"\.retain_grad\(\)"):
        assert y.grad is None


def test_retain_grad_keeps_a_non_leaf_gradient_and_accumulates():
    x = dg.ones(2, requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward(retain_graph=True)
    np.testing.assert_allclose(y.grad.numpy(), [6, 6])
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [12, 12])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is not None  # and no warning once retained


def test_accumulation_across_backward_calls_and_fan_out():
    x = dg.tensor([1.0, -1.0], requires_grad=True)
    (x * 2 + x * 3).sum().backward()  # fan-out: two paths from x
    np.testing.assert_allclose(x.grad.numpy(), [5, 5])
    (x * x).sum().backward()  # accumulates into the same .grad
    np.testing.assert_allclose(x.grad.numpy(), [7, 3])
    grad_obj = x.grad
    (x * 1).sum().backward()
    assert x.grad is grad_obj  # accumulation keeps the tensor, as in PyTorch


def test_a_gradient_shared_by_two_leaves_is_not_aliased():
    a = dg.ones(3, requires_grad=True)
    b = dg.ones(3, requires_grad=True)
    (a + b).sum().backward()  # add hands the same array to both inputs
    with dg.no_grad():
        a.grad.mul_(10)
    np.testing.assert_array_equal(b.grad.numpy(), [1, 1, 1])


def test_broadcast_gradients_sum_back_to_each_input_shape():
    a = dg.ones(2, 3, requires_grad=True)
    b = dg.ones(3, requires_grad=True)
    c = dg.ones(2, 1, requires_grad=True)
    s = dg.tensor(2.0, requires_grad=True)
    (a * b + c * s).sum().backward()
    assert b.grad.shape == (3,) and c.grad.shape == (2, 1) and s.grad.shape == ()
    np.testing.assert_allclose(b.grad.numpy(), [2, 2, 2])
    np.testing.assert_allclose(c.grad.numpy(), [[6], [6]])
    np.testing.assert_allclose(s.item() * 0 + s.grad.item(), 6)


# -- backward errors ----------------------------------------------------------------------
def test_non_scalar_backward_needs_gradient():
    def snippet(L):
        (L.ones(2, requires_grad=True) * 2).backward()

    raises_like_torch(snippet, "grad can be implicitly created only for scalar outputs")
    x = dg.ones(2, requires_grad=True)
    (x * 2).backward(gradient=dg.tensor([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2, 20])
    with pytest.raises(RuntimeError, match="Mismatch in shape: grad_output\\[0\\]"):
        (x * 2).backward(dg.ones(3))


def test_backward_without_grad_fn():
    raises_like_torch(lambda L: L.ones(2).sum().backward(),
                      "element 0 of tensors does not require grad and does not have a grad_fn")


def test_second_backward_through_freed_graph_raises_pytorchs_message():
    def snippet(L):
        x = L.ones(2, requires_grad=True)
        y = (x * x).sum()
        y.backward()
        y.backward()

    raises_like_torch(snippet, "Trying to backward through the graph a second time")
    with pytest.raises(RuntimeError) as info:
        snippet(dg)
    assert str(info.value) == FREED_MESSAGE


def test_retain_graph_allows_a_second_backward():
    x = dg.ones(2, requires_grad=True)
    y = (x * x).exp().sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_graph_that_saved_nothing_can_be_backwarded_twice():
    x = dg.ones(2, requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2])


def test_backward_through_a_100000_op_chain():
    x = dg.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1e-6
    y.backward()
    assert x.grad.item() == 1.0


def test_deep_chain_of_multiplications_gradient_value():
    x = dg.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(2000):
        y = y * 1.001
    y.backward()
    assert abs(x.grad.item() - 1.001**2000) < 1e-2


def test_int_tensors_cannot_require_grad():
    raises_like_torch(lambda L: L.tensor([1, 2], requires_grad=True),
                      "Only Tensors of floating point and complex dtype can require gradients")
    with pytest.raises(RuntimeError, match="floating point"):
        dg.arange(3).requires_grad_()


def test_requires_grad_of_a_non_leaf_cannot_be_switched_off():
    raises_like_torch(lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(False),
                      "you can only change requires_grad flags of leaf variables")


def test_retain_grad_and_hooks_need_requires_grad():
    raises_like_torch(lambda L: L.ones(2).retain_grad(),
                      "can't retain_grad on Tensor that has requires_grad=False")
    raises_like_torch(lambda L: L.ones(2).register_hook(lambda g: g),
                      "cannot register a hook on a tensor that doesn't require gradient")


# -- grad modes -----------------------------------------------------------------------------
def test_no_grad_enable_grad_set_grad_enabled_as_context_managers():
    x = dg.ones(2, requires_grad=True)
    with dg.no_grad():
        assert not dg.is_grad_enabled()
        y = x * 2
        with dg.enable_grad():
            assert dg.is_grad_enabled()
            z = x * 2
        assert not dg.is_grad_enabled()
    assert dg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with dg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert dg.is_grad_enabled()


def test_grad_modes_as_decorators():
    x = dg.ones(2, requires_grad=True)

    @dg.no_grad()
    def f():
        return x * 2

    @dg.no_grad
    def g():
        return x * 2

    @dg.enable_grad()
    def h():
        return x * 2

    @dg.set_grad_enabled(False)
    def k():
        return x * 2

    assert dg.is_grad_enabled()  # decorating does not change the mode
    assert not f().requires_grad and not g().requires_grad and not k().requires_grad
    with dg.no_grad():
        assert h().requires_grad
    assert f.__name__ == "f"


def test_set_grad_enabled_as_a_plain_call():
    dg.set_grad_enabled(False)
    try:
        assert not dg.is_grad_enabled()
    finally:
        dg.set_grad_enabled(True)
    assert dg.is_grad_enabled()


def test_grad_mode_restored_after_an_exception():
    with pytest.raises(ValueError):
        with dg.no_grad():
            raise ValueError
    assert dg.is_grad_enabled()


# -- hooks ----------------------------------------------------------------------------------
def test_hooks_replace_gradients_on_leaves_and_non_leaves():
    x = dg.ones(2, requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    handle = x.register_hook(lambda g: g + 1)
    y.sum().backward()
    np.testing.assert_allclose(seen[0], [1, 1])
    np.testing.assert_allclose(x.grad.numpy(), [21, 21])
    handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2])


def test_hook_runs_before_retain_grad_records_the_gradient():
    a = dg.ones(2, requires_grad=True)
    b = a * 1
    b.retain_grad()
    b.register_hook(lambda g: g * 3)
    (b * 1).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [3, 3])
    np.testing.assert_allclose(a.grad.numpy(), [3, 3])


def test_post_accumulate_grad_hook_sees_the_new_grad():
    p = dg.ones(2, requires_grad=True)
    seen = []
    p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (p * 4).sum().backward()
    np.testing.assert_allclose(seen[0], [4, 4])


# -- autograd.grad ----------------------------------------------------------------------------
def test_autograd_grad_returns_gradients_without_touching_dot_grad():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    w = dg.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = dg.autograd.grad(y, [x, w])
    np.testing.assert_allclose(gx.numpy(), [3, 4])
    np.testing.assert_allclose(gw.numpy(), [1, 2])
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


def test_autograd_grad_for_a_non_leaf_and_grad_outputs():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    out = h * 3
    (gh,) = dg.autograd.grad(out, h, grad_outputs=dg.tensor([1.0, 2.0]), retain_graph=True)
    np.testing.assert_allclose(gh.numpy(), [3, 6])
    (gx,) = dg.autograd.grad(out.sum(), (x,))
    np.testing.assert_allclose(gx.numpy(), [6, 12])


def test_autograd_grad_unused_inputs():
    def snippet(L):
        x = L.ones(2, requires_grad=True)
        unused = L.ones(2, requires_grad=True)
        L.autograd.grad((x * 2).sum(), [x, unused])

    raises_like_torch(snippet, "appears to not have been used in the graph")
    x = dg.ones(2, requires_grad=True)
    unused = dg.ones(2, requires_grad=True)
    gx, gu = dg.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None and gx is not None
    raises_like_torch(lambda L: L.autograd.grad(L.ones(2, requires_grad=True).sum() * 1,
                                                [L.ones(2)]),
                      "One of the differentiated Tensors does not require grad")


def test_autograd_grad_frees_the_graph_unless_retained():
    x = dg.ones(2, requires_grad=True)
    y = (x * x).sum()
    dg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        dg.autograd.grad(y, x)


def test_autograd_backward_function_with_several_roots():
    x = dg.ones(2, requires_grad=True)
    dg.autograd.backward([(x * 2).sum(), (x * 3).sum()])
    np.testing.assert_allclose(x.grad.numpy(), [5, 5])


def test_create_graph_is_refused_clearly():
    x = dg.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph"):
        dg.autograd.grad((x * x).sum(), x, create_graph=True)


# -- detach, events -------------------------------------------------------------------------
def test_detach_shares_data_and_cuts_the_graph():
    x = dg.ones(2, requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.grad_fn is None
    y = x.detach()
    y.detach().numpy()[0] = 5.0
    assert x.detach().numpy()[0] == 5.0  # shares memory, as in PyTorch


def test_backward_emits_start_steps_accumulations_and_end():
    seen = []
    x = dg.ones(2, requires_grad=True)
    with subscribe(seen.append, stats="none"):
        y = (x * 2).sum()
        y.backward()
    kinds = [e.kind for e in seen]
    assert kinds.count("op") == 2
    start = kinds.index("backward_start")
    assert kinds[start:start + 5] == ["backward_start", "backward_step", "backward_step",
                                      "grad", "backward_end"]
    steps = [e for e in seen if isinstance(e, ev.BackwardStep)]
    assert [s.grad_fn for s in steps] == ["SumBackward0", "MulBackward0"]
    assert steps[1].inputs == (x._id, -1)
