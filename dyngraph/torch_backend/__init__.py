"""PyTorch as a capture backend: real PyTorch ops, backward nodes and optimizer steps
become the same events the numpy engine emits.

This package is the only part of dyngraph that imports torch, and this file does not:
``dyngraph`` imports it to register the backend, and torch is imported only when a
recording asks for it by name (``backend="torch"``) or, with ``backend="auto"``, the moment
the user's code imports it (an import hook). A script that never imports torch never pays
for it. The capture itself is in ``capture.py``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from ..capture import backends
from ..capture.imports import after_import
from ..capture.tracing import Handle


class TorchBackend:
    """The ``torch`` entry of ``dyngraph.capture.backends``."""

    name = "torch"

    def __init__(self) -> None:
        self._users = 0
        self._capture: Any = None
        self._waiting: Handle | None = None

    def available(self) -> bool:
        if sys.modules.get("torch") is not None:
            return True
        try:
            return importlib.util.find_spec("torch") is not None
        except (ImportError, ValueError):  # sys.modules["torch"] = None: blocked on purpose
            return False

    @property
    def capture(self) -> Any:
        """The running ``TorchCapture``, or None."""
        return self._capture

    def activate(self, eager: bool) -> Handle:
        self._users += 1
        if self._capture is None:
            torch = sys.modules.get("torch")
            if eager or (torch is not None and hasattr(torch, "autograd")):
                importlib.import_module("torch")
                self._start()
            elif self._waiting is None:
                self._waiting = after_import("torch", self._start)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._users -= 1
                if self._users == 0:
                    self._stop()

        return Handle(release)

    def _start(self) -> None:
        self._waiting = None
        if self._capture is not None or self._users == 0:
            return
        from .capture import TorchCapture

        capture = TorchCapture()
        capture.start()
        self._capture = capture

    def _stop(self) -> None:
        if self._waiting is not None:
            self._waiting.remove()
            self._waiting = None
        if self._capture is not None:
            capture, self._capture = self._capture, None
            capture.stop()


backend = TorchBackend()
backends.register(backend)
