"""The console (``!``): a Python prompt in the paused frame, evaluated in the script's process.

Lines are read as the Python REPL reads them: a compound statement continues on ``...``
lines until an empty one (``codeop`` only compiles, to know whether the input is complete;
nothing of the user's runs in the UI process). Each complete input goes to the child on a
daemon thread; ctrl+c interrupts it there without touching the script. Printed output,
values (a tensor as in the inspector: its summary line, then its first values) and errors
(the console input's frames only) are appended to a transcript that, with the history,
outlives the screen: ``ConsoleState`` belongs to the app.
"""

from __future__ import annotations

import codeop
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, RichLog, Static

from dyngraph.debug.evaluation import OUTPUT_LIMIT
from dyngraph.debug.inspection import EvalResult
from dyngraph.textsafe import literal, shown

from .inspector import preview_text, summary_text

MAX_TRANSCRIPT = 2_000  # entries kept; the oldest go first
HELP = (
    "Python in the paused frame, run in the script's own process: expressions and statements "
    "(a block continues on ... lines until an empty one). Names you assign stay in the "
    "console's namespace across pauses, but are not written back into the frame: CPython "
    "3.11 cannot reliably write a function's locals (mutate objects instead: self.lr = 0.1 "
    f"works). Output is capped at {OUTPUT_LIMIT:,} characters per evaluation. "
    "↑/↓ history · ctrl+c interrupts an evaluation · esc closes (the transcript stays)."
)
Evaluate = Callable[[str], EvalResult]


@dataclass
class ConsoleState:
    """What survives closing the console: the transcript, the history, a running input."""

    transcript: list[RenderableType] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    busy: bool = False
    # The open console's "an evaluation finished" callback (called from the worker thread).
    listener: Callable[[], None] | None = None

    def add(self, item: RenderableType) -> None:
        self.transcript.append(item)
        if len(self.transcript) > MAX_TRANSCRIPT:
            del self.transcript[: len(self.transcript) - MAX_TRANSCRIPT]


def clean_block(text: str) -> str:
    """Several lines of user text, control characters (but newlines and tabs) escaped."""
    return shown(text.expandtabs(4), multiline=True)


def result_renderables(result: EvalResult) -> list[RenderableType]:
    """How one evaluation reads in the transcript."""
    out: list[RenderableType] = []
    if result.output:
        out.append(Text(clean_block(result.output.rstrip("\n"))))
    if result.error is not None:
        body = result.traceback.rstrip("\n") or result.error
        out.append(Text(clean_block(body), "red"))
    elif result.tensor is not None:
        s = result.tensor.summary
        head = Text(f"{tuple(s.shape)} {s.dtype}", "bold")
        if result.tensor.requires_grad:
            head.append("  requires_grad", "magenta")
        head.append("  ").append_text(summary_text(s))
        out += [head, preview_text(s)]
    elif result.value is not None:
        out.append(Text(clean_block(result.value)))
    return out


def is_complete(source: str) -> bool:
    """Whether the REPL would run ``source`` now (a syntax error runs, to be reported)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return codeop.compile_command(source, "<console>", "single") is not None
    except (SyntaxError, OverflowError, ValueError):
        return True


class ConsoleInput(Input):
    """The prompt's line. A paste of several lines is typed line by line, as in a REPL."""

    class LinesPasted(Message):
        def __init__(self, lines: list[str]) -> None:
            super().__init__()
            self.lines = lines

    def _on_paste(self, event: events.Paste) -> None:
        lines = event.text.splitlines()
        if len(lines) <= 1:
            super()._on_paste(event)
            return
        event.stop()
        self.post_message(self.LinesPasted([self.value + lines[0], *lines[1:]]))
        self.value = ""


