"""The debug runtime: run a script in a child process, stop it at breakpoints, step it.

``Session`` (parent side) starts the script and drives it; ``Breakpoint`` says where to
stop; the child side lives in ``agent``/``child``. Imported lazily so ``import dyngraph``
does not pay for sockets and subprocesses.

>>> from dyngraph.debug import Breakpoint, Session
>>> session = Session.start("train.py", breakpoints=[Breakpoint.nan()])   # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .breakpoints import Breakpoint

if TYPE_CHECKING:
    from .session import Session, SessionState

__all__ = ["Breakpoint", "Session", "SessionState"]


def __getattr__(name: str) -> Any:
    if name in ("Session", "SessionState"):
        from . import session

        return getattr(session, name)
    raise AttributeError(f"module 'dyngraph.debug' has no attribute {name!r}")
