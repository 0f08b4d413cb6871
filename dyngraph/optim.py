"""``dyngraph.optim``: SGD, Adam and AdamW with PyTorch's update rules and param groups.

Updates are numpy operations in place on each parameter's ``.data``: they are not ops,
emit no op events and build no graph. With a tracer listening, each ``step()`` emits one
OptimizerStep event carrying every updated parameter's id and the L2 norm of its update.

>>> import dyngraph as torch
>>> w = torch.nn.Parameter(torch.ones(3))
>>> opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w.tolist()
[0.800000011920929, 0.800000011920929, 0.800000011920929]
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .summaries import l2_norm
from .tensor import Tensor
from .tracing import tracer

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: ``param_groups`` (dicts with "params" and hyper-parameters) and ``state``
    (per-parameter dicts of numpy arrays), keyed by the Parameter object."""

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + type(params).__name__)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        group["params"] = list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if p.grad_fn is not None:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.data = np.zeros_like(p.grad.data)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            from .autograd import enable_grad

            with enable_grad():
                loss = closure()
        listening = tracer.listening
        updates: list[tuple[int, float]] = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                if group.get("maximize"):
                    grad = -grad
                state = self.state.setdefault(p, {})
                delta = self._update(p.data, grad, state, group)
                p.data += delta  # in place: views of the array (state dicts) see it
                if listening:
                    updates.append((p._id, l2_norm(delta)))
        if listening:
            tracer.on_optimizer_step(type(self).__name__, float(self.param_groups[0]["lr"]),
                                     tuple(updates))
        return loss

    def _update(self, data: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> np.ndarray:
        """Return the change to add to ``data`` (and update ``state`` in place)."""
        raise NotImplementedError

    # -- state dicts ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """PyTorch's layout: parameters are numbered across groups in order."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: {k: _copy_value(v) for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params = [p for g in self.param_groups for p in g["params"]]
        for mine, saved in zip(self.param_groups, groups, strict=True):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        for mine, saved in zip(self.param_groups, groups, strict=True):
            for key, value in saved.items():
                if key != "params":
                    mine[key] = value
        self.state = {}
        for key, saved_state in state_dict["state"].items():
            p = params[int(key)]
            self.state[p] = {k: _load_value(v, p.data.dtype) for k, v in saved_state.items()}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _copy_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        from .creation import from_numpy

        return from_numpy(value.copy())
    return copy.deepcopy(value)


def _load_value(value: Any, dtype: np.dtype) -> Any:
    if isinstance(value, Tensor):
        return value.data.astype(dtype, copy=True)
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        array = np.asarray(value.detach().cpu().numpy())
        return array.item() if array.ndim == 0 else array.astype(dtype, copy=True)
    if isinstance(value, np.ndarray):
        return value.astype(dtype, copy=True)
    return value


def _check(name: str, value: float, minimum: float = 0.0) -> None:
    if not value >= minimum:
        raise ValueError(f"Invalid {name}: {value}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov and L2
    weight decay, exactly PyTorch's rule (the first step's buffer is the gradient)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False) -> None:
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


class Adam(Optimizer):
    """Adam (Kingma & Ba) with PyTorch's bias correction, L2 ``weight_decay`` and AMSGrad."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        _check("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    _decoupled = False

    def _update(self, data: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> np.ndarray:
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(data)
            state["exp_avg_sq"] = np.zeros_like(data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(data)
        decay = None
        if wd:
            if self._decoupled:
                decay = -lr * wd * data  # AdamW shrinks the weights before the Adam step
                data = data + decay
            else:
                grad = grad + wd * data
        state["step"] += 1
        step = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m += (1 - beta1) * (grad - m)  # PyTorch's lerp form of beta1*m + (1-beta1)*g
        v *= beta2
        v += (1 - beta2) * grad * grad
        if group["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            v = state["max_exp_avg_sq"]
        bias1 = 1 - beta1**step
        bias2_sqrt = math.sqrt(1 - beta2**step)
        denom = np.sqrt(v) / bias2_sqrt + eps
        delta = (-lr / bias1) * m / denom
        return delta if decay is None else delta + decay


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01), as ``torch.optim.AdamW``."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
