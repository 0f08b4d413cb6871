"""Numbers as the panes show them: short, and honest about NaN and Inf.

A summary's min, max, mean, std and norm are computed over the finite values (so a single
NaN does not hide the rest); a norm shown on its own must not look finite when the tensor
is not: ``norm_of`` gives NaN when any value is NaN and Inf when any is infinite.

>>> fmt(norm_of(Summary((3,), "float32", norm=0.079, nan=57)))   # doctest: +SKIP
'nan'
"""

from __future__ import annotations

import math

from dyngraph.capture import events as ev


def fmt(x: float | None) -> str:
    """``0.1235``, ``1.235e+07``, ``nan``, ``inf``; ``–`` for unknown."""
    if x is None:
        return "–"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0 or (1e-3 <= abs(x) < 1e5):
        return f"{x:.4g}"
    return f"{x:.3e}"


def norm_of(s: ev.Summary | None) -> float | None:
    """The L2 norm of the whole tensor: NaN if it holds a NaN, Inf if an Inf, else the
    recorded norm (None when not recorded)."""
    if s is None:
        return None
    if s.nan:
        return math.nan
    if s.inf:
        return math.inf
    return s.norm


def plural(n: int, word: str) -> str:
    """``1 element``, ``2 elements``, ``1,024 elements``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
