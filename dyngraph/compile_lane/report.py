"""Compile events read back: one-line descriptions, the run's compile table (graph breaks
deduplicated by type and place, recompiles per compiled function with their guards), the
recompile-storm check, and the join to the op lane by source line.

Plain Python over event objects (``CompileEvent``, ``Op``): ``dyngraph summary``/``check``,
the debug agent and the debugger use it without torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..capture import events as ev

_STACK_INPUT = "___stack"  # Dynamo's name for a value it carried over a graph break


def where(file: str, line: int) -> str:
    return f"{os.path.basename(file)}:{line}" if file else "?"


def frame_name(e: ev.CompileEvent) -> str:
    """The compiled function as a user knows it: Dynamo's resume functions
    (``torch_dynamo_resume_in_step_at_10``) read ``step (after the break at line 10)``."""
    return function_text(e.frame)


def function_text(name: str) -> str:
    """``frame_name`` of a function's name."""
    if name.startswith("torch_dynamo_resume_in_") and "_at_" in name:
        fn, _, line = name.removeprefix("torch_dynamo_resume_in_").rpartition("_at_")
        return f"{fn} (after the break at line {line})"
    return name or "?"


def input_text(name: str) -> str:
    """The input a guard names, for a reader: ``x``, or what a ``___stack0`` is."""
    if name.startswith(_STACK_INPUT):
        return f"{name} (a value computed before a graph break, carried over it)"
    return name


def describe(e: ev.CompileEvent) -> str:
    """One line: ``recompile of step (train.py:5): tensor 'x' size mismatch ...``."""
    at = where(e.file, e.line)
    fn = frame_name(e)
    if e.what == "recompile":
        named = f" (input {input_text(e.input)})" if e.input else ""
        return f"recompile of {fn} ({at}): guard failed: {e.reason}{named}"
    if e.what == "break":
        return f"graph break in {fn} at {at}: {e.type or e.reason}"
    if e.what == "start":
        return f"compile {e.compile_id} of {fn} ({at}) starts"
    if e.what == "end":
        took = f" in {e.duration_ns / 1e9:.2f} s" if e.duration_ns else ""
        failed = f", failed: {e.type}: {e.reason}" if e.type else ""
        return f"compile {e.compile_id} of {fn} done{took}{failed}"
    if e.what == "guards":
        return f"compiled entry {e.compile_id} of {fn}: {e.reason}"
    if e.what == "limit":
        return f"{e.reason} ({at})"
    if e.what == "fallback":
        return f"{fn} falls back to eager at {at}: {e.type}: {e.reason}"
    return e.reason or e.what


@dataclass
class BreakRow:
    """A graph break, deduplicated: one type at one place, however often it happened."""

    type: str
    file: str
    line: int
    reason: str
    hints: str
    count: int = 0
    iterations: list[int] = field(default_factory=list)
    frames: set[str] = field(default_factory=set)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def guard_kind(guard: str) -> str:
    """A failed guard with its numbers left out: ``expected 5, actual 7`` and ``expected
    7, actual 9`` are one kind of failure, seen twice."""
    return _NUMBER.sub("#", guard)


@dataclass
class FrameRecompiles:
    """The recompiles of one compiled function, with each kind of failing guard (its
    numbers left out: ``guard_kind``) and the latest guard text of that kind."""

    frame: str
    file: str
    line: int
    count: int = 0
    reasons: dict[str, int] = field(default_factory=dict)  # guard kind -> how often
    examples: dict[str, str] = field(default_factory=dict)  # guard kind -> latest text
    iterations: list[int] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)
    last: ev.CompileEvent | None = None


@dataclass
class CompileTable:
    """The run's compile lane in numbers (``compile_table``)."""

    compiles: int = 0
    seconds: float = 0.0
    breaks: list[BreakRow] = field(default_factory=list)
    recompiles: list[FrameRecompiles] = field(default_factory=list)
    limits: list[ev.CompileEvent] = field(default_factory=list)
    fallbacks: list[ev.CompileEvent] = field(default_factory=list)
    unavailable: str = ""

    @property
    def empty(self) -> bool:
        return not (self.compiles or self.breaks or self.recompiles or self.limits
                    or self.fallbacks or self.unavailable)


