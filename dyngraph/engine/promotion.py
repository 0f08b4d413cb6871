"""PyTorch's type promotion, as functions a script calls: ``promote_types``,
``result_type`` and ``can_cast``.

The ops follow the same rules (``dtypes.promoted``, ``dtypes.result_type``, numpy's own
promotion of a Python number, which since numpy 2 (NEP 50) takes the tensor's type as
PyTorch does): dimensioned tensors decide the result; a 0-d tensor, then a Python number,
only where it is of a higher category (bool < integer < float < complex), and then as the
default type of its category (a Python float beside an int tensor makes float32).

>>> import dyngraph as torch
>>> torch.promote_types(torch.float16, torch.int64)
dyngraph.float16
>>> torch.result_type(torch.tensor([1, 2], dtype=torch.int32), 2.5)
dyngraph.float32
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import dtypes
from .tensor import Tensor

_NUMBER_CATEGORY = {builtins.bool: 0, int: 1, builtins.float: 2, complex: 3}
_CATEGORY_DEFAULT = {0: np.dtype(np.bool_), 1: np.dtype(np.int64), 2: np.dtype(np.float32)}


def promote_types(type1: Any, type2: Any) -> dtypes.dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to (``torch.promote_types``)."""
    return dtypes.dtype_of(dtypes.promote_types(dtypes.to_numpy_dtype(type1),
                                                dtypes.to_numpy_dtype(type2)))


def result_type(tensor: Any, other: Any) -> dtypes.dtype:
    """The dtype an arithmetic op on ``tensor`` and ``other`` (Tensors or Python numbers)
    gives (``torch.result_type``)."""
    arrays = []
    numbers = []
    for x in (tensor, other):
        if isinstance(x, Tensor):
            arrays.append(x._array)
        elif type(x) in _NUMBER_CATEGORY:
            numbers.append(x)
        else:
            names = ", ".join(type(v).__name__ for v in (tensor, other))
            raise TypeError(f"result_type() received an invalid combination of arguments - "
                            f"got ({names}), but expected one of: (Tensor tensor, Tensor "
                            f"other), (Number scalar, Tensor tensor), (Tensor tensor, Number "
                            f"other), (Number scalar1, Number scalar2)")
    found = dtypes.result_type(*arrays) if arrays else None
    category = max((_NUMBER_CATEGORY[type(n)] for n in numbers), default=-1)
    if category == 3:
        raise NotImplementedError(dtypes.COMPLEX_MESSAGE)
    if category >= 0 and (found is None or category > dtypes.category(found)):
        number = _CATEGORY_DEFAULT[category]
        found = number if found is None else dtypes.promote_types(found, number)
    assert found is not None
    return dtypes.dtype_of(found)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` into ``to`` in an in-place op or an
    ``out=`` (``torch.can_cast``): never a float into an integer or bool, never anything
    but a bool into a bool."""
    return dtypes.can_cast(dtypes.to_numpy_dtype(from_), dtypes.to_numpy_dtype(to))
