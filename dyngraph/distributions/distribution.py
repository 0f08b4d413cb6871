"""The ``Distribution`` base class: shapes, sampling shapes and argument validation."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.creation import tensor
from ..engine.tensor import Size, Tensor
from ..missing import name_unexpected_keywords
from . import constraints


class Distribution:
    """Base class of the distributions, as ``torch.distributions.Distribution``.

    ``batch_shape`` indexes independent distributions; ``event_shape`` is the shape of one
    draw. Arguments are validated (PyTorch's default); pass ``validate_args=False`` or call
    ``Distribution.set_default_validate_args(False)`` to skip it.
    """

    has_rsample = False
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: constraints.Constraint | None = None
    _validate_default = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("dyngraph."):
            name_unexpected_keywords(cls, "distributions")

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        Distribution._validate_default = bool(value)

    def __init__(self, batch_shape: tuple[int, ...] = (), event_shape: tuple[int, ...] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = (self._validate_default if validate_args is None
                               else bool(validate_args))
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if name in self.__dict__:  # not the form left unsaid (probs vs logits)
                    self._check(self.__dict__[name], constraint, f"parameter {name}")

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> tuple[int, ...]:
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        from ..engine.autograd import no_grad

        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no rsample: its samples are not "
                                  "differentiable (use sample(), or log_prob for REINFORCE)")

    def sample_n(self, n: int) -> Tensor:
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()  # type: ignore[attr-defined, no-any-return]

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        if self.support is not None:
            self._check(value, self.support, "value argument", support=True)

    def _check(self, value: Any, constraint: constraints.Constraint, what: str,
               support: bool = False) -> None:
        array = np.asarray(value._array if isinstance(value, Tensor) else value)
        if bool(np.all(constraint.check(array))):
            return
        shape = tuple(array.shape)
        bad = np.array2string(array, separator=", ", threshold=8).replace("\n", "")
        if support:
            where = f"to be within the support ({constraint!r}) of the distribution {self!r}"
        else:
            where = f"of distribution {self!r} to satisfy the constraint {constraint!r}"
        raise ValueError(f"Expected {what} (Tensor of shape {shape}) {where}, but found "
                         f"invalid values: {bad}")

    _given: tuple[str, ...] | None = None  # the parameters the user gave, where it varies

    def __repr__(self) -> str:
        parts = []
        for name in self.arg_constraints:
            if name in self.__dict__ and (self._given is None or name in self._given):
                value = self.__dict__[name]
                shown = (f"{value.item()!r}" if value.numel() == 1 else repr(value.shape)
                         ) if isinstance(value, Tensor) else repr(value)
                parts.append(f"{name}: {shown}")
        return f"{type(self).__name__}({', '.join(parts)})"


def as_float_tensor(value: Any) -> Tensor:
    """A parameter as a tensor (Python numbers become float32 tensors, as PyTorch's)."""
    return value if isinstance(value, Tensor) else tensor(float(value))


def broadcast_all(*values: Any) -> list[Tensor]:
    """The parameters as tensors of one broadcast shape (differentiable ``expand``)."""
    tensors = [as_float_tensor(v) for v in values]
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return [t if tuple(t.shape) == shape else t.expand(shape) for t in tensors]
