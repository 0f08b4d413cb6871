"""Capture backends: which libraries' ops a recording sees, and choosing among them.

The numpy engine always reports to the tracer (its ``apply()`` checks
``tracer.listening``). Other backends, such as PyTorch, register here and start capturing
when a recording asks for them: ``"auto"`` starts each one as soon as its library is
imported (a script that never imports torch never pays for it), a backend's own name
starts it at once (and fails with a one-line error if its library is missing), and
``"dyngraph"`` captures the numpy engine only.

>>> with activate("dyngraph"):      # nothing but the engine
...     pass
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..errors import UserError
from .tracing import Handle

CHOICES = ("auto", "torch", "dyngraph")


class Backend(Protocol):
    name: str

    def available(self) -> bool:
        """Is the library installed (without importing it)?"""
        ...

    def activate(self, eager: bool) -> Handle:
        """Capture this library's ops until the handle is removed: from now on with
        ``eager``, else from the moment the library is imported."""
        ...


_backends: dict[str, Backend] = {}
_notes: list[Callable[[str], None]] = []
_safe_points: list[Callable[[], None]] = []


def register(backend: Backend) -> None:
    _backends[backend.name] = backend


def check(choice: str) -> None:
    """Raise UserError (one line) unless ``choice`` can be captured here."""
    if choice not in CHOICES:
        raise UserError(f"backend must be one of {', '.join(CHOICES)}, not {choice!r}")
    backend = _backends.get(choice)
    if choice not in ("auto", "dyngraph") and (backend is None or not backend.available()):
        raise UserError(
            f"--backend {choice}: PyTorch is not installed in this Python "
            f"(pip install 'dyngraph[torch]'), or choose --backend auto or dyngraph"
        )


def activate(choice: str = "auto") -> Handle:
    """Start the backends ``choice`` names (see the module docstring); the returned handle
    stops them again."""
    check(choice)
    if choice == "dyngraph":
        return Handle(lambda: None)
    chosen = list(_backends.values()) if choice == "auto" else [_backends[choice]]
    handles = [b.activate(eager=choice != "auto") for b in chosen]

    def remove() -> None:
        for h in reversed(handles):
            h.remove()

    return Handle(remove)


def on_note(listener: Callable[[str], None]) -> Handle:
    """Call ``listener(text)`` for every note a backend makes about the run (such as
    "torch.compile runs eagerly while captured")."""
    _notes.append(listener)
    return Handle(lambda: _notes.remove(listener) if listener in _notes else None)


def note(text: str) -> None:
    """A backend tells whoever listens something the user should know about the capture."""
    for listener in tuple(_notes):
        listener(text)


def on_safe_point(listener: Callable[[], None]) -> Handle:
    """Call ``listener()`` whenever a backend is back in the user's code at a moment it
    could not stop earlier (the compile lane, when a compiled call returns): a debugger
    pauses there for what it saw meanwhile."""
    _safe_points.append(listener)
    return Handle(lambda: _safe_points.remove(listener) if listener in _safe_points else None)


def safe_point() -> None:
    for listener in tuple(_safe_points):
        listener()
