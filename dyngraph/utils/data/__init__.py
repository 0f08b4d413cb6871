"""``torch.utils.data``: datasets, samplers, ``DataLoader`` and ``random_split``.

Batches are built in the calling process (``num_workers=0``); shuffling draws from
dyngraph's generators, so the same seed gives the same batches on every run (not
PyTorch's batches: the random streams differ).

>>> import dyngraph as torch
>>> from dyngraph.utils.data import DataLoader, TensorDataset
>>> data = TensorDataset(torch.arange(5.0), torch.arange(5))
>>> [y.tolist() for _, y in DataLoader(data, batch_size=2)]
[[0, 1], [2, 3], [4]]
"""

from ...missing import module_getattr
from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
    "default_convert", "get_worker_info", "random_split",
]

__getattr__ = module_getattr(__name__)
