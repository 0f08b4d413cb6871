"""The module-folding model (``dyngraph.capture.folding``) on plain data and on a graph."""

from __future__ import annotations

import json

import dyngraph
import dyngraph.nn as nn
from dyngraph.capture import folding as fd


def blocks(n: int, width: int = 3) -> tuple[list, list, list, list]:
    """Plain data of a model with ``n`` identical blocks ``h.0`` .. ``h.{n-1}``: an input,
    then per block a weight, a linear in ``h.k.fc`` and ``width - 2`` tanh ops in
    ``h.k``, then a loss at top level."""
    scopes: list = [()]
    inputs: list = [()]
    sigs: list = [("leaf", "", (2, 4), "float32")]
    names: list = ["x"]
    last = 0
    for k in range(n):
        block = f"h.{k}#1"
        scopes += [(block,), (block, f"h.{k}.fc#1")]
        inputs += [(), (last, len(inputs))]
        sigs += [("param", "", (4, 4), "float32"), ("op", "linear", (2, 4), "float32")]
        names += [f"h.{k}.fc.weight", ""]
        last = len(inputs) - 1
        for _ in range(width - 2):
            scopes.append((block,))
            inputs.append((last,))
            sigs.append(("op", "tanh", (2, 4), "float32"))
            names.append("")
            last = len(inputs) - 1
    scopes.append(())
    inputs.append((last,))
    sigs.append(("op", "sum", (), "float32"))
    names.append("")
    return scopes, inputs, sigs, names


def test_repeated_sibling_calls_are_one_run_labelled_by_their_ends():
    tree = fd.ModuleTree.build(*blocks(6))
    assert list(tree.runs) == ["run:h.0#1"]
    run = tree.runs["run:h.0#1"]
    assert run.members == [f"h.{k}#1" for k in range(6)]
    assert run.label == "h.0 … h.5 ×6"
    # A block that computes something else ends a run: h.0 and h.1 differ now.
    scopes, inputs, sigs, names = blocks(4)
    sigs[5] = ("op", "relu", (2, 4), "float32")  # h.1's linear is a relu now
    runs = fd.ModuleTree.build(scopes, inputs, sigs, names).runs
    assert [(r.members, r.label) for r in runs.values()] == [
        (["h.2#1", "h.3#1"], "h.2 … h.3 ×2")]


def test_a_big_graph_opens_at_module_level_and_small_ones_unfolded():
    small = fd.ModuleTree.build(*blocks(3))
    assert fd.fold(small, fd.auto_expanded(small)).folded() is False
    big = fd.ModuleTree.build(*blocks(120))  # 361 nodes
    assert big.n > fd.FOLD_ABOVE
    folding = fd.fold(big, fd.auto_expanded(big))
    kinds = [u.kind for u in folding.units]
    assert kinds == ["node", "run", "node"]  # input, h.0 … h.119, loss
    assert folding.units[1].size == 360 and folding.edges == [(0, 1), (1, 2)]
    assert all(folding.unit_of[i] == 1 for i in range(1, 361))


def test_opening_one_member_opens_its_run_and_only_that_member():
    tree = fd.ModuleTree.build(*blocks(120))
    opened = fd.open_set(tree, expand=["h.3#1"])
    folding = fd.fold(tree, opened)
    by_kind: dict[str, list] = {}
    for u in folding.units:
        by_kind.setdefault(u.kind, []).append(u)
    assert [u.key for u in by_kind["call"]][:5] == ["h.0#1", "h.1#1", "h.2#1", "h.3.fc#1",
                                                    "h.4#1"]
    assert len(by_kind["call"]) == 119 + 1  # the other members, and h.3's own fc call
    # h.3's weight and tanh are boxes of their own, drawn in h.3's frame.
    inside = [u for u in by_kind["node"] if u.parent == "h.3#1"]
    assert len(inside) == 2
    # Closing the run folds every member back, the opened one included.
    closed = fd.fold(tree, fd.open_set(tree, expand=["h.3#1"], collapse=["run:h.0#1"]) - {
        "run:h.0#1"})
    assert [u.kind for u in closed.units] == ["node", "run", "node"]


