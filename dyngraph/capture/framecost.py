"""What decoding a frame may cost in memory, checked before the objects are built.

A trace from a stranger must not take memory out of proportion to the events it holds
(docs/trace-format.md). Decoded, a byte of a frame can cost far more than a byte: a JSON
``[]`` is a list object of 56 bytes, a number in a list an int object of 28 and a pointer,
a table entry (a string, a shape, a summary) a Python object whether or not an event
refers to it. So every structure of a frame is priced before it is built, from what is
already known (a block's length, a count, the brackets and commas of a JSON text), and a
frame whose price passes its allowance is refused.

The allowance of a frame of ``count`` events and ``size`` payload bytes is
``BASE + min(PER_EVENT * count, PER_BYTE * size)``: a frame of real events costs a few
hundred bytes to a kilobyte and a half per event, its strings' and arrays' contents about
their own size (not priced: those are the data). The per-byte cap keeps a frame that
claims millions of tiny events within a few times its size. Measured on real recordings
(bench/tracefile.py's): under a fifth of the allowance.
"""

from __future__ import annotations

from ..errors import TraceFileError

BASE = 4 << 20
PER_EVENT = 2048
PER_BYTE = 8

# What CPython (64-bit) spends on an object of each kind, rounded up.
CONTAINER = 72  # a list or dict, empty, with its allocation overhead
ITEM = 40  # one more item of a list: a pointer, and a number object for most items
STRING = 64  # a str object, before its characters
TUPLE = 56
NUMBER = 32


class Allowance:
    """The memory a frame's decoding may still spend."""

    __slots__ = ("left", "total", "count")

    def __init__(self, count: int, size: int) -> None:
        self.total = self.left = BASE + min(PER_EVENT * count, PER_BYTE * size)
        self.count = count

    def charge(self, cost: int, what: str) -> None:
        """Spend ``cost`` bytes on ``what``; TraceFileError if the frame cannot afford it."""
        self.left -= cost
        if self.left < 0:
            raise TraceFileError(
                f"events frame would take {_mb(self.total - self.left)} of memory for "
                f"{self.count:,} events (its {what}; at most {_mb(self.total)}): refused")


def json_cost(text: str) -> int:
    """What ``json.loads(text)`` builds, at most: a container per bracket, an item per
    comma, the characters. (Brackets and commas inside strings are counted too: an
    overestimate, on texts that are short where they are real.)"""
    containers = text.count("[") + text.count("{")
    return CONTAINER * containers + ITEM * text.count(",") + len(text)


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"
