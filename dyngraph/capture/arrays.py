"""Raw values of any backend as numpy arrays, for the few places that need the numbers.

The capture layer hands backend values (a numpy array, a ``torch.Tensor`` ...) around
untouched; only when the numbers themselves are wanted (a paused debugger's value request,
``values="small"``, an exact NaN check) does it convert one, here. A backend registers
its value type and a converter when it starts capturing.

>>> to_numpy(np.arange(3)).tolist()
[0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_converters: dict[type, Callable[[Any], np.ndarray]] = {}

UNWRITTEN = np.zeros(0, np.float32)
"""What a backend hands on as the raw value of a tensor made by the ``empty`` family and not
written yet (``torch.empty``'s memory holds whatever was there: no data). Checks see
nothing to judge in it (``dyngraph.debug.nonfinite``); ``to_numpy`` gives it as it is."""


def register(cls: type, convert: Callable[[Any], np.ndarray]) -> None:
    """Convert values of ``cls`` (and its subclasses) with ``convert``."""
    _converters[cls] = convert


def to_numpy(value: Any) -> np.ndarray:
    """``value`` as an ndarray (no copy when it already is one, or shares memory as one)."""
    if type(value) is np.ndarray:
        return value
    convert = _converters.get(type(value))
    if convert is None:
        for cls in type(value).__mro__[1:]:
            convert = _converters.get(cls)
            if convert is not None:
                _converters[type(value)] = convert
                break
        else:
            return np.asarray(value)
    return convert(value)
