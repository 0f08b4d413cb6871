"""Run code right after a library is imported, without importing it: how a capture that
needs a library (the PyTorch backend, the rank logic of a torchrun job) starts the moment
the user's script imports it, and never in a script that does not.

Every caller waiting on one module shares one finder, so each gets its call (two finders
would race: the first to answer the import system wins and the other never hears of it).

>>> handle = after_import("json", lambda: None)   # json is imported already: no call
>>> handle.remove()
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from .tracing import Handle


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls each of ``callbacks`` right after ``name`` has been imported, once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.callbacks: list[Callable[[], None]] = []

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        self.remove()  # one shot; and the real finders below find the real spec
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        callbacks = self.callbacks

        def exec_module(module: Any) -> None:
            run(module)
            del loader.exec_module  # back to the class's own method
            for callback in list(callbacks):
                callback()

        loader.exec_module = exec_module
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if _waiting.get(self.name) is self:
            del _waiting[self.name]


_waiting: dict[str, _AfterImport] = {}


def after_import(name: str, callback: Callable[[], None]) -> Handle:
    """Call ``callback()`` right after the top-level module ``name`` is first imported (not
    at all if it already is). The handle's ``remove()`` cancels a call still to come."""
    finder = _waiting.get(name)
    if finder is None:
        finder = _waiting[name] = _AfterImport(name)
        sys.meta_path.insert(0, finder)
    finder.callbacks.append(callback)

    def remove() -> None:
        if callback in finder.callbacks:
            finder.callbacks.remove(callback)
        if not finder.callbacks:
            finder.remove()

    return Handle(remove)
