"""Run one small program on dyngraph and on PyTorch and compare what a user would see.

A program is written once against the PyTorch API, ``program(L)`` with ``L`` either
``dyngraph`` or ``torch``, and returns a dict of tensors (values, gradients). ``twin``
compares every entry, value and dtype; without PyTorch installed it checks dyngraph's
results against the ``expected`` values given instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dyngraph as dg

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None


def as_numpy(value: Any) -> np.ndarray:
    if value is None:
        return np.array(np.nan)
    if hasattr(value, "detach"):
        return np.asarray(value.detach().numpy())
    return np.asarray(value)


def run(program: Callable[[Any], dict[str, Any]], lib: Any) -> dict[str, np.ndarray]:
    return {k: as_numpy(v) for k, v in program(lib).items()}


def twin(program: Callable[[Any], dict[str, Any]],
         expected: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    """dyngraph's results, checked against PyTorch's (and against ``expected``)."""
    ours = run(program, dg)
    if expected is not None:
        for key, want in expected.items():
            np.testing.assert_allclose(ours[key], want, rtol=1e-6, err_msg=key)
    if torch is not None:
        theirs = run(program, torch)
        assert ours.keys() == theirs.keys()
        for key in ours:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6,
                                       err_msg=key)
            assert ours[key].dtype == theirs[key].dtype, key
    return ours


def twin_raises(program: Callable[[Any], Any], error: type[BaseException],
                message: str) -> None:
    """Both libraries raise ``error`` with a message starting with ``message``."""
    libs = [dg] if torch is None else [dg, torch]
    for lib in libs:
        with pytest.raises(error, match="^" + re.escape(message)):
            program(lib)
