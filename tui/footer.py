"""The key footer: Textual's ``Footer``, composed again only when what it shows changed.

Textual's footer rebuilds all its keys whenever the screen says its bindings may have
changed: each focus change, the screen coming up, after an action. At start-up that was
four rebuilds of the same twenty keys, each a mount, a style pass and a layout of the whole
screen (about 40 ms of CPU apiece at 200x50), most of them while a big trace loads and
competes for the same interpreter. The keys shown are a function of the screen's active
bindings; when those are what the footer last drew, there is nothing to rebuild.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """``Footer`` that skips a rebuild when the keys it would show are those it shows."""

    def __init__(self, *, compact: bool = False, id: str | None = None) -> None:  # noqa: A002
        super().__init__(compact=compact, id=id)
        self._shown: Hashable = None  # what the last compose drew (``_keys``)
        self._pending = False  # a rebuild is on its way (it reads the bindings then)

    def compose(self) -> ComposeResult:
        self._pending = False
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if self._bindings_ready and self.is_attached and screen is self.screen and (
                screen.app.app_focus) and (
                self._pending or (self._shown is not None and self._keys() == self._shown)):
            return
        super().bindings_changed(screen)
        self._pending = self.is_attached and screen is self.screen and screen.app.app_focus

    def _keys(self) -> Hashable:
        """Everything ``Footer.compose`` reads: each active binding's key, how it is
        displayed, its description, action, group, whether it is shown and enabled, its
        tooltip; and the footer's own options."""
        app = self.app
        keys = tuple(
            (key, binding.key, app.get_key_display(binding), binding.description,
             binding.action, binding.show, binding.group, enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items())
        return (keys, self.show_command_palette, app.ENABLE_COMMAND_PALETTE,
                app.COMMAND_PALETTE_BINDING, self.compact, self.combine_groups)
