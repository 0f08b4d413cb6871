"""Module and parameter names come from how the program built its modules (registration),
not from which module it happened to call first."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import dyngraph  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402


def names(events: list[ev.Event]) -> tuple[set[str], set[str]]:
    """(parameter names, module paths of ops)."""
    params = {e.name for e in events if type(e) is ev.TensorCreated and e.is_param}
    modules = {e.module for e in events if type(e) is ev.Op}
    return params, modules


class PPO(nn.Module):
    """minimalRL's ppo.py: the program calls pi() and v(), never forward()."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc_pi = nn.Linear(16, 2)
        self.fc_v = nn.Linear(16, 1)

    def pi(self, x, softmax_dim=0):
        return F.softmax(self.fc_pi(F.relu(self.fc1(x))), dim=softmax_dim)

    def v(self, x):
        return self.fc_v(F.relu(self.fc1(x)))


def test_a_model_whose_methods_other_than_forward_are_called_keeps_its_names():
    """Issue 22: minimalRL's PPO calls model.pi(x) and model.v(x): every layer became a
    root, parameters read `weight`, `bias`, and exports had no clusters."""
    with dyngraph.trace() as t:
        model = PPO()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(2):
            s = torch.randn(5, 4)
            loss = -model.pi(s, 1)[:, 0].log().mean() + model.v(s).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    params, modules = names(list(t.events))
    assert params == {f"{m}.{p}" for m in ("fc1", "fc_pi", "fc_v") for p in ("weight", "bias")}
    assert modules == {"", "fc1", "fc_pi", "fc_v"}
    graph = t.iterations[0].graph
    assert set(graph.modules()) >= {"fc1", "fc_pi", "fc_v"}  # (clusters in an export)


class Lambda(nn.Module):
    """ode_demo.py's true dynamics: a module without parameters, built inline."""

    def forward(self, t, y):
        return (y ** 3) @ torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])


class ODEFunc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))

    def forward(self, t, y):
        return self.net(y ** 3)


LIBRARY = '''
import torch.nn as nn


class PerturbFunc(nn.Module):  # torchdiffeq's _PerturbFunc, in a library
    def __init__(self, base_func):
        super().__init__()
        self.base_func = base_func

    def forward(self, t, y):
        return self.base_func(t, y)


def odeint(func, y):
    wrapped = PerturbFunc(PerturbFunc(func))
    return wrapped(0.0, y)
'''


def test_a_librarys_wrapper_around_the_users_module_leaves_its_names_alone(tmp_path,
                                                                             monkeypatch):
    """Issue 22: torchdiffeq's wrappers gave base_func.base_func.net.0.weight for the user's
    net.0.weight."""
    from dyngraph.debug import frames

    (tmp_path / "fakediffeq.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    library_file = str(tmp_path / "fakediffeq.py")
    monkeypatch.setitem(frames._user_files, library_file, False)  # installed, as it were
    import fakediffeq

    try:
        with dyngraph.trace() as t:
            with torch.no_grad():
                truth = fakediffeq.odeint(Lambda(), torch.randn(3, 2))
            func = ODEFunc()
            for _ in range(2):
                (fakediffeq.odeint(func, truth) - truth).pow(2).mean().backward()
    finally:
        sys.modules.pop("fakediffeq", None)
    params, modules = names(list(t.events))
    assert params == {"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"}
    assert modules == {"", "net.0", "net.1", "net.2"}  # (Lambda's ops: at its own top)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(10, 4)

    def forward(self, x):
        return self.embedding(x)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder) -> None:
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, x):
        return self.decoder(self.encoder(x).sum(1))


def test_modules_the_users_own_code_or_pytorch_combines_are_named_under_their_holder():
    with dyngraph.trace() as t:
        model = Seq2Seq(Encoder(), nn.Linear(4, 3))  # built apart, combined by the user
        stack = nn.Sequential(nn.Linear(3, 3), nn.ReLU())  # combined by PyTorch
        stack(model.encoder(torch.tensor([[1, 2]])).sum(1)[:, :3])  # called part first
        model(torch.tensor([[1, 2]])).sum().backward()
    params, modules = names(list(t.events))
    assert params == {"encoder.embedding.weight", "decoder.weight", "decoder.bias",
                      "0.weight", "0.bias"}
    assert {"encoder.embedding", "decoder", "0", "1"} <= modules


def test_a_model_built_before_the_capture_is_named_from_the_outermost_call():
    """A limit, said in docs/cli.md: nothing registered while the capture was off is known,
    so such a model's layers are named from the module called first, as before."""
    model = PPO()
    with dyngraph.trace() as t:
        model.v(torch.randn(2, 4)).sum().backward()
    params, modules = names(list(t.events))
    assert params == {"weight", "bias"}  # fc1 and fc_v were each called as a root
    assert modules == {""}
