"""View ops share memory with their base, as in PyTorch: writes go both ways, ``_base``,
``is_contiguous()``, ``contiguous()``, ``view`` on non-contiguous input, ``detach()``."""

from __future__ import annotations

import numpy as np
import pytest
from optable import SAMPLES, as_list, make_inputs
from twin import torch, twin, twin_raises

import dyngraph as dg

# Each takes a (2, 3, 4) tensor and returns a view of it.
VIEWS = {
    "int": lambda x: x[1],
    "slice": lambda x: x[:, 1:],
    "step": lambda x: x[..., ::2],
    "None": lambda x: x[None, 0],
    "ellipsis int": lambda x: x[..., 2],
    "one element": lambda x: x[1, 2, 3],
    "0-d index tensor": lambda x: x[dg.tensor(1) if isinstance(x, dg.Tensor) else
                                    torch.tensor(1)],
    "view": lambda x: x.view(6, 4),
    "view -1": lambda x: x.view(-1),
    "reshape": lambda x: x.reshape(3, 8),
    "flatten": lambda x: x.flatten(1),
    "unflatten": lambda x: x.unflatten(2, (2, 2)),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x[:, :1].squeeze(1),
    "transpose": lambda x: x.transpose(0, 2),
    "permute": lambda x: x.permute(2, 0, 1),
    "mT": lambda x: x.mT,
    "t of a matrix": lambda x: x[0].t(),
    "T of a matrix": lambda x: x[0].T,
    "movedim": lambda x: x.movedim(0, 2),
    "narrow": lambda x: x.narrow(2, 1, 2),
    "select": lambda x: x.select(1, -1),
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "diagonal": lambda x: x.diagonal(0, 1, 2),
    "unbind": lambda x: x.unbind(1)[2],
    "split": lambda x: x.split(2, 2)[1],
    "chunk": lambda x: x.chunk(2, 0)[0],
    "view of a view": lambda x: x[1].t()[::2],
}


def _base(lib):
    return lib.arange(24.0).reshape(2, 3, 4).clone()


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_ops_share_memory_with_their_base(name):
    take = VIEWS[name]
    x = _base(dg)
    v = take(x)
    assert v._base is x
    x.mul_(-1)  # the base changes: the view shows it
    np.testing.assert_array_equal(v.numpy(), take(-_base(dg)).numpy())
    if name != "expand":  # writing an expanded view is refused (tested below)
        v.fill_(100.0)  # the view changes: the base shows it
        assert (take(x).numpy() == 100).all()
        assert (x.numpy() == 100).sum() == v.numel()  # those elements and no others


@pytest.mark.parametrize("name", [n for n in VIEWS if n != "0-d index tensor"])
def test_view_ops_match_torch_on_contiguity_and_values(name):
    take = VIEWS[name]

    def program(L):
        v = take(_base(L))
        return {"values": v, "contiguous": L.tensor(v.is_contiguous())}

    twin(program)


@pytest.mark.parametrize("make", [
    lambda x: x.t().reshape(6),  # reshape of non-contiguous input copies
    lambda x: x[[0, 1]],  # index tensors and masks copy
    lambda x: x[x > 2],
    lambda x: x.flip(0),
    lambda x: x.t().contiguous(),
    lambda x: x.clone(),
])
def test_ops_that_copy_are_not_views(make):
    x = dg.arange(6.0).reshape(2, 3)
    y = make(x)
    assert y._base is None
    y.fill_(-1.0)
    assert (x.numpy() >= 0).all()


def test_view_refuses_non_contiguous_input_with_pytorchs_message():
    twin_raises(lambda L: L.arange(6.0).reshape(2, 3).t().view(6), RuntimeError,
                "view size is not compatible with input tensor's size and stride (at least "
                "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                "instead.")
    # ...but a non-contiguous tensor takes every view its strides allow, as in PyTorch.
    twin(lambda L: {"v": L.arange(6.0).reshape(2, 3).t().view(3, 1, 2)})
    twin(lambda L: {"v": L.arange(12.0).reshape(2, 6)[:, ::2].view(2, 3, 1)})


def test_is_contiguous_and_contiguous_tell_the_truth():
    x = dg.arange(6.0).reshape(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    t = x.t()
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c._base is None
    np.testing.assert_array_equal(c.view(6).numpy(), [0, 3, 1, 4, 2, 5])
    assert not x[:, :1].expand(2, 4).is_contiguous()


def test_contiguous_is_differentiable():
    def program(L):
        x = L.arange(6.0).reshape(2, 3).requires_grad_()
        y = x.t().contiguous().view(6)
        (y * L.arange(6.0)).sum().backward()
        return {"y": y, "grad": x.grad}

    twin(program, {"grad": [[0, 2, 4], [1, 3, 5]]})


def test_detach_shares_memory_and_data_too():
    x = dg.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    d[0] = 7.0
    assert y.detach().numpy()[0] == 7.0
    x.data[1] = 5.0  # .data is a tensor sharing memory
    assert x.detach().numpy()[1] == 5.0


def test_writing_an_expanded_tensor_is_refused_as_in_pytorch():
    twin_raises(lambda L: L.ones(3).expand(2, 3).add_(1), RuntimeError,
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")


def test_one_element_of_a_vector_is_a_writable_view():
    x = dg.zeros(3)
    x[1].add_(5)
    x[-1].fill_(2)
    np.testing.assert_array_equal(x.numpy(), [0, 5, 2])


def test_data_ptr_shows_the_sharing():
    x = dg.arange(6.0).reshape(2, 3)
    assert x[1].data_ptr() == x.data_ptr() + 3 * 4
    assert x.clone().data_ptr() != x.data_ptr()


def test_an_element_of_an_expanded_tensor_may_be_written_as_in_pytorch():
    def program(L):
        x = L.zeros(1, 3)
        e = x.expand(2, 3)
        e[0].add_(1)  # picks each element once: fine
        e[1, 2].fill_(5)
        return {"x": x, "e": e}

    twin(program, {"x": [[1, 1, 5]]})


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.id)
def test_an_op_output_sharing_memory_with_an_input_is_a_recorded_view(sample):
    """An output aliasing an input without being known as a view would take in-place
    changes silently (its history would not follow): every op either copies or is a view."""
    inputs = [dg.from_numpy(a) for a in make_inputs(sample, np.float32)]
    for out in as_list(sample.fn(dg, *inputs)):
        for x in inputs:
            if np.shares_memory(out.numpy(), x.numpy()):
                assert out._base is not None, f"{sample.id} returns an unrecorded view"
