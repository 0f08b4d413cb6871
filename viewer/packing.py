"""The page's parts made smaller on their way to the browser, and back.

A 50,000-node trace's ``index.html`` was 44 MB: the browser spent most of its first
second reading and parsing text the page could rebuild. ``pack_structure`` and
``pack_values`` leave out what follows from the rest and store numbers as bytes; the page
(``static/sources.js``) and ``unpack_*`` here turn a packed part back into the very part
``ViewerData`` made, so nothing past the transport knows:

- a structure's ``key`` column (``module\\twhat\\tfile:line\\toccurrence``, 2.9 MB) becomes
  the occurrence numbers alone (``keyOcc``): the rest is in other columns;
- its tree's ``scope_of`` (one call key per node, 3 MB) becomes indexes into the tree's
  calls (``scopeIdx``), the calls become columns (``callCols``: a call's key, label and
  children follow from its path, number and parent), and ``sig`` (16-digit numbers)
  indexes into a table (``sigIdx``, ``sigTable``);
- a values part's statistics columns become little-endian float32 bytes in base64
  (``{"$f32": ..., "$none": ...}``, ``$none`` marking the nodes without a summary).
  The part holds each statistic to 6 significant digits, which float32 keeps (it holds
  7): formatting it back to 6 digits gives the same number. A column with a number
  float32 cannot hold (beyond 3e38, or below 1e-37) stays as it was.

Each packing is checked: a column that would not come back exactly stays as it was.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

_STATS = ("norm", "min", "max", "mean", "std")
FLOAT_COLUMNS = tuple(p + s for p in ("v", "g") for s in _STATS)
_TINY, _HUGE = 1e-37, 3e38
_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


# -- structures ------------------------------------------------------------------------------
def pack_structure(part: dict[str, Any]) -> dict[str, Any]:
    out = dict(part)
    occurrences = _occurrences(part)
    if occurrences is not None:
        del out["key"]
        out["keyOcc"] = occurrences
    tree = part["tree"]
    index = {call["key"]: k for k, call in enumerate(tree["calls"])}
    if all(s == "" or s in index for s in tree["scope_of"]):
        packed = {k: v for k, v in tree.items() if k != "scope_of"}
        packed["scopeIdx"] = [index[s] if s else -1 for s in tree["scope_of"]]
        columns = _pack_calls(tree["calls"], index)
        if columns is not None:
            del packed["calls"]
            packed["callCols"] = columns
        out["tree"] = packed
    table: dict[int, int] = {}
    out["sigIdx"] = [table.setdefault(s, len(table)) for s in part["sig"]]
    out["sigTable"] = list(table)
    del out["sig"]
    return out


def unpack_structure(part: dict[str, Any]) -> dict[str, Any]:
    if "sigIdx" not in part:
        return part
    out = dict(part)
    table = out.pop("sigTable")
    out["sig"] = [table[k] for k in out.pop("sigIdx")]
    tree = out["tree"]
    if "scopeIdx" in tree:
        calls = tree["calls"] if "calls" in tree else _unpack_calls(tree["callCols"])
        unpacked = {k: v for k, v in tree.items() if k not in ("scopeIdx", "callCols")}
        unpacked["calls"] = calls
        unpacked["scope_of"] = [calls[k]["key"] if k >= 0 else "" for k in tree["scopeIdx"]]
        out["tree"] = unpacked
    if "keyOcc" in out:
        out["key"] = _keys(out, out.pop("keyOcc"))
    return out


_CALL_NUMBERS = ("first", "size", "direct")


def _pack_calls(calls: list[dict[str, Any]], index: dict[str, int]
                ) -> dict[str, list[Any]] | None:
    """The module tree's calls as columns (11,000 calls: 2.6 MB as objects): each call's
    key, label and children follow from its path, its number and its parent (as
    ``folding.ModuleTree.build`` makes them); None if some call does not."""
    paths: dict[str, int] = {}
    out: dict[str, list[Any]] = {"path": [], "k": [], "parent": [], "run": []}
    out.update({name: [] for name in _CALL_NUMBERS})
    for call in calls:
        path, _, k = call["key"].rpartition("#")
        if not path or not k.isdigit() or path != call["path"] or (
                call["parent"] and index.get(call["parent"], len(out["k"])) >= len(out["k"])):
            return None  # (a parent comes before its children)
        out["path"].append(paths.setdefault(path, len(paths)))
        out["k"].append(int(k))
        out["parent"].append(index[call["parent"]] if call["parent"] else -1)
        out["run"].append(call["run"])
        for name in _CALL_NUMBERS:
            out[name].append(call[name])
    out["pathTable"] = list(paths)
    runs: dict[str, int] = {}
    out["run"] = [runs.setdefault(r, len(runs)) for r in out["run"]]
    out["runTable"] = list(runs)
    return out if _unpack_calls(out) == calls else None


def _unpack_calls(cols: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """``_pack_calls`` undone (``sources.js`` does the same)."""
    paths, runs = cols["pathTable"], cols["runTable"]
    counts: dict[str, int] = {}
    for p in cols["path"]:
        counts[paths[p]] = counts.get(paths[p], 0) + 1
    calls: list[dict[str, Any]] = []
    for c, p in enumerate(cols["path"]):
        path, k, parent = paths[p], cols["k"][c], cols["parent"][c]
        calls.append({"key": f"{path}#{k}", "path": path,
                      "parent": calls[parent]["key"] if parent >= 0 else "",
                      "first": cols["first"][c], "size": cols["size"][c],
                      "direct": cols["direct"][c], "children": [],
                      "run": runs[cols["run"][c]],
                      "label": f"{path} #{k}" if counts[path] > 1 else path})
        if parent >= 0:
            calls[parent]["children"].append(calls[c]["key"])
    return calls


def _keys(part: dict[str, Any], occurrences: list[int]) -> list[str]:
    """What ``viewer.data._key_text`` made of each node, rebuilt from the columns (the page
    does the same in ``sources.js``)."""
    t = part["tables"]
    kinds, ops, modules, files = t["kind"], t["op"], t["module"], t["file"]
    out = []
    for i, occ in enumerate(occurrences):
        what = ops[part["op"][i]] or part["name"][i] or kinds[part["kind"][i]]
        out.append(f"{modules[part['module'][i]]}\t{what}\t{files[part['file'][i]]}:"
                   f"{part['line'][i]}\t{occ}")
    return out


def _occurrences(part: dict[str, Any]) -> list[int] | None:
    """Each node's occurrence from its key, if every key is what the columns rebuild."""
    try:
        occurrences = [int(k.rpartition("\t")[2]) for k in part["key"]]
    except ValueError:
        return None
    return occurrences if _keys(part, occurrences) == part["key"] else None


