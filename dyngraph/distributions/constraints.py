"""Constraints on distribution parameters and values (``torch.distributions.constraints``):
each says whether values satisfy it, elementwise, and prints as PyTorch's does."""

from __future__ import annotations

from typing import Any

import numpy as np


class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value: np.ndarray) -> np.ndarray:
        """A boolean array: which elements (or events) satisfy the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Real(Constraint):
    def check(self, value: np.ndarray) -> np.ndarray:
        return value == value  # everything but NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: float) -> None:
        self.lower_bound = lower_bound

    def check(self, value: np.ndarray) -> np.ndarray:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _Interval(Constraint):
    """``[lower, upper]``, or ``[lower, upper)`` when half-open (Uniform's support)."""

    def __init__(self, lower_bound: Any, upper_bound: Any, half_open: bool = False) -> None:
        self.lower_bound, self.upper_bound, self.half_open = lower_bound, upper_bound, half_open

    def check(self, value: np.ndarray) -> np.ndarray:
        low, high = _array(self.lower_bound), _array(self.upper_bound)
        return (low <= value) & (value < high if self.half_open else value <= high)

    def __repr__(self) -> str:
        name = "HalfOpenInterval" if self.half_open else "Interval"
        low, high = _show(self.lower_bound), _show(self.upper_bound)
        return f"{name}(lower_bound={low}, upper_bound={high})"


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value: np.ndarray) -> np.ndarray:
        return (value % 1 == 0) & super().check(value)

    def __repr__(self) -> str:
        return (f"IntegerInterval(lower_bound={_show(self.lower_bound)}, "
                f"upper_bound={_show(self.upper_bound)})")


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: np.ndarray) -> np.ndarray:
        return (value == 0) | (value == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: np.ndarray) -> np.ndarray:
        return np.all(value >= 0, axis=-1) & (np.abs(value.sum(-1) - 1) < 1e-6)


def _array(bound: Any) -> np.ndarray:
    """A bound that may be a tensor (Uniform's low and high) as an array."""
    return np.asarray(getattr(bound, "_array", bound))


def _show(bound: Any) -> str:
    array = _array(bound)
    return repr(array.item()) if array.ndim == 0 else f"tensor of shape {tuple(array.shape)}"


real = _Real()
positive = _GreaterThan(0.0)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()


def greater_than(lower_bound: float) -> Constraint:
    return _GreaterThan(lower_bound)


def interval(lower_bound: Any, upper_bound: Any) -> Constraint:
    return _Interval(lower_bound, upper_bound)


def half_open_interval(lower_bound: Any, upper_bound: Any) -> Constraint:
    return _Interval(lower_bound, upper_bound, half_open=True)


def integer_interval(lower_bound: int, upper_bound: int) -> Constraint:
    return _IntegerInterval(lower_bound, upper_bound)
