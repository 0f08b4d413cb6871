"""PyTorch capture in process (``dyngraph.trace``): events, mapping, numerics, edge cases."""

from __future__ import annotations

import collections
import copy
import inspect
import io
import subprocess
import sys
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_models import MLP, Tagger, autograd_nodes, block_step, lstm_step, mlp_step  # noqa: E402

import dyngraph  # noqa: E402
from dyngraph.capture import backends  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.capture.arrays import to_numpy  # noqa: E402


@pytest.fixture
def compile_eager():
    """``--compile eager``: torch.compile'd code runs uncompiled, every op seen."""
    from dyngraph import compile_lane

    compile_lane.set_mode("eager")
    yield
    compile_lane.set_mode(None)


def ops(events: list[ev.Event], iteration: int | None = None) -> list[ev.Op]:
    return [e for e in events
            if type(e) is ev.Op and (iteration is None or e.iteration == iteration)]


def kinds_of(events: list[ev.Event], kind: type) -> list:
    return [e for e in events if type(e) is kind]


def marked_line(obj: object, marker: str) -> int:
    lines, start = inspect.getsourcelines(obj)  # type: ignore[arg-type]
    for i, text in enumerate(lines):
        if text.rstrip().endswith(f"# @{marker}"):
            return start + i
    raise AssertionError(marker)


def test_an_mlp_step_gives_every_event_kind_named_as_the_user_wrote_it():
    step = mlp_step()
    with dyngraph.trace(stats="full", values="small") as t:
        step()
        step()
    events = list(t.events)
    assert {e.kind for e in events} == {
        "header", "module_call", "tensor", "values", "op", "backward_start", "backward_step",
        "grad", "backward_end", "optimizer_step", "iteration_end"}
    calls = {e.call: e.module for e in events if type(e) is ev.ModuleCall and e.iteration == 1}
    assert sorted(calls.values()) == ["", "fc1", "fc2"]
    first = ops(events, 1)
    assert [(e.op, e.module) for e in first] == [
        ("linear", "fc1"), ("relu", ""), ("linear", "fc2"), ("cross_entropy", "")]
    assert [calls.get(e.call, "") for e in first] == ["fc1", "", "fc2", ""]
    forward_line = marked_line(MLP, "mlp-forward")
    assert {e.line for e in first[:3]} == {forward_line}
    assert all(e.file.endswith("torch_models.py") for e in first)
    params = {e.name for e in kinds_of(events, ev.TensorCreated) if e.is_param}
    assert params == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert first[3].summary.shape == () and first[0].summary.std is not None
    # backward: PyTorch's node names, each mapped to the op it belongs to
    steps = [e for e in kinds_of(events, ev.BackwardStep) if e.iteration == 1]
    by_output = {e.output: e.op for e in first}
    assert [(s.grad_fn, by_output[s.node]) for s in steps] == [
        ("NllLossBackward0", "cross_entropy"), ("LogSoftmaxBackward0", "cross_entropy"),
        ("AddmmBackward0", "linear"), ("TBackward0", "linear"), ("ReluBackward0", "relu"),
        ("AddmmBackward0", "linear"), ("TBackward0", "linear")]
    assert all(s.grad_output is not None and s.grad_output.norm > 0 for s in steps)
    grads = [e for e in kinds_of(events, ev.GradAccumulated) if e.iteration == 1]
    assert sorted(g.name for g in grads) == sorted(params)
    # the optimizer's update norms, and nothing of its internals as ops
    (opt,) = [e for e in kinds_of(events, ev.OptimizerStep) if e.iteration == 1]
    assert opt.optimizer == "SGD" and len(opt.updates) == 4 and all(n > 0 for _, n in opt.updates)
    order = [e.kind for e in events if e.iteration == 1]
    assert order[order.index("backward_end") + 1:] == ["optimizer_step", "iteration_end"]
    # the graph: every op node got its gradient from its first backward node
    graph = t.iterations[0].graph
    assert {n.grad_fn for n in graph.nodes.values() if n.kind == "op"} == {
        "NllLossBackward0", "AddmmBackward0", "ReluBackward0"}
    assert t.iterations[0].structure_key == t.iterations[1].structure_key


