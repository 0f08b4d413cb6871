"""nn.Module semantics (registration, traversal, modes, state dicts, dtype, hooks) and the
module scopes and parameter names it gives to traced ops."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn
import dyngraph.nn.functional as F
from dyngraph.nn import module as module_mod


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.register_buffer("scale", dg.ones(4))
        self.register_buffer("cache", dg.zeros(2), persistent=False)

    def forward(self, x):
        return self.norm(self.fc(x)).relu() * self.scale


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
        self.layers = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = self.encoder(x)
        for layer in self.layers:
            h = layer(h)
        return self.decode(h) * 2

    def decode(self, h):
        return self.head(h)


def test_registration_and_traversal_order():
    m = Model()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["encoder.0.weight", "encoder.0.bias",
                     "layers.0.fc.weight", "layers.0.fc.bias", "layers.0.norm.weight",
                     "layers.0.norm.bias", "layers.1.fc.weight", "layers.1.fc.bias",
                     "layers.1.norm.weight", "layers.1.norm.bias", "head.weight", "head.bias"]
    assert [n for n, _ in m.named_modules()] == [
        "", "encoder", "encoder.0", "encoder.1", "layers", "layers.0", "layers.0.fc",
        "layers.0.norm", "layers.1", "layers.1.fc", "layers.1.norm", "head"]
    assert [n for n, _ in m.named_children()] == ["encoder", "layers", "head"]
    assert list(m.children())[0] is m.encoder
    assert len(list(m.modules())) == 12
    assert [n for n, _ in m.named_buffers()] == ["layers.0.scale", "layers.0.cache",
                                                 "layers.1.scale", "layers.1.cache"]
    assert len(list(m.parameters())) == 12
    assert [n for n, _ in m.named_parameters(recurse=False)] == []
    assert m.get_submodule("layers.1.fc") is m.layers[1].fc
    assert m.get_parameter("head.bias") is m.head.bias


def test_shared_parameters_are_listed_once():
    m = nn.Module()
    m.a = nn.Linear(2, 2)
    m.b = nn.Linear(2, 2)
    m.b.weight = m.a.weight  # tied weights
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert list(m.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


def test_assignment_rules_and_errors():
    m = nn.Linear(2, 3)
    with pytest.raises(TypeError, match="cannot assign 'dyngraph.Tensor' as parameter 'weight'"):
        m.weight = dg.zeros(3, 2)
    m.bias = None
    assert m.bias is None and [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.Parameter(dg.zeros(1))
    assert "extra" in dict(m.named_parameters())
    del m.extra
    assert "extra" not in dict(m.named_parameters())
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        _ = m.nope

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(dg.zeros(1))

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) call"):
        Early()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", dg.zeros(1))
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_train_eval_zero_grad_requires_grad_and_apply():
    m = Model()
    assert m.training and m.layers[1].norm.training
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    m(dg.randn(5, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    visited = []
    m.apply(lambda mod: visited.append(type(mod).__name__))
    assert visited[:3] == ["Linear", "Tanh", "Sequential"] and visited[-1] == "Model"


def test_state_dict_shares_memory_and_load_checks_keys():
    m = Block()
    sd = m.state_dict()
    assert list(sd) == ["scale", "fc.weight", "fc.bias", "norm.weight", "norm.bias"]
    assert not sd["fc.weight"].requires_grad
    assert np.shares_memory(sd["fc.weight"].detach().numpy(), m.fc.weight.detach().numpy())
    other = Block()
    result = other.load_state_dict({k: v.detach().numpy() * 2 for k, v in sd.items()})
    assert repr(result) == "<All keys matched successfully>"
    np.testing.assert_array_equal(other.fc.weight.detach().numpy(),
                                  m.fc.weight.detach().numpy() * 2)
    assert other.fc.weight.detach().numpy().dtype == np.float32
    with pytest.raises(RuntimeError) as info:
        other.load_state_dict({"fc.weight": dg.zeros(2, 2), "junk": dg.zeros(1)})
    text = str(info.value)
    assert text.startswith("Error(s) in loading state_dict for Block:\n\tMissing key(s) in "
                           'state_dict: "scale", "fc.bias", "norm.weight", "norm.bias". ')
    assert '\n\tUnexpected key(s) in state_dict: "junk". ' in text
    assert ("size mismatch for fc.weight: copying a param with shape dyngraph.Size([2, 2]) "
            "from checkpoint, the shape in current model is dyngraph.Size([4, 4]).") in text
    partial = other.load_state_dict({"fc.bias": dg.ones(4), "junk": dg.zeros(1)}, strict=False)
    assert partial.unexpected_keys == ["junk"] and "fc.weight" in partial.missing_keys
    assert (other.fc.bias.detach().numpy() == 1).all()


def test_load_state_dict_error_text_matches_torch():
    torch = pytest.importorskip("torch")
    bad = {"weight": np.zeros((2, 2), np.float32), "junk": np.zeros(1, np.float32)}
    with pytest.raises(RuntimeError) as ours:
        nn.Linear(2, 3).load_state_dict(bad)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Linear(2, 3).load_state_dict({k: torch.tensor(v) for k, v in bad.items()})
    assert str(ours.value) == str(theirs.value).replace("torch.Size", "dyngraph.Size")


def test_to_dtype_keeps_parameter_objects():
    m = Model()
    weight = m.head.weight
    m(dg.randn(2, 3)).sum().backward()
    assert m.double() is m
    assert m.head.weight is weight and weight.dtype == dg.float64
    assert weight.grad.dtype == dg.float64
    assert m.layers[0].scale.dtype == dg.float64
    out = m(dg.randn(2, 3, dtype=dg.float64))
    assert out.dtype == dg.float64
    m.to(dg.float32)
    assert weight.dtype == dg.float32
    assert m.to("cpu") is m
    with pytest.raises(NotImplementedError, match="CPU only"):
        m.to("cuda")
    with pytest.raises(NotImplementedError, match="CPU only"):
        nn.Linear(2, 2, device="cuda")


def test_deepcopy_is_independent():
    m = Model()
    clone = copy.deepcopy(m)
    clone.head.weight.data += 1
    assert not np.allclose(clone.head.weight.detach().numpy(), m.head.weight.detach().numpy())
    assert isinstance(clone.head.weight, nn.Parameter)
    assert [n for n, _ in clone.named_parameters()] == [n for n, _ in m.named_parameters()]


def test_parameter_basics():
    base = dg.zeros(2, 3)
    p = nn.Parameter(base)
    assert p.requires_grad and p.is_leaf and p._is_param and isinstance(p, dg.Tensor)
    assert np.shares_memory(p.detach().numpy(), base.detach().numpy())
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(dg.zeros(1), requires_grad=False).requires_grad
    assert type(p * 2) is dg.Tensor


def test_forward_hooks_replace_inputs_and_outputs_and_remove():
    fc = nn.Linear(2, 2)
    calls = []
    pre = fc.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    post = fc.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    out = fc(dg.ones(3, 2))
    expected = np.broadcast_to(fc.bias.detach().numpy() + 1, (3, 2))
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-6)
    assert calls == [dg.Size([3, 2])]
    pre.remove()
    post.remove()
    with fc.register_forward_hook(lambda mod, args, out: out * 0):
        assert not fc(dg.ones(1, 2)).detach().numpy().any()
    assert fc(dg.ones(1, 2)).detach().numpy().any()
    assert not fc._hooked


# -- module scopes and parameter names in events -----------------------------------------
def _trace(fn):
    events = []
    with dg.subscribe(events.append):
        fn()
    return events


def test_ops_record_their_module_path_and_parameters_their_names():
    m = Model()
    events = _trace(lambda: m(dg.randn(5, 3)).sum().backward())
    ops = [(e.op, e.module) for e in events if e.kind == "op"]
    assert ops[:2] == [("linear", "encoder.0"), ("tanh", "encoder.1")]
    assert ("linear", "layers.1.fc") in ops and ("layer_norm", "layers.0.norm") in ops
    assert ("mul", "layers.0") in ops  # the block's own op: its path, not its children's
    assert ("linear", "head") in ops  # reached through model.decode(), a plain method
    assert ops[-2:] == [("mul", ""), ("sum", "")]  # the root's own ops are at top level
    created = {e.name: e for e in events if e.kind == "tensor" and e.name}
    for name, p in m.named_parameters():
        assert created[name].is_param and created[name].tensor == p._id
    assert "layers.1.scale" in created and not created["layers.1.scale"].is_param
    grads = {e.name for e in events if e.kind == "grad"}
    assert "encoder.0.weight" in grads and "head.bias" in grads


def test_names_follow_structure_changes_and_new_roots():
    m = Model()
    _trace(lambda: m(dg.randn(1, 3)))
    m.layers.append(Block())
    events = _trace(lambda: m(dg.randn(1, 3)))
    assert ("linear", "layers.2.fc") in [(e.op, e.module) for e in events if e.kind == "op"]
    assert m.layers[2].fc.weight._name == "layers.2.fc.weight"
    # A module outside the current root becomes the root of its own names.
    other = nn.Sequential(nn.Linear(2, 2))
    events = _trace(lambda: other(dg.randn(1, 2)))
    assert [(e.op, e.module) for e in events if e.kind == "op"] == [("linear", "0")]
    assert other[0].weight._name == "0.weight"
    # Calling a submodule of the current root directly keeps its path under that root.
    _trace(lambda: m(dg.randn(1, 3)))
    events = _trace(lambda: m.head(dg.randn(1, 4)))
    assert [(e.op, e.module) for e in events if e.kind == "op"] == [("linear", "head")]


def test_module_built_inside_forward_is_named_by_class():
    class OnTheFly(nn.Module):
        def forward(self, x):
            return nn.ReLU()(x)

    root = nn.Sequential(OnTheFly())
    events = _trace(lambda: root(dg.randn(2)))
    assert [(e.op, e.module) for e in events if e.kind == "op"] == [("relu", "0.ReLU")]


def test_scopes_unwind_after_an_exception():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    root = nn.Sequential(nn.Linear(2, 2), Boom())
    with dg.subscribe(lambda e: None), pytest.raises(ValueError):
        root(dg.randn(1, 2))
    from dyngraph.capture.tracing import tracer

    assert tracer.module_stack == [""] and module_mod._naming.depth == 0


def test_untraced_calls_skip_the_traced_path(monkeypatch):
    def fail(*args):
        raise AssertionError("traced path taken with nobody listening")

    monkeypatch.setattr(nn.Module, "_call_traced", fail)
    m = Model()
    m(dg.randn(2, 3))  # no subscriber, no hooks: forward only


def test_functional_and_module_surface_is_reachable_as_torch():
    import dyngraph as torch

    assert torch.nn.Linear is nn.Linear and torch.nn.functional.relu is F.relu
    assert torch.optim.SGD is not None and torch.nn.init.zeros_ is nn.init.zeros_


def test_unsupported_names_fail_clearly():
    import dyngraph as torch

    with pytest.raises(AttributeError, match="dyngraph does not implement torch.nn.Conv3d"):
        torch.nn.Conv3d  # noqa: B018
    with pytest.raises(AttributeError, match="implement torch.nn.functional.interpolate"):
        torch.nn.functional.interpolate  # noqa: B018
    with pytest.raises(AttributeError, match="dyngraph does not implement torch.optim.Rprop"):
        torch.optim.Rprop  # noqa: B018
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(2, 3, proj_size=2)
    with pytest.raises(NotImplementedError, match="kdim/vdim"):
        nn.MultiheadAttention(4, 2, kdim=3)


def test_traced_training_graph_has_module_paths_and_parameter_names():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    with dg.trace() as trace:
        for _ in range(2):
            loss = F.cross_entropy(model(dg.randn(5, 3)), dg.tensor([0, 1, 0, 1, 1]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    first, second = trace.iterations
    assert first.structure_key == second.structure_key
    nodes = list(first.graph.nodes.values())
    assert [(n.op, n.module) for n in nodes if n.kind == "op"] == [
        ("linear", "0"), ("relu", "1"), ("linear", "2.0"), ("cross_entropy", "")]
    assert [n.name for n in nodes if n.kind == "param"] == [
        "0.weight", "0.bias", "2.0.weight", "2.0.bias"]
    steps = [e for e in trace.events if e.kind == "optimizer_step"]
    assert len(steps) == 2 and steps[0].optimizer == "SGD" and len(steps[0].updates) == 4


def test_names_are_cached_across_iterations_and_roots(monkeypatch):
    model, criterion = Model(), nn.MSELoss()
    x, y = dg.randn(2, 3), dg.randn(2, 2)
    _trace(lambda: criterion(model(x), y))
    calls = []
    original = nn.Module.named_modules

    def counting(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(nn.Module, "named_modules", counting)
    events = _trace(lambda: [criterion(model(x), y) for _ in range(3)])
    assert calls == []  # two roots alternate, nothing is recomputed
    assert model.head.weight._name == "head.weight"
    assert ("mse_loss", "") in [(e.op, e.module) for e in events if e.kind == "op"]
    model.extra = nn.Linear(1, 1)  # a structure change anywhere invalidates the cache
    _trace(lambda: model(x))
    assert "Model" in calls


def test_containers_index_slice_insert_delete_like_torch():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[-1], nn.Linear) and len(seq[1:]) == 2
    assert [n for n, _ in seq[1:].named_children()] == ["1", "2"]  # as torch: keys kept
    seq.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "ReLU", "Linear"]
    del seq[2]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "Linear"]
    seq.append(nn.Sigmoid())
    assert seq(dg.randn(4, 2)).shape == dg.Size([4, 1])
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]

    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.insert(0, nn.ReLU())
    del layers[1]
    layers += [nn.Tanh()]
    assert [type(m).__name__ for m in layers] == ["ReLU", "Linear", "Linear", "Tanh"]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2", "3"]
    assert isinstance(layers[-1], nn.Tanh) and len(layers[:2]) == 2

    heads = nn.ModuleDict({"a": nn.Linear(2, 2)})
    heads["b"] = nn.ReLU()
    assert list(heads) == ["a", "b"] and "b" in heads and len(heads) == 2
    assert heads.pop("a") is not None and list(heads.keys()) == ["b"]
    plist = nn.ParameterList([dg.zeros(2), nn.Parameter(dg.ones(3))])
    owner = nn.Module()
    owner.ps = plist
    assert [n for n, _ in owner.named_parameters()] == ["ps.0", "ps.1"]
    assert all(isinstance(p, nn.Parameter) for p in plist)
