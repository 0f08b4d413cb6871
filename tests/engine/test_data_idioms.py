"""``p.data`` idioms of older PyTorch code, and the deprecated overloads PyTorch 2.13 still
accepts (``add_(Number alpha, Tensor other)``): same values and warning as PyTorch."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

import dyngraph as dg


def _sgd_by_hand(torch, idiom):
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    (p * p).sum().backward()
    lr = 0.1
    if idiom == "legacy add_":
        p.data.add_(-lr, p.grad)
    elif idiom == "legacy sub_":
        p.data.sub_(lr, p.grad)
    elif idiom == "-=":
        p.data -= lr * p.grad
    elif idiom == "copy_":
        p.data.copy_(p.data - lr * p.grad)
    elif idiom == "add_ alpha":
        p.data.add_(p.grad, alpha=-lr)
    return p


IDIOMS = ["legacy add_", "legacy sub_", "-=", "copy_", "add_ alpha"]


@pytest.mark.parametrize("idiom", IDIOMS)
def test_p_data_updates_change_the_parameter_outside_the_graph(idiom):
    with pytest.warns(UserWarning) if idiom.startswith("legacy") else nullcontext():
        p = _sgd_by_hand(dg, idiom)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    np.testing.assert_allclose(p.detach().numpy(), [0.8, -1.6, 2.4], rtol=1e-6)


@pytest.mark.parametrize("idiom", IDIOMS)
def test_p_data_updates_match_torch(idiom):
    torch = pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _sgd_by_hand(dg, idiom), _sgd_by_hand(torch, idiom)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def test_the_deprecated_overload_warns_as_torch_and_points_at_the_caller():
    x = dg.ones(2)
    with pytest.warns(UserWarning, match=r"This overload of add_ is deprecated") as record:
        x.add_(2, dg.ones(2))
    assert record[0].filename == __file__
    assert x.tolist() == [3.0, 3.0]


def test_deprecated_addcmul_addcdiv_and_functional_forms_match_torch():
    torch = pytest.importorskip("torch")
    import warnings

    def run(lib):
        a, b = lib.tensor([1.0, 2.0]), lib.tensor([4.0, 8.0])
        x = lib.ones(2)
        x.addcmul_(0.5, a, b)
        x.addcdiv_(2, a, b)
        return [x.tolist(), lib.add(a, 3, b).tolist(), a.sub(2, b).tolist()]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(dg) == run(torch)


def test_a_wrong_positional_form_is_torchs_type_error():
    with pytest.raises(TypeError, match=r"add_\(\) takes 1 positional argument but 2 were given"):
        dg.ones(2).add_(dg.ones(2), 3)

