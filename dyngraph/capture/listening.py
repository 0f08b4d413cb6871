"""What a listener of the tracer holds and is handed: the ``Handle`` that undoes a
subscription, and the hook that turns rows into event objects for ``subscribe``."""

from __future__ import annotations

from collections.abc import Callable

from . import events as ev
from .pending import resolved
from .rows import MAKERS as _MAKERS
from .rows import Row, summary_builder

Subscriber = Callable[[ev.Event], None]


class Handle:
    """Returned by every subscribe/register: ``remove()`` undoes it; also a context manager."""

    __slots__ = ("_remove",)

    def __init__(self, remove: Callable[[], None]) -> None:
        self._remove: Callable[[], None] | None = remove

    def remove(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class EventHook:
    """A ``subscribe`` callback fed rows: each becomes its event object on the way. Summary
    rows shared between rows (a gradient handed on in backward) become shared Summary
    objects, within a bounded memo."""

    __slots__ = ("callback", "_build", "_built", "_held")

    def __init__(self, callback: Subscriber) -> None:
        self.callback = callback
        self._build = summary_builder()
        self._built = 0
        self._held: list[Row] = []  # rows waiting for their statistics (``pending``)

    def __call__(self, row: Row) -> None:
        if self._held:
            self._held.append(row)
            self.drain()
            return
        done = resolved(row)
        if done is None:
            self._held.append(row)
            return
        self._built += 1
        if self._built > 4096:  # the memo holds its rows: start a new one now and then
            self._build, self._built = summary_builder(), 0
        self.callback(_MAKERS[done[0]](done, self._build))

    def drain(self) -> None:
        """Hand on the held rows whose statistics were read since, in order."""
        held = self._held
        i = 0
        while i < len(held):
            done = resolved(held[i])
            if done is None:
                break
            self.callback(_MAKERS[done[0]](done, self._build))
            i += 1
        del held[:i]
