"""Ask for one line of text (a watch expression, ...): enter gives it, esc cancels."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel_prompt")]
    DEFAULT_CSS = """
    PromptScreen { align: center top; }
    PromptScreen > Vertical {
        width: 80; height: auto; margin-top: 3; border: thick $accent; background: $surface;
    }
    PromptScreen Static { color: $text-muted; }
    """

    def __init__(self, title: str, placeholder: str = "", hint: str = "") -> None:
        super().__init__()
        self._title = title
        self._placeholder = placeholder
        self._hint = hint

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self._title
            yield Input(placeholder=self._placeholder, id="prompt-input")
            if self._hint:
                yield Static(self._hint)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
