"""Values as plain data an event can carry and a trace file can store: an op's attributes
and arguments (slices, numpy scalars, enums ...) become ints, floats, strings and tuples."""

from __future__ import annotations

from typing import Any

import numpy as np

PLAIN_TYPES = frozenset((int, float, bool, str, type(None)))


def plain(value: Any) -> Any:
    """``value`` as plain data an event can carry and a trace file can store.

    >>> plain((slice(1, 3), np.int64(2), Ellipsis))
    ('1:3', 2, '...')
    """
    t = type(value)
    if t in PLAIN_TYPES:
        return value
    if t is slice:
        start, stop, step = value.start, value.stop, value.step
        if type(start) is int and type(stop) is int and step is None:  # x[a:b], the usual
            return f"{start}:{stop}"
        parts = ["" if p is None else str(plain(p)) for p in (start, stop)]
        if step is not None:
            parts.append(str(plain(step)))
        return ":".join(parts)
    if t is tuple or t is list:
        return plain_tuple(value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        # Never the values: an index array's contents are data, not structure.
        return f"array{tuple(value.shape)}:{value.dtype}"
    for base in (bool, int, float, str):  # subclasses (IntEnum, ...) become the base type
        if isinstance(value, base):
            return base(value)
    return str(value)[:80]


def plain_tuple(values: Any) -> tuple[Any, ...]:
    """``tuple(plain(v) for v in values)``, the tuple itself when it is plain already."""
    for v in values:
        if type(v) not in PLAIN_TYPES:
            return tuple([plain(v) for v in values])
    return values if type(values) is tuple else tuple(values)


def plain_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    for v in attrs.values():
        if type(v) not in PLAIN_TYPES:
            return {k: plain(v) for k, v in attrs.items()}
    return attrs
