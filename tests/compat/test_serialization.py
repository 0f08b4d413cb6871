"""save/load: round trips of models, optimizers and nested values in dyngraph's own format,
PyTorch checkpoints read without running their pickle, and refusal of anything that would
run code or is damaged, always on one line."""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn
from dyngraph.serialization import SerializationError

X = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
Y = (X @ np.array([[0.5], [-1.0], [2.0]], dtype=np.float32)) + 0.1


def _model():
    dg.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def _steps(model, opt, scheduler, n):
    losses = []
    for _ in range(n):
        opt.zero_grad()
        loss = ((model(dg.from_numpy(X)) - dg.from_numpy(Y)) ** 2).mean()
        loss.backward()
        opt.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


def _training(model):
    opt = dg.optim.Adam(model.parameters(), lr=0.05)
    return opt, dg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)


def test_resuming_from_a_checkpoint_continues_exactly_where_training_stopped(tmp_path):
    straight = _model()
    opt, sched = _training(straight)
    expected = _steps(straight, opt, sched, 6)

    first = _model()
    opt, sched = _training(first)
    losses = _steps(first, opt, sched, 3)
    path = tmp_path / "checkpoint.pt"
    dg.save({"model": first.state_dict(), "optimizer": opt.state_dict(),
             "scheduler": sched.state_dict(), "epoch": 3}, path)
    assert os.listdir(tmp_path) == ["checkpoint.pt"]  # written via a temporary, renamed

    resumed = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt, sched = _training(resumed)
    checkpoint = dg.load(path, weights_only=True)
    resumed.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    sched.load_state_dict(checkpoint["scheduler"])
    assert checkpoint["epoch"] == 3
    assert losses + _steps(resumed, opt, sched, 3) == expected


def test_nested_values_round_trip_with_their_types():
    shared = dg.tensor([1.0, 2.0])
    value = {
        "ints": (1, -2, 2**70), "floats": [0.5, float("inf"), float("-inf")], "none": None,
        "flags": {True, False}, "text": "ü", "bytes": b"\x00\xff",
        "odict": OrderedDict([("b", 1), ("a", 2)]), 3: "int key", ("a", 1): "tuple key",
        "tensors": [shared, shared, dg.arange(6).reshape(2, 3), dg.ones(2, dtype=dg.bool)],
        "float64": dg.zeros(2, dtype=dg.float64), "param": nn.Parameter(dg.ones(3)),
        "leaf": dg.ones(2, requires_grad=True), "array": np.arange(3, dtype=np.int32),
        "dtype": dg.float16, "size": dg.ones(2, 3).shape, "empty": dg.zeros(0, 4),
    }
    buffer = io.BytesIO()
    dg.save(value, buffer)
    loaded = dg.load(io.BytesIO(buffer.getvalue()))
    assert loaded["ints"] == (1, -2, 2**70) and loaded["floats"] == [0.5, np.inf, -np.inf]
    assert loaded["none"] is None and loaded["flags"] == {True, False}
    assert loaded["text"] == "ü" and loaded["bytes"] == b"\x00\xff"
    assert type(loaded["odict"]) is OrderedDict and list(loaded["odict"]) == ["b", "a"]
    assert loaded[3] == "int key" and loaded[("a", 1)] == "tuple key"
    a, b, c, d = loaded["tensors"]
    assert a is b and a.tolist() == [1.0, 2.0]  # one tensor saved twice loads as one
    assert c.dtype == dg.int64 and c.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert d.dtype == dg.bool and loaded["float64"].dtype == dg.float64
    assert isinstance(loaded["param"], nn.Parameter) and loaded["param"].requires_grad
    assert loaded["leaf"].requires_grad and loaded["leaf"].is_leaf
    assert isinstance(loaded["array"], np.ndarray) and loaded["array"].dtype == np.int32
    assert loaded["dtype"] == dg.float16 and loaded["size"] == (2, 3)
    assert tuple(loaded["empty"].shape) == (0, 4)
    assert np.isnan(dg.load(_saved(float("nan"))))


