"""Which iterations a command works on: ``--iterations 1-10,15``, ``5-``, ``-10``, ``last``.

A spec is checked in two steps. ``parse`` reads it (a typo is refused before anything
runs: before ``export train.py`` records the script); ``resolve`` then takes it against
the iterations a trace has. Ranges are never spelled out: ``1-99999999999999999999`` costs
what ``1-3`` does, and a range that runs past the trace is cut to it, with a note.

>>> resolve(parse("2-5,last"), [1, 2, 3])
([2, 3], ['--iterations 2-5: the trace ends at iteration 3; took 2-3'])
>>> resolve(parse("5-"), [1, 2, 3, 5, 6])
([5, 6], [])
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import UserError

LAST = -1  # stands for "the last iteration" in a part's bounds
_PART = re.compile(r"\s*(\d+|last)?\s*(-)?\s*(\d+|last)?\s*")
_MAX_PARTS = 1000
EXAMPLE = "e.g. 1-10,15 or 5- or -10 or last"


@dataclass(frozen=True, slots=True)
class Part:
    """``first``-``last`` (inclusive; None: open at that end; ``LAST``: the last
    iteration), as written (``text``); ``single``: one iteration (``7``, ``last``)."""

    text: str
    first: int | None
    last: int | None
    single: bool


def parse(spec: str, option: str = "--iterations") -> tuple[Part, ...]:
    """The parts of ``spec``; UserError naming ``option`` if it is not one."""
    parts = spec.split(",")
    if len(parts) > _MAX_PARTS:
        raise UserError(f"bad {option}: more than {_MAX_PARTS:,} parts")
    out = []
    for text in parts:
        m = _PART.fullmatch(text)
        if m is None or not (m.group(1) or m.group(3)) or (m.group(3) and not m.group(2)):
            raise UserError(f"bad {option} {_short(spec)}: expected {EXAMPLE}")
        a, dash, b = m.groups()
        first, last = _bound(a), _bound(b)
        if not dash:
            out.append(Part(text.strip(), first, first, True))
            continue
        if first is not None and last is not None and first != LAST and last != LAST \
                and first > last:
            raise UserError(f"bad {option} {_short(spec)}: {text.strip()} goes down")
        if first == LAST and last != LAST:
            raise UserError(f"bad {option} {_short(spec)}: a range cannot begin at last "
                            f"(write e.g. 5-last, or last)")
        out.append(Part(text.strip(), first, last, False))
    return tuple(out)


def resolve(parts: Sequence[Part], available: Sequence[int], option: str = "--iterations"
            ) -> tuple[list[int], list[str]]:
    """The iterations of ``available`` (ascending) that ``parts`` name, and a note for
    each range cut to what the trace has. A single iteration the trace lacks, or a range
    holding none of its iterations, is a UserError."""
    if not available:
        raise UserError("no iteration in this trace")
    chosen: set[int] = set()
    notes = []
    have = describe(available)
    for part in parts:
        first = available[-1] if part.first == LAST else part.first
        last = available[-1] if part.last == LAST else part.last
        if part.single:
            if first not in available:
                raise UserError(_missing(first, have))  # type: ignore[arg-type]
            chosen.add(first)  # type: ignore[arg-type]
            continue
        lo = available[0] if first is None else first
        hi = available[-1] if last is None else last
        if lo > hi:  # ("5-last" on a trace of 3 iterations)
            raise UserError(f"no iteration in {option} {part.text} (the trace has {have})")
        taken = available[bisect_left(available, lo):bisect_right(available, hi)]
        if not taken:
            raise UserError(f"no iteration in {option} {part.text} (the trace has {have})")
        chosen.update(taken)
        if (last is not None and last > available[-1]) or (first is not None
                                                            and first < available[0]):
            notes.append(f"{option} {part.text}: {_cut(hi, available)}; took {_span(taken)}")
    return sorted(chosen), notes


def describe(numbers: Sequence[int], at_most: int = 6) -> str:
    """``1-3, 7, 9-12``: ascending ``numbers`` as runs (the first ``at_most`` of them)."""
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:at_most])
    return text + (", …" if len(runs) > at_most else "")


def _bound(text: str | None) -> int | None:
    if text is None:
        return None
    return LAST if text == "last" else int(text)


def _missing(n: int, have: str) -> str:
    if n == 0:
        return f"no iteration 0 in this trace (iterations are numbered from 1; it has {have})"
    text = str(n)
    return f"no iteration {text if len(text) <= 24 else text[:21] + '...'} in this trace " \
           f"(it has {have})"


def _cut(hi: int, available: Sequence[int]) -> str:
    if hi > available[-1]:
        return f"the trace ends at iteration {available[-1]}"
    return f"the trace begins at iteration {available[0]}"


def _span(taken: Sequence[int]) -> str:
    return str(taken[0]) if len(taken) == 1 else f"{taken[0]}-{taken[-1]}"


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")