def test_update_norms_are_the_parameters_change():
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 8), torch.randint(0, 4, (8,))
    before = [p.detach().clone() for p in model.parameters()]
    with dyngraph.trace(stats="cheap") as t:
        F.cross_entropy(model(x), y).backward()
        opt.step()
    (step,) = kinds_of(list(t.events), ev.OptimizerStep)
    names = {e.tensor: e.name for e in kinds_of(list(t.events), ev.TensorCreated)}
    expected = {name: float((p.detach() - b).norm())
                for (name, p), b in zip(model.named_parameters(), before, strict=True)}
    assert {names[tid]: pytest.approx(norm, rel=1e-5) for tid, norm in step.updates} == expected


def test_captured_losses_are_bitwise_those_of_an_uncaptured_run_and_nothing_else_changes():
    def run(capture: bool) -> tuple[list[float], list[np.ndarray], torch.Tensor]:
        step = mlp_step(seed=3)
        if capture:
            with dyngraph.trace(stats="full"):
                losses = [step() for _ in range(3)]
        else:
            losses = [step() for _ in range(3)]
        return losses, [torch.randn(3).numpy()], torch.get_rng_state()

    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    plain, captured = run(False), run(True)
    assert plain[0] == captured[0]  # exact floats
    assert np.array_equal(plain[1][0], captured[1][0])  # the RNG advanced identically
    assert torch.equal(plain[2], captured[2])
    assert torch.get_default_dtype() == dtype and torch.is_grad_enabled() == grad


def test_every_backward_node_of_a_gpt_block_is_mapped_to_its_forward_op():
    step = block_step()
    step()  # warm up outside the capture
    with dyngraph.trace(stats="none") as t:
        step()
    events = list(t.events)
    outputs = {e.output: e.op for e in ops(events)}
    steps = kinds_of(events, ev.BackwardStep)
    assert steps and all(s.node in outputs for s in steps), [s.grad_fn for s in steps
                                                             if s.node not in outputs]
    # ... and they are exactly the nodes autograd itself has in that graph
    assert collections.Counter(s.grad_fn for s in steps) == collections.Counter(block_nodes())
    mapped = {(s.grad_fn, outputs[s.node]) for s in steps}
    assert ("AddmmBackward0", "linear") in mapped and ("SoftmaxBackward0", "softmax") in mapped
    assert ("NativeLayerNormBackward0", "layer_norm") in mapped


def block_nodes() -> list[str]:
    from torch_models import Block

    torch.manual_seed(0)
    loss = Block()(torch.randn(2, 6, 16)).pow(2).mean()
    return autograd_nodes(loss)


def test_an_lstm_over_variable_length_input_changes_its_graph_with_the_length():
    step = lstm_step()
    with dyngraph.trace(stats="cheap") as t:
        for length in (3, 5, 3):
            step(length)
    keys = [it.structure_key for it in t.iterations]
    assert keys[0] == keys[2] != keys[1]
    first = ops(list(t.events), 1)
    assert "lstm" in [e.op for e in first] and {"emb", "lstm", "out"} <= {e.module for e in first}
    lstm = [e for e in first if e.op == "lstm"]
    assert lstm[0].shape == (4, 3, 12)  # the output, then h and c as outputs 1 and 2
    assert [e.attrs.get("output", 0) for e in lstm] == [0, 1, 2]
    outputs = {e.output for e in ops(list(t.events))}
    assert all(s.node in outputs for s in kinds_of(list(t.events), ev.BackwardStep))
    named = {e.name for e in kinds_of(list(t.events), ev.TensorCreated)}
    assert {"lstm.weight_ih_l0", "lstm.weight_hh_l0", "emb.weight"} <= named
    assert isinstance(Tagger(), nn.Module)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def test_a_custom_autograd_function_is_one_node():
    x = torch.randn(5, requires_grad=True)
    with dyngraph.trace() as t:
        Square.apply(x).sum().backward()
    events = list(t.events)
    assert [e.op for e in ops(events)] == ["Square", "sum"]
    square = ops(events)[0]
    (step,) = [s for s in kinds_of(events, ev.BackwardStep) if s.grad_fn == "SquareBackward"]
    assert step.node == square.output
    assert torch.allclose(x.grad, 2 * x.detach())


