"""Graphs shared by repeated iterations (``capture.sharedgraph``) on PyTorch workloads: the
torch backend records a backward node per autograd node, with a gradient per output slot
(``split``'s), which the numpy engine never does; each iteration's graph, shared or not,
is still the one the ``GraphBuilder`` makes of its events."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from test_shared_graph import assert_graphs_are_the_builders  # noqa: E402
from torch_models import block_step, lstm_step, mlp_step  # noqa: E402

import dyngraph  # noqa: E402


def _split_step():
    torch.manual_seed(0)
    w = torch.randn(6, 4, requires_grad=True)

    def step() -> None:
        a, b, c = (torch.randn(3, 6) @ w).split([1, 1, 2], dim=1)
        (a * b + c.sum(dim=1, keepdim=True)).pow(2).sum().backward()

    return step


@pytest.mark.parametrize("workload", ["mlp", "block", "lstm", "split"])
def test_a_pytorch_workload_s_graphs_are_the_builder_s_shared_or_not(workload, tmp_path):
    step = {"mlp": mlp_step, "block": block_step, "lstm": lstm_step,
            "split": _split_step}[workload]()
    with dyngraph.trace(backend="torch", stats="cheap") as t:
        for k in range(5):
            step(5 + k % 2) if workload == "lstm" else step()  # (lstm: two lengths)
    path = tmp_path / "t.dgtrace"
    t.save(path)
    for trace in (t, dyngraph.read_trace(path)):
        shared = assert_graphs_are_the_builders(trace)
        # (each structure's first iteration is built on its own; lstm has two)
        assert shared == len(trace.iterations) - (2 if workload == "lstm" else 1)
    if workload == "split":
        g = trace.iterations[-1].graph
        assert any(len(gn.outputs) > 1 for gn in g.grad_nodes.values())
        slots = [n for n in g.nodes.values() if n.op == "split"]
        assert slots and all(n.grad is not None for n in slots)
        # (the split's second and third outputs take their gradients from the step's
        # grad_outputs, by slot: the template says so)
        assert {place[5] for place in g.template.places} >= {1, 2}