class ConsoleScreen(ModalScreen[None]):
    """The prompt and its transcript, over the lower part of the debugger."""

    BINDINGS = [
        Binding("escape", "close", "Close console", id="close_console"),
        Binding("ctrl+c", "interrupt", "Interrupt", id="interrupt_eval", priority=True),
        Binding("up", "history(-1)", "Previous input", show=False),
        Binding("down", "history(1)", "Next input", show=False),
        Binding("ctrl+l", "clear", "Clear", id="clear_console", show=False),
    ]
    DEFAULT_CSS = """
    ConsoleScreen { align: center bottom; }
    ConsoleScreen > Vertical {
        height: 60%; width: 100%; border: thick $accent; background: $surface;
    }
    ConsoleScreen RichLog { height: 1fr; background: $surface; }
    ConsoleScreen #console-prompt-row { height: 1; }
    ConsoleScreen #console-prompt { width: 4; color: $accent; }
    ConsoleScreen Input { border: none; height: 1; padding: 0; width: 1fr; }
    ConsoleScreen #console-status { height: 1; color: $text-muted; }
    """

    class Evaluated(Message):
        """An evaluation finished: its lines are in the state's transcript."""

    def __init__(self, state: ConsoleState, evaluate: Evaluate, interrupt: Callable[[], None],
                 title: str = "console") -> None:
        super().__init__()
        self.state = state
        self._evaluate = evaluate
        self._interrupt = interrupt
        self._title = title
        self._lines: list[str] = []  # the input being typed, over several lines
        self._history_at = len(state.history)
        self._written = 0  # transcript entries already in the log

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = literal(self._title)  # a str title would be read as markup
            box.border_subtitle = "esc closes · ctrl+c interrupts"
            yield RichLog(id="console-log", markup=False, highlight=False, wrap=True,
                          max_lines=20_000)
            yield Static("", id="console-status")
            with Horizontal(id="console-prompt-row"):
                yield Static(">>> ", id="console-prompt")
                yield ConsoleInput(id="console-input",
                                   placeholder="a Python expression or statement")

    def on_mount(self) -> None:
        if not self.state.transcript:
            self.state.add(Text(HELP, "dim"))
        log = self.query_one(RichLog)
        for item in self.state.transcript:
            log.write(item)
        self._written = len(self.state.transcript)
        self.state.listener = lambda: self.post_message(self.Evaluated())
        self._show_status()
        self.query_one(Input).focus()

    def on_unmount(self) -> None:
        self.state.listener = None

    # -- input ---------------------------------------------------------------------------------
    @on(Input.Submitted, "#console-input")
    def submit(self, event: Input.Submitted) -> None:
        if self.state.busy:
            self.app.bell()
            self._show_status("still evaluating the last input: ctrl+c interrupts it")
            return
        event.input.value = ""
        self.enter(event.value)

    @on(ConsoleInput.LinesPasted)
    def pasted(self, event: ConsoleInput.LinesPasted) -> None:
        if self.state.busy:
            self.app.bell()
            return
        # A pasted block runs as one input (several statements are fine in the child).
        for line in event.lines:
            self._echo(Text(("... " if self._lines else ">>> ") + shown(line), "dim"))
            self._lines.append(line)
            if line.strip():
                self.state.history.append(line)
        self._history_at = len(self.state.history)
        source, self._lines = "\n".join(self._lines), []
        self.query_one("#console-prompt", Static).update(">>> ")
        if source.strip():
            self._run(source)

    def enter(self, line: str) -> None:
        """One line of input, as if typed and followed by enter."""
        self._echo(Text(("... " if self._lines else ">>> ") + shown(line), "dim"))
        if line.strip():
            self.state.history.append(line)
        self._history_at = len(self.state.history)
        if not self._lines and not line.strip():
            return
        self._lines.append(line)
        source = "\n".join(self._lines)
        if not is_complete(source):
            self.query_one("#console-prompt", Static).update("... ")
            return
        self._lines = []
        self.query_one("#console-prompt", Static).update(">>> ")
        self._run(source)

    def _run(self, source: str) -> None:
        self.state.busy = True
        self._show_status()
        state, evaluate = self.state, self._evaluate

        def work() -> None:
            try:
                result: EvalResult | None = evaluate(source)
            except Exception as exc:  # noqa: BLE001 - not paused, the script ended, ...
                result = None
                state.add(Text(clean_block(str(exc)), "yellow"))
            else:
                for item in result_renderables(result):
                    state.add(item)
            state.busy = False
            listener = state.listener
            if listener is not None:
                listener()

        threading.Thread(target=work, name="dyngraph-console", daemon=True).start()

    def on_console_screen_evaluated(self, message: Evaluated) -> None:
        log = self.query_one(RichLog)
        for item in self.state.transcript[self._written:]:
            log.write(item)
        self._written = len(self.state.transcript)
        self._show_status()

    def _echo(self, item: RenderableType) -> None:
        self.state.add(item)
        self.query_one(RichLog).write(item)
        self._written = len(self.state.transcript)

    def _show_status(self, text: str = "") -> None:
        if not text and self.state.busy:
            text = "evaluating in the script … ctrl+c interrupts"
        self.query_one("#console-status", Static).update(literal(text, "dim"))

    # -- actions -----------------------------------------------------------------------------
    def action_interrupt(self) -> None:
        if self.state.busy:
            self._interrupt()
            self._show_status("interrupt sent …")
        elif self._lines or self.query_one(Input).value:
            self._lines = []
            self.query_one(Input).value = ""
            self.query_one("#console-prompt", Static).update(">>> ")
            self._echo(Text("KeyboardInterrupt (input discarded)", "dim"))

    def action_history(self, step: int) -> None:
        history = self.state.history
        if not history:
            return
        self._history_at = max(0, min(len(history), self._history_at + step))
        value = history[self._history_at] if self._history_at < len(history) else ""
        box = self.query_one(Input)
        box.value = value
        box.cursor_position = len(value)

    def action_clear(self) -> None:
        self.state.transcript.clear()
        self.query_one(RichLog).clear()
        self._written = 0

    def action_close(self) -> None:
        self.dismiss(None)