def test_in_place_ops_in_a_graph_are_new_versions_and_outside_it_are_not_ops():
    w = torch.randn(3, requires_grad=True)
    with dyngraph.trace() as t:
        y = w * 2
        y.add_(1)  # in the graph: a new version of y
        y[0] = 5.0
        loss = y.sum()
        loss.backward()
        with torch.no_grad():
            w.sub_(0.1 * w.grad)  # an update: not an op
    events = list(t.events)
    names = [e.op for e in ops(events)]
    assert names[:4] == ["mul", "add_", "setitem", "sum"] and "sub_" not in names
    mul, add, setitem, total = ops(events)[:4]
    assert len({mul.output, add.output, setitem.output}) == 3
    assert add.inputs[0] == mul.output and total.inputs == (setitem.output,)


def test_backend_choice():
    x = torch.ones(2, requires_grad=True)
    with dyngraph.trace(backend="dyngraph") as t:
        (x * 2).sum().backward()
        e = dyngraph.ones(2, requires_grad=True)
        (e * 3).sum().backward()
    assert [o.op for o in ops(list(t.events))] == ["mul", "sum"]  # the engine's only
    assert kinds_of(list(t.events), ev.BackwardStep)[0].grad_fn == "SumBackward0"
    with dyngraph.trace(backend="torch") as t:
        (x * 2).sum().backward()
    assert [o.op for o in ops(list(t.events))] == ["mul", "sum"]
    with pytest.raises(dyngraph.errors.UserError, match="backend must be"):
        with dyngraph.trace(backend="jax"):
            pass


