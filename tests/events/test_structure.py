"""Iterations: graphs, structure keys and diffs across control flow and input sizes."""

from __future__ import annotations

import numpy as np

import dyngraph as dg
from dyngraph.capture.tracing import module_scope


def _rnn(w: dg.Tensor, xs: np.ndarray) -> None:
    h = dg.zeros(3)
    with module_scope("rnn"):
        for x in xs:  # the loop length depends on the input
            h = (h @ w + dg.tensor(x)).tanh()
    h.sum().backward()


def test_loop_length_changes_the_key_and_diff_names_exactly_the_added_ops():
    rng = np.random.default_rng(0)
    w = dg.tensor(rng.standard_normal((3, 3)).astype(np.float32), requires_grad=True)
    w._name = "rnn.w"
    with dg.trace(stats="cheap") as t:
        _rnn(w, rng.standard_normal((2, 3)).astype(np.float32))
        _rnn(w, rng.standard_normal((2, 3)).astype(np.float32))
        _rnn(w, rng.standard_normal((3, 3)).astype(np.float32))
    one, two, three = t.iterations
    assert one.structure_key == two.structure_key != three.structure_key
    assert two.diff(one).unchanged
    d = three.diff(two)
    added = [three.graph.nodes[i] for i in d.added]
    # One more step of the loop: its input leaf, matmul, add and tanh, and nothing else.
    assert sorted(n.label for n in added) == ["add", "input", "matmul", "tanh"]
    assert [(n.module, n.occurrence) for n in added if n.kind == "op"] == [("rnn", 2)] * 3
    assert d.removed == () and d.reshaped == ()
    assert three.diff(two.graph) == d  # a Graph works as well as an Iteration
    assert set(two.diff(three).removed) == set(d.added)


def test_input_size_changes_the_key_and_shows_as_reshaped():
    w = dg.tensor(np.ones((4, 2), np.float32), requires_grad=True)
    with dg.trace(stats="none") as t:
        for batch in (8, 8, 5):
            (dg.ones(batch, 4) @ w).relu().sum().backward()
    a, b, c = t.iterations
    assert a.structure_key == b.structure_key != c.structure_key
    d = c.diff(b)
    assert d.added == () and d.removed == ()
    reshaped = {c.graph.nodes[new].label for _, new in d.reshaped}
    assert reshaped == {"input", "matmul", "relu"}


def test_structure_key_ignores_ids_and_values_but_not_names_or_grad_mode():
    def run(name: str, value: float, grad: bool) -> str:
        w = dg.tensor([value, 1.0], requires_grad=True)
        w._name = name
        with dg.trace() as t:
            with dg.set_grad_enabled(grad):
                _ = (w * 2).sum()
        return t.iterations[0].structure_key

    base = run("a", 1.0, True)
    assert run("a", 5.0, True) == base  # other ids and values
    assert run("b", 1.0, True) != base  # another parameter
    assert run("a", 1.0, False) != base  # the same ops under no_grad build no graph


def test_graph_model_of_an_iteration():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    x._name = "x"
    with dg.trace(stats="full") as t:
        with module_scope("block"):
            with module_scope("block.inner"):
                y = (x * x).exp()
        y.sum().backward()
    it = t.iterations[0]
    g = it.graph
    assert g.complete and g.iteration == 1 and it.index == 1
    assert {n.label for n in g.nodes.values()} == {"x", "mul", "exp", "sum"}
    assert g.modules() == ["block", "block.inner"]
    assert g.inputs_of(y._id) == [next(i for i, n in g.nodes.items() if n.op == "mul")]
    assert g.nodes[x._id].grad is not None and g.nodes[x._id].grad_fn == "AccumulateGrad"
    bg = it.backward_graph
    assert bg.nodes[y._id].op == "ExpBackward0"
    assert {(bg.nodes[e.src].op, bg.nodes[e.dst].op) for e in bg.edges} >= {
        ("SumBackward0", "ExpBackward0"), ("ExpBackward0", "MulBackward0"),
        ("MulBackward0", "AccumulateGrad")}
    assert bg.backward_order[0] == max(bg.nodes)  # backward starts at the loss


def test_live_trace_grows_while_recording():
    x = dg.tensor([1.0], requires_grad=True)
    with dg.trace() as t:
        (x * 2).sum().backward()
        assert len(t.iterations) == 1  # ended lazily: still open until the next op
        _ = x * 3
        assert t.iterations[0].complete
        assert len(t.iterations[1].graph.nodes) == 2
        _ = x * 4
        assert len(t.iterations[1].graph.nodes) == 3
