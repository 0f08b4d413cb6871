"""How the debugger shows the compile lane: a compile event's timeline row, and the
inspector's view of one (the guard that failed, the line that broke the graph, and the op
lane's ops at that line).

Renderables only (pure, so tests read them without an app); ``Timeline`` and
``Inspector`` call them. Everything shown is the user's or torch's text: through
``shown``/``literal``, never markup.
"""

from __future__ import annotations

import os

from rich.console import Group
from rich.table import Table
from rich.text import Text

from dyngraph.capture import events as ev
from dyngraph.compile_lane import report
from dyngraph.textsafe import literal, shown

STYLE = {"recompile": "bold red", "break": "bold yellow", "limit": "bold red",
         "fallback": "yellow", "unavailable": "yellow"}
MARK = {"recompile": "↻", "break": "✂", "limit": "⛔", "fallback": "⤵"}
GUARD_LINES = 40  # of a compiled entry's guards, in the inspector


def compile_row(event: ev.CompileEvent, seq: str = "", narrow: bool = False) -> Text:
    """One timeline row: ``⚙ ↻ recompile step  v2.py:5  tensor 'x' size mismatch ...``."""
    style = STYLE.get(event.what, "blue")
    where = shown(report.where(event.file, event.line))
    text = Text.assemble((seq, "dim"), ("⚙ ", "blue"),
                         (f"{MARK.get(event.what, ' ')} {event.what:<9}", style),
                         f" {shown(report.frame_name(event))}", (f" {where}", "dim"))
    if event.what == "recompile":
        text.append(f"  {shown(event.reason)}", "red")
    elif event.what == "break":
        text.append(f"  {shown(event.type or event.reason)}", "yellow")
    elif event.what == "end" and event.duration_ns:
        text.append(f"  {event.duration_ns / 1e9:.2f} s", "dim")
    elif event.what in ("guards", "limit", "fallback", "unavailable"):
        text.append(f"  {shown(event.reason)}", "dim" if event.what == "guards" else style)
    if narrow:
        text.truncate(200)
    return text


def compile_view(event: ev.CompileEvent, joined: str = "", width: int = 60) -> Group:
    """The inspector's view of a compile event; ``joined`` names the op lane's ops at the
    line it is about (``report.join_text``)."""
    title = Text.assemble((f"{MARK.get(event.what, '⚙')} {event.what}", STYLE.get(
        event.what, "bold blue")), "  ", literal(report.frame_name(event), "bold"),
        (f"  compile {shown(event.compile_id)}" if event.compile_id else "", "dim"))
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    function = literal(f"{report.frame_name(event)} at {report.where(event.file, event.line)}")
    if event.what == "recompile":
        table.add_row("guard failed", literal(event.reason, "bold red"))
        if event.input:
            table.add_row("input", literal(report.input_text(event.input)))
        if event.stack:
            table.add_row("guard made at", literal(_entry(event.stack.splitlines()[-1])))
        table.add_row("function", function)
        if event.detail and "\n" in event.detail:
            table.add_row("every entry", literal(event.detail, multiline=True))
    elif event.what == "break":
        table.add_row("breaks at", literal(report.where(event.file, event.line), "bold yellow"))
        table.add_row("type", literal(event.type))
        if event.reason and event.reason != event.type:
            table.add_row("why", literal(event.reason))
        for hint in event.detail.splitlines():
            table.add_row("hint", literal(hint))
    elif event.what == "guards":
        lines = event.detail.splitlines()
        shown_lines = "\n".join(lines[:GUARD_LINES])
        more = f"\n… {len(lines) - GUARD_LINES} more" if len(lines) > GUARD_LINES else ""
        table.add_row("function", function)
        table.add_row(event.reason, literal(shown_lines + more, multiline=True))
    else:
        table.add_row("function", function)
        table.add_row("what", literal(report.describe(event)))
        if event.detail:
            table.add_row("", literal(event.detail, multiline=True))
    if event.stack and event.what != "recompile":
        table.add_row("user stack", literal("\n".join(
            _entry(s) for s in event.stack.splitlines()), multiline=True))
    table.add_row("iteration", Text(str(event.iteration)))
    if event.what in ("break", "recompile"):
        table.add_row("op lane", Text(shown(joined), "cyan") if joined else Text(
            "no op recorded at this line: compiled code runs out of the op lane's sight "
            "(--compile eager records its ops)", "dim"))
    return Group(title, table)


def _entry(entry: str) -> str:
    """``/a/b/train.py:6 in step`` -> ``train.py:6 in step``."""
    where, _, fn = entry.partition(" in ")
    file, _, line = where.rpartition(":")
    return f"{os.path.basename(file)}:{line} in {report.function_text(fn)}" if file else entry


def focus_line(event: ev.CompileEvent) -> tuple[str, int]:
    """The source line a compile event is about: the break's line, the line whose guard
    failed (when known), else the compiled function's."""
    if event.what == "recompile" and event.stack:
        entries = [e for e in event.stack.splitlines() if ":" in e]
        if entries:
            where, _, _ = entries[-1].partition(" in ")
            file, _, line = where.rpartition(":")
            if file and line.isdigit():
                return file, int(line)
    return event.file, event.line