def _saved(obj):
    buffer = io.BytesIO()
    dg.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_saving_an_object_that_is_not_data_is_refused_with_a_hint():
    with pytest.raises(SerializationError, match=r"save model\.state_dict\(\) for a state"):
        dg.save(object(), io.BytesIO())


def test_safe_globals_and_its_friends_are_accepted():
    with dg.serialization.safe_globals([OrderedDict]):
        assert dg.load(_saved({"a": 1}), weights_only=True) == {"a": 1}
    dg.serialization.add_safe_globals([OrderedDict])
    assert dg.serialization.get_safe_globals() == []


class _Exploit:
    """A pickle that, if unpickled, would create a file: dyngraph must never run it."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickle_file_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pt"
    path.write_bytes(pickle.dumps({"weight": _Exploit(str(marker))}, protocol=2))
    with pytest.raises(SerializationError, match="is a pickle file") as info:
        dg.load(path)
    assert "\n" not in str(info.value) and not marker.exists()


def _torch_style_zip(pickled: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        archive.writestr("archive/byteorder", "little")
    return buffer.getvalue()


def test_a_zip_checkpoint_whose_pickle_calls_a_function_is_refused_unrun(tmp_path):
    marker = tmp_path / "pwned"
    data = _torch_style_zip(pickle.dumps({"weight": _Exploit(str(marker))}, protocol=2))
    with pytest.raises(SerializationError, match=r"holds a (io|builtins)\.open object"):
        dg.load(io.BytesIO(data))
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncate", "header", "offset", "foreign", "empty"])
def test_damaged_files_fail_on_one_line(damage):
    good = _saved({"w": dg.ones(4)}).getvalue()
    if damage == "truncate":
        data = good[:-3]
    elif damage == "header":
        data = good[:20] + b"}" + good[21:]
    elif damage == "offset":
        data = good.replace(b'"offset":0', b'"offset":9')
    elif damage == "foreign":
        data = b"GIF89a" + bytes(40)
    else:
        data = b""
    with pytest.raises(SerializationError) as info:
        dg.load(io.BytesIO(data))
    assert "\n" not in str(info.value)


def test_every_truncation_of_a_checkpoint_is_refused_cleanly():
    good = _saved({"model": _model().state_dict(), "step": 4}).getvalue()
    for cut in range(0, len(good), 7):
        with pytest.raises(SerializationError):
            dg.load(io.BytesIO(good[:cut]))


def test_a_pytorch_checkpoint_loads_into_dyngraph_and_training_continues_the_same(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    t_opt = torch.optim.Adam(theirs.parameters(), lr=0.05)

    def torch_step():
        t_opt.zero_grad()
        loss = ((theirs(torch.from_numpy(X)) - torch.from_numpy(Y)) ** 2).mean()
        loss.backward()
        t_opt.step()
        return loss.item()

    for _ in range(2):
        torch_step()
    path = tmp_path / "torch.pt"
    torch.save({"model": theirs.state_dict(), "optimizer": t_opt.state_dict(),
                "view": torch.arange(10.0)[1:9:3], "size": torch.Size([2, 3]), "tag": b"v1"},
               path)
    checkpoint = dg.load(path, map_location="cpu", weights_only=True)
    assert checkpoint["view"].tolist() == [1.0, 4.0, 7.0]
    assert checkpoint["size"] == (2, 3) and checkpoint["tag"] == b"v1"
    ours = _model()
    opt, _ = _training(ours)
    ours.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    our_losses = [_steps(ours, opt, _NoScheduler(), 1)[0] for _ in range(3)]
    their_losses = [torch_step() for _ in range(3)]
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-5)


def test_a_whole_pytorch_model_is_refused_with_a_hint(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "whole.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(SerializationError, match=r"torch\.nn\.modules\.linear\.Linear object.*"
                                                 r"state_dict"):
        dg.load(path)


class _NoScheduler:
    def step(self):
        pass
