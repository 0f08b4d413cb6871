"""What makes two iterations' graphs "the same structure": the one definition behind both
the structure key (``IterationEnd.structure_key``, the iteration bar's change markers) and
the diff (``Graph.diff``), so the two always agree.

A node's signature is its stable key (module path, op or leaf name, ``file:line``, how many
such nodes came before it) with its shape, dtype, grad mode (ops) or ``requires_grad``
(leaves), the attributes that change what the op computes structurally (which axes: ``dim``,
``dims``, ``keepdim``, ``equation``, ... and the *pattern* of an index, not its numbers) and
the keys of its inputs by slot. Attribute values that change neither the shapes nor the
wiring (slice offsets, index values, a dropout probability, a fill value) are left out: a
minibatch loop over ``x[i:i + 16]`` keeps one structure.

Two graphs have the same structure exactly when their signatures are equal as sets; the key
hashes the sorted signatures, so it does not depend on the order independent ops ran in.

>>> structure_key([])  # doctest: +SKIP
'...'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from . import events as ev

# A node's stable key: (module path, op or leaf name, file, line, occurrence).
NodeKey = tuple[str, str, str, int, int]
# (id, key, shape, dtype, grad flag, attrs) of a node, and (src id, dst id, slot) of an edge.
NodeFacts = tuple[int, NodeKey, tuple[int, ...], str, bool, dict[str, Any]]
EdgeFacts = tuple[int, int, int]

# Attributes that say which axes or layout an op works on. Their values are part of the
# structure; any other attribute's value is data (offsets, probabilities, constants).
STRUCTURAL_ATTRS = frozenset({
    "dim", "dims", "dim0", "dim1", "axis", "axes", "keepdim", "start_dim", "end_dim",
    "equation", "stride", "padding", "kernel_size", "dilation", "groups", "reduction",
    "dtype", "repeats", "num_classes", "transpose_a", "transpose_b",
})
_INDEX_ATTRS = frozenset({"index", "key", "indices"})


def index_pattern(index: Any) -> Any:
    """An index with its numbers taken out: ``x[i:i+16, 0]`` and ``x[j:j+16, 3]`` match,
    ``x[0]`` and ``x[:, 0]`` do not."""
    if isinstance(index, tuple | list):
        return tuple(index_pattern(i) for i in index)
    if isinstance(index, bool) or index is None:
        return index
    if isinstance(index, int):
        return "i"
    if isinstance(index, str) and index != "..." and not index.startswith("array("):
        return ":" if ":" in index else index  # a slice, recorded as "start:stop[:step]"
    return index


def structural_attrs(attrs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The attributes that belong to the structure, in a stable, hashable form."""
    if not attrs:
        return ()
    try:
        known = _attr_cache.get(tuple(attrs.items()))
    except TypeError:  # an unhashable value (a list from a trace file): no caching
        return _structural(attrs)
    if known is None:
        if len(_attr_cache) > 10_000:
            _attr_cache.clear()
        known = _attr_cache[tuple(attrs.items())] = _structural(attrs)
    return known


_attr_cache: dict[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]] = {}


