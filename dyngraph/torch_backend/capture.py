"""PyTorch capture, put together: started once per process, stopped when nobody needs it.

``TorchCapture.start()`` (in the thread whose ops are to be seen):

- pushes the ``ForwardCapture`` mode (ops, ``backward()``: ``forward.py``/``backward.py``),
  hidden from code that asks which modes are on (``modestack.py``);
- installs the global module hooks (module paths, parameter names: ``modules.py``);
- wraps every optimizer class's ``step`` (its internals are not ops; update norms:
  ``steps.py``);
- makes a custom ``autograd.Function`` one op, named after its class;
- ``torch.compile``: with ``--compile eager`` runs compiled code eagerly
  (``torch.compiler.set_stance("force_eager")``), so its ops are seen, and says so once
  (``backends.note``); by default (``observe``) the compile lane (``dyngraph.compile_lane``)
  records what torch.compile does while compiled calls run out of the capture's sight
  (``aside``).

Ops of other threads are not captured (the mode is per thread; the module hooks and the
optimizer wrappers, which are global, leave other threads alone and name them once in a
note). Nothing here raises into the script: a failure of dyngraph's own is a note
(``guard.py``).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Any

import torch

from ..capture import arrays, backends
from ..capture.tracing import now_ns, tracer
from ..compile_lane import mode as compile_mode
from . import guard, layouts
from .backward import BackwardCapture, Windows
from .calls import OP
from .deferred import StatsBuffer
from .forward import ForwardCapture, _version_of
from .guard import failed
from .layouts import to_numpy
from .modestack import HiddenMode, real
from .modules import ModulePaths
from .steps import OptimizerSteps
from .warnplace import WarningPlaces

_seq_nr = torch._C._autograd._get_sequence_nr
_modes_enabled = real.enabled  # (PyTorch's answer: ours is hidden from everyone else)
COMPILE_NOTE = "torch.compile runs eagerly while captured"


class TorchCapture:
    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.modules = ModulePaths()
        self.windows = Windows()
        self.backward = BackwardCapture(self.windows, self.modules.names, self._quiet)
        self.mode = ForwardCapture(self.modules.names, self.windows.add,
                                   self.backward.hook_leaf, self.backward.run,
                                   self.windows.own, self.windows.keep)
        self.hidden = HiddenMode(self.mode)
        self.warning_places = WarningPlaces(ForwardCapture.__torch_function__)
        self.steps = OptimizerSteps(self.mode, self.owner)
        self.buffer = StatsBuffer(self._quiet, tracer.read_stats)
        self.mode.buffer = self.backward.buffer = self.steps.buffer = self.buffer
        self._saved_apply: Any = None
        self._saved_compile: Any = None
        self._saved_utilities: list[tuple[Any, str, Any]] = []
        self._stance: Any = None
        self.compiled = False
        self.lane: Any = None  # the compile lane, from the first torch.compile (observe)

    def _quiet(self, delta: int) -> None:
        self.mode.quiet += delta

    # -- start and stop ------------------------------------------------------------------
    def start(self) -> None:
        guard.reset()
        layouts.reset()
        tracer.add_library(os.path.dirname(torch.__file__))
        arrays.register(torch.Tensor, to_numpy)
        tracer.read_pending = self.buffer.read
        self.mode.__enter__()  # type: ignore[no-untyped-call]
        self.hidden.install()
        self.warning_places.install()
        self.modules.install()
        self.steps.install()
        self._patch_function_apply()
        self._patch_compile()
        self._patch_gradient_utilities()
        # torch warns that a compiled module fires global module hooks twice: those are
        # ours, and they count each module once.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when "
                                "there are global hooks on modules")
        if "torch._dynamo" in sys.modules:  # something may be compiled already
            if compile_mode() == "eager":
                self._force_eager(announce=False)
            else:
                self._compile_lane(early=True)

    def stop(self) -> None:
        tracer.read_stats()  # (nothing pending is lost)
        if tracer.read_pending == self.buffer.read:
            tracer.read_pending = None
        self.hidden.remove()
        self.warning_places.remove()
        if real.stack_len() and real.stack_at(real.stack_len() - 1) is self.mode:
            self.mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
        else:
            self.mode.quiet += 1  # not on top (the user's mode is): let it pass calls on
        self.modules.remove()
        self.backward.remove()
        self.steps.remove()
        for owner, name, original in self._saved_utilities:
            setattr(owner, name, original)
        self._saved_utilities = []
        if self._saved_apply is not None:
            torch.autograd.Function.apply = self._saved_apply  # type: ignore[method-assign]
        if self._saved_compile is not None:
            torch.compile = self._saved_compile
        if self.lane is not None:
            self.lane.stop()
            self.lane = None
        if self._stance is not None:
            prev, self._stance = self._stance, None
            torch.compiler.set_stance(prev.stance,
                                      skip_guard_eval_unsafe=prev.skip_guard_eval_unsafe,
                                      force_backend=prev.backend)

    # -- custom autograd.Function: one op ----------------------------------------------------
    def _patch_function_apply(self) -> None:
        function = torch.autograd.Function
        original = function.__dict__["apply"]
        self._saved_apply = original
        inner = original.__func__
        capture = self

        def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
            mode = capture.mode
            if (mode.quiet or not tracer.listening or not _modes_enabled()
                    or threading.get_ident() != capture.owner):
                return inner(cls, *args, **kwargs)
            before = _version_of(args[0]) if args else None  # (ctx.mark_dirty changes it)
            s0 = _seq_nr()
            t0 = now_ns()
            mode.quiet += 1  # the ops inside forward are the Function's own
            try:
                out = inner(cls, *args, **kwargs)
            finally:
                mode.quiet -= 1
            duration = now_ns() - t0
            mode.quiet += 1
            try:
                mode.record(cls.__name__, OP, args, kwargs, out, s0, _seq_nr(), duration,
                            before)
            except Exception as exc:  # noqa: BLE001 - dyngraph's failure, not the script's
                failed(f"the autograd.Function {cls.__name__}", exc)
            finally:
                mode.quiet -= 1
            return out

        function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]

    # -- gradient utilities --------------------------------------------------------------------
    def _patch_gradient_utilities(self) -> None:
        """``clip_grad_norm_`` and its kin work on ``.grad`` between backward and the
        optimizer step: their ops are not the model's, and reported they would start the
        next iteration before the step that belongs to this one."""
        from torch.nn.utils import clip_grad

        capture = self
        for owner in (torch.nn.utils, clip_grad):
            for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm",
                         "get_total_norm", "clip_grads_with_norm_"):
                original = owner.__dict__.get(name)
                if original is None or getattr(original, "_dyngraph_quiet", False):
                    continue

                def quiet(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
                    if threading.get_ident() != capture.owner:  # (its mode is not there)
                        return __original(*args, **kwargs)
                    capture.mode.quiet += 1
                    try:
                        return __original(*args, **kwargs)
                    finally:
                        capture.mode.quiet -= 1

                quiet.__wrapped__ = original  # type: ignore[attr-defined]
                quiet.__doc__ = original.__doc__
                quiet._dyngraph_quiet = True  # type: ignore[attr-defined]
                self._saved_utilities.append((owner, name, original))
                setattr(owner, name, quiet)

    # -- torch.compile -----------------------------------------------------------------------
    def _patch_compile(self) -> None:
        original = torch.compile
        self._saved_compile = original
        capture = self

        def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch's name
            if compile_mode() == "eager":
                capture._force_eager(announce=True)
                return original(*args, **kwargs)
            return capture._observed(original(*args, **kwargs))

        compile.__wrapped__ = original  # type: ignore[attr-defined]
        compile.__doc__ = original.__doc__
        torch.compile = compile  # type: ignore[assignment]

    def _observed(self, compiled: Any) -> Any:
        return self._compile_lane().wrap(compiled)

    def _compile_lane(self, early: bool = False) -> Any:
        if self.lane is None:
            from ..compile_lane.lane import CompileLane

            self.lane = CompileLane(self)
            self.lane.start(early)
        return self.lane

    def aside(self) -> Any:
        """Take the capture out of sight while compiled code runs (the compile lane's
        calls): Dynamo guards on the mode stack and traces global hooks and patched
        functions, so any of them would change what is compiled. Returns the undo.

        The stack is read with PyTorch's own functions (``real``): the ones the script
        sees hide the capture's mode, and are themselves put back while out of sight."""
        n = real.stack_len()
        stack = [real.stack_at(i) for i in range(n)]
        above: list[Any] = []
        if self.mode in stack:
            above = [real.pop() for _ in range(n - 1 - stack.index(self.mode))]
            real.pop()
            for mode in reversed(above):
                real.push(mode)
        self.hidden.remove()
        self.warning_places.remove()
        self.modules.remove()
        self.steps.remove()
        patches = [(torch.autograd.Function, "apply", self._saved_apply),
                   *self._saved_utilities]
        current = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]
        for owner, name, original in patches:
            if original is not None:
                setattr(owner, name, original)

        def restore() -> None:
            for owner, name, value in current:
                if value is not None:
                    setattr(owner, name, value)
            self.steps.install()
            self.modules.install()
            self.warning_places.install()
            self.hidden.install()
            if self.mode in stack:
                tops = [real.pop() for _ in above]
                real.push(self.mode)
                for mode in reversed(tops):
                    real.push(mode)

        return restore

    def _force_eager(self, announce: bool) -> None:
        if self._stance is None:
            from torch._dynamo import eval_frame

            self._stance = eval_frame._stance
            torch.compiler.set_stance("force_eager")
        if announce and not self.compiled:
            self.compiled = True
            backends.note(COMPILE_NOTE)
