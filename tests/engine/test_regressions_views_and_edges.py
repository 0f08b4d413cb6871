"""Named reproductions from the third adversarial round on the engine (issue 23): views and
``requires_grad_()``, pieces of split/chunk/unbind, and edge cases where dyngraph computed
and PyTorch refuses (or the other way round). Each runs on dyngraph and, where installed,
on PyTorch (``twin``); the expected values are PyTorch's."""

from __future__ import annotations

import pytest
from twin import twin, twin_raises

_NO_GRAD_MULTI = ("A view was created in no_grad mode and is being modified inplace with grad "
                  "mode enabled. This view is the output of a function that returns multiple "
                  "views.")


# -- requires_grad_() is not an in-place change ----------------------------------------------
@pytest.mark.parametrize("cut", ["split", "chunk", "unbind"])
def test_pieces_taken_before_requires_grad_are_used_as_pytorch_uses_them(cut):
    """PyTorch: the pieces require grad (through their base) with grad_fn None, and their
    gradient goes nowhere. dyngraph raised "A view was created in no_grad mode ..."."""
    def program(L):
        x = L.ones(4, 3)
        piece = {"split": lambda: x.split(2)[0], "chunk": lambda: x.chunk(2)[0],
                 "unbind": lambda: x.unbind(0)[0]}[cut]()
        x.requires_grad_()
        y = (piece * 2).sum()
        y.backward()
        assert piece.requires_grad and piece.grad_fn is None and piece.is_leaf
        assert x.grad is None and piece.grad is None
        return {"y": y}

    twin(program, {"y": 12 if cut != "unbind" else 6})


def test_a_piece_taken_before_requires_grad_is_refused_in_place_as_pytorch():
    def program(L):
        x = L.ones(4, 3)
        piece = x.split(2)[0]
        x.requires_grad_()
        piece.add_(1)

    twin_raises(program, RuntimeError, _NO_GRAD_MULTI)


def test_a_view_taken_before_requires_grad_gives_no_gradient():
    """PyTorch keeps such a view's grad_fn None: its gradient reaches neither the base
    nor the view (dyngraph gave the view an AsStridedBackward0 and x a gradient)."""
    def program(L):
        x = L.ones(3)
        v = x[:2]
        x.requires_grad_()
        w = v.t()  # a view of it taken afterwards has a history, ending in v
        (v * 2 + w).sum().backward()
        assert v.requires_grad and v.grad_fn is None and v.is_leaf
        assert w.grad_fn is not None and w.requires_grad
        assert x.grad is None and v.grad is None
        assert (v * 1).grad_fn.next_functions[0] == (None, 0)  # no accumulator
        return {"v": v}

    twin(program, {"v": [1, 1]})


def test_hooks_of_a_view_taken_before_requires_grad_never_run():
    def program(L):
        calls = []
        x = L.ones(3)
        v = x[:2]
        x.requires_grad_()
        v.register_hook(lambda g: calls.append(g))
        (v * 2).sum().backward()
        assert calls == []
        return {}

    twin(program)


def test_a_view_taken_before_requires_grad_follows_its_base_once_that_changes():
    """PyTorch rebuilds the view's grad_fn when its base's version moves."""
    def program(L):
        x = L.ones(4, 3)
        v = x[:2]
        x.requires_grad_()
        with L.no_grad():
            x.mul_(2)
        (v * 2).sum().backward()
        assert v.grad_fn is not None
        return {"x.grad": x.grad}

    twin(program, {"x.grad": [[2, 2, 2], [2, 2, 2], [0, 0, 0], [0, 0, 0]]})


def test_a_view_that_requires_grad_on_its_own_is_a_leaf():
    def program(L):
        x = L.ones(4, 3)
        v = x[:2]
        x.requires_grad_()
        v.requires_grad_()
        (v * 2).sum().backward()
        assert x.grad is None
        return {"v.grad": v.grad}

    twin(program, {"v.grad": [[2, 2, 2], [2, 2, 2]]})


