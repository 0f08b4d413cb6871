"""The module calls ops run in: the tracer's stack of them (``Tracer`` takes it from
``ModuleCalls``). Every backend pushes a call when a module's forward starts and pops it
when it returns; the first op inside a call not yet introduced in this iteration emits its
ModuleCall event (``announce_calls``)."""

from __future__ import annotations

import threading
from typing import Any

_get_ident = threading.get_ident


class ModuleCalls:
    """The module-call stack of ``Tracer`` (which supplies ``thread``, ``seq``,
    ``iteration`` and ``deliver``)."""

    thread: int
    seq: int
    iteration: int
    deliver: Any

    def __init__(self) -> None:
        self.module_stack: list[str] = [""]
        # The id of each module call on ``module_stack`` (0: top level); ids are unique in
        # a run. The first ``_announced`` entries had their ModuleCall event this
        # iteration. Maintained by enter_module/exit_module only.
        self.call_stack: list[int] = [0]
        self._calls = 0
        self._announced = 1

    def at_top_level(self) -> None:
        """No module call running (a new recording). A call a KeyboardInterrupt cut short
        (PyTorch runs its always-called forward hooks for an Exception only) was never
        left, and every later recording in the process put its ops inside it."""
        self.module_stack = [""]
        self.call_stack = [0]
        self._announced = 1

    @property
    def module(self) -> str:
        return self.module_stack[-1]

    # -- module calls (every backend: push on a module's call, pop when it returns) -------
    def enter_module(self, path: str) -> None:
        """A call of the module at ``path`` starts: ops until ``exit_module`` run in it.

        Each call gets its own id, so the ops of two calls of one module (a loop over a
        shared block, a Tree-RNN's ``combine``) can be told apart and drawn apart.
        """
        if _get_ident() != self.thread:
            return  # another thread's module: not captured, and not on this stack
        self.module_stack.append(path)
        self._calls += 1
        self.call_stack.append(self._calls)

    def exit_module(self) -> None:
        """The innermost module call returned (or raised)."""
        if _get_ident() != self.thread:
            return
        self.module_stack.pop()
        calls = self.call_stack
        calls.pop()
        if self._announced > len(calls):
            self._announced = len(calls)

    def announce_calls(self) -> None:
        """Emit ModuleCall for the calls on the stack that ops now run in, outermost first."""
        calls, paths = self.call_stack, self.module_stack
        for i in range(self._announced, len(calls)):
            self.seq += 1
            self.deliver(("module_call", self.seq, self.iteration, calls[i], calls[i - 1],
                          paths[i]))
        self._announced = len(calls)

    _announce_calls = announce_calls

