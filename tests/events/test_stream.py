"""The event stream: the exact sequence for a tiny graph, and every kind's fields."""

from __future__ import annotations

import inspect
import math
import sys

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.capture import events as ev
from dyngraph.capture.tracing import module_scope, set_run_info, subscribe, tracer


def _line() -> int:
    """The line number of the caller's next line."""
    return inspect.currentframe().f_back.f_lineno + 1  # type: ignore[union-attr]


def test_golden_sequence_of_a_tiny_graph():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    w = dg.tensor([3.0, 4.0], requires_grad=True)
    w._name = "enc.0.weight"
    with dg.trace(stats="full") as t:
        with module_scope("enc.0"):
            line_mul = _line()
            y = x * w
        line_sum = _line()
        z = y.sum()
        z.backward()
    kinds = [e.kind for e in t.events]
    assert kinds == [
        "header", "tensor", "tensor", "module_call", "op", "op", "backward_start",
        "backward_step", "backward_step", "grad", "grad", "backward_end", "iteration_end",
    ]
    seqs = [e.seq for e in t.events]
    assert seqs == list(range(len(seqs)))  # header 0, then 1, 2, 3 ...
    assert all(e.iteration == 1 for e in t.events[1:])

    _, tx, tw, call, mul, sum_, start, step_sum, step_mul, g1, g2, end, it_end = t.events
    assert (call.module, call.parent) == ("enc.0", 0) and call.call > 0
    assert (mul.call, sum_.call) == (call.call, 0)
    assert (tx.tensor, tx.name, tx.shape, tx.requires_grad, tx.is_leaf) == (
        x._id, "", (2,), True, True)
    assert (tw.tensor, tw.name) == (w._id, "enc.0.weight")
    assert (mul.op, mul.inputs, mul.output, mul.shape, mul.dtype) == (
        "mul", (x._id, w._id), y._id, (2,), "float32")
    assert (mul.module, mul.file, mul.line, mul.function) == (
        "enc.0", __file__, line_mul, "test_golden_sequence_of_a_tiny_graph")
    assert mul.requires_grad and mul.grad_enabled and mul.duration_ns >= 0
    assert (sum_.op, sum_.inputs, sum_.output, sum_.shape, sum_.module, sum_.line) == (
        "sum", (y._id,), z._id, (), "", line_sum)
    s = mul.summary
    assert (s.min, s.max, s.mean, s.nan, s.inf, s.preview) == (3.0, 8.0, 5.5, 0, 0, (3.0, 8.0))
    assert s.norm == pytest.approx(math.sqrt(73)) and s.std == pytest.approx(np.std([3, 8],
                                                                                   ddof=1))
    # Backward: steps in reverse order of the forward ops, then grads into the leaves.
    assert start.root == z._id
    assert (step_sum.node, step_sum.op, step_sum.grad_fn, step_sum.inputs) == (
        z._id, "sum", "SumBackward0", (y._id,))
    assert (step_mul.node, step_mul.op, step_mul.grad_fn, step_mul.inputs) == (
        y._id, "mul", "MulBackward0", (x._id, w._id))
    assert step_mul.grad_output.preview == (1.0, 1.0)
    # d(x*w)/dx = w and d/dw = x
    assert [g.preview for g in step_mul.grad_inputs] == [(3.0, 4.0), (1.0, 2.0)]
    grads = {g.tensor: g for g in (g1, g2)}
    assert set(grads) == {x._id, w._id}
    assert grads[x._id].summary.preview == (3.0, 4.0)
    assert grads[w._id].name == "enc.0.weight"
    assert end.root == z._id
    assert it_end.node_count == 4 and len(it_end.structure_key) == 16


def test_header_names_the_recorded_program(monkeypatch):
    monkeypatch.setattr(tracer, "run_info", None)
    monkeypatch.setattr(sys, "argv", ["/somewhere/train.py", "--epochs", "3"])
    with dg.trace(stats="cheap", values="small") as t:
        pass
    h = t.header
    assert t.events[0] is h and h.kind == "header"
    assert (h.schema_version, h.dyngraph_version) == (ev.SCHEMA_VERSION, dg.__version__)
    assert (h.script, h.argv, h.stats, h.values) == (
        "/somewhere/train.py", ("--epochs", "3"), "cheap", "small")
    set_run_info("/elsewhere/run.py", ["a", "b"])
    try:
        with dg.trace() as t:
            pass
        assert (t.header.script, t.header.argv) == ("/elsewhere/run.py", ("a", "b"))
    finally:
        tracer.run_info = None


def test_no_grad_ops_are_recorded_and_flagged():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with dg.trace() as t:
        with dg.no_grad():
            y = x * 2
        z = x * 3
    ops = [e for e in t.events if e.kind == "op"]
    assert [(o.output, o.grad_enabled, o.requires_grad) for o in ops] == [
        (y._id, False, False), (z._id, True, True)]


