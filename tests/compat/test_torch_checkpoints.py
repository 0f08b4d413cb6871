"""Checkpoints real ``torch.save`` wrote, read by dyngraph's own pickle machine
(``serialization/pickle_reader.py``) and compared with ``torch.load(weights_only=True)``
value for value and sharing for sharing; and a fuzz of their ``data.pkl`` (truncations,
flipped, inserted and deleted bytes) that may only ever end in a one-line
``SerializationError``. ``DYNGRAPH_FUZZ_CASES=5000`` runs more fuzz cases (300 by
default, derandomized)."""

from __future__ import annotations

import functools
import io
import math
import os
import pickletools
import random
import time
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dyngraph as dg  # noqa: E402
from dyngraph.serialization import SerializationError  # noqa: E402

_FUZZ_CASES = int(os.environ.get("DYNGRAPH_FUZZ_CASES", "300"))


def _trained(model, batch, steps=1):
    model.train()
    for _ in range(steps):
        out = model(batch)
        out = out[0] if isinstance(out, tuple) else out
        out.float().sum().backward()
    return model


class _Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight  # one Parameter under two names


def _optimizer_state(kind):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if kind == "sgd"
           else torch.optim.Adam(model.parameters(), lr=1e-3))
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(5, 3)).pow(2).sum().backward()
        opt.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict()}


def _views():
    base = torch.arange(24.0).reshape(4, 6)
    return {"base": base, "transposed": base.t(), "column": base[:, 2], "rows": base[1:3],
            "every_other": base[::2, ::3], "offset": base.view(-1)[5:11],
            "expanded": torch.arange(3.0)[:, None].expand(3, 4),
            "permuted_offset": base.permute(1, 0)[1:]}


def _dtypes():
    values = [0, 1, -2, 3.5, 250]
    return {"float16": torch.tensor(values, dtype=torch.float16),
            "float64": torch.tensor(values, dtype=torch.float64) / 3,
            "int32": torch.tensor(values[:3], dtype=torch.int32),
            "int64": torch.tensor([2**40, -(2**62)], dtype=torch.int64),
            "uint8": torch.tensor([0, 7, 255], dtype=torch.uint8),
            "bool": torch.tensor([True, False, True]),
            "special": torch.tensor([math.inf, -math.inf, math.nan, -0.0]),
            "scalar": torch.tensor(2.5), "int_scalar": torch.tensor(7),
            "empty": torch.empty(0), "empty_2d": torch.zeros(2, 0, 3),
            "grad": torch.ones(2, requires_grad=True),
            "param": torch.nn.Parameter(torch.randn(2, 2)),
            "frozen": torch.nn.Parameter(torch.randn(3), requires_grad=False),
            "dtype": torch.float16, "dtypes": [torch.float32, torch.int64, torch.bool],
            "size": torch.Size([2, 3]), "empty_size": torch.Size([])}


def _plain():
    return {"ints": [0, 1, -1, 255, 256, 65535, 65536, -(2**31), 2**31, 2**70, -(2**100)],
            "floats": [0.0, -0.0, 1.5, 1e300, math.inf, -math.inf],
            "nan": math.nan, "none": None, "bools": (True, False),
            "strings": ["", "a", "é ünïcode ☃", "x" * 300, "line\nbreak"],
            "bytes": [b"", b"\x00\xff", bytes(range(256)), b"y" * 300],
            "nested": {"a": [1, (2, [3, {"b": ()}])], 4: {5: None}, (1, "k"): [[], {}]},
            "set": {1, "two", (3,)}, "frozen": frozenset({4, 5}), "empty_set": set(),
            "ordered": OrderedDict([("z", 1), ("a", 2)]), "tuple1": (1,), "long": list(range(300))}


def _shared():
    w = torch.randn(3, 4)
    return {"w": w, "again": w, "row": w[1], "list": [w, w[:, 1:]], "other": torch.randn(2)}


def _scheduled():
    model = torch.nn.GRU(3, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    model(torch.randn(2, 1, 3))[0].sum().backward()
    opt.step()
    scheduler.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": scheduler.state_dict(), "epoch": 1}


@functools.cache  # built once per process: the tests only read them
def _cases():
    torch.manual_seed(0)
    bn = _trained(torch.nn.BatchNorm2d(3), torch.randn(2, 3, 4, 4), steps=3)
    return {
        "linear": torch.nn.Linear(3, 2).state_dict(),
        "conv2d": torch.nn.Conv2d(3, 4, 3, padding=1).state_dict(),
        "lstm": torch.nn.LSTM(3, 5, num_layers=2).state_dict(),
        "batchnorm": bn.state_dict(),
        "embedding": torch.nn.Embedding(10, 4, padding_idx=0).state_dict(),
        "tied": _Tied().state_dict(),
        "sgd": _optimizer_state("sgd"),
        "adam": _optimizer_state("adam"),
        "adamw_gru_scheduler": _scheduled(),
        "transformer": torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
                                            num_decoder_layers=1, dim_feedforward=16,
                                            batch_first=True).state_dict(),
        "views": _views(),
        "dtypes": _dtypes(),
        "plain": _plain(),
        "shared": _shared(),
        "bare_tensor": torch.randn(3, 2)[:, 1],
        "bare_list": [torch.ones(2), 3, "x"],
    }


