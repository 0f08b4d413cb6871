"""Tensor API that real scripts reach for: ``size=`` keywords, ``diag``/``diag_embed``/
``diagonal``/``trace`` (values and gradients against PyTorch and central differences),
the legacy ``FloatTensor`` family, ``Tensor.type``/``Module.type`` and ``Generator``."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients
from optable import R

import dyngraph as dg

DIAGONALS = [
    ("diag of a vector", lambda L, x: L.diag(x[0]), (R(2, 4),)),
    ("diag of a vector, above", lambda L, x: L.diag(x[0], 2), (R(2, 4),)),
    ("diag of a matrix", lambda L, x: L.diag(x), (R(3, 4),)),
    ("diag of a matrix, below", lambda L, x: L.diag(x, -1), (R(3, 4),)),
    ("diag_embed", lambda L, x: L.diag_embed(x), (R(2, 3),)),
    ("diag_embed offset dims", lambda L, x: L.diag_embed(x, -1, 0, 2), (R(2, 3),)),
    ("diagonal", lambda L, x: x.diagonal(1, 0, 2), (R(3, 2, 4),)),
    ("trace", lambda L, x: L.trace(x), (R(3, 4),)),
    ("trace method", lambda L, x: x.t().trace() * 2, (R(4, 3),)),
]


@pytest.mark.parametrize("name,fn,specs", DIAGONALS, ids=[d[0] for d in DIAGONALS])
def test_diagonal_ops_match_central_differences(name, fn, specs):
    rng = np.random.default_rng(0)
    check_gradients(fn, [rng.standard_normal(s.shape) for s in specs], specs)


@pytest.mark.parametrize("name,fn,specs", DIAGONALS, ids=[d[0] for d in DIAGONALS])
def test_diagonal_ops_match_torch(name, fn, specs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s.shape).astype(np.float32) for s in specs]
    results = []
    for lib in (dg, torch):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        probe = lib.tensor(np.arange(out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * probe).sum().backward()
        results.append((out.detach().numpy(), [x.grad.numpy() for x in xs]))
    (ours, our_grads), (theirs, their_grads) = results
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    for a, b in zip(our_grads, their_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("make", ["zeros", "ones", "empty", "rand", "randn"])
def test_creation_functions_take_size_by_keyword(make):
    t = getattr(dg, make)(size=(2, 3), dtype=dg.float64)
    assert t.shape == (2, 3) and t.dtype == dg.float64
    assert getattr(dg, make)(size=[4]).shape == (4,)


def test_an_unsupported_keyword_names_itself():
    with pytest.raises(TypeError, match=r"dyngraph does not implement zeros\(names=\.\.\.\)"):
        dg.zeros(2, names=("a",))
    assert dg.zeros(2, pin_memory=False).shape == (2,)  # harmless at its default


def test_legacy_constructors_and_isinstance_follow_the_dtype():
    torch = pytest.importorskip("torch")
    for lib in (dg, torch):
        assert lib.FloatTensor([1, 2]).dtype == lib.float32
        assert lib.LongTensor([1.0, 2.0]).tolist() == [1, 2]
        assert lib.BoolTensor([1, 0]).tolist() == [True, False]
        assert tuple(lib.FloatTensor(2, 3).shape) == (2, 3)
        assert tuple(lib.DoubleTensor().shape) == (0,)
        assert isinstance(lib.ones(2), lib.FloatTensor)
        assert not isinstance(lib.ones(2), lib.LongTensor)
        assert isinstance(lib.ones(2).long(), lib.LongTensor)


def test_tensor_type_names_and_casts_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (dg, torch):
        x = lib.ones(2)
        assert x.type() == "torch.FloatTensor"
        assert x.long().type() == "torch.LongTensor"
        assert x.type(lib.float64).dtype == lib.float64
        assert x.type(lib.LongTensor).dtype == lib.int64
        assert x.type("torch.IntTensor").dtype == lib.int32
        with pytest.raises(ValueError, match="invalid type"):
            x.type("float")


def test_module_type_casts_parameters():
    m = dg.nn.Linear(2, 2)
    assert m.type(dg.DoubleTensor) is m and m.weight.dtype == dg.float64
    m.type(dg.float32)
    assert m.weight.dtype == dg.float32
    m.half()
    assert m.bias.dtype == dg.float16


def test_generators_replay_the_same_numbers_for_the_same_seed():
    def draw(seed):
        g = dg.Generator().manual_seed(seed)
        return (dg.randn(3, generator=g).tolist(), dg.randperm(5, generator=g).tolist(),
                dg.randint(0, 9, (3,), generator=g).tolist(), dg.rand(2, generator=g).tolist())

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
    g = dg.Generator().manual_seed(3)
    state = g.get_state()
    first = dg.rand(4, generator=g).tolist()
    assert dg.rand(4, generator=g).tolist() != first
    g.set_state(state)
    assert dg.rand(4, generator=g).tolist() == first and g.initial_seed() == 3


def test_the_default_generator_is_manual_seeds_stream():
    assert dg.manual_seed(5) is dg.default_generator and dg.initial_seed() == 5
    a = dg.randn(3).tolist()
    dg.default_generator.manual_seed(5)
    assert dg.randn(3).tolist() == a
