"""SGD with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .optimizer import Optimizer, _check


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov and L2
    weight decay, exactly PyTorch's rule (the first step's buffer is the gradient)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check("learning rate", lr)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, data: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> np.ndarray:
        wd, momentum = group["weight_decay"], group["momentum"]
        if wd:
            grad = grad + wd * data
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                # np.array, not .copy(): arithmetic on 0-d arrays yields numpy scalars
                buf = state["momentum_buffer"] = np.array(grad, dtype=data.dtype)
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        return -group["lr"] * grad
