"""Keeps the variables pane in step with the paused script.

Which user frame is selected, and that frame's ``FrameView`` (stack, variables, watches),
fetched from the child on a daemon thread whenever the pause, the frame or the watches
change. One request is in flight at a time and a newer wish replaces an older one, so
stepping fast never queues up questions. A view names the pause it was made at: the app
shows it only while that pause lasts, never as if it were live afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.message import Message

from dyngraph.debug.inspection import FrameView


class FrameViewArrived(Message):
    """A view (or the reason there is none) for frame ``frame`` at pause ``pause``."""

    def __init__(self, view: FrameView | None, error: str, pause: int, frame: int) -> None:
        super().__init__()
        self.view = view
        self.error = error
        self.pause = pause
        self.frame = frame


class FrameFetcher:
    """``sync()`` on every redraw; ``move()`` up/down the stack; ``request()`` to refetch."""

    def __init__(self, source: Any, post: Callable[[Message], Any]) -> None:
        self.source = source
        self._post = post
        self.pause = 0  # the pause ``frame`` and ``view`` belong to
        self.frame = 0
        self.view: FrameView | None = None
        self.error = ""
        self.started_at = 0.0  # when the request in flight was sent (0: none)
        self._lock = threading.Lock()
        self._busy = False
        self._wanted: tuple[int, int] | None = None

    @property
    def current(self) -> FrameView | None:
        """The view of the pause the script is at now, if it has arrived."""
        view = self.view
        if view is not None and view.pause == self.source.pause_id and view.frame == self.frame:
            return view
        return None

    def sync(self) -> None:
        """A new pause starts at frame 0 with a fresh view."""
        pause = self.source.pause_id
        if pause and pause != self.pause:
            self.pause, self.frame, self.view, self.error = pause, 0, None, ""
            self.request()

    def move(self, step: int) -> bool:
        """Select the frame ``step`` further out (+1: the caller); False at either end."""
        view = self.current
        if view is None or not 0 <= self.frame + step < len(view.frames):
            return False
        self.frame += step
        self.request()
        return True

    def request(self) -> None:
        if not self.pause:
            return
        with self._lock:
            self._wanted = (self.pause, self.frame)
            if self._busy:
                return
            self._busy = True
        threading.Thread(target=self._work, name="dyngraph-frames", daemon=True).start()

    def arrived(self, message: FrameViewArrived) -> bool:
        """Take an answer; True if it is for what is selected now."""
        if message.pause != self.pause or message.frame != self.frame:
            return False
        self.view, self.error = message.view, message.error
        return True

    def _work(self) -> None:
        while True:
            with self._lock:
                wanted, self._wanted = self._wanted, None
                if wanted is None:
                    self._busy = False
                    return
            pause, frame = wanted
            self.started_at = time.monotonic()
            try:
                view, error = self.source.inspect(frame), ""
            except Exception as exc:  # noqa: BLE001 - running again, ended, no such frame
                view, error = None, str(exc)
            self.started_at = 0.0
            self._post(FrameViewArrived(view, error, pause, frame))