def _saved(obj, **options) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, **options)
    return buffer.getvalue()


def _walk(value, out):
    """The tensors of a loaded value in a fixed order (for the sharing comparison)."""
    if isinstance(value, (torch.Tensor, dg.Tensor)):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(k, out)
            _walk(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, out)
    return out


def _same(theirs: Any, ours: Any, path: str = "") -> None:
    """Value for value: the same kinds, keys, orders, dtypes, shapes and numbers."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, dg.Tensor), path
        assert isinstance(ours, dg.nn.Parameter) == isinstance(theirs, torch.nn.Parameter), path
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], path
        assert tuple(ours.shape) == tuple(theirs.shape), path
        assert ours.requires_grad == theirs.requires_grad, path
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy(), path)
    elif isinstance(theirs, torch.dtype):
        assert str(ours).split(".")[-1] == str(theirs).split(".")[-1], path
    elif isinstance(theirs, torch.Size):
        assert isinstance(ours, dg.Size) and tuple(ours) == tuple(theirs), path
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs), path
        assert list(ours) == list(theirs), path
        assert getattr(ours, "_metadata", None) == getattr(theirs, "_metadata", None), path
        for k in theirs:
            _same(theirs[k], ours[k], f"{path}/{k!r}")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), path
        for i, (t, o) in enumerate(zip(theirs, ours, strict=True)):
            _same(t, o, f"{path}[{i}]")
    elif isinstance(theirs, float) and math.isnan(theirs):
        assert isinstance(ours, float) and math.isnan(ours), path
    else:
        assert type(ours) is type(theirs) and ours == theirs, path


def _root(array: np.ndarray) -> Any:
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _same_sharing(theirs: list, ours: list) -> None:
    """Sharing for sharing: the same objects where PyTorch gives the same object, one
    storage where PyTorch's tensors share one."""
    assert len(theirs) == len(ours)
    for i in range(len(theirs)):
        for j in range(i + 1, len(theirs)):
            assert (theirs[i] is theirs[j]) == (ours[i] is ours[j]), (i, j)
            if theirs[i].numel() and theirs[j].numel():
                t_shared = (theirs[i].untyped_storage().data_ptr()
                            == theirs[j].untyped_storage().data_ptr())
                o_shared = _root(ours[i]._array) is _root(ours[j]._array)
                assert t_shared == o_shared, (i, j)


def _check(data: bytes, reference_weights_only: bool = True) -> None:
    # PyTorch's weights_only loader refuses b"" at protocol 2 (spelt bytes()) and
    # frozensets; dyngraph builds them, so PyTorch is told to allow them for the comparison.
    with torch.serialization.safe_globals([bytes, frozenset]):
        theirs = torch.load(io.BytesIO(data), weights_only=reference_weights_only)
    ours = dg.load(io.BytesIO(data))
    _same(theirs, ours)
    _same_sharing(_walk(theirs, []), _walk(ours, []))


@pytest.mark.parametrize("name", sorted(_cases()))
def test_a_torch_checkpoint_loads_value_for_value_and_sharing_for_sharing(name):
    _check(_saved(_cases()[name]))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_checkpoints_saved_with_every_pickle_protocol_load_the_same(protocol):
    """torch.save(..., pickle_protocol=p). PyTorch's own weights_only loader lacks opcodes
    of protocols 3 and later (SHORT_BINBYTES, FRAME): there the reference is its full
    unpickler, on files this test wrote itself."""
    cases = _cases()
    for name in ("plain", "dtypes", "tied", "adam", "views"):
        _check(_saved(cases[name], pickle_protocol=protocol),
               reference_weights_only=protocol == 2)


def test_a_write_through_a_loaded_tensor_shows_in_the_tensors_sharing_its_storage():
    loaded = dg.load(io.BytesIO(_saved(_shared())))
    with dg.no_grad():
        loaded["w"][1, 0] = 100.0
    assert loaded["row"][0].item() == 100.0 and loaded["again"][1, 0].item() == 100.0


