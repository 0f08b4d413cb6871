"""torch.distributions against PyTorch: log_prob, entropy, KL and their gradients,
moments, argument checks; and samples with the right statistics, reproducible by seed."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg
from dyngraph import distributions as D

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((3, 4)).astype(np.float32)
PROBS = np.abs(RNG.standard_normal((3, 4))).astype(np.float32) + 0.1
LOC = RNG.standard_normal(3).astype(np.float32)
SCALE = RNG.uniform(0.5, 2.0, 3).astype(np.float32)
X = RNG.standard_normal((2, 3)).astype(np.float32)
P01 = RNG.uniform(0.05, 0.95, 3).astype(np.float32)


def _categorical_logits(L, params):
    m = L.distributions.Categorical(logits=params[0])
    value = L.tensor([[0, 3, 1], [2, 2, 0]])
    return [m.log_prob(value), m.entropy(), m.probs, m.logits]


def _categorical_probs(L, params):
    m = L.distributions.Categorical(probs=params[0])
    return [m.log_prob(L.tensor([1, 0, 3])), m.entropy(), m.logits]


def _normal(L, params):
    m = L.distributions.Normal(params[0], params[1])
    return [m.log_prob(L.tensor(X)), m.entropy(), m.mean, m.variance, m.stddev]


def _normal_scalar(L, params):
    m = L.distributions.Normal(0.5, 2.0)
    return [m.log_prob(params[0]), m.entropy().reshape(1)]


def _bernoulli_probs(L, params):
    m = L.distributions.Bernoulli(probs=params[0])
    return [m.log_prob(L.tensor([1.0, 0.0, 1.0])), m.entropy(), m.logits, m.variance]


def _bernoulli_logits(L, params):
    m = L.distributions.Bernoulli(logits=params[0])
    return [m.log_prob(L.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])), m.entropy(), m.probs]


def _uniform(L, params):
    low, high = params[0], params[0] + params[1]
    m = L.distributions.Uniform(low, high)
    return [m.log_prob(low + 0.25 * (high - low)), m.entropy(), m.mean, m.variance]


def _kl(L, params):
    kl = L.distributions.kl_divergence
    C, N, B = L.distributions.Categorical, L.distributions.Normal, L.distributions.Bernoulli
    return [kl(C(logits=params[0]), C(logits=params[0].flip(-1))),
            kl(N(params[1], params[2]), N(params[2], params[1].abs() + 0.5)),
            kl(B(probs=params[3]), B(probs=params[3].flip(0)))]


CASES = [("categorical logits", _categorical_logits, [LOGITS]),
         ("categorical probs", _categorical_probs, [PROBS]),
         ("normal", _normal, [LOC, SCALE]),
         ("normal scalar params", _normal_scalar, [X]),
         ("bernoulli probs", _bernoulli_probs, [P01]),
         ("bernoulli logits", _bernoulli_logits, [LOC]),
         ("uniform", _uniform, [LOC, SCALE]),
         ("kl", _kl, [LOGITS, LOC, SCALE, P01])]


def _evaluate(L, fn, arrays):
    params = [L.tensor(a, requires_grad=True) for a in arrays]
    outs = fn(L, params)
    total = sum((o * L.tensor(np.linspace(0.5, 1.5, o.numel(), dtype=np.float32)
                               .reshape(tuple(o.shape)))).sum() for o in outs)
    total.backward()
    return ([o.detach().numpy() for o in outs],
            [np.zeros(p.shape, np.float32) if p.grad is None else p.grad.numpy() for p in params])


@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, fn, arrays):
    torch = pytest.importorskip("torch")
    (ours, our_grads), (theirs, their_grads) = _evaluate(dg, fn, arrays), \
        _evaluate(torch, fn, arrays)
    for a, b in zip(ours + our_grads, theirs + their_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_rsample_is_differentiable_through_the_parameters():
    loc = dg.tensor(LOC, requires_grad=True)
    scale = dg.tensor(SCALE, requires_grad=True)
    x = D.Normal(loc, scale).rsample((5,))
    x.sum().backward()
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(loc.grad.numpy(), np.full(3, 5.0))
    # eps is recovered from float32 samples: each carries a rounding of ~1e-7, and a sum
    # of five near 0 makes a relative tolerance meaningless
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-5, atol=1e-6)
    low = dg.tensor(0.0, requires_grad=True)
    u = D.Uniform(low, 2.0).rsample((4,))
    u.sum().backward()
    assert low.grad.item() == pytest.approx(4 - u.detach().sum().item() / 2, rel=1e-5)
    with pytest.raises(NotImplementedError, match="no rsample"):
        D.Categorical(logits=dg.zeros(2)).rsample()


def test_samples_have_the_right_shape_and_statistics():
    dg.manual_seed(0)
    probs = dg.tensor([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    draws = D.Categorical(probs=probs).sample((20000,))
    assert tuple(draws.shape) == (20000, 2) and draws.dtype == dg.int64
    freq = np.stack([np.bincount(draws.numpy()[:, i], minlength=3) / 20000 for i in range(2)])
    np.testing.assert_allclose(freq, probs.numpy(), atol=0.02)
    normal = D.Normal(dg.tensor([1.0, -2.0]), dg.tensor([0.5, 3.0])).sample((20000,))
    np.testing.assert_allclose(normal.numpy().mean(0), [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose(normal.numpy().std(0), [0.5, 3.0], rtol=0.05)
    coin = D.Bernoulli(probs=dg.tensor(0.3)).sample((20000,))
    assert set(np.unique(coin.numpy())) <= {0.0, 1.0} and abs(coin.numpy().mean() - 0.3) < 0.02
    uniform = D.Uniform(dg.tensor(-1.0), dg.tensor(3.0)).sample((1000,))
    assert uniform.numpy().min() >= -1.0 and uniform.numpy().max() < 3.0
    assert not D.Normal(0.0, 1.0).sample().requires_grad


def test_the_same_seed_gives_the_same_draws():
    def draws():
        dg.manual_seed(42)
        return (D.Categorical(logits=dg.zeros(5)).sample((6,)).tolist(),
                D.Normal(0.0, 1.0).sample((3,)).tolist())

    assert draws() == draws()


def test_invalid_arguments_fail_on_one_line_as_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    # torch.compile turns PyTorch's argument checks off for the whole process (dynamo calls
    # set_default_validate_args(False)); an earlier test may have compiled something.
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
    cases = [lambda L: L.distributions.Normal(L.zeros(2), -L.ones(2)),
             lambda L: L.distributions.Uniform(0.0, 1.0).log_prob(L.tensor(2.0)),
             lambda L: L.distributions.Categorical(L.tensor([0.5, 0.5])).log_prob(L.tensor(3)),
             lambda L: L.distributions.Bernoulli(probs=L.tensor(1.5)),
             lambda L: L.distributions.Categorical(probs=L.ones(2), logits=L.ones(2))]
    for case in cases:
        with pytest.raises(ValueError) as ours:
            case(dg)
        with pytest.raises(ValueError) as theirs:
            case(torch)
        assert "\n" not in str(ours.value)
        assert str(ours.value).split(" but ")[0].replace("dyngraph.", "torch.") == \
            str(theirs.value).split(" but ")[0]
    assert D.Uniform(0.0, 1.0, validate_args=False).log_prob(dg.tensor(2.0)).item() == -np.inf


def test_repr_names_the_given_parameters():
    m = D.Categorical(logits=dg.zeros(3))
    m.entropy()
    assert repr(m) == "Categorical(logits: dyngraph.Size([3]))"
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


def test_a_missing_kl_pair_names_itself():
    with pytest.raises(NotImplementedError,
                       match=r"dyngraph does not implement kl_divergence\(Normal, Uniform\)"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Uniform(0.0, 1.0))