def test_inputs_from_an_earlier_iteration_are_announced():
    """An RNN-style hidden state carried over, and a value computed under no_grad earlier."""
    w = dg.tensor([0.5, 0.5], requires_grad=True)
    with dg.trace() as t:
        with dg.no_grad():
            scale = w * 2  # not a leaf's grad_fn, but an op output with no graph
        h = (w * scale).tanh()  # iteration 1 produces h
        h.sum().backward(retain_graph=True)
        h2 = (h * w).tanh()  # iteration 2 consumes the carried h
        h2.sum().backward()
    setup, first, second = t.iterations  # the no_grad op before any differentiable one
    assert setup.index == 0
    carried = [e for e in second.events if e.kind == "tensor" and e.tensor == h._id]
    assert len(carried) == 1
    assert not carried[0].is_leaf and carried[0].grad_fn == "TanhBackward0"
    node = second.graph.nodes[h._id]
    assert node.kind == "leaf" and node.carried and node.label == "carried"
    assert any(e.src == h._id for e in second.graph.edges)
    # the no_grad result is an op of setup, and enters iteration 1 as a carried input
    assert setup.graph.nodes[scale._id].kind == "op"
    assert not setup.graph.nodes[scale._id].grad_enabled
    assert first.graph.nodes[scale._id].kind == "leaf"


def test_values_small_records_copies_of_small_tensors():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    big = dg.zeros(5000)
    with dg.trace(values="small") as t:
        y = x * 2
        x.detach().numpy()[0] = 100.0  # later in-place changes must not reach the record
        _ = big + 1
    np.testing.assert_array_equal(t.values(x._id), [1.0, 2.0])
    np.testing.assert_array_equal(t.values(y._id), [2.0, 4.0])
    assert t.values(big._id) is None  # above the size cap
    values = [e for e in t.events if e.kind == "values"]
    assert all(isinstance(e, ev.TensorValues) for e in values)
    with dg.trace() as t:
        _ = x * 2
    assert t.values(x._id) is None and not any(e.kind == "values" for e in t.events)


def test_optimizer_step_belongs_to_the_iteration_of_its_backward():
    w = dg.tensor([1.0, -1.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.5)
    with dg.trace() as t:
        for _ in range(2):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
    steps = [e for e in t.events if e.kind == "optimizer_step"]
    assert [s.iteration for s in steps] == [1, 2]
    assert steps[0].lr == 0.5 and steps[0].optimizer == "SGD"
    (tid, norm), = steps[0].updates
    assert tid == w._id and norm == pytest.approx(0.5 * 2 * math.sqrt(2))
    kinds = [e.kind for e in t.iterations[0].events]
    assert kinds[-2:] == ["optimizer_step", "iteration_end"]


def test_explicit_iterations_without_backward():
    x = dg.tensor([1.0])
    with dg.trace() as t:
        for _ in range(3):
            with dg.iteration():
                _ = x + 1
    assert [it.index for it in t.iterations] == [1, 2, 3]
    assert all(it.complete for it in t.iterations)
    assert len({it.structure_key for it in t.iterations}) == 1


def test_subscribe_returns_a_handle_and_nothing_is_emitted_without_listeners(monkeypatch):
    seen: list[ev.Event] = []
    x = dg.tensor([1.0], requires_grad=True)
    handle = subscribe(seen.append, stats="none")
    _ = x * 2
    handle.remove()
    handle.remove()  # idempotent
    assert [e.kind for e in seen] == ["tensor", "op"] and seen[1].summary is None
    assert not tracer.listening

    def boom(*a, **k):
        raise AssertionError("the tracer was called with nobody listening")

    for name in ("op", "tensor", "backward_start", "backward_step", "grad_accumulated",
                 "backward_end"):
        monkeypatch.setattr(tracer, name, boom)
    (x * 2).sum().backward()
    with subscribe(seen.append):
        assert tracer.listening
    assert not tracer.listening


def test_attrs_are_plain_data():
    x = dg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    with dg.trace() as t:
        _ = x[1:3, np.array([0, 2])]
        _ = x.sum(dim=(0, 1), keepdim=True)
    getitem, total = [e for e in t.events if e.kind == "op"]
    assert getitem.attrs == {"index": ("1:3", "array(2,):int64")}
    assert total.attrs["keepdim"] is True and total.attrs["dim"] == (0, 1)


def test_every_event_kind_is_a_frozen_slotted_dataclass():
    for kind, cls in ev.EVENT_TYPES.items():
        assert cls.kind == kind
        assert "__slots__" in cls.__dict__
        e = cls(seq=1, iteration=1)
        with pytest.raises(AttributeError):
            e.seq = 2  # type: ignore[misc]


def test_modules_name_their_ops_and_parameters():
    nn = pytest.importorskip("dyngraph.nn")

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))

        def forward(self, x):
            return self.layers(x)

    model = Encoder()
    x = dg.ones(5, 3)
    with dg.trace(stats="cheap") as t:
        line = _line()
        model(x).sum().backward()
    ops = [e for e in t.events if e.kind == "op"]
    assert [o.module for o in ops] == ["layers.0", "layers.1", "layers.2", ""]
    assert [o.shape for o in ops] == [(5, 4), (5, 4), (5, 2), ()]
    # ops inside library modules belong to the first user frame: Encoder.forward's return
    forward_line = Encoder.forward.__code__.co_firstlineno + 1
    assert {(o.file, o.line, o.function) for o in ops[:3]} == {(__file__, forward_line,
                                                                 "forward")}
    assert (ops[3].line, ops[3].function) == (line, "test_modules_name_their_ops_and_parameters")
    params = {e.name: e for e in t.events if e.kind == "tensor" and e.is_param}
    assert set(params) == {"layers.0.weight", "layers.0.bias", "layers.2.weight",
                           "layers.2.bias"}
    assert params["layers.0.weight"].shape == (4, 3)
    grads = {e.name for e in t.events if e.kind == "grad"}
    assert grads == set(params)
    graph = t.iterations[0].graph
    assert graph.modules() == ["layers", "layers.0", "layers.1", "layers.2"]
