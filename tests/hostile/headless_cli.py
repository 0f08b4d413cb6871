"""``python headless_cli.py debug|view ...``: the real ``dyngraph`` command line, with the
debugger app run headless (tests have no terminal).

A pilot plays the user: it continues whenever the script pauses, waits for the run to end
(a replay has ended already) and quits with ``q``. ``DYNGRAPH_TEST_CRASH=1`` makes the app
fail with an exception first, as a bug in a pane would.
"""

from __future__ import annotations

import asyncio
import os
import sys

from dyngraph.tui.app import DebuggerApp

from dyngraph.cli import main

_run = DebuggerApp.run


async def _pilot(pilot) -> None:  # type: ignore[no-untyped-def]
    app = pilot.app
    if os.environ.get("DYNGRAPH_TEST_CRASH"):

        def fail() -> None:
            raise RuntimeError("a pane failed")

        app.call_later(fail)
        for _ in range(100):  # the app exits on the exception meanwhile
            if app.return_code is not None:
                return
            await asyncio.sleep(0.05)
    session = getattr(app.source, "session", None)
    for _ in range(400):  # 20 s at most
        if session is None or app.model.run_end is not None:
            break
        if session.state.paused:
            await pilot.press("c")
        await asyncio.sleep(0.05)
    await pilot.press("q")
    await pilot.press("q")  # the second q quits at once, even while the child ends


def _headless(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    return _run(self, headless=True, auto_pilot=_pilot)


if __name__ == "__main__":
    DebuggerApp.run = _headless  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))
