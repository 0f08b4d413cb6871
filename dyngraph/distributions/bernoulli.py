"""``Bernoulli``: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ..engine import functions as fn
from ..engine.autograd import no_grad
from ..engine.tensor import Tensor
from ..nn import functional as F
from . import constraints
from .categorical import clamp_probs
from .distribution import Distribution, broadcast_all


class Bernoulli(Distribution):
    """>>> import dyngraph as torch
    >>> Bernoulli(probs=torch.tensor(0.25)).log_prob(torch.tensor(1.0)).exp().item()
    0.25
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._given = ("probs",)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
            self._given = ("logits",)
        super().__init__(tuple(param.shape), (), validate_args)

    @cached_property
    def logits(self) -> Tensor:  # type: ignore[no-redef]
        p = clamp_probs(self.probs)
        return fn.log(p) - fn.log1p(-p)

    @cached_property
    def probs(self) -> Tensor:  # type: ignore[no-redef]
        return fn.sigmoid(self.logits)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    @property
    def mode(self) -> Tensor:
        return (self.probs >= 0.5).to(self.probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return fn.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
