"""torch.utils.data: datasets, samplers, DataLoader and collation, against PyTorch where
no randomness is involved, and the same batches for the same seed run after run."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections import namedtuple

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.utils import data as dgdata

Pair = namedtuple("Pair", "x y")


def _as_lists(value):
    if hasattr(value, "tolist"):
        return (str(value.dtype).split(".")[-1], value.tolist())
    if isinstance(value, dict):
        return {k: _as_lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_as_lists(v) for v in value]
    return value


def _batches(lib, data):
    class Squares(data.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return {"x": lib.full((2,), float(i)), "i": i, "f": i / 2, "name": f"s{i}",
                    "pair": Pair(np.float32(i), np.arange(i, i + 2))}

    ds = Squares()
    out = [list(data.DataLoader(ds, batch_size=3)),
           list(data.DataLoader(ds, batch_size=3, drop_last=True)),
           list(data.DataLoader(ds, batch_size=None))[:2],
           list(data.DataLoader(ds, batch_sampler=[[0, 6], [3]])),
           list(data.DataLoader(ds, batch_size=2, sampler=[5, 1, 2])),
           list(data.DataLoader(ds, batch_size=4, collate_fn=lambda b: [s["i"] for s in b])),
           len(data.DataLoader(ds, batch_size=3)), len(data.DataLoader(ds, 3, drop_last=True))]
    tensors = data.TensorDataset(lib.arange(10.0).reshape(5, 2), lib.arange(5))
    out.append(list(data.DataLoader(tensors, batch_size=2)))
    out.append(list(data.DataLoader(data.Subset(tensors, [4, 0]), batch_size=2)))
    out.append(list(data.DataLoader(data.ConcatDataset([tensors, tensors]), batch_size=4))[-1])
    out.append(list(data.BatchSampler(data.SequentialSampler(range(5)), 2, False)))
    out.append([len(s) for s in data.random_split(range(11), [0.5, 0.5])])
    out.append([len(s) for s in data.random_split(range(10), [0.33, 0.33, 0.34])])
    out.append(data.default_collate([(1, 2.0, "a", True), (3, 4.0, "b", False)]))
    return _as_lists(out)


def test_unshuffled_loading_and_collation_match_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.data as tdata

    assert _batches(dg, dgdata) == _batches(torch, tdata)


def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.data as tdata

    cases = [
        lambda L, D: D.DataLoader(range(3), shuffle=True, sampler=[0]),
        lambda L, D: D.DataLoader(range(3), batch_sampler=[[0]], batch_size=2),
        lambda L, D: D.DataLoader(range(3), persistent_workers=True),
        lambda L, D: D.TensorDataset(L.ones(2), L.ones(3)),
        lambda L, D: D.random_split(range(5), [2, 2]),
        lambda L, D: D.default_collate([None]),
        lambda L, D: D.default_collate([[1, 2], [1]]),
        lambda L, D: D.BatchSampler(range(3), 0, False),
    ]
    for case in cases:
        with pytest.raises(Exception) as ours:
            case(dg, dgdata)
        with pytest.raises(Exception) as theirs:
            case(torch, tdata)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def _shuffled(seed):
    g = dg.Generator().manual_seed(seed)
    ds = dgdata.TensorDataset(dg.arange(10))
    loader = dgdata.DataLoader(ds, batch_size=3, shuffle=True, generator=g, drop_last=True)
    epochs = [[b[0].tolist() for b in loader] for _ in range(2)]
    train, _ = dgdata.random_split(ds, [7, 3], generator=dg.Generator().manual_seed(seed))
    sampled = list(dgdata.RandomSampler(range(5), replacement=True, num_samples=8, generator=g))
    weighted = list(dgdata.WeightedRandomSampler([0.0, 1.0, 3.0], 6, generator=g))
    return epochs, list(train.indices), sampled, weighted


def test_the_same_seed_gives_the_same_batches_run_after_run():
    first = _shuffled(3)
    assert _shuffled(3) == first
    assert _shuffled(4) != first
    epochs = first[0]
    assert epochs[0] != epochs[1]  # each epoch is a new order
    for epoch in epochs:
        flat = [i for batch in epoch for i in batch]
        assert len(epoch) == 3 and len(set(flat)) == 9  # drop_last, no repeats
    assert 0 not in first[3]  # a zero weight is never drawn


def test_the_same_seed_gives_the_same_batches_in_a_new_process():
    code = ("import dyngraph as torch\nfrom dyngraph.utils.data import DataLoader\n"
            "torch.manual_seed(11)\n"
            "print([b.tolist() for b in DataLoader(range(8), batch_size=3, shuffle=True)])\n")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60, check=True).stdout for _ in range(2)}
    assert len(runs) == 1


def test_shuffling_without_a_generator_follows_manual_seed():
    def order():
        dg.manual_seed(5)
        return [b.tolist() for b in dgdata.DataLoader(range(6), batch_size=2, shuffle=True)]

    assert order() == order()


def test_workers_are_not_implemented_but_the_batches_are_the_same():
    with pytest.warns(UserWarning, match=r"dyngraph does not implement "
                                         r"DataLoader\(num_workers=4\)"):
        loader = dgdata.DataLoader(range(5), batch_size=2, num_workers=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4]]
    assert dgdata.get_worker_info() is None


def test_an_iterable_dataset_is_batched_in_order():
    class Stream(dgdata.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in dgdata.DataLoader(Stream(), batch_size=3)] == \
        [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="shuffle"):
        dgdata.DataLoader(Stream(), shuffle=True)