def _structural(attrs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    out = []
    for name in sorted(attrs):
        if name in STRUCTURAL_ATTRS:
            out.append((name, _hashable(attrs[name])))
        elif name in _INDEX_ATTRS:
            out.append((name, index_pattern(attrs[name])))
    return tuple(out)


def _hashable(value: Any) -> Any:
    # A trace file gives lists back where the run had tuples.
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def signatures(nodes: Iterable[NodeFacts], edges: Iterable[EdgeFacts]
               ) -> dict[NodeKey, tuple[Any, ...]]:
    """``node key -> (shape, dtype, grad flag, structural attrs, input keys by slot)``.

    Nodes later in ``nodes`` with an id seen before replace the earlier one, as in a Graph.
    """
    by_id: dict[int, NodeFacts] = {}
    for facts in nodes:
        by_id[facts[0]] = facts
    inputs: dict[int, list[tuple[int, NodeKey]]] = {}
    for src, dst, slot in edges:
        source = by_id.get(src)
        if source is not None and dst in by_id:
            inputs.setdefault(dst, []).append((slot, source[1]))
    out: dict[NodeKey, tuple[Any, ...]] = {}
    for node_id, key, shape, dtype, flag, attrs in by_id.values():
        wired = inputs.get(node_id)
        out[key] = (tuple(shape), dtype, bool(flag), structural_attrs(attrs),
                    tuple(sorted(wired)) if wired else ())
    return out


def key_of(sigs: dict[NodeKey, tuple[Any, ...]]) -> str:
    """A 16-digit hex key of a signature set: the same set gives the same key in any order,
    in any process (the sum of the nodes' digests; one node's digest is computed once and
    remembered, since the same nodes come back every iteration)."""
    total = 0
    digests = _digests
    for item in sigs.items():
        try:
            digest = digests.get(item)
        except TypeError:  # an attribute value that is not hashable: no caching
            digest = _digest(item)
        if digest is None:
            if len(digests) > _DIGESTS_KEPT:
                digests.clear()
            digest = digests[item] = _digest(item)
        total += digest
    return f"{total & 0xFFFF_FFFF_FFFF_FFFF:016x}"


_digests: dict[tuple[Any, ...], int] = {}
_DIGESTS_KEPT = 200_000


def _digest(item: tuple[Any, ...]) -> int:
    return int.from_bytes(hashlib.blake2b(repr(item).encode(), digest_size=8).digest(), "little")


def event_facts(events: Iterable[ev.Event]) -> tuple[list[NodeFacts], list[EdgeFacts]]:
    """Nodes and edges of an iteration's Op and TensorCreated events, keyed as
    ``GraphBuilder`` keys its nodes (``GraphNode.key``)."""
    nodes: list[NodeFacts] = []
    edges: list[EdgeFacts] = []
    counts: dict[tuple[str, str, str, int], int] = {}
    for e in events:
        t = type(e)
        if t is ev.Op:
            base: tuple[str, str, str, int] = (e.module, e.op, e.file, e.line)  # type: ignore[attr-defined]
            n = counts.get(base, 0)
            counts[base] = n + 1
            out = e.output  # type: ignore[attr-defined]
            nodes.append((out, (*base, n), e.shape, e.dtype, e.grad_enabled,  # type: ignore[attr-defined]
                          e.attrs))  # type: ignore[attr-defined]
            edges.extend((src, out, slot) for slot, src in enumerate(e.inputs)  # type: ignore[attr-defined]
                         if src >= 0)
        elif t is ev.TensorCreated:
            base = ("", leaf_label(e.name, e.is_param), "", 0)  # type: ignore[attr-defined]
            n = counts.get(base, 0)
            counts[base] = n + 1
            nodes.append((e.tensor, (*base, n), e.shape, e.dtype,  # type: ignore[attr-defined]
                          e.requires_grad, {}))  # type: ignore[attr-defined]
    return nodes, edges


def leaf_label(name: str, is_param: bool) -> str:
    """What a leaf's key calls it: its name, else ``param`` or ``leaf``."""
    return name or ("param" if is_param else "leaf")


def structure_key(events: Sequence[ev.Event]) -> str:
    """The structure key of an iteration's events (Op and TensorCreated; others ignored).

    The tracer computes it at every iteration's end, so this is ``signatures`` fused into
    one pass over the events. It holds while every tensor id names one node and inputs
    come before their use (always, from the tracer); otherwise it hands over to the
    general ``signatures``, which gives the same answer in both cases.
    """
    Op, TensorCreated = ev.Op, ev.TensorCreated
    counts: dict[tuple[str, str, str, int], int] = {}
    key_by_id: dict[int, NodeKey] = {}
    sigs: dict[NodeKey, tuple[Any, ...]] = {}
    attrs_of = structural_attrs
    for e in events:
        t = type(e)
        if t is Op:
            out = e.output  # type: ignore[attr-defined]
            if out in key_by_id:
                return _general_key(events)
            base = (e.module, e.op, e.file, e.line)  # type: ignore[attr-defined]
            n = counts.get(base, 0)
            counts[base] = n + 1
            key: NodeKey = (*base, n)  # type: ignore[assignment]
            key_by_id[out] = key
            wired = []
            for slot, src in enumerate(e.inputs):  # type: ignore[attr-defined]
                if src >= 0:
                    source = key_by_id.get(src)
                    if source is None:
                        return _general_key(events)
                    wired.append((slot, source))
            shape = e.shape  # type: ignore[attr-defined]
            sigs[key] = (shape if type(shape) is tuple else tuple(shape), e.dtype,  # type: ignore[attr-defined]
                         bool(e.grad_enabled), attrs_of(e.attrs), tuple(wired))  # type: ignore[attr-defined]
        elif t is TensorCreated:
            tid = e.tensor  # type: ignore[attr-defined]
            if tid in key_by_id:
                return _general_key(events)
            base = ("", leaf_label(e.name, e.is_param), "", 0)  # type: ignore[attr-defined]
            n = counts.get(base, 0)
            counts[base] = n + 1
            key = (*base, n)  # type: ignore[assignment]
            key_by_id[tid] = key
            shape = e.shape  # type: ignore[attr-defined]
            sigs[key] = (shape if type(shape) is tuple else tuple(shape), e.dtype,  # type: ignore[attr-defined]
                         bool(e.requires_grad), (), ())  # type: ignore[attr-defined]
    return key_of(sigs)


def _general_key(events: Iterable[ev.Event]) -> str:
    nodes, edges = event_facts(events)
    return key_of(signatures(nodes, edges))
