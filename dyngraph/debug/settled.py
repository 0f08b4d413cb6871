"""What a summary row settles by itself, so the agent's NaN/Inf and gradient-norm checks
skip the raw array: an exact summary that counted no NaN and no Inf, an exact norm.

Summary rows (``dyngraph.capture.rows``): ``(shape, dtype, norm, nan, inf, sampled)`` for
a cheap summary, eleven fields (``sampled`` last) for the others.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .breakpoints import array_norm

_CLEAN = (0, 0, False)  # the tail (nan, inf, sampled) of an exact cheap summary row


def settled(s: Any) -> bool:
    """Does summary row ``s`` settle "no NaN/Inf" by itself (exact, and none counted)?"""
    if s is None:
        return False
    if len(s) == 6:
        return s[3:] == _CLEAN  # (one compare: this runs for every op and gradient)
    return not (s[-1] or s[7] or s[8])


def all_settled(summaries: tuple[Any, ...]) -> bool:
    """``settled`` for every summary row of a backward step's gradients (None: none
    flows there, nothing to settle)."""
    for s in summaries:
        if s is not None and not (s[3:] == _CLEAN if len(s) == 6 else settled(s)):
            return False
    return True


def _norm_of(s: Any) -> float | None:
    """The exact norm a summary row holds, or None."""
    if s is None or s[-1]:
        return None
    return s[2] if len(s) == 6 else s[6]  # type: ignore[no-any-return]


def gradient_norm(array: np.ndarray, summary: Any) -> float:
    """The gradient's exact norm: its summary row's, if it holds one."""
    norm = _norm_of(summary)
    return array_norm(array) if norm is None else norm
