"""The Optimizer base class: param groups, per-parameter state, state dicts, and the
OptimizerStep event each ``step()`` emits when a tracer listens."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ..capture.summaries import update_norm
from ..capture.tracing import tracer
from ..engine.tensor import Tensor
from ..missing import name_unexpected_keywords

__all__ = ["Optimizer", "required"]


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: ``param_groups`` (dicts with "params" and hyper-parameters) and ``state``
    (per-parameter dicts of numpy arrays), keyed by the Parameter object."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("dyngraph."):
            name_unexpected_keywords(cls, "optim")

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
                    p.grad._array = np.zeros_like(p.grad._array)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            from ..engine.autograd import enable_grad

            with enable_grad():
                loss = closure()
        listening = tracer.listening
        updates: list[tuple[int, float]] = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad._array
                if group.get("maximize"):
                    grad = -grad
                state = self.state.setdefault(p, {})
                delta = self._update(p._array, grad, state, group)
                p._array += delta  # in place: views of the array (state dicts) see it
                if listening:
                    updates.append((p._id, update_norm(delta)))
        if listening:
            tracer.optimizer_step(type(self).__name__, float(self.param_groups[0]["lr"]),
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
            self.state[p] = {k: _load_value(v, p._array.dtype, k) for k, v in saved_state.items()}

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
        from ..engine.creation import from_numpy

        return from_numpy(value.copy())
    return copy.deepcopy(value)


def _load_value(value: Any, dtype: np.dtype, key: str = "") -> Any:
    if key == "step" and hasattr(value, "item") and np.ndim(value) == 0:
        return int(value.item())  # PyTorch keeps its step count as a 0-d float tensor
    if isinstance(value, Tensor):
        return value._array.astype(dtype, copy=True)
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        array = np.asarray(value.detach().cpu().numpy())
        return array.item() if array.ndim == 0 else array.astype(dtype, copy=True)
    if isinstance(value, np.ndarray):
        return value.astype(dtype, copy=True)
    return value


def _check(name: str, value: float, minimum: float = 0.0) -> None:
    if not value >= minimum:
        raise ValueError(f"Invalid {name}: {value}")
