"""Programs the differential fuzzer (test_differential.py) found once it drew float16 and
uint8 tensors, ``requires_grad_()`` in the middle and more empty dims (issue 23). Each is
the shrunk program as the fuzzer printed it, on dyngraph and, where installed, PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from twin import twin, twin_raises


def test_masked_fill_of_uint8_with_a_negative_float_overflows():
    """``v0.masked_fill(mask, -1.5)`` on uint8: dyngraph raised numpy's OverflowError."""
    def program(L):
        v0 = L.tensor(np.array([], dtype=np.uint8))
        return v0.masked_fill(L.tensor(np.array([False])), -1.5)

    twin_raises(program, RuntimeError, "value cannot be converted to type uint8_t without "
                                       "overflow")


@pytest.mark.parametrize(("value", "dtype", "expected"), [
    (-0.5, "int32", [0, 0]), (255.5, "int32", [255, 0]), (-1, "uint8", [255, 0]),
    (-255, "uint8", [1, 0]), (2.5, "float16", [2.5, 0.0]),
])
def test_masked_fill_converts_a_number_to_the_tensors_type(value, dtype, expected):
    def program(L):
        return {"out": L.zeros(2, dtype=getattr(L, dtype)).masked_fill(
            L.tensor([True, False]), value)}

    twin(program, {"out": expected})


def test_a_leaf_made_interior_by_an_in_place_op_after_requires_grad_false():
    """A leaf used in the graph, then ``requires_grad_(False)`` and an in-place op that
    makes it part of the graph: PyTorch's backward refuses to accumulate into it."""
    def program(L):
        v0 = L.tensor(np.array([], dtype=np.float32), requires_grad=True)
        v1 = v0.index_select(-1, L.tensor(np.array([], dtype=np.int64)))
        v0.requires_grad_(False)
        v0.add_(v1)
        loss = (v0 * L.tensor(np.array([], dtype=np.float32))).sum() + (
            v1 * L.tensor(np.array([], dtype=np.float32))).sum()
        loss.backward()

    twin_raises(program, RuntimeError, "leaf variable has been moved into the graph interior")


def test_a_view_whose_memory_changed_before_requires_grad_follows_its_base():
    """PyTorch regenerates the grad_fn of a view whose version moved since it was made, so
    requires_grad_() after an in-place change gives it a history at once (dyngraph kept
    it a leaf whose gradient went nowhere: v0.grad was 2, not 5)."""
    def program(L):
        v0 = L.tensor(np.array([0.25], dtype=np.float32))
        v2 = v0[0]
        v0[L.tensor([], dtype=L.int64)] = 0.5
        v0.requires_grad_()
        loss = (v0 * 2).sum() + v2 * 3
        loss.backward()
        assert not v2.is_leaf
        return {"v0.grad": v0.grad}

    twin(program, {"v0.grad": [5.0]})


def test_a_piece_whose_memory_changed_before_requires_grad_is_refused_in_a_graph():
    def program(L):
        v0 = L.ones(4)
        piece = v0.split(2)[0]
        v0.mul_(2)
        v0.requires_grad_()
        assert (piece > 0).tolist() == [True, True]  # no gradient asked: it works
        (piece * 2).sum()

    twin_raises(program, RuntimeError, "A view was created in no_grad mode and its base or "
                                       "another view of its base has been modified inplace")


def test_cat_of_empty_int64_and_float16_is_float16():
    """Only empty 1-D tensors: numpy joined them in float64 (then float32)."""
    def program(L):
        v0 = L.tensor(np.array([], dtype=np.int64))
        v3 = L.cat([v0, v0.half()], 1)
        assert str(v3.dtype).endswith("float16")
        return {"v3": v3}

    twin(program, {"v3": []})