def test_requires_grad_again_keeps_a_views_history_and_false_takes_it_back():
    def program(L):
        x = L.ones(4, 3, requires_grad=True)
        v = x[:2]
        node = v.grad_fn
        x.requires_grad_()
        assert v.grad_fn is node  # dyngraph rebuilt every view as AsStridedBackward0
        y = L.ones(2)
        u = y[:1]
        y.requires_grad_()
        y.requires_grad_(False)
        assert not u.requires_grad
        return {}

    twin(program)


# -- pieces whose base changed ----------------------------------------------------------------
@pytest.mark.parametrize("cut", ["split", "unbind"])
def test_a_piece_whose_base_changed_goes_through_non_differentiable_ops(cut):
    """PyTorch refuses such a piece only where it needs its grad_fn: ``>``, ``.long()``
    and ``all()`` do not (dyngraph refused them)."""
    def program(L):
        x = L.ones(4, 3, requires_grad=True).clone()
        piece = x.split(2)[0] if cut == "split" else x.unbind(0)[0]
        x.add_(1)
        return {"gt": piece > 0, "long": piece.long(), "all": piece.all(),
                "ne": piece != 3}

    twin(program, {"long": [[2, 2, 2], [2, 2, 2]] if cut == "split" else [2, 2, 2]})


def test_a_piece_whose_base_changed_is_still_refused_where_a_gradient_would_flow():
    def program(L):
        x = L.ones(4, 3, requires_grad=True).clone()
        piece = x.split(2)[0]
        x.add_(1)
        piece * 2

    twin_raises(program, RuntimeError, "Output 0 of Split is a view and its base or another "
                                       "view of its base has been modified inplace.")


# -- edge cases ---------------------------------------------------------------------------------
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_chunk_of_an_empty_dim_gives_as_many_pieces_as_asked(chunks):
    def program(L):
        pieces = L.ones(0, 3).chunk(chunks)
        other = L.ones(3, 0).chunk(chunks, 1)
        assert [tuple(p.shape) for p in pieces] == [(0, 3)] * chunks
        assert [tuple(p.shape) for p in other] == [(3, 0)] * chunks
        return {}

    twin(program)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda L, t: t.narrow(0, 0, 1), RuntimeError, "narrow() cannot be applied to a 0-dim "
                                                   "tensor."),
    (lambda L, t: t.select(0, 0), IndexError, "select() cannot be applied to a 0-dim tensor."),
    (lambda L, t: t.split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
    (lambda L, t: t.chunk(1), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
    (lambda L, t: t.unbind(0), IndexError, "Dimension specified as 0 but tensor has no "
                                           "dimensions"),
    (lambda L, t: t.tensor_split(2), RuntimeError, "tensor_split expected at least a "
                                                   "1-dimensional tensor"),
])
def test_cutting_a_0d_tensor_raises_pytorchs_error(call, error, message):
    twin_raises(lambda L: call(L, L.tensor(1.0)), error, message)


@pytest.mark.parametrize("call", [
    lambda t: t.split(2, 5), lambda t: t.split([1, 1], 5), lambda t: t.chunk(2, -3),
    lambda t: t.unbind(2), lambda t: t.tensor_split(2, 5),
])
def test_cutting_along_a_dim_out_of_range_is_refused_not_wrapped(call):
    """dyngraph took dim 5 of a 2-D tensor as dim 1 (5 % 2): silently another cut."""
    twin_raises(lambda L: call(L.ones(2, 3)), IndexError, "Dimension out of range")


def test_softmax_of_an_empty_integer_tensor_is_empty_and_of_integers_refused():
    def program(L):
        out = L.softmax(L.ones(0, dtype=L.int64), 0)
        out2 = L.nn.functional.log_softmax(L.ones(3, 0, dtype=L.int32), 0)
        assert str(out.dtype).endswith("int64") and str(out2.dtype).endswith("int32")
        return {"out": out, "out2": out2}

    twin(program)
    twin_raises(lambda L: L.softmax(L.ones(2, 3, dtype=L.int64), 0), NotImplementedError,
                '"softmax_kernel_impl" not implemented for \'Long\'')
    twin_raises(lambda L: L.log_softmax(L.ones(2, 3, dtype=L.int64), 1), NotImplementedError,
                '"log_softmax_lastdim_kernel_impl" not implemented for \'Long\'')
