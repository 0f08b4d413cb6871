"""Colouring nodes by gradient-norm magnitude on a log scale, and the legend for it.

The scale is a set of bins of whole decades (``1e-3 .. 1e-2``), so the legend states
exactly which norms a colour stands for. A batch export computes one scale over all its
iterations (``GradScale.from_graphs``) so a colour means the same thing on every slide.

>>> scale = GradScale(-3, 1)
>>> scale.fill(0.05) == scale.fill(0.02)
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

# ColorBrewer YlGnBu, light (small gradients) to dark (large ones).
PALETTE = (
    "#ffffd9", "#edf8b1", "#c7e9b4", "#7fcdbb", "#41b6c4",
    "#1d91c0", "#225ea8", "#253494", "#081d58",
)
# Fills dark enough to need white text.
DARK = frozenset(PALETTE[5:])
NO_GRAD = "#ffffff"
ZERO_GRAD = "#e6e6e6"
NONFINITE_FILL = "#e41a1c"
NONFINITE_BORDER = "#67000d"
ADDED = "#1a9641"
RESHAPED = "#fd8d3c"
CHANGED = "#fd8d3c"
GHOST = "#9e9e9e"
MAX_BINS = len(PALETTE)


@dataclass(frozen=True, slots=True)
class GradScale:
    """Decade bins from ``10**lo`` up to ``10**hi``; norms outside are clamped to the ends."""

    lo: int
    hi: int
    _table: dict[int, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.hi <= self.lo:
            raise ValueError(f"GradScale needs lo < hi, got {self.lo}, {self.hi}")
        bins = self.bins
        object.__setattr__(self, "_table", {
            e: self._colour((e - self.lo) // self.step, len(bins))
            for e in range(self.lo, self.hi)
        })

    @classmethod
    def from_norms(cls, norms: Iterable[float | None]) -> GradScale | None:
        finite = [n for n in norms if n is not None and n > 0 and math.isfinite(n)]
        if not finite:
            return None
        lo = math.floor(math.log10(min(finite)))
        hi = math.floor(math.log10(max(finite))) + 1
        return cls(lo, hi)

    @classmethod
    def from_graphs(cls, graphs: Iterable[object]) -> GradScale | None:
        """One scale over the gradient norms of every node of every graph.

        Only gradients without NaN/Inf count: such a node is drawn as non-finite, and the
        norm its summary holds is of its finite part only, which can be anything up to
        float32's 3e38 and stretched the legend over decades no node sat in.
        """
        return cls.from_norms(
            grad.norm
            for g in graphs
            for node in g.nodes.values()  # type: ignore[attr-defined]
            # (a backward node with several outputs has a gradient for each)
            for grad in (node.grads or (node.grad,))  # type: ignore[attr-defined]
            if grad is not None and grad.finite
        )

    @property
    def step(self) -> int:
        """Decades per bin: 1 unless the range is wider than the palette."""
        return max(1, math.ceil((self.hi - self.lo) / MAX_BINS))

    @property
    def bins(self) -> list[tuple[int, int]]:
        """Each bin as (low exponent, high exponent)."""
        step = self.step
        return [(e, min(e + step, self.hi)) for e in range(self.lo, self.hi, step)]

    def _colour(self, index: int, count: int) -> str:
        if count == 1:
            return PALETTE[len(PALETTE) // 2]
        return PALETTE[round(index * (len(PALETTE) - 1) / (count - 1))]

    def fill(self, norm: float) -> str:
        """The fill colour for a gradient norm (finite; zero gets its own colour)."""
        if norm <= 0:
            return ZERO_GRAD
        return self._table[min(max(math.floor(math.log10(norm)), self.lo), self.hi - 1)]

    def legend(self) -> list[tuple[str, str]]:
        """(fill colour, text) rows, smallest norms first."""
        bins = self.bins
        return [(self._colour(i, len(bins)), f"1e{a} to 1e{b}") for i, (a, b) in enumerate(bins)]


def font_for(fill: str) -> str:
    """Black text, or white on the darkest fills."""
    return "#ffffff" if fill in DARK or fill == NONFINITE_FILL else "#000000"
