"""Issue 11: the debugger's panes show hostile names, messages and output literally.

A trace (recorded by the real CLI) whose modules and parameters are named ``[/enc]`` and
``ESC ] 0 ; pwned BEL``, whose script printed escapes and raised ``KeyError('[/]')``: the
viewer crashed with MarkupError on it, and names reached the terminal raw. Every pane must
load it, show the names as written and put no control character on screen.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.find_screen import FindScreen
from dyngraph.tui.model import Model
from dyngraph.tui.output_pane import OutputPane
from dyngraph.tui.sources import LiveSource, ReplaySource
from textual.geometry import Region

import dyngraph

SCRIPT = Path(__file__).parent / "scripts" / "display_names.py"
SIZE = (200, 60)
ESCAPED = "\\x1b]0;pwned\\x07"
INVISIBLE = "enc\\u200b\\u200f"  # how the module named enc ZWSP RLM must read (issue 23)
# Anything a terminal would act on or draw as nothing: C0, DEL, C1 (screen_text joins rows
# with newlines), and the format characters (Unicode category Cf).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u202a-\u202e"
                     "\u2060-\u206f\ufeff]")


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("panes") / "hostile.dgtrace"
    subprocess.run([sys.executable, "-m", "dyngraph", "record", "-o", str(path), "--stats",
                    "full", str(SCRIPT), "[/]", "--raise", "markup"],
                   capture_output=True, timeout=120)
    assert path.stat().st_size > 0
    return path


def screen_text(app: DebuggerApp) -> str:
    """Every visible widget's rows as the terminal gets them (text, without our styles)."""
    rows = []
    for widget in app.screen.walk_children(with_self=False):
        size = widget.outer_size  # borders included: their titles are user text too
        if widget.display and size.area:
            region = Region(0, 0, size.width, size.height)
            rows += [strip.text for strip in widget.render_lines(region)]
    return "\n".join(rows)


def assert_safe(text: str) -> None:
    bad = CONTROL.findall(text)
    assert not bad, f"raw control characters on screen: {bad[:5]}"


def replay(path: Path) -> DebuggerApp:
    return DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)), title=str(path))


def test_every_step_of_a_hostile_trace_shows_names_literally(trace_path: Path) -> None:
    async def run() -> list[str]:
        app = replay(trace_path)
        screens = []
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            for _ in range(60):  # every step, to the end of the trace
                screens.append(screen_text(app))
                if app.source.state.status == "finished":
                    break
                await pilot.press("n")
                await pilot.pause(0.02)
        assert app.return_code in (None, 0)
        return screens

    screens = asyncio.run(run())
    for text in screens:
        assert_safe(text)
    everything = "\n".join(screens)
    assert "[/enc]" in everything and "[/enc]w" in everything  # canvas, timeline, inspector
    assert "[/enc].weight" in everything
    assert ESCAPED in everything and f"{ESCAPED}.weight" in everything
    assert f"{INVISIBLE}.weight" in everything  # showed as "enc.weight"
    assert "module  [/enc]" in everything  # the inspector's table (crashed with MarkupError)
    assert "KeyError: '[/]'" in everything  # the timeline row and the status line
    assert "FINISHED" in screens[-1] and "raised KeyError: '[/]'" in screens[-1]


def test_output_pane_shows_the_scripts_escapes_and_brackets(trace_path: Path) -> None:
    async def run() -> str:
        app = replay(trace_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            await pilot.press("o")
            await pilot.pause(0.1)
            pane = app.main.query_one(OutputPane)
            text = "\n".join(pane.lines)
            assert_safe(screen_text(app))
            return text

    text = asyncio.run(run())
    assert f"expected shape [batch, seq] {ESCAPED}\\x1b[2J ['[/]', '--raise', 'markup']" in text
    assert f"invisible {INVISIBLE}.weight \\u2066isolated\\u2069 \\u061c" in text
    assert "! KeyError: '[/]'" in text  # the recorded traceback, on stderr
    assert_safe(text)


def test_notices_are_shown_literally(trace_path: Path) -> None:
    async def run() -> str:
        app = replay(trace_path)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await pilot.pause(0.1)
            app.notify("KeyError: '[/]' [bold]x\x1b]0;pwned\x07",
                       title="[/red]", severity="error")
            await wait_until(pilot, lambda: "[bold]x" + ESCAPED in screen_text(app), timeout=10)
            return screen_text(app)

    text = asyncio.run(run())
    assert_safe(text)
    assert "KeyError: '[/]' [bold]x" + ESCAPED in text
    assert "[/red]" in text


def test_find_screen_lists_hostile_names(trace_path: Path) -> None:
    async def run() -> str:
        app = replay(trace_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            await pilot.press("c")  # to the end: every node is in the graph
            await pilot.pause(0.1)
            await pilot.press("slash")
            await pilot.pause(0.2)
            assert isinstance(app.screen, FindScreen)
            await pilot.press(*"enc")
            await pilot.pause(0.3)
            return screen_text(app)

    text = asyncio.run(run())
    assert_safe(text)
    assert "[/enc].weight" in text and "[/enc]" in text


async def wait_until(pilot, condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not condition():
        await pilot.pause(0.05)
    return bool(condition())


def test_live_debugger_pauses_post_mortem_on_a_markup_exception() -> None:
    """The live path: the "script raised" notice, the post-mortem status, the variables
    pane (the script's globals hold the hostile strings) and the output, all literal."""
    async def run() -> list[str]:
        source = LiveSource.start(Model(), str(SCRIPT), ["[/]", "--raise", "markup"])
        app = DebuggerApp(source)
        screens = []
        try:
            async with app.run_test(size=SIZE, notifications=True) as pilot:
                assert await wait_until(pilot, lambda: source.state.status == "paused")
                await pilot.press("c")
                assert await wait_until(pilot, lambda: source.state.reason == "exception")
                await pilot.pause(0.5)  # the frame's variables arrive from the child
                screens.append(screen_text(app))
                await pilot.press("o")
                await pilot.press("c")
                assert await wait_until(pilot, lambda: source.state.status == "finished")
                await pilot.pause(0.3)
                screens.append(screen_text(app))
                # The pane scrolls to its end: read all of its lines, not just the rows seen.
                screens.append("\n".join(app.main.query_one(OutputPane).lines))
        finally:
            source.close()
        return screens

    paused, finished, output = asyncio.run(run())
    for text in (paused, finished, output):
        assert_safe(text)
    assert "KeyError: '[/]'" in paused  # the notice and the status line
    assert "MARKUP" in paused and "'[/enc]'" in paused  # the variables pane
    assert ESCAPED in paused  # ESCAPE's value, escaped
    assert f"expected shape [batch, seq] {ESCAPED}" in output
    assert "FINISHED" in finished
