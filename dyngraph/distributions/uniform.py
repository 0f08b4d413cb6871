"""``Uniform(low, high)``: samples in ``[low, high)``; ``log_prob`` is -inf outside."""

from __future__ import annotations

from typing import Any

from ..engine import functions as fn
from ..engine.autograd import no_grad
from ..engine.creation import rand
from ..engine.tensor import Tensor
from . import constraints
from .distribution import Distribution, broadcast_all


class Uniform(Distribution):
    """>>> import dyngraph as torch
    >>> Uniform(0.0, 4.0).log_prob(torch.tensor(1.0)).exp().item()
    0.25
    """

    arg_constraints = {"low": constraints.real, "high": constraints.real}
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(tuple(self.low.shape), (), validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError(f"Expected parameter low of distribution {self!r} to be less "
                             "than high")

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value).type_as(self.low) * (self.high > value).type_as(self.low)
        return fn.log(inside) - fn.log(self.high - self.low)

    def entropy(self) -> Tensor:
        return fn.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        return fn.clamp((value - self.low) / (self.high - self.low), min=0, max=1)
