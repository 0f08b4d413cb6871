"""Decoding events frames: JSON rows -> events, every field checked on the way.

A trace file may come from a stranger, so a frame whose checksum is right may still hold
anything JSON can say: a string where an id belongs, ``2**64`` as a line number, a list
nested a thousand deep. Each field is checked here, when decoded, so everything downstream
(the summary, the graph builder, the exporters, the debugger) only ever sees events of the
documented types. A row that fails is reported as ``TraceFileError`` naming the event and
the field.

Decoding builds every event and summary of a file, so it is where reading spends its time.
The checks are generated into one function per event kind (``_make_decoder``) as a single
``if`` over the row's fields: on the good path that is a few type tests per field, and
only a row that fails is looked at again, field by field, to say what was wrong. Objects
are built as ``events.builder`` subclasses (one specialised slot store per field), then
given their real class.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Callable
from dataclasses import fields
from itertools import islice
from math import prod
from typing import Any

import numpy as np

from ..errors import TraceFileError
from . import collector
from . import events as ev
from .framecost import Allowance, json_cost

EVENTS_META = struct.Struct("<IIIIQ")  # count, first iteration, last iteration, flags, first seq
_ARRAY_KINDS = "biuf"  # numeric and bool dtypes only: an object array could carry code
_INT64 = 1 << 63  # integers are ids, counts and positions: they fit 64 bits or are garbage
_MAX_ITERATION = (1 << 32) - 1  # the metadata holds iterations as uint32
_MAX_DIMS = 64  # numpy's own limit
_MAX_ATTR_DEPTH = 8  # attrs are plain data: tuples of tuples at most a few deep

# A full summary's numbers go as one base64 string: mask (bit i set: stat i of min, max,
# mean, std, norm is None; bit 7: sampled), preview length, nan, inf, the five stats, then
# the preview, as little-endian doubles (see tracefile._pack_full).
FULL_HEAD = struct.Struct("<BBqq5d")
WHOLE = [struct.Struct(f"<BBqq5d{n}d") for n in range(256)]


class _Bad(ValueError):
    """A field is not what its event says; raised bare on the fast path, explained later."""


_BAD = _Bad()


def _show(v: Any) -> str:
    """A field's value for an error message: one short line, whatever it holds (a repr of
    a deeply nested list could itself overflow the stack)."""
    if type(v) is list:
        return f"a list of {len(v)}"
    if type(v) is dict:
        return f"an object of {len(v)} keys"
    text = repr(v) if type(v) is not int else str(v) if abs(v) < 10 ** 30 else "a huge integer"
    return text if len(text) <= 40 else text[:37] + "..."


# -- numpy arrays as plain JSON ------------------------------------------------------------
def decode_array(d: Any) -> np.ndarray:
    """The array ``tracefile.encode_array`` stored; TraceFileError if ``d`` is not one."""
    try:
        dtype = np.dtype(d["dtype"]) if type(d["dtype"]) is str else None
        shape = _shape(d["shape"])
        raw = base64.b64decode(d["__ndarray__"], validate=True)
    except _Bad:
        raise TraceFileError(f"malformed array (shape {_show(d['shape'])})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFileError(f"malformed array ({exc})"[:200]) from None
    if dtype is None or dtype.kind not in _ARRAY_KINDS or dtype.hasobject:
        raise TraceFileError(f"array of unsupported dtype {_show(d['dtype'])}")
    if len(raw) != dtype.itemsize * prod(shape):
        raise TraceFileError(f"array of shape {shape} does not match its {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


# -- fields that need more than a type test ------------------------------------------------
# Shapes repeat all through a recording: each distinct valid one is checked once and kept
# (bounded, so a hostile file cannot grow it), and the kept tuple is the one returned.
_SHAPES: dict[tuple[Any, ...], tuple[int, ...]] = {}
_MAX_SHAPES = 1 << 16


def _shape(v: Any) -> tuple[int, ...]:
    if type(v) is list:
        t = _SHAPES.get(tuple(v))  # TypeError for an unhashable element: malformed
        if t is not None:
            return t
    return _new_shape(v)


def _new_shape(v: Any) -> tuple[int, ...]:
    if type(v) is not list or len(v) > _MAX_DIMS or not all(
            type(d) is int and 0 <= d < _INT64 for d in v) or prod(v) >= _INT64:
        raise _BAD
    t = tuple(v)
    if len(_SHAPES) < _MAX_SHAPES:
        _SHAPES[t] = t
    return t


def _strings(v: Any) -> tuple[str, ...]:
    if type(v) is not list or not all(type(x) is str for x in v):
        raise _BAD
    return tuple(v)


def _number(x: Any) -> bool:
    return type(x) is float or (type(x) is int and -_INT64 <= x < _INT64)


def _updates(v: Any) -> tuple[tuple[int, float], ...]:
    if type(v) is not list:
        raise _BAD
    out = []
    for p in v:
        if type(p) is not list or len(p) != 2 or type(p[0]) is not int \
                or not -_INT64 <= p[0] < _INT64 or not _number(p[1]):
            raise _BAD
        out.append((p[0], p[1]))
    return tuple(out)


# Scalars an attribute may be as it is. (Any size of integer is harmless here: attributes
# are shown and hashed, never packed or turned into floats.)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(x: Any, depth: int) -> Any:
    """An attribute value as recorded: a scalar, or lists (tuples once read) of them."""
    t = type(x)
    if t in _SCALARS:
        return x
    if t is list and depth < _MAX_ATTR_DEPTH:
        return tuple([_plain(y, depth + 1) for y in x])
    raise _BAD


def _attrs(v: Any) -> dict[str, Any]:
    if type(v) is not dict:
        raise _BAD
    scalars = _SCALARS
    return {k: x if type(x) in scalars else _plain(x, 1)  # (JSON keys are always strings)
            for k, x in v.items()}


_NO_ATTRS: dict[str, Any] = {}

# -- summaries -------------------------------------------------------------------------------
_new = object.__new__
_builder = ev.builder
# Any: the decoders below build summaries slot by slot, a step the type checker cannot follow.
_Summary: Any = ev.Summary
_FullSummary = type(ev.Summary((), "", min=0.0))
_BuildCheap = _builder(_Summary)
_BuildFull = _builder(_FullSummary)
_a2b_base64 = binascii.a2b_base64


def _summaries() -> Callable[[Any], ev.Summary | None]:
    """The summary decoder of one frame: it resolves back-references (see
    ``tracefile._encoder``) and checks every part of a summary.

    The hottest code of decoding (about one summary per event): names are local, and the
    shape cache is looked up inline. A value that is not a list fails on its own: a dict
    or a string unpacks into strings, which are no shape."""
    seen: list[ev.Summary] = []
    append = seen.append
    a2b, whole, new, cheap, full, shapes, new_shape = _a2b_base64, WHOLE, _new, _BuildCheap, \
        _BuildFull, _SHAPES, _new_shape
    BAD, Cheap, Full = _BAD, _Summary, _FullSummary

    def summary(v: Any) -> ev.Summary | None:
        if v is None:
            return None
        if type(v) is int:
            if v < 0:
                raise IndexError(f"summary reference {v}")
            return seen[v]
        n = len(v)
        if n == 3:  # packed (see tracefile._pack_full)
            shape, dtype, text = v
            data = a2b(text, strict_mode=True)  # (TypeError unless a string)
            vals = whole[data[1]].unpack(data)  # struct.error unless the sizes agree
            mask, _, nan, inf = vals[:4]
            # (bits 5 and 6 of the mask mean nothing; counts are never negative)
            if mask & 0x60 or (nan | inf) < 0 or type(dtype) is not str:
                raise BAD
            s: Any = new(full)
            t = shapes.get(tuple(shape)) if type(shape) is list else None
            s.shape = new_shape(shape) if t is None else t
            s.dtype = dtype
            s.nan, s.inf, s.min, s.max, s.mean, s.std, s.norm = vals[2:9]
            s.preview = vals[9:]
            s.sampled = mask > 127
            s.__class__ = Full
            if mask & 31:
                s = _masked(s, mask)
        elif n == 6:
            shape, dtype, norm, nan, inf, sampled = v
            if not (type(dtype) is str and (type(norm) is float or norm is None)
                    and type(nan) is int and type(inf) is int and (nan | inf) >= 0
                    and type(sampled) is bool):
                raise BAD
            s = new(cheap)
            t = shapes.get(tuple(shape)) if type(shape) is list else None
            s.shape = new_shape(shape) if t is None else t
            s.dtype = dtype
            s.norm = norm
            s.nan = nan
            s.inf = inf
            s.sampled = sampled
            s.__class__ = Cheap
        elif n == 11:
            s = _long_summary(v)
        else:
            raise BAD
        append(s)
        return s

    summary.seen = seen  # type: ignore[attr-defined]  # (for error messages)
    return summary


def _long_summary(v: list[Any]) -> ev.Summary:
    """A summary written as all eleven fields (an older or a foreign writer; rare)."""
    shape, dtype, mn, mx, mean, std, norm, nan, inf, preview, sampled = v
    stats_ok = all(x is None or type(x) is float for x in (mn, mx, mean, std, norm))
    if not (stats_ok and type(dtype) is str and type(nan) is int and 0 <= nan < _INT64
            and type(inf) is int and 0 <= inf < _INT64 and type(sampled) is bool
            and type(preview) is list and all(type(x) is float for x in preview)):
        raise _BAD
    return _Summary(_shape(shape), dtype, mn, mx, mean, std, norm, nan, inf, tuple(preview),
                    sampled)


def _masked(s: ev.Summary, mask: int) -> ev.Summary:
    """``s`` with the statistics flagged as None in ``mask`` set so (rare: NaN-free data has
    them all); a summary left with no min/max/mean/std/preview is a cheap one."""
    stats = [None if mask & (1 << i) else v
             for i, v in enumerate((s.min, s.max, s.mean, s.std, s.norm))]
    return _Summary(s.shape, s.dtype, *stats, s.nan, s.inf, s.preview, s.sampled)


# -- one generated decoder per event kind ----------------------------------------------------
# What each field must hold, by name (a name means the same in every kind of event), as the
# test the generated decoder makes ("{}" is the value; lo..hi the frame's iterations) and
# the words an error message uses.
_TESTS: dict[str, tuple[str, str]] = {
    "count": ("type({0}) is int and 0 <= {0} < M", "a non-negative 64-bit integer"),
    "index": ("type({0}) is int and {0} >= 0", "a non-negative integer"),
    "int": ("type({0}) is int", "an integer"),
    "iteration": ("type({0}) is int and lo <= {0} <= hi", "an iteration in the frame's range"),
    "bool": ("type({0}) is bool", "true or false"),
    "str": ("type({0}) is str", "a string"),
    "number": ("(type({0}) is float or (type({0}) is int and -M <= {0} < M))", "a number"),
    # Tensor ids: their sum is one C loop that fails (or turns float) on anything but
    # integers; a bool is taken as the 0 or 1 it is. (Inlined: ops and backward steps,
    # most of a trace, have such a list.)
    "ids": ("type({0}) is list and type(sum({0})) is int", "a list of integers"),
}
# An upper bound only where a value is packed into 64 bits (a seq, when a trace is saved
# again) or turned into a float (a duration, by every display of it): ids, lines and counts
# of any size are only compared, hashed and printed. (Each test costs decoding speed.)
_FIELD_TESTS = {
    "seq": "count", "duration_ns": "count", "iteration": "iteration",
    "at_seq": "index", "line": "index", "node_count": "index", "call": "index",
    "parent": "index", "group_seq": "index",
    "tensor": "int", "output": "int", "node": "int", "root": "int", "status": "int",
    "schema_version": "int", "inputs": "ids", "grad_node": "int", "outputs": "ids",
    "next_nodes": "ids", "rank": "int", "world_size": "int",
    "requires_grad": "bool", "is_param": "bool", "is_leaf": "bool", "grad_enabled": "bool",
    "retain_graph": "bool",
    "created": "number", "lr": "number", "time": "number",
}
_STRING_FIELDS = ("dyngraph_version", "script", "stats", "values", "iteration_mode", "name",
                  "dtype", "grad_fn",
                  "op", "module", "file", "function", "optimizer", "structure_key", "reason",
                  "description", "stream", "text", "type", "message", "traceback",
                  "numpy_version", "what", "compile_id", "frame", "detail", "stack", "input",
                  "run_id", "group")
_FIELD_TESTS.update(dict.fromkeys(_STRING_FIELDS, "str"))
# Fields converted (and checked) by a function instead; "{}" is the value, S the frame's
# summary decoder.
_CONVERT: dict[str, str] = {
    "shape": "_shape({})",  # (inlined by _make_decoder)
    "inputs": "tuple({})",  # (checked by its test)
    "argv": "_strings({})",
    "summary": "S({})",
    "grad_output": "S({})",
    "result": "S({})",
    "grad_inputs": "tuple(map(S, {}))",  # (the test makes it a list)
    "grad_outputs": "tuple(map(S, {}))",  # (likewise)
    "outputs": "tuple({})",  # (checked by its test, as inputs)
    "next_nodes": "tuple({})",
    "updates": "_updates({})",
    # most ops have none: they share one empty dict
    "attrs": "_NO_ATTRS if type({0}) is dict and not {0} else _attrs({0})",
    "array": "decode_array({})",
}


_SUMMARY_LISTS = ("grad_inputs", "grad_outputs")  # fields holding a list of summaries

_NAMESPACE: dict[str, Any] = {
    "M": _INT64, "_new": _new, "_shape": _shape, "_SHAPES_get": _SHAPES.get,
    "_new_shape": _new_shape, "_strings": _strings,
    "_updates": _updates, "_attrs": _attrs, "_NO_ATTRS": _NO_ATTRS,
    "decode_array": decode_array, "_BAD": _BAD,
}


def _make_decoder(cls: type[ev.Event]) -> Any:
    """A function building ``cls`` from its JSON row (``[kind, field, ...]``): one test over
    the plainly typed fields, then each field stored, converted where it needs it."""
    names = [f.name for f in fields(cls)]
    for name in names:
        assert name in _FIELD_TESTS or name in _CONVERT, f"{cls.__name__}.{name} has no test"
    # Locals are named v_<field>: a field may be called "type" (ExceptionRaised's is).
    tests = [_TESTS[_FIELD_TESTS[n]][0].format(f"v_{n}") for n in names if n in _FIELD_TESTS]
    tests += [f"type(v_{n}) is list" for n in names if n in _SUMMARY_LISTS]
    lines = [f"    _, {', '.join('v_' + n for n in names)}, = r",
             f"    if not ({' and '.join(tests)}):",
             "        raise _BAD",
             "    o = _new(B)"]
    for name in names:
        if name == "shape":  # the hottest converter: its cache looked up right here
            lines += ["    t = _SHAPES_get(tuple(v_shape)) if type(v_shape) is list else None",
                      "    o.shape = _new_shape(v_shape) if t is None else t"]
            continue
        value = _CONVERT.get(name, "{}").format(f"v_{name}")
        lines.append(f"    o.{name} = {value}")
    lines += ["    o.__class__ = cls", "    return o"]
    src = "def decode(r, S, lo, hi):\n" + "\n".join(lines) + "\n"
    namespace = dict(_NAMESPACE, B=_builder(cls), cls=cls)
    exec(src, namespace)  # built from our own field names only, never from file content
    decode = namespace["decode"]
    decode.width = len(names) + 1
    decode.names = names
    return decode


_DECODERS = {kind: _make_decoder(cls) for kind, cls in ev.EVENT_TYPES.items()}
# After a file's first event, a header is damage, not a second run: the decoders of every
# later row have none.
_BODY_DECODERS = {kind: d for kind, d in _DECODERS.items() if kind != "header"}
_FIELD_CHECKS = {
    name: eval(f"lambda v, lo, hi: {_TESTS[kind][0].format('v')}", {"M": _INT64})  # noqa: S307
    for name, kind in _FIELD_TESTS.items()
}

_MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, struct.error,
              binascii.Error, TraceFileError)

# Where a row sits decides which kinds it may be: the first event of a file is its header,
# and no other event is one. A live stream (None) takes any kind anywhere.
STREAM, FIRST_FRAME, LATER_FRAME = None, 0, 1


def decode_rows(rows: Any, lo: int = 0, hi: int = _MAX_ITERATION,
                position: int | None = STREAM) -> list[ev.Event]:
    """Events from a decoded JSON array of rows, each event's iteration within lo..hi;
    TraceFileError if they are not events (see ``position`` above)."""
    if type(rows) is not list:
        raise TraceFileError("events frame does not hold a list")
    S = _summaries()
    try:
        # The decoders say nothing about what failed (a wrong row width fails their
        # unpacking, a wrong field their test): that is worked out only once something did.
        if position is STREAM:
            decoders = _DECODERS
            return [decoders[r[0]](r, S, lo, hi) for r in rows]
        decoders = _BODY_DECODERS
        if position != FIRST_FRAME:
            return [decoders[r[0]](r, S, lo, hi) for r in rows]
        if not rows or type(rows[0]) is not list or rows[0][:1] != ["header"]:
            raise TraceFileError("damaged trace (it does not begin with a header)")
        out = [_DECODERS["header"](rows[0], S, lo, hi)]
        out += [decoders[r[0]](r, S, lo, hi) for r in islice(rows, 1, None)]
        return out
    except RecursionError:
        raise TraceFileError("malformed event (nested too deep)") from None
    except _MALFORMED as exc:
        if isinstance(exc, TraceFileError):
            raise
        if _upgrade(rows):
            return decode_rows(rows, lo, hi, position)
        raise _malformed(rows, lo, hi, position, exc) from None


# Fields added since schema 1, at the end of their event's row, by kind: the groups added
# together, in the order added, each with the values an older stream means. A row written
# before the last k groups is padded with them (a schema-1 op ran in no known call; a
# header written before the numpy version was recorded names none, one before schema 4
# ended iterations at backward and is rank 0 of no job; a schema-2 backward step is one
# node per op output).
_ADDED_FIELDS: dict[str, tuple[tuple[object, ...], ...]] = {
    "op": ((0,),),
    "header": (("",), ("backward", 0, 0, "")),
    "backward_step": ((-1, [], [], []),),
}


def _upgrade(rows: list[Any]) -> bool:
    """Pad the rows an older schema wrote short; True if any was."""
    padded = False
    for r in rows:
        if type(r) is list and r and type(r[0]) is str:
            groups = _ADDED_FIELDS.get(r[0], ())
            dec = _DECODERS.get(r[0])
            missing = dec.width - len(r) if dec is not None else 0
            for k in range(1, len(groups) + 1):
                added = [v for group in groups[-k:] for v in group]
                if missing == len(added):
                    r.extend(added)
                    padded = True
                    break
    return padded


def _malformed(rows: list[Any], lo: int, hi: int, position: int | None,
               exc: Exception) -> TraceFileError:
    """The error for the first row of ``rows`` that is not an event."""
    S = _summaries()
    for i, r in enumerate(rows):
        if type(r) is not list or not r:
            return TraceFileError(f"malformed event {i} ({_show(r)} is not a row)")
        kind = r[0]
        dec = _DECODERS.get(kind) if type(kind) is str else None
        if dec is None:
            return TraceFileError(f"unknown event kind {_show(kind)} (event {i})")
        if kind == "header" and (position == LATER_FRAME or (position == FIRST_FRAME and i)):
            return TraceFileError(f"a header in the middle of the trace (event {i})")
        if len(r) != dec.width:
            return TraceFileError(f"{kind} event with {len(r) - 1} fields, expected "
                                  f"{dec.width - 1} (event {i})")
        count = len(S.seen)  # type: ignore[attr-defined]
        try:
            dec(r, S, lo, hi)
        except RecursionError:
            return TraceFileError(f"malformed {kind} event {i} (nested too deep)")
        except _MALFORMED as row_exc:
            what = _what_field(r, lo, hi, count, row_exc)
            return TraceFileError(f"malformed {kind} event {i}: {what}")
    return TraceFileError(f"malformed event ({type(exc).__name__}: {exc})"[:200])


def _what_field(row: list[Any], lo: int, hi: int, count: int, exc: Exception) -> str:
    """Which field of a row that failed to decode is wrong, and what it holds."""
    names = _DECODERS[row[0]].names
    for name, value in zip(names, row[1:], strict=True):
        check = _FIELD_CHECKS.get(name)
        try:
            ok = check is None or check(value, lo, hi)
        except TypeError:  # (sum() of a list that holds a string ...)
            ok = False
        if not ok:
            expected = _TESTS[_FIELD_TESTS[name]][1]
            if name == "iteration":
                expected = f"an iteration in the frame's range {lo}..{hi}"
            return f"{name} is {_show(value)}, expected {expected}"
    for name, value in zip(names, row[1:], strict=True):
        if name in _CONVERT and name not in _SUMMARY_FIELDS:
            try:
                eval(_CONVERT[name].format("v"), dict(_NAMESPACE), {"v": value})  # noqa: S307
            except (*_MALFORMED, RecursionError):
                return f"{name} is {_show(value)}, not a valid {name}"
    bad = _bad_summary_field(names, row, count)
    if bad is not None:
        return f"{bad[0]} is {_show(bad[1])}, not a valid summary (nor a reference to one)"
    return f"{type(exc).__name__}: {exc}"[:160]


_SUMMARY_FIELDS = ("summary", "grad_output", "result", "grad_inputs", "grad_outputs")


def _bad_summary_field(names: list[str], row: list[Any], count: int) -> tuple[str, Any] | None:
    """The first summary field of a row that is not a summary, given ``count`` summaries
    earlier in the frame (a reference must point at one of those or at one before it in
    the row)."""
    for name, value in zip(names, row[1:], strict=True):
        if name not in _SUMMARY_FIELDS:
            continue
        listed = name in _SUMMARY_LISTS
        if listed and type(value) is not list:
            return name, value
        for v in value if listed else [value]:
            if v is None:
                continue
            if type(v) is int:
                if not 0 <= v < count:
                    return name, value
                continue
            try:
                _summaries()(v)
            except (*_MALFORMED, RecursionError):
                return name, value
            count += 1
    return None


def _text(body: bytes | memoryview) -> str:
    """A frame's JSON text. Decoded here, strictly: ``json.loads`` given bytes lets UTF-8
    encoded surrogates through, and a str holding one fails every print and file write."""
    try:
        return str(body, "utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFileError(f"undecodable events frame (not UTF-8 at its byte "
                             f"{exc.start})") from None


def _check_surrogates(text: str, rows: Any) -> None:
    """Refuse half a UTF-16 pair escaped in JSON (``"\\ud800"``): only frames with such
    escapes at all (JSON writes emoji as pairs of them) pay for the check."""
    if "\\u" not in text:  # (one scan; most frames have no escape at all)
        return
    if "\\ud" not in text and "\\uD" not in text:
        return
    try:
        json.dumps(rows, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise TraceFileError("text with a lone UTF-16 surrogate (not valid Unicode)") from None
    except (ValueError, RecursionError):
        pass  # (a frame that bad is refused by decode_rows, with a better message)


def decode_events_payload(payload: bytes | memoryview,
                          position: int | None = STREAM) -> list[ev.Event]:
    """The events of an events frame's payload (metadata included). In a file (a
    ``position``) they are checked against that metadata: the count, the iteration range
    (every event inside it, the first and last events at its ends) and the first seq."""
    if len(payload) < EVENTS_META.size:
        raise TraceFileError("events frame too short")
    count, lo, hi, _flags, first_seq = EVENTS_META.unpack_from(payload)
    if position is STREAM:  # our own child's channel: iterations as they come
        lo, hi = 0, _MAX_ITERATION
    text = _text(memoryview(payload)[EVENTS_META.size:])
    # Priced before it is parsed: each event is a few dozen brackets and commas at most.
    Allowance(count, len(payload)).charge(json_cost(text), "JSON")
    # A frame makes thousands of lists and objects that all live on (the rows until they are
    # events, the events in the caller's hands): the cyclic collector would walk them over
    # and over while they are built, for nothing, since they hold no cycles. It runs again
    # after the frame (``dyngraph.capture.collector``: several threads may pause it at once).
    with collector.paused():
        try:
            rows = json.loads(text)
        except RecursionError:
            raise TraceFileError("undecodable events frame (nested too deep)") from None
        except ValueError as exc:
            raise TraceFileError(f"undecodable events frame ({exc})"[:200]) from None
        _check_surrogates(text, rows)
        events = decode_rows(rows, lo, hi, position)
    _check_against_meta(events, count, lo, hi, first_seq, position)
    return events


def _check_against_meta(events: list[ev.Event], count: int, lo: int, hi: int,
                        first_seq: int, position: int | None) -> None:
    if len(events) != count:
        raise TraceFileError(f"events frame says {count} events but holds {len(events)}")
    if position is STREAM or not events:
        return
    if events[0].iteration != lo or events[-1].iteration != hi:
        raise TraceFileError(
            f"events frame says iterations {lo}..{hi} but holds {events[0].iteration}.."
            f"{events[-1].iteration}")
    if events[0].seq != first_seq:
        raise TraceFileError(f"events frame says it starts at seq {first_seq} but its first "
                             f"event has seq {events[0].seq}")
    if lo != hi:  # (rare: a frame of one iteration cannot go backwards)
        previous = lo
        for e in events:
            if e.iteration < previous:
                raise TraceFileError(f"events frame goes back from iteration {previous} to "
                                     f"{e.iteration}")
            previous = e.iteration


def decode_message_payload(payload: bytes | memoryview) -> dict[str, Any]:
    try:
        message = json.loads(bytes(payload))
    except RecursionError:
        raise TraceFileError("undecodable control frame (nested too deep)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceFileError(f"undecodable control frame ({exc})"[:200]) from None
    if type(message) is not dict:
        raise TraceFileError("control frame does not hold an object")
    return message
