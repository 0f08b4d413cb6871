"""Optimizer steps under PyTorch capture: update norms, and the mode set aside meanwhile.

Nothing an optimizer's ``step`` does is an op of the graph, and a torch-function mode on
the stack routes every one of its hundreds of tensor calls through Python. So while a step
runs (without a closure: a closure's forward and backward are the model's) the capture's
mode is taken off the stack and put back in a ``finally``, in the same function: a step
that raises leaves the stack as it found it, so a mode the script pushes afterwards is
never buried under dyngraph's (or popped in its place).

Every optimizer class's ``step`` is wrapped: the classes PyTorch has already hooked
(``Optimizer._patch_step_function`` marks them ``hooked``) at start, and every class hooked
later through ``Optimizer.profile_hook_step``. ``stop`` unwraps them all.

Only the capturing thread's steps are recorded; a step in another thread runs untouched
and is named once in a note (``tracer.other_thread``), and never moves or ends the
capturing thread's iteration.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.optim import Optimizer

from ..capture.tracing import tracer
from .guard import failed
from .ids import id_of
from .modestack import real

_get_ident = threading.get_ident
_no_torch_function = torch._C.DisableTorchFunction  # (see ``backward``)
_WRAPPED = "_dyngraph_step"
_KEPT_LIMIT = 100_000  # (parameters whose copies are kept: see ``OptimizerSteps._copies``)


class OptimizerSteps:
    """Wraps every optimizer class's ``step`` while installed; ``mode`` is the capture's."""

    def __init__(self, mode: Any, owner: int) -> None:
        self.buffer: Any = None  # the capture's ``deferred.StatsBuffer``
        self.mode = mode
        self.owner = owner
        self._saved_profile_hook: Any = None
        # id of a CPU parameter -> (it, weakly; its copy before a step): see ``_copies``
        self._kept: dict[int, tuple[weakref.ref[torch.Tensor], torch.Tensor]] = {}

    # -- install and remove ------------------------------------------------------------------
    def install(self) -> None:
        original = Optimizer.__dict__["profile_hook_step"]
        self._saved_profile_hook = original
        steps = self

        def profile_hook_step(func: Callable[..., Any]) -> Callable[..., Any]:
            return steps._wrap(original.__func__(func))

        Optimizer.profile_hook_step = staticmethod(profile_hook_step)  # type: ignore[method-assign]
        for cls in _subclasses(Optimizer):
            step = cls.__dict__.get("step")
            if step is not None and getattr(step, "hooked", False) and not hasattr(step, _WRAPPED):
                cls.step = self._wrap(step)  # type: ignore[attr-defined]

    def remove(self) -> None:
        self._kept.clear()
        if self._saved_profile_hook is not None:
            Optimizer.profile_hook_step = self._saved_profile_hook  # type: ignore[method-assign]
            self._saved_profile_hook = None
        for cls in _subclasses(Optimizer):
            step = cls.__dict__.get("step")
            inner = getattr(step, _WRAPPED, None)
            if inner is not None and getattr(step, "_dyngraph_steps", None) is self:
                cls.step = inner  # type: ignore[attr-defined]

    def _wrap(self, hooked: Callable[..., Any]) -> Callable[..., Any]:
        steps = self

        @functools.wraps(hooked)
        def step(*args: Any, **kwargs: Any) -> Any:
            return steps.run(hooked, args, kwargs)

        step.hooked = True  # type: ignore[attr-defined] # (PyTorch must not wrap it again)
        setattr(step, _WRAPPED, hooked)
        step._dyngraph_steps = self  # type: ignore[attr-defined]
        return step

    # -- one step ------------------------------------------------------------------------------
    def run(self, step: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> Any:
        """``step(*args, **kwargs)`` (``args[0]`` is the optimizer), recorded."""
        if not tracer.listening or not args:
            return step(*args, **kwargs)
        if _get_ident() != self.owner:
            tracer.other_thread()  # (named once; nothing of the capture is touched)
            return step(*args, **kwargs)
        optimizer = args[0]
        closure = len(args) > 1 or kwargs.get("closure") is not None
        aside = not closure and self._pop_mode()
        mode = self.mode
        mode.in_step += 1
        try:
            before = self._before(optimizer)
            out = step(*args, **kwargs)
        finally:
            mode.in_step -= 1
            if aside:
                real.push(mode)
        self._after(optimizer, *before)
        return out

    def _pop_mode(self) -> bool:
        """Take the capture's mode off the stack if it is on top (a mode the script pushed
        above it stays, and so does dyngraph's under it)."""
        n = real.stack_len()
        if n and real.stack_at(n - 1) is self.mode:
            real.pop()
            return True
        return False

    def _before(self, optimizer: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The parameters to measure and a copy of each. Update norms need that copy (as
        much memory traffic as a plain SGD step): only when statistics are asked for."""
        try:
            if tracer.stats == "none":
                return [], []
            params = [p for group in optimizer.param_groups for p in group["params"]
                      if p.grad is not None and p.layout is torch.strided]
            self.mode.quiet += 1
            try:
                with _no_torch_function(), torch.no_grad():
                    return params, self._copies(params) if params else []
            finally:
                self.mode.quiet -= 1
        except Exception as exc:  # noqa: BLE001 - the step runs anyway
            failed("an optimizer step", exc)
            return [], []

    def _copies(self, params: list[torch.Tensor]) -> list[torch.Tensor]:
        """A copy of each parameter as it is before the step. A CPU parameter's is taken
        into a buffer kept for it from step to step: a new one each step is fresh memory
        from the system, and its page faults cost more than the copy (a 6-layer GPT's 19 MB
        of parameters: 86 ms a step against 40, load 8). Elsewhere a new copy each step (a
        GPU's caching allocator makes that free, and a buffer kept on the device would
        hold a parameter-sized copy between steps, where activations need the memory)."""
        kept = self._kept
        if len(kept) > _KEPT_LIMIT:
            kept.clear()
        copies: list[torch.Tensor] = []
        for p in params:
            if p.device.type != "cpu":
                copies.append(torch.empty_like(p))
                continue
            entry = kept.get(id(p))
            # (a parameter resized, recast or moved in place, ``p.data = ...``: a new copy)
            if (entry is None or entry[0]() is not p or entry[1].shape != p.shape
                    or entry[1].dtype != p.dtype or entry[1].device != p.device):
                entry = kept[id(p)] = (weakref.ref(p), torch.empty_like(p))
            copies.append(entry[1])
        torch._foreach_copy_(copies, params)
        return copies

    def _after(self, optimizer: Any, params: list[torch.Tensor],
               before: list[torch.Tensor]) -> None:
        try:
            norms: list[float] = []
            pending = None
            if params:
                self.mode.quiet += 1
                try:
                    with _no_torch_function(), torch.no_grad():
                        torch._foreach_sub_(before, params)  # the copy becomes -change
                        found = torch._foreach_norm(before)
                        if self.buffer is not None and not tracer.eager_stats:
                            # read with the iteration's other statistics (``deferred``)
                            pending = self.buffer.updates([id_of(p) for p in params], found)
                        else:  # (the numbers ``deferred`` reads: the same stack)
                            norms = torch.stack(found).to(torch.float64).tolist()
                finally:
                    self.mode.quiet -= 1
            groups = optimizer.param_groups
            lr = groups[0].get("lr", 0.0) if groups else 0.0
            if isinstance(lr, torch.Tensor):  # (a tensor learning rate: read once per step)
                lr = lr.item()
            tracer.optimizer_step(type(optimizer).__name__, float(lr), pending if pending
                                  is not None else tuple((id_of(p), n) for p, n in
                                                         zip(params, norms, strict=True)))
        except Exception as exc:  # noqa: BLE001 - the step ran; the script goes on
            failed("an optimizer step", exc)


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    todo = [cls]
    while todo:
        sub: type
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found
