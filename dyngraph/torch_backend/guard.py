"""dyngraph's own failures while capturing PyTorch: told once, never raised into the script.

Every place where torch calls into dyngraph (the mode's handler after the op ran, module
hooks, backward hooks, optimizer hooks, the patched ``autograd.Function.apply``) runs its
recording inside a guard. An exception raised there is dyngraph's bug, not the script's:
the op already ran (or runs anyway), the script goes on unchanged, the trace lacks what
could not be recorded, and one note says so in one paragraph, once per kind of exception
and place in dyngraph (the first thing it failed to record is named):

    dyngraph could not record an op (RuntimeError: ... at dyngraph/torch_backend/stats.py:
    192); the script went on unchanged, the trace lacks it: a bug in dyngraph, please report
    it

``KeyboardInterrupt``, ``SystemExit`` and other ``BaseException``s pass: a Ctrl-C or a
debugger that ends the run must still end it.
"""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from ..capture import backends

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MESSAGE_LIMIT = 200
_told: set[tuple[str, str]] = set()

F = TypeVar("F", bound=Callable[..., Any])


def reset() -> None:
    """A new recording: each failure is told again."""
    _told.clear()


def failed(what: str, exc: BaseException) -> None:
    """Tell (once per kind of exception and place) that recording ``what`` raised ``exc``."""
    where = _where(exc)
    key = (type(exc).__name__, where)
    if key in _told:
        return
    _told.add(key)
    message = (str(exc).strip().splitlines() or [""])[0]
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + "..."
    at = f" at {where}" if where else ""
    try:
        backends.note(f"dyngraph could not record {what} ({type(exc).__name__}: {message}{at});"
                      " the script went on unchanged, the trace lacks it: a bug in dyngraph,"
                      " please report it")
    except Exception:  # noqa: BLE001 - telling must not raise either
        pass


def guarded(what: str) -> Callable[[F], F]:
    """A hook that never raises: ``failed(what, exc)`` instead, and None returned (a hook's
    "change nothing")."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def hook(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - dyngraph's failure is not the script's
                failed(what, exc)
                return None

        return hook  # type: ignore[return-value]

    return wrap


def _where(exc: BaseException) -> str:
    """``dyngraph/torch_backend/stats.py:192``: the innermost dyngraph frame that raised."""
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(_PACKAGE_DIR):
            rel = frame.filename[len(os.path.dirname(_PACKAGE_DIR.rstrip(os.sep))) + 1:]
            found = f"{rel}:{frame.lineno}"
    return found