def test_dyngraph_imports_torch_only_when_the_code_does():
    code = (
        "import sys, dyngraph\n"
        "with dyngraph.trace() as t:\n"
        "    (dyngraph.ones(2, requires_grad=True) * 2).sum().backward()\n"
        "assert 'torch' not in sys.modules, 'imported torch by itself'\n"
        "with dyngraph.trace() as t:\n"
        "    import torch\n"
        "    (torch.ones(2, requires_grad=True) * 2).sum().backward()\n"
        "print(sorted({e.kind for e in t.events}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "'backward_step'" in out.stdout and "'op'" in out.stdout


def test_ids_of_copied_and_reloaded_tensors_do_not_collide():
    model = MLP()
    x = torch.randn(2, 8)
    with dyngraph.trace(stats="none") as t:
        model(x).sum().backward()
        twin = copy.deepcopy(model)
        twin(x).sum().backward()
    created = kinds_of(list(t.events), ev.TensorCreated)
    ids = {e.name: [c.tensor for c in created if c.name == e.name] for e in created if e.name}
    assert all(len(set(v)) == 2 for v in ids.values()), ids  # model and twin: distinct ids
    buffer = io.BytesIO()
    torch.save(model.fc1.weight.detach(), buffer)
    torch.save({"w": model.fc1.weight}, io.BytesIO())
    buffer.seek(0)
    assert torch.equal(torch.load(buffer, weights_only=True), model.fc1.weight.detach())


def test_ops_of_other_threads_are_not_captured_and_nothing_deadlocks():
    results: list[float] = []

    def worker() -> None:
        for _ in range(50):
            results.append(float(torch.sin(torch.ones(3)).sum()))

    x = torch.ones(3, requires_grad=True)
    with dyngraph.trace() as t:
        thread = threading.Thread(target=worker)
        thread.start()
        for _ in range(20):
            (x.cos() * 2).sum().backward()
        thread.join(30)
    assert not thread.is_alive() and len(results) == 50
    names = {e.op for e in ops(list(t.events))}
    assert names == {"cos", "mul", "sum"}


def test_the_users_hooks_and_modes_keep_working():
    from torch.utils.flop_counter import FlopCounterMode

    model = MLP()
    seen: list[str] = []
    model.fc1.register_forward_hook(lambda m, i, o: seen.append("forward hook"))
    x = torch.randn(4, 8, requires_grad=True)
    x.register_hook(lambda g: seen.append("tensor hook"))
    with dyngraph.trace() as t, FlopCounterMode(display=False) as flops:
        model(x).sum().backward()
    assert seen == ["forward hook", "tensor hook"]
    assert flops.get_total_flops() > 0
    # (the flop counter's module tracker runs ops of its own, view_as: they ran, so they show)
    names = iter(e.op for e in ops(list(t.events)))
    assert all(any(n == want for n in names) for want in ("linear", "relu", "linear", "sum"))


def test_torch_compile_runs_eagerly_and_is_said_so(compile_eager):
    notes: list[str] = []
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(4, 8)
    expected = model(x).sum().item()
    with backends.on_note(notes.append), dyngraph.trace() as t:
        compiled = torch.compile(model)
        out = compiled(x).sum()
        out.backward()
    assert out.item() == expected
    assert notes == ["torch.compile runs eagerly while captured"]
    first = ops(list(t.events))
    assert [(e.op, e.module) for e in first] == [
        ("linear", "fc1"), ("relu", ""), ("linear", "fc2"), ("sum", "")]
    assert {e.name for e in kinds_of(list(t.events), ev.TensorCreated) if e.is_param} == {
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


def test_summaries_are_exact_and_values_convert_to_numpy():
    big = torch.randn(300, 300)
    big[17, 5] = float("nan")
    big[200, 1] = float("inf")
    with dyngraph.trace(stats="full") as t:
        y = big * 1.0
        z = (torch.arange(6.0).reshape(2, 3) + 1).to(torch.bfloat16)
    s = ops(list(t.events))[0].summary
    assert (s.nan, s.inf, s.sampled) == (1, 1, False)
    finite = y[torch.isfinite(y)].double()
    assert s.norm == pytest.approx(float(finite.norm()), rel=1e-6)
    assert s.min == pytest.approx(float(finite.min()))
    assert s.max == pytest.approx(float(finite.max()))
    zs = ops(list(t.events))[-1].summary
    assert (zs.dtype, zs.mean, zs.preview[:3]) == ("bfloat16", 3.5, (1.0, 2.0, 3.0))
    assert zs.std == pytest.approx(float(torch.arange(1.0, 7.0).std()))
    w = torch.ones(2, requires_grad=True)
    assert to_numpy(w).tolist() == [1.0, 1.0] and to_numpy(z).dtype == np.float32


def test_iteration_step_ends_pytorch_iterations_at_the_optimizer_step():
    """``--iteration step`` on a PyTorch script: gradient accumulation (three backward
    passes per step) stays in one iteration, which ends at its step, though the step's
    update norms are still on the device when it is recorded (their read comes later)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(8, 4)
    with dyngraph.trace(stats="cheap", iteration="step") as t:
        for _ in range(2):
            for _ in range(3):
                model(data).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
    training = [it for it in t.iterations if it.index > 0]
    assert len(training) == 2
    for it in training:
        assert sum(isinstance(e, ev.BackwardStart) for e in it.events) == 3
        kinds = [e.kind for e in it.events]
        assert kinds[-2:] == ["optimizer_step", "iteration_end"], kinds[-4:]
        step = next(e for e in it.events if isinstance(e, ev.OptimizerStep))
        assert step.updates and all(norm > 0 for _, norm in step.updates)