def compile_table(events: Iterable[ev.Event]) -> CompileTable:
    """Every compile event of a run, tallied: breaks by (type, file, line), recompiles by
    compiled function (name, file, line) and failing guard."""
    table = CompileTable()
    breaks: dict[tuple[str, str, int], BreakRow] = {}
    frames: dict[tuple[str, str, int], FrameRecompiles] = {}
    for e in events:
        if type(e) is not ev.CompileEvent:
            continue
        if e.what == "end":
            table.compiles += 1
            table.seconds += e.duration_ns / 1e9
        elif e.what == "break":
            key = (e.type or e.reason, e.file, e.line)
            row = breaks.get(key)
            if row is None:
                row = breaks[key] = BreakRow(e.type or e.reason, e.file, e.line, e.reason,
                                             e.detail)
            row.count += 1
            row.frames.add(frame_name(e))
            if e.iteration not in row.iterations:
                row.iterations.append(e.iteration)
        elif e.what == "recompile":
            fr = frames.get((e.frame, e.file, e.line))
            if fr is None:
                fr = frames[(e.frame, e.file, e.line)] = FrameRecompiles(frame_name(e), e.file,
                                                                         e.line)
            fr.count += 1
            kind = guard_kind(e.reason)
            fr.reasons[kind] = fr.reasons.get(kind, 0) + 1
            fr.examples[kind] = e.reason
            if e.input:
                fr.inputs[e.input] = fr.inputs.get(e.input, 0) + 1
            fr.iterations.append(e.iteration)
            fr.last = e
        elif e.what == "limit":
            table.limits.append(e)
        elif e.what == "fallback":
            table.fallbacks.append(e)
        elif e.what == "unavailable":
            table.unavailable = e.reason
    table.breaks = sorted(breaks.values(), key=lambda r: (-r.count, r.file, r.line))
    table.recompiles = sorted(frames.values(), key=lambda f: (-f.count, f.file, f.line))
    return table


# -- the recompile-storm check ---------------------------------------------------------------
class RecompileCounter:
    """Counts recompiles per compiled function as events arrive; ``over`` is the first
    recompile that took a function past ``limit`` (``dyngraph check --max-recompiles``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: dict[tuple[str, str, int], int] = {}
        self.over: ev.CompileEvent | None = None

    def add(self, e: ev.Event) -> bool:
        """True when ``e`` is the recompile that goes past the limit."""
        if type(e) is not ev.CompileEvent or e.what != "recompile" or self.over is not None:
            return False
        key = (e.frame, e.file, e.line)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] > self.limit:
            self.over = e
            return True
        return False

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def failure(self) -> str:
        e = self.over
        assert e is not None
        where_from = f", a guard made at {_stack_where(e.stack)}" if e.stack else ""
        named = f" on input {input_text(e.input)}" if e.input else ""
        n = self.counts[(e.frame, e.file, e.line)]
        return (f"{frame_name(e)} ({where(e.file, e.line)}) recompiled "
                f"{n} time{'s' * (n != 1)} (> --max-recompiles "
                f"{self.limit}), the last in iteration {e.iteration}: guard failed{named}: "
                f"{e.reason}{where_from}")


# -- the join to the op lane -----------------------------------------------------------------
def ops_at_line(events: Sequence[ev.Event] | Iterable[ev.Event], file: str, line: int
                ) -> list[ev.Op]:
    """The op lane's ops recorded at ``file:line`` (the line a break or a guard names)."""
    if not file:
        return []
    name = os.path.normcase(os.path.abspath(file)) if os.path.isabs(file) else file
    out = []
    for e in events:
        if type(e) is ev.Op and e.line == line and e.file and (
                e.file == file or os.path.normcase(os.path.abspath(e.file)) == name):
            out.append(e)
    return out


def join_text(ops: Sequence[ev.Op], limit: int = 6) -> str:
    """``linear ×3, relu (iterations 1-4)``: the ops a compile event's line ran."""
    if not ops:
        return ""
    names: dict[str, int] = {}
    for o in ops:
        names[o.op] = names.get(o.op, 0) + 1
    parts = [f"{n} ×{c}" if c > 1 else n for n, c in list(names.items())[:limit]]
    its = sorted({o.iteration for o in ops})
    span = f"iteration {its[0]}" if len(its) == 1 else f"iterations {its[0]}-{its[-1]}"
    return f"{', '.join(parts)} ({span})"


def compile_rows(table: CompileTable) -> dict[str, Any]:
    """The table as plain data (for tests and JSON)."""
    return {
        "compiles": table.compiles,
        "breaks": [(b.type, b.file, b.line, b.count) for b in table.breaks],
        "recompiles": [(f.frame, f.file, f.line, f.count, dict(f.reasons))
                       for f in table.recompiles],
        "limits": len(table.limits),
        "fallbacks": len(table.fallbacks),
    }


# -- the summary's tables ----------------------------------------------------------------------
def _iterations(its: Sequence[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, its[:limit]))
    return shown + (f", … ({len(its)})" if len(its) > limit else "")


def render(table: CompileTable) -> list[Any]:
    """The compile part of ``dyngraph summary``: rich renderables (nothing when the run
    compiled nothing). Lists rather than tables: breaks and guards are long texts, and a
    grid with a hanging indent keeps them readable at 80 columns."""
    from rich.table import Table
    from rich.text import Text

    from ..textsafe import shown

    if table.empty:
        return []
    out: list[Any] = [Text.assemble(
        ("compile lane", "bold"), f" (torch.compile): {table.compiles} compile(s), "
        f"{table.seconds:.2f} s compiling, {sum(b.count for b in table.breaks)} graph "
        f"break(s) at {len(table.breaks)} place(s), "
        f"{sum(f.count for f in table.recompiles)} recompile(s)")]
    if table.unavailable:
        out.append(Text(shown(table.unavailable), "yellow"))

    def grid(title: str) -> Table:
        g = Table.grid(padding=(0, 1))
        g.title, g.title_justify, g.title_style = title, "left", "bold"
        g.add_column(justify="right", no_wrap=True)
        g.add_column()
        return g

    if table.breaks:
        g = grid("graph breaks (one entry per type and place)")
        for b in table.breaks:
            body = Text.assemble((shown(where(b.file, b.line)), "cyan"),
                                 f" in {shown(', '.join(sorted(b.frames)))}: ",
                                 (shown(b.type), "bold"),
                                 (f"  iterations {_iterations(b.iterations)}", "dim"))
            hint = next((h for h in b.hints.splitlines() if not h.startswith("For more")), "")
            if hint:
                body.append("\n").append(shown(f"hint: {hint}"), "dim")
            g.add_row(f"{b.count}×", body)
        out.append(g)
    if table.recompiles:
        g = grid("recompiles (per compiled function, by kind of failed guard)")
        for f in table.recompiles:
            g.add_row(f"{f.count}×", Text.assemble(
                (shown(f.frame), "bold"), " ", (shown(where(f.file, f.line)), "cyan"),
                (f"  iterations {_iterations(f.iterations)}", "dim")))
            for kind, n in sorted(f.reasons.items(), key=lambda kv: -kv[1]):
                g.add_row("", Text.assemble(f"{n}× guard failed: ", shown(f.examples[kind])))
            notes = []
            if f.inputs:
                notes.append("input " + ", ".join(input_text(i) for i in f.inputs))
            if f.last is not None and f.last.stack:
                notes.append(f"guard made at {_stack_where(f.last.stack)}")
            if notes:
                g.add_row("", Text(shown("; ".join(notes)), "dim"))
        out.append(g)
    for e in table.limits:
        out.append(Text(shown(f"iteration {e.iteration}: {describe(e)}"), "bold red"))
    for e in table.fallbacks:
        out.append(Text(shown(f"iteration {e.iteration}: {describe(e)}"), "yellow"))
    return out


def _stack_where(stack: str) -> str:
    """The innermost entry of a ``stack`` field: ``train.py:6 in step``."""
    last = stack.splitlines()[-1] if stack else ""
    where_, _, fn = last.partition(" in ")
    file, _, line = where_.rpartition(":")
    return f"{os.path.basename(file)}:{line} in {function_text(fn)}" if file else last
