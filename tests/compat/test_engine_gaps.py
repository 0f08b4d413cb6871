"""The engine's last gaps found by real programs (issue 29): each reproduction the issue
quotes, compared with PyTorch where it has an answer."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn as nn
from dyngraph.serialization import SerializationError


def test_import_torch_onnx_succeeds_and_its_export_says_dyngraph_does_not_implement():
    import dyngraph.onnx

    assert dg.onnx is dyngraph.onnx and dg.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError,
                       match=r"dyngraph does not implement torch\.onnx\.export"):
        dg.onnx.export(nn.Linear(2, 2), dg.ones(1, 2), "model.onnx")


def test_nanogpt_distributed_imports_work_and_run_in_one_process(tmp_path):
    """nanoGPT's train.py imports DDP and init_process_group and uses them only under
    torchrun; in one process they import, and a one-rank group works as PyTorch's."""
    script = tmp_path / "train.py"
    script.write_text(
        "import os\n"
        "import dyngraph as torch\n"
        "from dyngraph.nn.parallel import DistributedDataParallel as DDP\n"
        "from dyngraph.distributed import init_process_group, destroy_process_group\n"
        "ddp = int(os.environ.get('RANK', -1)) != -1\n"
        "model = torch.nn.Linear(3, 2)\n"
        "if ddp:\n"
        "    init_process_group(backend='nccl')\n"
        "    model = DDP(model, device_ids=[0])\n"
        "    print(torch.distributed.get_rank(), torch.distributed.get_world_size())\n"
        "raw = model.module if ddp else model\n"
        "print(ddp, list(model.state_dict()), raw(torch.ones(1, 3)).shape)\n"
        "if ddp:\n"
        "    destroy_process_group()\n")
    env = {"PATH": "/usr/bin:/bin"}
    single = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=60, env=env)
    assert single.returncode == 0, single.stderr
    assert single.stdout == "False ['weight', 'bias'] dyngraph.Size([1, 2])\n"
    one_rank = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=60, env={**env, "RANK": "0", "WORLD_SIZE": "1"})
    assert one_rank.returncode == 0, one_rank.stderr
    assert one_rank.stdout == ("0 1\nTrue ['module.weight', 'module.bias'] "
                               "dyngraph.Size([1, 2])\n")
    two_ranks = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                               timeout=60, env={**env, "RANK": "0", "WORLD_SIZE": "2"})
    assert two_ranks.returncode != 0
    last = two_ranks.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: init_process_group: dyngraph runs in one process "
                           "and cannot join a world of 2 ranks")


def test_ddp_and_process_group_queries_refuse_as_pytorch_before_init():
    torch = pytest.importorskip("torch")
    for ours, theirs in ((lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2)),
                          lambda: torch.nn.parallel.DistributedDataParallel(
                              torch.nn.Linear(2, 2))),
                         (dg.distributed.get_rank, torch.distributed.get_rank)):
        with pytest.raises(ValueError) as expected:
            theirs()
        with pytest.raises(ValueError) as got:
            ours()
        assert str(got.value) == str(expected.value)


class SavedNet(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.width, self.label = width, "saved"
        self.fc = nn.Linear(width, 2)
        self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
        self.blocks[1].weight = self.blocks[0].weight  # tied
        self.norm = nn.BatchNorm1d(2)
        self.register_buffer("mask", dg.ones(2), persistent=False)

    def forward(self, x):
        x = self.fc(x)
        for block in self.blocks:
            x = block(x)
        return self.norm(x) * self.mask


def test_torch_save_of_a_whole_model_loads_with_weights_only_false_only():
    model = SavedNet(3).eval()
    buffer = io.BytesIO()
    dg.save(model, buffer)
    assert b"pickle" not in buffer.getvalue() and b"\x80\x02" not in buffer.getvalue()[:16]
    for weights_only in (None, True):
        buffer.seek(0)
        with pytest.raises(SerializationError, match=r"holds a whole model \(.*:SavedNet\).*"
                                                     r"weights_only=False"):
            dg.load(buffer, weights_only=weights_only)
    buffer.seek(0)
    loaded = dg.load(buffer, weights_only=False)
    x = dg.randn(4, 3)
    assert type(loaded) is SavedNet and not loaded.training
    assert (loaded.width, loaded.label) == (3, "saved")
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    assert loaded.blocks[1].weight is loaded.blocks[0].weight
    assert list(loaded.state_dict()) == list(model.state_dict())  # mask stays non-persistent


def test_a_whole_model_that_cannot_be_stored_as_data_is_refused_in_one_line():
    def local():
        class Local(nn.Module):
            pass
        return Local()

    with pytest.raises(SerializationError, match="defined inside a function"):
        dg.save(local(), io.BytesIO())
    model = SavedNet(2)
    model.callback = print
    with pytest.raises(SerializationError, match="cannot store attribute 'callback'"):
        dg.save(model, io.BytesIO())


def test_a_saved_class_that_is_not_a_module_is_refused_on_load():
    buffer = io.BytesIO()
    dg.save(SavedNet(2), buffer)
    data = buffer.getvalue()
    (length,) = struct.unpack_from("<Q", data, 8)
    header = json.loads(data[16:16 + length])
    header["root"]["module"]["class"] = "collections:Counter"
    text = json.dumps(header).encode()
    forged = data[:8] + struct.pack("<Q", len(text)) + text + data[16 + length:]
    with pytest.raises(SerializationError, match="not a dyngraph.nn.Module class"):
        dg.load(io.BytesIO(forged), weights_only=False)


@pytest.mark.parametrize("args", [(2.0, 3), ((2.0, 3),), ([2, 3.5],), ("a",), (2, "a")])
def test_view_with_a_float_size_gives_pytorchs_invalid_combination_message(args):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as expected:
        torch.ones(6).view(*args)
    with pytest.raises(TypeError) as got:
        dg.ones(6).view(*args)
    assert str(got.value) == str(expected.value)
    if args == (2.0, 3):
        assert "received an invalid combination of arguments" in str(got.value)


def test_scatter_add_in_place_matches_pytorch_values_and_gradients():
    torch = pytest.importorskip("torch")
    index = [[0, 1, 2, 0], [1, 2, 0, 1]]
    results = []
    for lib in (torch, dg):
        plain = lib.zeros(3, 4)
        assert plain.scatter_add_(0, lib.tensor(index), lib.ones(2, 4)) is plain
        weight = lib.ones(3, 4, requires_grad=True)
        src = lib.arange(8.0).reshape(2, 4).requires_grad_()
        out = weight * 3
        out.scatter_add_(1, lib.tensor(index)[:, :2], src[:, :2] * 2)
        (out * out).sum().backward()
        results.append([plain.tolist(), out.tolist(), weight.grad.tolist(), src.grad.tolist(),
                        out._version])
    assert results[1] == results[0]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        dg.zeros(3, requires_grad=True).scatter_add_(0, dg.tensor([0]), dg.ones(1))
    with pytest.raises(RuntimeError, match="out of bounds"):
        dg.zeros(3).scatter_add_(0, dg.tensor([5]), dg.ones(1))