# -- values ----------------------------------------------------------------------------------
def pack_values(part: dict[str, Any]) -> dict[str, Any]:
    out = dict(part)
    for name in FLOAT_COLUMNS:
        column = part.get(name)
        if column is not None:
            packed = _pack_floats(column)
            if packed is not None:
                out[name] = packed
    return out


def unpack_values(part: dict[str, Any]) -> dict[str, Any]:
    return {k: _unpack_floats(v) if isinstance(v, dict) and "$f32" in v else v
            for k, v in part.items()}


def _pack_floats(column: list[Any]) -> dict[str, str] | None:
    none = [v is None for v in column]
    try:
        numbers = np.array([_TEXT[v] if isinstance(v, str) else (0.0 if v is None else v)
                            for v in column], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return None
    size = np.abs(numbers)
    finite = np.isfinite(numbers)
    if np.any(finite & (size != 0) & ((size < _TINY) | (size > _HUGE))):
        return None
    out = {"$f32": base64.b64encode(numbers.astype("<f4").tobytes()).decode("ascii")}
    if any(none):
        out["$none"] = base64.b64encode(bytes(none)).decode("ascii")
    return out


def _unpack_floats(packed: dict[str, str]) -> list[Any]:
    numbers = np.frombuffer(base64.b64decode(packed["$f32"]), dtype="<f4")
    none = base64.b64decode(packed["$none"]) if "$none" in packed else bytes(len(numbers))
    out: list[Any] = []
    for v, missing in zip(numbers.tolist(), none, strict=True):
        if missing:
            out.append(None)
        elif math.isfinite(v):
            out.append(float(f"{v:.6g}"))
        else:
            out.append("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
    return out
