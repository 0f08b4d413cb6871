"""In-place ops through views change the base, and autograd follows (PyTorch's CopySlices):
gradients reach the base's earlier history, the in-place operand, and every later use of
the base and of its views. Values and gradients against PyTorch (and exact values)."""

from __future__ import annotations

import numpy as np
import pytest
from twin import twin, twin_raises

import dyngraph as dg


def test_mul_through_a_slice_changes_the_base_and_its_gradient():
    def program(L):
        x = L.ones(4, requires_grad=True)
        y = x * 1
        y[:2].mul_(3)
        y.sum().backward()
        return {"y": y, "x.grad": x.grad}

    twin(program, {"y": [3, 3, 1, 1], "x.grad": [3, 3, 1, 1]})


@pytest.mark.parametrize("through", ["view", "unsqueeze", "reshape", "transpose", "select",
                                     "narrow", "diagonal"])
def test_in_place_through_every_kind_of_view(through):
    pick = {
        "view": lambda y: y.view(2, 2)[0],
        "unsqueeze": lambda y: y.unsqueeze(0)[0, :2],
        "reshape": lambda y: y.reshape(2, 2)[0],
        "transpose": lambda y: y.view(2, 2).t()[:, 0],
        "select": lambda y: y.view(2, 2).select(1, 0),
        "narrow": lambda y: y.narrow(0, 1, 2),
        "diagonal": lambda y: y.view(2, 2).diagonal(),
    }[through]

    def program(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        w = L.tensor([5.0, 7.0], requires_grad=True)
        y = x * 1
        pick(y).mul_(w)
        (y * L.arange(1.0, 5.0)).sum().backward()
        return {"y": y, "x.grad": x.grad, "w.grad": w.grad}

    twin(program)


def test_copy_into_a_row_of_a_buffer_fills_it():
    def program(L):
        w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = L.zeros(2, 3)
        out[0].copy_(w * 3)
        out[1] = w * w
        (out * L.tensor([[1.0], [10.0]])).sum().backward()
        return {"out": out, "w.grad": w.grad}

    twin(program, {"out": [[3, 6, 9], [1, 4, 9]], "w.grad": [23, 43, 63]})
    assert dg.zeros(2).requires_grad is False


def test_gradient_reaches_the_base_history_the_operand_and_later_uses():
    def program(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = L.tensor(2.0, requires_grad=True)
        y = x.sin() * 2  # (sin saves x; exp would save y, and changing y would be an error)
        # A use of y before the change (y is needed by no gradient here, so not saved).
        early = y * L.tensor([1.0, 2.0, 3.0])
        v = y[1:]
        v.mul_(s)
        late = y.sum() + v.sum() * 10  # uses the base and the view after the change
        (early.sum() + late).backward()
        return {"y": y, "x.grad": x.grad, "s.grad": s.grad}

    twin(program)


def test_views_taken_before_the_change_follow_it():
    def program(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        a = y[:3]  # overlaps what changes
        b = y[3:]  # does not
        y[1:3].mul_(10)
        (a * L.tensor([1.0, 2.0, 3.0])).sum().backward(retain_graph=True)
        g1 = x.grad.clone()
        x.grad = None
        b.sum().backward()
        return {"a": a, "g1": g1, "g2": x.grad, "a.grad_fn": L.tensor(
            a.grad_fn.name() == "AsStridedBackward0")}

    twin(program, {"a": [1, 20, 30], "g1": [1, 20, 30, 0], "g2": [0, 0, 0, 1]})


def test_in_place_on_the_base_reaches_its_views():
    def program(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        v = y.unsqueeze(0)[:, 1:]
        y.pow_(2)
        (v * 5).sum().backward()
        return {"v": v, "x.grad": x.grad}

    twin(program, {"v": [[4, 9]], "x.grad": [0, 20, 30]})


def test_a_plain_buffer_becomes_part_of_the_graph_through_a_view():
    def program(L):
        w = L.tensor([1.0, 2.0], requires_grad=True)
        buf = L.zeros(2, 2)
        row = buf[1]  # a view taken while buf needs no gradient
        buf[0].copy_(w)
        assert row.grad_fn is not None  # (PyTorch refreshes it lazily: read it before add_)
        row.add_(w * w)
        loss = (buf * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum()
        loss.backward()
        return {"buf": buf, "w.grad": w.grad,
                "flags": L.tensor([buf.requires_grad, row.requires_grad])}

    twin(program, {"buf": [[1, 2], [1, 4]], "w.grad": [7, 18]})


@pytest.mark.parametrize("index", ["mask", "tensor", "list", "mixed", "int and slice"])
def test_setitem_with_a_value_that_requires_grad(index):
    pick = {
        "mask": lambda L: L.tensor([[True, False, True], [False, True, False]]),
        "tensor": lambda L: L.tensor([1, 0]),
        "list": lambda L: [1, 0],
        "mixed": lambda L: (slice(None), L.tensor([2, 0])),
        "int and slice": lambda L: (1, slice(0, 2)),
    }[index]
    shape = {"mask": (3,), "tensor": (2, 3), "list": (2, 3), "mixed": (2, 2),
             "int and slice": (2,)}[index]

    def program(L):
        x = L.arange(6.0).reshape(2, 3).requires_grad_()
        v = L.arange(1.0, 1.0 + np.prod(shape)).reshape(shape).requires_grad_()
        y = x * 2
        y[pick(L)] = v * v
        (y * L.arange(6.0).reshape(2, 3)).sum().backward()
        return {"y": y, "x.grad": x.grad, "v.grad": v.grad}

    twin(program)


@pytest.mark.parametrize("index", ["slice", "int", "tensor", "mask"])
def test_augmented_assignment_through_an_index(index):
    def program(L):
        pick = {"slice": slice(1, 3), "int": 2, "tensor": L.tensor([3, 1]),
                "mask": L.tensor([True, False, False, True])}[index]
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * x
        y[pick] += 1
        y[pick] *= 3
        y.sum().backward()
        return {"y": y, "x.grad": x.grad, "version": L.tensor(y._version)}

    twin(program)


def test_modifying_the_base_is_visible_through_existing_views_in_a_graph():
    x = dg.ones(3, requires_grad=True)
    y = x * 2
    v = y[1:]
    y.add_(1)
    np.testing.assert_array_equal(v.detach().numpy(), [3, 3])


def test_refusals_on_views_are_pytorchs():
    leaf = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    twin_raises(lambda L: L.ones(4, requires_grad=True)[:2].mul_(3), RuntimeError, leaf)

    def split(L):
        a, b = (L.ones(4, requires_grad=True) * 1).split(2)
        b.mul_(2)

    twin_raises(split, RuntimeError, "Output 1 of Split is a view and is being modified "
                "inplace. This view is the output of a function that returns multiple views.")

    def unbind(L):
        L.ones(2, requires_grad=True).mul(1).unbind()[0].add_(1)

    twin_raises(unbind, RuntimeError, "Output 0 of Unbind is a view and is being modified")

    def no_grad_view(L):
        y = L.ones(4, requires_grad=True) * 1
        with L.no_grad():
            v = y[:2]
        v.mul_(3)

    twin_raises(no_grad_view, RuntimeError, "A view was created in no_grad mode and is being "
                "modified inplace with grad mode enabled. Given that this use case is "
                "ambiguous and error-prone, it is forbidden.")

    def detach_view(L):
        (L.ones(4, requires_grad=True) * 1)[:2].detach_()

    twin_raises(detach_view, RuntimeError, "Can't detach views in-place. Use detach() instead.")


def test_what_pytorch_allows_on_views_still_works():
    def program(L):
        x = L.ones(4, requires_grad=True)
        a, b = (x * 1).split(2)
        with L.no_grad():
            b.mul_(2)  # under no_grad, even a split output may change
        plain = L.ones(4)
        plain.split(2)[0].add_(1)  # and outside any graph
        with L.no_grad():
            x[:2].mul_(3)  # a view of a leaf, under no_grad (an optimizer's way)
        return {"b": b, "plain": plain, "x": x}

    twin(program, {"b": [2, 2], "plain": [2, 2, 1, 1], "x": [3, 3, 1, 1]})


def test_in_place_on_views_records_graph_nodes_a_trace_can_show():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with dg.trace() as t:
        y = x * 1
        y[:2].mul_(3)
        y.sum().backward()
    ops = [e.op for e in t.events if e.kind == "op"]
    # the view y[:2] lives on: it is rebuilt from y's new history (as_strided)
    assert ops == ["mul", "getitem", "mul", "copy_slices", "as_strided", "sum"]
    graph = t.iterations[0].graph
    assert len(graph.nodes) >= 5


def test_fill_of_an_expanded_tensor_is_allowed_but_not_differentiated():
    def program(L):
        z = L.ones(1, 1).expand(3, 1)
        z.fill_(2.0)  # every write agrees: allowed, as in PyTorch
        z.zero_()
        return {"z": z}

    twin(program, {"z": [[0], [0], [0]]})

    def in_a_graph(L):
        x = L.ones(4, requires_grad=True)
        y = x * 1
        y[:1].expand(3).fill_(5.0)
        y.sum().backward()

    twin_raises(in_a_graph, RuntimeError, "unsupported operation: more than one element of "
                "the written-to tensor refers to a single memory location.")


def test_outputs_of_split_of_a_plain_tensor_refuse_use_once_it_needs_grad():
    def program(L):
        b = L.zeros(4)
        p, q = b.split(2)
        b.copy_(L.ones(4, requires_grad=True))
        (p * 2).sum().backward()

    twin_raises(program, RuntimeError, "A view was created in no_grad mode and its base or "
                "another view of its base has been modified inplace with grad mode enabled. "
                "This view is the output of a function that returns multiple views.")


def test_retain_grad_follows_the_tensor_through_an_in_place_op():
    def program(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward()
        return {"y.grad": y.grad, "x.grad": x.grad}

    twin(program, {"y.grad": [6, 12], "x.grad": [18, 36]})
