"""Module paths come from registration: a block called outside its owner's forward is
named as inside it (``blocks.3.0``), as torchview and PyTorch users name it."""

from __future__ import annotations

import copy

import dyngraph
import dyngraph.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(4)])
        self.head = nn.Linear(4, 1)

    def forward(self, x: dyngraph.Tensor) -> dyngraph.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def modules_and_params(run) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
    with dyngraph.trace() as t:
        run().sum().backward()
    g = t.iterations[0].graph
    return (sorted({n.module for n in g.nodes.values() if n.kind == "op"}),
            sorted(n.name for n in g.nodes.values() if n.kind == "param"))


def test_blocks_called_at_top_level_are_named_from_their_owner() -> None:
    model = Model()
    x = dyngraph.randn(2, 4)

    def loop() -> dyngraph.Tensor:
        h = x
        for block in model.blocks:  # outside any parent's forward
            h = h + block(h)
        return model.head(h)

    modules, params = modules_and_params(loop)
    assert modules == ["", *[f"blocks.{i}.{j}" for i in range(4) for j in range(2)], "head"]
    assert params == sorted([f"blocks.{i}.0.{p}" for i in range(4) for p in ("weight", "bias")]
                            + ["head.bias", "head.weight"])
    # The same names as when the model itself is called: its ops are at top level.
    assert modules_and_params(lambda: model(x)) == (modules, params)


def test_a_bare_module_list_names_its_blocks_by_index() -> None:
    blocks = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

    def run() -> dyngraph.Tensor:
        h = dyngraph.randn(1, 3)
        for _ in range(2):
            for b in blocks:
                h = b(h).tanh()
        return h

    modules, params = modules_and_params(run)
    assert modules == ["", "0", "1", "2"]
    assert params == ["0.bias", "0.weight", "1.bias", "1.weight", "2.bias", "2.weight"]


def test_renumbering_replacing_and_copying_keep_paths_true() -> None:
    model = Model()
    model.blocks.insert(0, nn.Sequential(nn.Linear(4, 4), nn.Tanh()))
    old = model.head
    model.head = nn.Linear(4, 1)
    x = dyngraph.randn(2, 4)
    modules, params = modules_and_params(lambda: model.blocks[1](x))
    assert modules == ["", "blocks.1.0", "blocks.1.1"]  # "": the .sum() after it
    assert params == ["blocks.1.0.bias", "blocks.1.0.weight"]
    assert modules_and_params(lambda: old(x))[0] == [""]  # no longer owned: a root
    twin = copy.deepcopy(model)
    assert modules_and_params(lambda: twin.blocks[2](x))[0] == ["", "blocks.2.0", "blocks.2.1"]
