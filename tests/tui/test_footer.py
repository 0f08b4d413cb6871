"""The key footer (tui/footer.py): its keys are built again only when the keys it would
show changed. Textual's footer rebuilt them on every "bindings may have changed" signal
(four times while the app came up, each a mount and a layout of the screen); the keys
shown must still follow every real change."""

from __future__ import annotations

from conftest import SCRIPTS, record_trace_file, wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.footer import KeysFooter
from dyngraph.tui.graph_canvas import GraphCanvas
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

import dyngraph

SIZE = (160, 45)


def described(footer: Footer) -> list[str]:
    return [key.description for key in footer.query(FooterKey)]


async def test_the_footer_builds_its_keys_again_only_when_they_change(tmp_path, monkeypatch):
    path = record_trace_file(tmp_path / "mb.dgtrace", SCRIPTS / "minibatch.py")
    builds: list[list[str]] = []
    compose = KeysFooter.compose

    def counted(self):
        if self._bindings_ready:
            builds.append([])
        return compose(self)

    monkeypatch.setattr(KeysFooter, "compose", counted)
    app = DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))
    async with app.run_test(size=SIZE) as pilot:
        footer = app.query_one(KeysFooter)
        assert await wait_for(pilot, lambda: "Fold module" not in described(footer)
                              and len(described(footer)) > 5)
        await pilot.pause(0.2)
        assert len(builds) == 1
        shown = described(footer)
        app.screen.refresh_bindings()  # what Textual signals after every action
        await pilot.pause(0.2)
        assert len(builds) == 1
        assert described(footer) == shown
        # The graph pane focused: its keys join the footer's.
        app.query_one(GraphCanvas).focus()
        assert await wait_for(pilot, lambda: "Fold module" in described(footer))
        assert len(builds) == 2
