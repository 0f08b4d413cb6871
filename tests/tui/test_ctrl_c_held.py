"""Ctrl+c around the live debugger (``tui/cli.py``): from the app's start until the
script's output is printed, a SIGINT never raises KeyboardInterrupt in dyngraph (found
under load: a press landing after the app restored the terminal, before the hold began,
lost the script's output and printed "interrupted")."""

from __future__ import annotations

import os
import signal
import time

from dyngraph.tui.cli import _ctrl_c_held, _ctrl_c_restored


class FakeApp:
    def __init__(self, running: bool) -> None:
        self.is_running = running
        self.exits = 0

    def exit(self) -> None:
        self.exits += 1


def _sigint_delivered() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # (the handler runs at the next bytecode of the main thread)


def test_a_sigint_while_the_app_runs_asks_it_to_quit_and_after_it_is_ignored():
    before = signal.getsignal(signal.SIGINT)
    app = FakeApp(running=True)
    held = _ctrl_c_held(app)
    try:
        _sigint_delivered()
        assert app.exits == 1
        app.is_running = False  # the app has quit: the terminal is cooked again
        _sigint_delivered()  # would raise KeyboardInterrupt without the hold
        assert app.exits == 1
    finally:
        _ctrl_c_restored(held)
    assert signal.getsignal(signal.SIGINT) is before
