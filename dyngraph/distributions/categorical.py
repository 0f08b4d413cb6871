"""``Categorical``: a distribution over ``0 .. K-1`` given by ``probs`` or ``logits``."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from ..engine import functions as fn
from ..engine.creation import full
from ..engine.functions_shape import gather
from ..engine.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution

F32_MIN = float(np.finfo(np.float32).min)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept off 0 and 1 by the dtype's epsilon, so their logs are finite."""
    eps = float(np.finfo(probs._array.dtype).eps)
    return fn.clamp(probs, min=eps, max=1 - eps)


class Categorical(Distribution):
    """>>> import dyngraph as torch
    >>> m = Categorical(logits=torch.tensor([0.0, 0.0]))
    >>> m.log_prob(torch.tensor(1)).item() == torch.log(torch.tensor(0.5)).item()
    True
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self._given = ("probs",)
            param = self.probs
        else:
            assert logits is not None
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - fn.logsumexp(logits, dim=-1, keepdim=True)
            param = self.logits
            self._given = ("logits",)
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), (), validate_args)

    @cached_property
    def logits(self) -> Tensor:  # type: ignore[no-redef]
        return fn.log(clamp_probs(self.probs))

    @cached_property
    def probs(self) -> Tensor:  # type: ignore[no-redef]
        return fn.softmax(self.logits, -1)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return fn.argmax(self.probs, dim=-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        count = int(np.prod(tuple(sample_shape), dtype=np.int64))
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        samples_2d = fn.multinomial(probs_2d, count, True).t()
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        shape = np.broadcast_shapes(tuple(index.shape), tuple(self.logits.shape))
        index = index.expand(shape)[..., :1]
        return gather(self.logits.expand(shape), -1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = fn.clamp(self.logits, min=F32_MIN)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        from ..engine.creation import arange

        values = arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
