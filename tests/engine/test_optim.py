"""Optimizers against torch.optim over several steps, param groups, state dicts and the
OptimizerStep event."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.optim as optim
from dyngraph.nn import Parameter

RNG = np.random.default_rng(0)
SHAPES = [(3, 4), (4,), ()]


def _run_ours(cls, kwargs, inits, grads_per_step, groups=None):
    params = [Parameter(dg.tensor(a.copy())) for a in inits]
    spec = params if groups is None else [
        {"params": [params[i] for i in idx], **extra} for idx, extra in groups]
    opt = cls(spec, **kwargs)
    for grads in grads_per_step:
        opt.zero_grad()
        for p, g in zip(params, grads, strict=True):
            p.grad = dg.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params], opt


def _run_torch(torch, cls, kwargs, inits, grads_per_step, groups=None):
    params = [torch.nn.Parameter(torch.tensor(a.copy())) for a in inits]
    spec = params if groups is None else [
        {"params": [params[i] for i in idx], **extra} for idx, extra in groups]
    opt = cls(spec, **kwargs)
    for grads in grads_per_step:
        opt.zero_grad()
        for p, g in zip(params, grads, strict=True):
            p.grad = torch.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params]


def _data(steps=6):
    inits = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[RNG.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]
    return inits, grads


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.9, "centered": True,
                 "weight_decay": 0.1}),
    ("RMSprop", {"centered": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.5,
                 "weight_decay": 0.1}),
]


@pytest.mark.parametrize("name,kwargs", CASES)
def test_optimizers_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    inits, grads = _data()
    ours, _ = _run_ours(getattr(optim, name), kwargs, inits, grads)
    theirs = _run_torch(torch, getattr(torch.optim, name), kwargs, inits, grads)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_param_groups_with_their_own_learning_rates_match_torch():
    torch = pytest.importorskip("torch")
    inits, grads = _data()
    groups = [([0, 2], {"lr": 0.5}), ([1], {"momentum": 0.9})]
    ours, opt = _run_ours(optim.SGD, {"lr": 0.01}, inits, grads, groups)
    theirs = _run_torch(torch, torch.optim.SGD, {"lr": 0.01}, inits, grads, groups)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.01]
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[0]["momentum"] == 0


def test_first_step_without_grad_skips_the_parameter():
    p, q = Parameter(dg.ones(2)), Parameter(dg.ones(2))
    opt = optim.Adam([p, q], lr=0.1)
    p.grad = dg.ones(2)
    opt.step()
    assert (q.detach().numpy() == 1).all() and (p.detach().numpy() < 1).all()
    assert q not in opt.state


def test_zero_grad_sets_to_none_or_zero():
    p = Parameter(dg.ones(2))
    opt = optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and not p.grad.numpy().any()
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_round_trip_resumes_identically():
    inits, grads = _data(8)
    full, _ = _run_ours(optim.Adam, {"lr": 0.01}, inits, grads)
    half, opt = _run_ours(optim.Adam, {"lr": 0.01}, inits, grads[:4])
    saved = opt.state_dict()
    assert sorted(saved["state"]) == [0, 1, 2]
    assert saved["param_groups"][0]["params"] == [0, 1, 2]
    assert saved["state"][0]["step"] == 4
    params = [Parameter(dg.tensor(a.copy())) for a in half]
    resumed = optim.Adam(params, lr=0.5)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == 0.01
    for step_grads in grads[4:]:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = dg.tensor(g)
        resumed.step()
    for a, b in zip(full, params, strict=True):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-6)
    # The saved state is a copy: stepping on does not change it.
    assert saved["state"][0]["step"] == 4


def test_constructor_errors():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([Parameter(dg.ones(1))], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([Parameter(dg.ones(1))], lr=0.1, nesterov=True)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(Parameter(dg.ones(1)), lr=0.1)
    p = Parameter(dg.ones(1))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


def test_step_emits_one_event_with_update_norms_and_no_ops():
    p = Parameter(dg.ones(2, 2))
    q = Parameter(dg.ones(3))
    opt = optim.SGD([p, q], lr=0.5)
    (p.sum() * 2).backward()
    events = []
    with dg.subscribe(events.append):
        opt.step()
    assert [e.kind for e in events] == ["optimizer_step"]
    event = events[0]
    assert event.optimizer == "SGD" and event.lr == 0.5
    assert event.updates == ((p._id, pytest.approx(2.0)),)  # |0.5 * 2 * ones(2,2)| = 2


def test_updates_are_in_place():
    p = Parameter(dg.ones(3))
    view = p.detach().numpy()
    opt = optim.AdamW([p], lr=0.1)
    p.grad = dg.ones(3)
    opt.step()
    assert p.detach().numpy() is view and (view < 1).all()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type):
    torch = pytest.importorskip("torch")
    from dyngraph.nn.utils import clip_grad_norm_, clip_grad_value_

    inits, grads = _data(1)
    ours = [Parameter(dg.tensor(a)) for a in inits]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in inits]
    for p, q, g in zip(ours, theirs, grads[0], strict=True):
        p.grad, q.grad = dg.tensor(g), torch.tensor(g)
    total = clip_grad_norm_(ours, 0.5, norm_type=norm_type)
    ref = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type=norm_type)
    assert total.item() == pytest.approx(ref.item(), rel=1e-5)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    clip_grad_value_(ours, 0.01)
    torch.nn.utils.clip_grad_value_(theirs, 0.01)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_parameters_to_vector_round_trip():
    from dyngraph.nn.utils import parameters_to_vector, vector_to_parameters

    params = [Parameter(dg.randn(2, 3)), Parameter(dg.randn(4))]
    vec = parameters_to_vector(params)
    assert vec.shape == dg.Size([10])
    vector_to_parameters(vec * 2, params)
    np.testing.assert_allclose(parameters_to_vector(params).detach().numpy(), vec.numpy() * 2)


SCHEDULES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 9], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.01}),
    ("LinearLR", {"start_factor": 0.25, "total_iters": 4}),
    ("LambdaLR", {"lr_lambda": lambda epoch: 1 / (1 + epoch)}),
]


@pytest.mark.parametrize("name,kwargs", SCHEDULES)
def test_lr_schedulers_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    ours_opt = optim.SGD([{"params": [Parameter(dg.ones(1))], "lr": 0.5},
                          {"params": [Parameter(dg.ones(1))]}], lr=0.1)
    theirs_opt = torch.optim.SGD([{"params": [torch.nn.Parameter(torch.ones(1))], "lr": 0.5},
                                  {"params": [torch.nn.Parameter(torch.ones(1))]}], lr=0.1)
    ours = getattr(optim.lr_scheduler, name)(ours_opt, **kwargs)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kwargs)
    for _ in range(12):
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-9)
        assert [g["lr"] for g in ours_opt.param_groups] == pytest.approx(
            [g["lr"] for g in theirs_opt.param_groups], rel=1e-9)
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()


def test_lr_scheduler_is_importable_as_in_torch():
    from dyngraph.optim.lr_scheduler import StepLR

    assert StepLR is optim.lr_scheduler.StepLR
