"""One-line descriptions of a paused frame's values (in-process: what the child sends up)."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph
from dyngraph import nn
from dyngraph.debug.variables import describe, long_repr, shown, tensor_info


def test_a_dyngraph_tensor_has_its_statistics_and_node_id():
    t = dyngraph.tensor([[1.0, -2.0], [float("nan"), 4.0]], requires_grad=True)
    row = describe("t", t)
    assert row.type == "Tensor"
    assert row.text == "(2, 2) float32  requires_grad  min -2 max 4 mean 1  NaN 1 Inf 0"
    assert row.tensor.node == t._id and row.tensor.requires_grad


def test_numpy_arrays_of_every_kind_and_large_ones_are_sampled():
    assert describe("b", np.array([True, False, True])).text.startswith("(3,) bool")
    assert describe("i", np.arange(5)).text.startswith("(5,) int64  min 0 max 4 mean 2")
    big = describe("big", np.ones((1000, 1000), np.float32))
    assert big.text.endswith("(sampled)") and big.tensor.node is None
    assert describe("s", np.array(["a", "b"])).text == "array(['a', 'b'], dtype='<U1')"


def test_modules_count_their_parameters_and_plain_values_show_their_value():
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    assert describe("net", net).text == "Sequential, 49 parameters"
    assert describe("n", 3).text == "3" and describe("s", "hi").text == "'hi'"
    assert describe("d", {"a": [1, 2]}).text == "{'a': [1, 2]}"
    long = describe("l", list(range(10_000))).text
    assert long.startswith("[0, 1, 2") and len(long) < 100
    assert len(describe("s", "x" * 10_000).text) <= 160


def test_broken_reprs_and_control_characters_stay_on_one_line():
    class Broken:
        def __repr__(self):
            raise ValueError("no")

    assert describe("b", Broken()).text.startswith("<Broken instance at 0x")
    assert "\n" not in describe("s", "a\nb\x1b[31m").text


def test_what_a_frame_shows():
    import os

    assert not shown("__name__", "x", module_level=True)
    assert not shown("os", os, module_level=False)
    assert not shown("f", test_what_a_frame_shows, module_level=True)
    assert shown("f", test_what_a_frame_shows, module_level=False)
    assert shown("x", 1, module_level=True)


def test_console_text_of_a_tensor_is_its_summary_then_its_first_values():
    text = long_repr(dyngraph.arange(20.0))
    head, preview = text.split("\n")
    assert head.startswith("(20,) float32  min 0 max 19")
    assert preview == "[0, 1, 2, 3, 4, 5, 6, 7, …]  of 20"


def test_pytorch_tensors_and_modules():
    torch = pytest.importorskip("torch")
    t = torch.ones(2, 3, requires_grad=True)
    row = describe("t", t * 2)
    assert row.text.startswith("(2, 3) float32  requires_grad  min 2 max 2 mean 2")
    assert describe("h", torch.ones(4, dtype=torch.bfloat16)).text.startswith(
        "(4,) bfloat16  min 1")
    assert describe("m", torch.nn.Linear(4, 8)).text == "Linear, 40 parameters"
    # The PyTorch backend marks a tensor with (id(tensor), tensor id); a copy is stale.
    t._dg_id = (id(t), 41)
    assert tensor_info(t).node == 41
    clone = torch.ones(1)
    clone._dg_id = (id(t), 41)
    assert tensor_info(clone).node is None
