"""``default_collate``: a list of samples becomes one batch, as in PyTorch.

Tensors and numpy arrays are stacked, Python ints become an int64 tensor and floats a
float64 one, strings stay a sequence, and dicts, tuples and lists are collated field by
field (a tuple of fields comes back as a list, as PyTorch does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...engine.creation import tensor
from ...engine.functions_shape import stack
from ...engine.tensor import Tensor, _wrap

_BAD = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def default_collate(batch: Sequence[Any]) -> Any:
    """>>> import dyngraph as torch
    >>> default_collate([(torch.ones(2), 1), (torch.zeros(2), 0)])[1]
    tensor([1, 0])
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "SUO":
            raise TypeError(_BAD.format(elem.dtype))
        return _wrap(np.stack(batch))
    if isinstance(elem, np.generic):
        return _wrap(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(list(batch), dtype=np.float64)
    if isinstance(elem, int):  # also bool, which gives a bool tensor
        return tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)  # type: ignore[call-arg]
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(field) for field in zip(*batch, strict=True)))
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(field) for field in zip(*batch, strict=True)]
        if isinstance(elem, tuple):
            return fields
        try:
            return type(elem)(fields)  # type: ignore[call-arg]
        except TypeError:
            return fields
    raise TypeError(_BAD.format(type(elem)))


def default_convert(data: Any) -> Any:
    """Without batching (``batch_size=None``): numpy arrays become tensors, the rest as is."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SUO":
        return _wrap(data)
    if isinstance(data, Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data
