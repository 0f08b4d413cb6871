"""``dyngraph.breakpoint()``: the script-side entry point of the debug runtime.

Kept apart from the rest of ``dyngraph.debug`` so ``import dyngraph`` stays light: the
agent registers itself here when the script runs under the debugger.
"""

from __future__ import annotations

from typing import Any

# The child's agent while a script runs under ``dyngraph debug``/``record``/``check``.
agent: Any = None


def breakpoint(description: str = "") -> None:  # noqa: A001 - mirrors the builtin's name
    """Pause here when running under the dyngraph debugger; do nothing otherwise.

    >>> import dyngraph
    >>> dyngraph.breakpoint("before the loss")   # a no-op outside the debugger
    """
    current = agent
    if current is not None:
        current.script_breakpoint(description)
