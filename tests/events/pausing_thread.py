"""A thread that holds a pause of the cyclic collector (``dyngraph.capture.collector``)
until told to end it, as the debugger's loader, the exporters and the decoder do."""

from __future__ import annotations

import threading

from dyngraph.capture import collector


def pause_on_a_thread() -> tuple[threading.Event, threading.Thread]:
    """Start the thread and return once its pause is on: (set this to end it, the thread)."""
    inside, done = threading.Event(), threading.Event()

    def run() -> None:
        with collector.paused():
            inside.set()
            done.wait(30)

    thread = threading.Thread(target=run, name="pausing")
    thread.start()
    assert inside.wait(30)
    return done, thread
