"""The capture's torch-function mode, invisible to code that asks which modes are on.

PyTorch routes every call through a ``TorchFunctionMode`` on the stack, which is how the
capture sees ops. But some code *branches* on whether a mode is on, without routing the
call through it: ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer`` and
``nn.TransformerEncoder`` take their fused fast path (and nested tensors for padding
masks) only when ``torch.overrides.has_torch_function(...)`` is False, which any mode on
the stack makes True. Captured, an eval-mode encoder with a padding mask gave 13.36 at the
padded positions where the plain run gave 0.0. ``torch.export`` and autocast inspect the
mode stack as well, and a script could read ``torch._C._len_torch_function_stack()`` and
find 1 where a plain run has 0.

So while capturing, the Python-visible questions about the mode stack answer as if the
capture's mode were not there:

- ``torch.overrides.has_torch_function`` (and ``_unary``, ``_variadic``): with the
  capture's mode the only one on, the answer for the arguments alone;
- ``torch._C._is_torch_function_mode_enabled``, ``torch._C._len_torch_function_stack``,
  ``torch._C._get_function_stack_at``, ``torch.overrides._get_current_function_mode_stack``:
  the stack without the capture's mode.

The fused kernels then run exactly as in a plain run, and being torch calls made from
Python they still pass through the mode, so they are recorded as what they are
(``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``). What is not
covered: code that took a reference to one of these functions before the capture started
(PyTorch's own modules, imported with torch, use them only to route calls through the
mode, which gives the same results), and checks made in C++ (none branch on it).

Inside the mode's own handler the mode is off the stack anyway, so the answers there are
PyTorch's own. ``real`` holds the original functions for dyngraph's own use.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.overrides as overrides

_C: Any = torch._C


class _Real:
    """PyTorch's own answers, taken before anything is replaced."""

    stack_len = _C._len_torch_function_stack
    stack_at = _C._get_function_stack_at
    enabled = _C._is_torch_function_mode_enabled
    pop = _C._pop_torch_function_stack
    push = _C._push_on_torch_function_stack
    has = overrides.has_torch_function
    has_unary = overrides.has_torch_function_unary
    has_variadic = overrides.has_torch_function_variadic
    mode_stack = overrides._get_current_function_mode_stack


real = _Real


class HiddenMode:
    """Replaces the functions above while installed; ``remove`` puts PyTorch's back."""

    def __init__(self, mode: Any) -> None:
        self.mode = mode
        self._saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        if self._saved:
            return
        mode = self.mode
        stack_len, stack_at = real.stack_len, real.stack_at

        def others() -> list[Any]:
            return [m for m in (stack_at(i) for i in range(stack_len())) if m is not mode]

        def alone() -> bool:
            """Is the capture's mode the only mode on the stack?"""
            return stack_len() == 1 and stack_at(0) is mode

        def without(ask: Any, *args: Any) -> bool:
            real.pop()
            try:
                return bool(ask(*args))
            finally:
                real.push(mode)

        def has_torch_function(args: Any) -> bool:
            return real.has(args) and (not alone() or without(real.has, args))

        def has_torch_function_unary(arg: Any) -> bool:
            return real.has_unary(arg) and (not alone() or without(real.has_unary, arg))

        def has_torch_function_variadic(*args: Any) -> bool:
            return real.has_variadic(*args) and (
                not alone() or without(real.has_variadic, *args))

        def _is_torch_function_mode_enabled() -> bool:
            return bool(real.enabled()) and not alone()

        def _len_torch_function_stack() -> int:
            n = stack_len()
            return n - 1 if n and any(stack_at(i) is mode for i in range(n)) else n

        def _get_function_stack_at(level: int) -> Any:
            return others()[level]

        def _get_current_function_mode_stack() -> list[Any]:
            return others()

        replacements = [
            (overrides, "has_torch_function", has_torch_function),
            (overrides, "has_torch_function_unary", has_torch_function_unary),
            (overrides, "has_torch_function_variadic", has_torch_function_variadic),
            (overrides, "_get_current_function_mode_stack", _get_current_function_mode_stack),
            (_C, "_is_torch_function_mode_enabled", _is_torch_function_mode_enabled),
            (_C, "_len_torch_function_stack", _len_torch_function_stack),
            (_C, "_get_function_stack_at", _get_function_stack_at),
        ]
        for owner, name, replacement in replacements:
            original = getattr(owner, name)
            replacement.__doc__ = getattr(original, "__doc__", None)
            self._saved.append((owner, name, original))
            setattr(owner, name, replacement)

    def remove(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved = []
