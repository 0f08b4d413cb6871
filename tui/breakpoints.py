"""Breakpoints in the UI: built from the dialog, matched against the recorded history.

The UI uses the runtime's own ``dyngraph.debug.Breakpoint`` (one type everywhere); the live
child checks breakpoints itself. This module checks the same kinds against events the UI
already holds, for replay and for walking through what a live run already did. Conditions
(``op:exp if max > 1e3``) are judged on the recorded summary, so a statistic the trace did
not record never matches.

>>> history_hit(Breakpoint.op("log"), events, 12)      # doctest: +SKIP
'op log'
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence

from dyngraph.capture import events as ev
from dyngraph.debug.breakpoints import KINDS, Breakpoint, module_matches, same_file

__all__ = ["KINDS", "KIND_HELP", "Breakpoint", "from_dialog", "history_hit"]

KIND_HELP = {
    "op": "an op name or glob (matmul, mat*), or any text form: module:enc, train.py:42, "
          "iter:3, nan, grad>100",
    "module": "a module path glob (encoder, encoder.*.attn), or any text form",
    "line": "FILE:LINE (train.py:42), or a line number in the file shown in the source pane",
    "iteration": "an iteration number (3), or any text form",
    "nan": "first NaN/Inf in a value or gradient (no value needed)",
    "grad_norm": "a gradient-norm threshold (100), or any text form (global_grad>100)",
    "compile": "recompile or break: torch.compile recompiled, or broke a graph "
               "(compile:recompile)",
}


def from_dialog(kind: str, text: str, file: str = "") -> Breakpoint:
    """A breakpoint from the dialog's kind and text (``Breakpoint.parse``, the one parser):
    a text form means what it says whatever ``kind`` is selected, a bare value is read as
    ``kind``; ValueError with a readable message otherwise."""
    return Breakpoint.parse(text, kind, file)


_TERM = re.compile(r"\s*(\w+)\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*")
_CMP = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__,
        "==": float.__eq__, "!=": float.__ne__}


def _stat(s: ev.Summary, name: str) -> float | None:
    if name == "absmax":
        return None if s.min is None or s.max is None else max(abs(s.min), abs(s.max))
    if name in ("nan", "inf"):
        return float(getattr(s, name))
    if name == "numel":
        return float(s.numel)
    value = getattr(s, name, None)
    return None if value is None else float(value)


def condition_holds(condition: str, summary: ev.Summary | None) -> bool:
    """The runtime's condition language judged on a summary (missing stats never match)."""
    if not condition:
        return True
    if summary is None:
        return False
    for alt in re.split(r"\bor\b", condition):
        ok = True
        for term in re.split(r"\band\b", alt):
            m = _TERM.fullmatch(term)
            value = _stat(summary, m.group(1)) if m else None
            if m is None or value is None or not _CMP[m.group(2)](value, float(m.group(3))):
                ok = False
                break
        if ok:
            return True
    return False


def _previous_op(events: Sequence[ev.Event], i: int) -> ev.Op | None:
    for j in range(i - 1, max(i - 64, -1), -1):
        e = events[j]
        if isinstance(e, ev.Op):
            return e
        if isinstance(e, ev.IterationEnd):
            return None
    return None


def history_hit(bp: Breakpoint, events: Sequence[ev.Event], i: int) -> str | None:
    """A description when ``events[i]`` triggers ``bp`` as the child would have, else None."""
    event = events[i]
    kind = bp.kind
    if kind == "nan":
        return _nonfinite(event)
    if kind == "grad_norm":
        norm = _grad_norm(event, bp.scope)
        if norm is not None and norm > bp.threshold:
            return f"grad norm {norm:.4g} > {bp.threshold:g}"
        return None
    if kind == "compile":
        if isinstance(event, ev.CompileEvent) and event.what == bp.name:
            from dyngraph.compile_lane.report import describe

            return describe(event)
        return None
    if not isinstance(event, ev.Op):
        return None
    if kind == "iteration":
        if event.iteration != bp.iteration:
            return None
        prev = _previous_op(events, i)
        return f"iteration {bp.iteration}" if prev is None or prev.iteration != bp.iteration \
            else None
    hit: str | None = None
    if kind == "op" and fnmatch.fnmatchcase(event.op, bp.name):
        hit = f"op {event.op}"
    elif kind == "module" and module_matches(bp.name, event.module):
        prev = _previous_op(events, i)
        if prev is None or not module_matches(bp.name, prev.module):
            hit = f"module {event.module}"
    elif kind == "line" and event.line == bp.line and same_file(bp.file, event.file):
        prev = _previous_op(events, i)
        if prev is None or (prev.file, prev.line) != (event.file, event.line):
            hit = f"line {os.path.basename(event.file)}:{event.line}"
    if hit is not None and not condition_holds(bp.condition, event.summary):
        return None
    return hit


def _nonfinite(event: ev.Event) -> str | None:
    if isinstance(event, ev.Op):
        s = event.summary
        if s is not None and not s.finite:
            return f"NaN/Inf in {event.op} output ({s.nan} NaN, {s.inf} Inf)"
    elif isinstance(event, ev.BackwardStep):
        for s in (*event.grad_inputs, event.grad_output, *event.grad_outputs):
            if s is not None and not s.finite:
                return f"NaN/Inf in gradient of {event.grad_fn or event.op}"
    elif isinstance(event, ev.GradAccumulated):
        s = event.summary
        if s is not None and not s.finite:
            return f"NaN/Inf in .grad of {event.name or 'leaf'}"
    return None


def _grad_norm(event: ev.Event, scope: str) -> float | None:
    if scope == "global":
        return None  # the global norm is only known to the child at the end of backward
    if isinstance(event, ev.BackwardStep):
        # The gradients a step computes (each reaches a node or a leaf as computed; the
        # seed backward starts from is no step's, so it never counts).
        norms = [s.norm for s in event.grad_inputs if s is not None and s.norm is not None]
        return max(norms) if norms else None
    if isinstance(event, ev.GradAccumulated) and event.summary is not None:
        return event.summary.norm
    return None