def test_member_values_give_each_member_its_largest():
    tree = fd.ModuleTree.build(*blocks(4))
    values = [None] + [float(i) for i in range(1, tree.n)]
    values[-1] = 100.0  # the loss, outside the run: not counted
    assert tree.member_values("run:h.0#1", values) == [3.0, 6.0, 9.0, 12.0]
    # The graph so far: the members not reached yet have no value.
    assert tree.member_values("run:h.0#1", values[:5]) == [3.0, 4.0, None, None]


def test_integer_index_arithmetic_folds_into_one_box():
    w = dyngraph.randn(8, 2, requires_grad=True)
    with dyngraph.trace() as t:
        w2 = w * 2  # differentiable work first: the index ops are this iteration's
        ix = dyngraph.tensor([3, 1, 4, 1])
        parts = [ix[k] + 1 for k in range(4)]  # int64 getitem + add: index bookkeeping
        rows = dyngraph.stack(parts)
        w2[rows].sum().backward()
    graph = t.iterations[0].graph
    scopes, inputs, sigs, names, ids = fd.graph_records(graph)
    tree = fd.ModuleTree.build(scopes, inputs, sigs, names)
    nodes = [graph.nodes[i] for i in ids]
    bookkeeping = [fd.is_bookkeeping(n.kind, n.dtype, n.requires_grad) for n in nodes]
    folding = fd.fold(tree, frozenset(), bookkeeping)
    index = [u for u in folding.units if u.kind == "index"]
    assert len(index) == 1 and index[0].label.startswith("index ops ×")
    folded = [nodes[i].op or nodes[i].label for i in range(len(nodes))
              if folding.unit_of[i] == folding.units.index(index[0])]
    assert "stack" in folded and folded.count("add") == 4
    # What gradients flow through stays drawn: the weight, the gather, the sum.
    drawn = [nodes[u.first].op or nodes[u.first].label for u in folding.units
             if u.kind == "node"]
    assert "sum" in drawn and "getitem" in drawn
    # Opened by its key, every index op is its own box again.
    opened = fd.fold(tree, {index[0].key}, bookkeeping)
    assert not any(u.kind == "index" for u in opened.units)


def test_the_model_of_a_recorded_graph_is_plain_json():
    model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(3)])
    with dyngraph.trace() as t:
        model(dyngraph.randn(2, 4)).sum().backward()
    tree = fd.ModuleTree.from_graph(t.iterations[0].graph)
    assert [r.label for r in tree.runs.values()] == ["0 … 2 ×3"]
    folding = fd.fold(tree, fd.auto_expanded(tree, above=0, budget=4))
    text = json.dumps({"tree": tree.to_dict(), "folding": folding.to_dict()})
    back = json.loads(text)
    assert back["folding"]["units"][1]["kind"] == "run"
    assert len(back["folding"]["unit_of"]) == len(t.iterations[0].graph.nodes)


class _Attention(nn.Module):
    """As nn.MultiheadAttention: ``out_proj``'s weight used in this module's own call,
    ``out_proj`` itself never called."""

    def __init__(self) -> None:
        super().__init__()
        self.out_proj = nn.Linear(4, 4)

    def forward(self, x: dyngraph.Tensor) -> dyngraph.Tensor:
        return x.matmul(self.out_proj.weight.t()).tanh()


def test_a_weight_of_a_module_never_called_is_drawn_in_the_call_that_uses_it():
    """A 24-block GPT's 48 out_proj weights and biases were 48 boxes at top level."""
    model = nn.Sequential(_Attention(), _Attention())
    with dyngraph.trace() as t:
        model(dyngraph.randn(2, 4)).sum().backward()
    scopes, _, _, names, _ = fd.graph_records(t.iterations[0].graph)
    where = {name: scope for name, scope in zip(names, scopes, strict=True) if name}
    assert where["0.out_proj.weight"] == ("0#1",)
    assert where["1.out_proj.weight"] == ("1#1",)
