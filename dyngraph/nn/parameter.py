"""``nn.Parameter``: a leaf Tensor that a Module registers as one of its parameters."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.tensor import Tensor


class Parameter(Tensor):
    """A Tensor that requires grad by default and is flagged as a parameter.

    Like PyTorch's it shares the storage of the tensor it wraps.

    >>> import dyngraph as torch
    >>> w = torch.nn.Parameter(torch.zeros(2, 3))
    >>> w.requires_grad, w.shape
    (True, dyngraph.Size([2, 3]))
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        super().__init__(0.0)
        if data is None:
            array = np.empty((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            array = data._array
        else:
            array = Tensor(data)._array
        self._array = array
        self._is_param = True
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        copy = Parameter(self._array.copy(), self.requires_grad)
        if self._grad is not None:
            copy._grad = Tensor(self._grad._array.copy())
        copy._name = self._name
        memo[id(self)] = copy
        return copy

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (Parameter, (self._array, self.requires_grad))


def is_parameter(value: Any) -> bool:
    return isinstance(value, Parameter)
