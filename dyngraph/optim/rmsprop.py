"""RMSprop (Hinton), PyTorch's update rule with momentum and the centered variant."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .optimizer import Optimizer, _check


class RMSprop(Optimizer):
    """Gradients divided by a running RMS of recent gradients (``centered``: of their
    variance), with optional momentum and L2 weight decay."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        _check("alpha value", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, data: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> np.ndarray:
        alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(data)
            if momentum > 0:
                state["momentum_buffer"] = np.zeros_like(data)
            if group["centered"]:
                state["grad_avg"] = np.zeros_like(data)
        state["step"] += 1
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * data
        square_avg = state["square_avg"]
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg += (1 - alpha) * (grad - grad_avg)  # PyTorch's lerp_ for weight < 0.5
            avg = np.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = np.sqrt(square_avg)
        avg += eps
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf *= momentum
            buf += grad / avg
            return -group["lr"] * buf
        return grad / avg * -group["lr"]
