"""L-BFGS with an optional strong-Wolfe line search, PyTorch's algorithm (after minFunc).

All parameters are handled as one flat float vector. Where PyTorch keeps a scalar as a
0-d float32 tensor (dot products, step sizes) this keeps a numpy float32, and where it
keeps a Python float (losses) a Python float, so the arithmetic rounds as PyTorch's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..capture.summaries import update_norm
from ..capture.tracing import tracer
from ..engine.autograd import enable_grad, no_grad
from .optimizer import Optimizer, _check

Objective = Callable[[list[np.ndarray], Any, np.ndarray], tuple[float, np.ndarray]]


def _cubic_interpolate(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any,
                       bounds: tuple[Any, Any] | None = None) -> Any:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), kept in bounds."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = np.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, low), high)


def _strong_wolfe(obj_func: Objective, x: list[np.ndarray], t: Any, d: np.ndarray, f: float,
                  g: np.ndarray, gtd: Any, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25
                  ) -> tuple[float, np.ndarray, Any, int]:
    """A step size ``t`` along ``d`` meeting the strong Wolfe conditions: bracket, then
    zoom with cubic interpolation. Returns (loss, flat grad, t, evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[Any] = []
    bracket_f: list[Any] = []
    bracket_g: list[np.ndarray] = []
    bracket_gtd: list[Any] = []
    while ls_iter < max_ls:
        sufficient_decrease = not (f_new > (f + c1 * t * gtd)
                                   or (ls_iter > 1 and f_new >= f_prev))
        if sufficient_decrease and abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if not sufficient_decrease or gtd_new >= 0:  # the minimum lies in [t_prev, t]
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        previous = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = previous, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insufficient_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # Keep t away from the bracket's ends, unless the last try made no progress.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], evals


class LBFGS(Optimizer):
    """``optimizer.step(closure)`` runs up to ``max_iter`` L-BFGS iterations; ``closure``
    zeroes the gradients, computes the loss, calls ``backward()`` and returns the loss.
    One parameter group only, as in PyTorch.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        _check("learning rate", lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        super().__init__(params, dict(
            lr=lr, max_iter=max_iter, max_eval=max_iter * 5 // 4 if max_eval is None
            else max_eval, tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
            history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the flat view of all parameters -------------------------------------------------
    def _flat_grad(self) -> np.ndarray:
        return np.concatenate([
            np.zeros(p._array.size, p._array.dtype) if p._grad is None
            else p._grad._array.reshape(-1) for p in self._params])

    def _add_grad(self, step_size: Any, update: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            n = p._array.size
            p._array += (step_size * update[offset:offset + n]).reshape(p._array.shape)
            offset += n

    def _set_params(self, arrays: list[np.ndarray]) -> None:
        for p, a in zip(self._params, arrays, strict=True):
            p._array[...] = a

    def _evaluate(self, closure: Callable[[], Any]) -> Any:
        with enable_grad():
            return closure()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        if closure is None:
            raise TypeError("LBFGS.step() missing 1 required positional argument: 'closure'")
        start = [p._array.copy() for p in self._params]
        with no_grad():
            loss = self._run(closure)
        if tracer.listening:
            updates = tuple((p._id, update_norm(p._array - s))
                            for p, s in zip(self._params, start, strict=True))
            tracer.optimizer_step("LBFGS", float(self.param_groups[0]["lr"]), updates)
        return loss

    def _run(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        # Carried over from the previous step() (None on the first).
        d: Any = state.get("d")
        t: Any = state.get("t")
        old_dirs: Any = state.get("old_dirs")
        old_stps: Any = state.get("old_stps")
        ro: Any = state.get("ro")
        h_diag: Any = state.get("H_diag")
        prev_flat_grad: Any = state.get("prev_flat_grad")
        prev_loss: Any = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                h_diag = self._remember(flat_grad - prev_flat_grad, d * t, old_dirs, old_stps,
                                        ro, h_diag, group["history_size"])
                d = self._direction(flat_grad, old_dirs, old_stps, ro, h_diag, state)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, np.float32(1.0) / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break
            evals = 0
            if group["line_search_fn"] is not None:
                x_init = [p._array.copy() for p in self._params]

                def objective(x: list[np.ndarray], step: Any, direction: np.ndarray
                              ) -> tuple[float, np.ndarray]:
                    self._add_grad(step, direction)
                    value = float(self._evaluate(closure))
                    grad = self._flat_grad()
                    self._set_params(x)
                    return value, grad

                loss, flat_grad, t, evals = _strong_wolfe(objective, x_init, t, d, loss,
                                                          flat_grad, gtd,
                                                          max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                optimal = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                optimal = False
                if n_iter != max_iter:
                    loss = float(self._evaluate(closure))
                    flat_grad = self._flat_grad()
                    optimal = np.abs(flat_grad).max() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals
            if (n_iter == max_iter or current_evals >= max_eval or optimal
                    or np.abs(d * t).max() <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _remember(y: np.ndarray, s: np.ndarray, old_dirs: list[np.ndarray],
                  old_stps: list[np.ndarray], ro: list[Any], h_diag: Any, history: int) -> Any:
        """Add the curvature pair (y, s) to the history if it keeps the Hessian estimate
        positive definite; return the new diagonal scale."""
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == history:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(np.float32(1.0) / ys)
            h_diag = ys / y.dot(y)
        return h_diag

    @staticmethod
    def _direction(flat_grad: np.ndarray, old_dirs: list[np.ndarray],
                   old_stps: list[np.ndarray], ro: list[Any], h_diag: Any,
                   state: dict[str, Any]) -> np.ndarray:
        """The two-loop recursion: minus the inverse-Hessian estimate times the gradient."""
        al = state.setdefault("al", [None] * len(old_dirs))
        al.extend([None] * (len(old_dirs) - len(al)))
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q += -al[i] * old_dirs[i]
        r = q * h_diag
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r += (al[i] - be_i) * old_stps[i]
        return r
