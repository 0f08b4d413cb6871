"""``dyngraph.breakpoint()`` and the built-in ``breakpoint()``: where a script asks to pause.

Kept apart from the rest of ``dyngraph.debug`` so ``import dyngraph`` stays light: the
agent registers itself here when the script runs under the debugger. The child process
sets ``PYTHONBREAKPOINT`` to ``builtin_breakpoint`` below, so Python's own ``breakpoint()``
pauses the debugger too instead of starting a ``pdb`` that has no terminal to read from
(the script's stdin is ``/dev/null``): it would quit the script at the first prompt.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import Any

# The child's agent while a script runs under ``dyngraph debug``.
agent: Any = None
# True in a script run by ``dyngraph record``/``check`` (which never pause): a breakpoint
# there is ignored with one notice.
headless = False
HOOK = "dyngraph.debug.hooks.builtin_breakpoint"
_noticed = False


def breakpoint(description: str = "") -> None:  # noqa: A001 - mirrors the builtin's name
    """Pause here when running under the dyngraph debugger; do nothing otherwise.

    >>> import dyngraph
    >>> dyngraph.breakpoint("before the loss")   # a no-op outside the debugger
    """
    current = agent
    if current is not None:
        current.script_breakpoint(description)
    elif headless:
        _notice("dyngraph.breakpoint()")


def builtin_breakpoint(*args: Any, **kwargs: Any) -> None:
    """``sys.breakpointhook`` in a script run by dyngraph (through ``PYTHONBREAKPOINT``).

    Under ``dyngraph debug`` it pauses at the caller's line with the console ready; in
    ``record``/``check`` and in processes the script started it is ignored, with a notice.
    """
    current = agent
    if current is not None:
        current.script_breakpoint(call="breakpoint()")
    else:
        _notice("breakpoint()")


def _notice(call: str) -> None:
    global _noticed
    if _noticed:
        return
    _noticed = True
    frame = sys._getframe(2)
    where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    print(f"dyngraph: {call} at {where} ignored: only `dyngraph debug` pauses a script "
          f"(this notice is shown once)", file=sys.stderr, flush=True)


def route_builtin_breakpoint(env: MutableMapping[str, str]) -> None:
    """Route the built-in ``breakpoint()`` to dyngraph in ``env`` (``os.environ`` of the
    child: processes the script starts inherit it); ``PYTHONBREAKPOINT=0`` is kept."""
    if env.get("PYTHONBREAKPOINT") != "0":
        env["PYTHONBREAKPOINT"] = HOOK
