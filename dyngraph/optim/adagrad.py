"""Adagrad (Duchi et al., 2011), PyTorch's update rule with learning-rate decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .optimizer import Optimizer, _check


class Adagrad(Optimizer):
    """Each coordinate's step divided by the root of its summed squared gradients."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check("learning rate", lr)
        _check("lr_decay value", lr_decay)
        _check("weight_decay value", weight_decay)
        _check("initial_accumulator_value value", initial_accumulator_value)
        _check("epsilon value", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def _update(self, data: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> np.ndarray:
        if not state:
            state["step"] = 0
            state["sum"] = np.full_like(data, group["initial_accumulator_value"])
        state["step"] += 1
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * data
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] += grad * grad
        std = np.sqrt(state["sum"]) + group["eps"]
        return grad / std * -clr