def test_an_old_style_checkpoint_is_still_refused_as_a_pickle_file():
    data = _saved({"w": torch.ones(2)}, _use_new_zipfile_serialization=False)
    with pytest.raises(SerializationError, match="is a pickle file"):
        dg.load(io.BytesIO(data))


_NUMPY_OF_STORAGE = {"FloatStorage": "float32", "DoubleStorage": "float64",
                     "HalfStorage": "float16", "LongStorage": "int64", "IntStorage": "int32",
                     "ByteStorage": "uint8", "BoolStorage": "bool"}


def _storage_dtypes(pickled: bytes) -> dict[str, str]:
    """Each storage key of a protocol-2 data.pkl with its numpy dtype, read off the
    opcodes: the key is the string right after the storage type (or its memo entry)."""
    memo, found, pending = {}, {}, None
    for op, arg, _ in pickletools.genops(pickled):
        if op.name == "GLOBAL" and arg.startswith("torch ") and arg.endswith("Storage"):
            pending = _NUMPY_OF_STORAGE[arg.split()[1]]
        elif op.name in ("BINPUT", "LONG_BINPUT"):
            memo[arg] = pending
        elif op.name in ("BINGET", "LONG_BINGET"):
            pending = memo.get(arg)
        elif op.name == "BINUNICODE" and pending:
            found[arg], pending = pending, None
        else:
            pending = None
    return found


def test_a_big_endian_checkpoint_loads_the_same_numbers_and_sharing():
    data = _saved({**_shared(), **{k: v for k, v in _dtypes().items()
                                   if isinstance(v, torch.Tensor)}})
    source = zipfile.ZipFile(io.BytesIO(data))
    dtypes = _storage_dtypes(_pickle_of(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in source.namelist():
            raw = source.read(name)
            key = name.rsplit("/", 1)[-1]
            if name.endswith("/byteorder"):
                raw = b"big"
            elif "/data/" in name and key in dtypes:
                raw = np.frombuffer(raw, dtypes[key]).byteswap().tobytes()
            archive.writestr(name, raw)
    assert len(dtypes) >= 8  # every dtype's storage was swapped
    theirs = torch.load(io.BytesIO(data), weights_only=True)
    ours = dg.load(io.BytesIO(buffer.getvalue()))
    _same(theirs, ours)
    _same_sharing(_walk(theirs, []), _walk(ours, []))
    assert all(t._array.dtype.isnative for t in _walk(ours, []))


def _rezip(data: bytes, pickled: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in source.namelist():
            archive.writestr(name, pickled if name.endswith("/data.pkl")
                             else source.read(name))
    return buffer.getvalue()


def _pickle_of(data: bytes) -> bytes:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))


def _mutate(rng: random.Random, pickled: bytes) -> bytes:
    at = rng.randrange(len(pickled))
    kind = rng.choice(["truncate", "flip", "flip", "set", "insert", "delete", "several"])
    if kind == "truncate":
        return pickled[:at]
    if kind == "flip":
        return pickled[:at] + bytes([pickled[at] ^ (1 << rng.randrange(8))]) + pickled[at + 1:]
    if kind == "set":
        return pickled[:at] + bytes([rng.randrange(256)]) + pickled[at + 1:]
    if kind == "insert":
        return pickled[:at] + bytes([rng.randrange(256)]) + pickled[at:]
    if kind == "delete":
        return pickled[:at] + pickled[at + 1:]
    damaged = bytearray(pickled)
    for _ in range(rng.randrange(2, 8)):
        damaged[rng.randrange(len(damaged))] = rng.randrange(256)
    return bytes(damaged)


def test_damaged_pickles_of_real_checkpoints_only_ever_fail_on_one_line():
    cases = _cases()
    sources = [_saved(cases[name], **options) for name, options in
               [("batchnorm", {}), ("adam", {}), ("plain", {}), ("views", {}),
                ("tied", {"pickle_protocol": 4}), ("dtypes", {"pickle_protocol": 5})]]
    rng = random.Random(1234)
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(_FUZZ_CASES):
        data = sources[case % len(sources)]
        damaged = _rezip(data, _mutate(rng, _pickle_of(data)))
        started = time.monotonic()
        try:
            dg.load(io.BytesIO(damaged))
            outcomes["loaded"] += 1
        except SerializationError as e:
            assert "\n" not in str(e) and str(e).startswith("load: "), str(e)
            outcomes["refused"] += 1
        assert time.monotonic() - started < 10, f"case {case} took too long"
    assert outcomes["refused"] > _FUZZ_CASES // 4  # the fuzz does reach the reader's errors
