"""dyngraph's own checkpoint format: a JSON description of the saved object, then the raw
bytes of its tensors. Reading it builds only plain values and tensors, so loading a file
from a stranger runs no code (unlike pickle, which PyTorch's format is built on).

Layout::

    b"\\x93DGSAVE\\n"           magic (8 bytes)
    u64 little-endian         length of the header
    header                    UTF-8 JSON: {"format": 1, "root": VALUE, "tensors": [ENTRY...]}
    blob                      the tensors' bytes, little-endian, C order, one after another

A VALUE is a JSON null, bool, number or string, or a one-key object: {"list": [VALUE...]},
{"tuple": [...]}, {"set": [...]}, {"dict": [[KEY, VALUE]...]}, {"odict": [...]} (an
OrderedDict, as state dicts are), {"tensor": i} (the i-th ENTRY; two references to one
tensor load as one tensor, so tied weights stay tied), {"size": [...]}, {"dtype": name},
{"bytes": base64}, {"module": ...} (a whole model: ``modules.py``). An ENTRY is {"dtype",
"shape", "offset", "nbytes", "kind"} with kind "tensor", "parameter" (a Parameter) or
"ndarray", and "requires_grad": true for leaves that require grad.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections import OrderedDict
from typing import Any

import numpy as np

from ..engine import dtypes
from ..engine.tensor import Size, Tensor, _wrap

MAGIC = b"\x93DGSAVE\n"
FORMAT = 1
DTYPES = ("float32", "float64", "float16", "int64", "int32", "uint8", "bool")
MAX_DEPTH = 200  # nesting deeper than this is not a checkpoint anyone wrote


class SerializationError(RuntimeError):
    """A file that cannot be loaded (damaged, foreign, or holding code), or an object that
    cannot be saved; the message is one line."""


# -- writing ------------------------------------------------------------------------------
class _Writer:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.chunks: list[bytes] = []
        self.offset = 0
        self.seen: dict[int, int] = {}  # id(array) -> entry index
        self.keep: list[Any] = []  # keeps seen objects alive so their ids stay unique

    def value(self, obj: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise SerializationError(f"save: nesting deeper than {MAX_DEPTH} levels")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            value = float(obj)
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(obj, Tensor):
            kind = "parameter" if getattr(obj, "_is_param", False) else "tensor"
            return {"tensor": self.array(obj._array, kind, obj.requires_grad and obj.is_leaf)}
        if isinstance(obj, np.ndarray):
            return {"tensor": self.array(obj, "ndarray", False)}
        if isinstance(obj, dtypes.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, Size):
            return {"size": [int(d) for d in obj]}
        if isinstance(obj, (bytes, bytearray)):
            return {"bytes": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, (list, tuple, set, frozenset)):
            tag = "list" if isinstance(obj, list) else "tuple" if isinstance(obj, tuple) else "set"
            return {tag: [self.value(x, depth + 1) for x in obj]}
        if isinstance(obj, dict):
            tag = "odict" if isinstance(obj, OrderedDict) else "dict"
            return {tag: [[self.value(k, depth + 1), self.value(v, depth + 1)]
                          for k, v in obj.items()]}
        if _is_module(obj):
            from . import modules  # (it imports this module)

            return modules.describe(self, obj, depth)
        raise SerializationError(
            f"save: cannot store a {type(obj).__module__}.{type(obj).__name__} object: "
            "dyngraph saves tensors, numbers, strings, None and lists, tuples and dicts of "
            "them, and whole models (save model.state_dict() for a state dict)")

    def array(self, array: np.ndarray, kind: str, requires_grad: bool) -> int:
        key = id(array)
        if key in self.seen:
            return self.seen[key]
        name = str(array.dtype)
        if name not in DTYPES:
            raise SerializationError(f"save: dyngraph cannot store arrays of dtype {name}")
        data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        entry = {"dtype": name, "shape": list(array.shape), "offset": self.offset,
                 "nbytes": len(data), "kind": kind}
        if requires_grad:
            entry["requires_grad"] = True
        self.entries.append(entry)
        self.chunks.append(data)
        self.offset += len(data)
        self.seen[key] = len(self.entries) - 1
        self.keep.append(array)
        return self.seen[key]


def dumps(obj: Any) -> bytes:
    """The bytes of ``obj`` in dyngraph's format."""
    writer = _Writer()
    root = writer.value(obj)
    header = json.dumps({"format": FORMAT, "root": root, "tensors": writer.entries},
                        separators=(",", ":")).encode()
    return b"".join([MAGIC, struct.pack("<Q", len(header)), header, *writer.chunks])


def _is_module(obj: Any) -> bool:
    from ..nn.module import Module

    return isinstance(obj, Module)


# -- reading ------------------------------------------------------------------------------
def loads(data: bytes, where: str, weights_only: bool = True) -> Any:
    """Rebuild the object saved in ``data`` (the contents of ``where``, named in errors).
    A whole model is rebuilt only when ``weights_only`` is False (that imports its class)."""
    if len(data) < len(MAGIC) + 8:
        raise SerializationError(f"load: {where} is cut short (a damaged dyngraph checkpoint)")
    (length,) = struct.unpack_from("<Q", data, len(MAGIC))
    start = len(MAGIC) + 8
    if length > len(data) - start:
        raise SerializationError(f"load: {where} is cut short (a damaged dyngraph checkpoint)")
    try:
        header = json.loads(data[start:start + length].decode())
    except (ValueError, RecursionError) as e:
        raise SerializationError(f"load: {where} has a damaged header ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        version = header.get("format") if isinstance(header, dict) else None
        raise SerializationError(f"load: {where} is in checkpoint format {version!r}; this "
                                 f"dyngraph reads format {FORMAT}")
    reader = _Reader(memoryview(data)[start + length:], header.get("tensors"), where)
    reader.weights_only = weights_only
    return reader.value(header.get("root"), 0)


class _Reader:
    def __init__(self, blob: memoryview, entries: Any, where: str) -> None:
        if not isinstance(entries, list):
            raise SerializationError(f"load: {where} has a damaged header (no tensor table)")
        self.blob = blob
        self.entries = entries
        self.where = where
        self.made: dict[int, Any] = {}
        self.weights_only = True

    def fail(self, what: str) -> SerializationError:
        return SerializationError(f"load: {self.where} is damaged ({what})")

    def value(self, v: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if not isinstance(v, dict) or len(v) != 1:
            raise self.fail(f"unexpected value {str(v)[:40]}")
        ((tag, body),) = v.items()
        items = body if isinstance(body, list) else None
        if tag in ("list", "tuple", "set") and items is not None:
            values = [self.value(x, depth + 1) for x in items]
            return values if tag == "list" else tuple(values) if tag == "tuple" else set(values)
        if tag in ("dict", "odict") and items is not None:
            out: dict[Any, Any] = OrderedDict() if tag == "odict" else {}
            for pair in items:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.fail("a dict item is not a key and a value")
                out[self.key(pair[0], depth)] = self.value(pair[1], depth + 1)
            return out
        if tag == "tensor" and isinstance(body, int) and not isinstance(body, bool):
            return self.tensor(body)
        if tag == "module":
            if self.weights_only:
                name = body.get("class") if isinstance(body, dict) else None
                raise SerializationError(
                    f"load: {self.where} holds a whole model ({name}); rebuilding it imports "
                    "and runs that class's code, so pass weights_only=False if you trust the "
                    "file (as PyTorch requires), or save model.state_dict() instead")
            from . import modules

            return modules.rebuild(self, body, depth)
        if tag == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "size" and items is not None and all(isinstance(d, int) for d in items):
            return Size(items)
        if tag == "dtype" and body in DTYPES:
            return dtypes.dtype_of(np.dtype(body))
        if tag == "bytes" and isinstance(body, str):
            try:
                return base64.b64decode(body, validate=True)
            except ValueError:
                raise self.fail("bad bytes") from None
        raise self.fail(f"unknown value tag {tag!r}")

    def key(self, k: Any, depth: int) -> Any:
        key = self.value(k, depth + 1)
        try:
            hash(key)
        except TypeError:
            raise self.fail("a dict key is not hashable") from None
        return key

    def tensor(self, index: int) -> Any:
        if index in self.made:
            return self.made[index]
        if not 0 <= index < len(self.entries) or not isinstance(self.entries[index], dict):
            raise self.fail(f"tensor {index} is not in the tensor table")
        entry = self.entries[index]
        name, shape, offset, nbytes = (entry.get(k) for k in ("dtype", "shape", "offset",
                                                              "nbytes"))
        if name not in DTYPES:
            raise self.fail(f"tensor {index} has dtype {name!r}")
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise self.fail(f"tensor {index} has shape {shape!r}")
        dtype = np.dtype(name).newbyteorder("<")
        count = math.prod(shape)
        if (not isinstance(offset, int) or not isinstance(nbytes, int) or offset < 0
                or nbytes != count * dtype.itemsize or offset + nbytes > len(self.blob)):
            raise self.fail(f"tensor {index} lies outside the file")
        array = np.frombuffer(self.blob[offset:offset + nbytes], dtype=dtype).reshape(shape)
        array = array.astype(dtype.newbyteorder("="), copy=True)  # writable, native order
        made = self.make(array, entry)
        self.made[index] = made
        return made

    def make(self, array: np.ndarray, entry: dict[str, Any]) -> Any:
        kind = entry.get("kind")
        requires_grad = entry.get("requires_grad") is True and array.dtype.kind == "f"
        if kind == "ndarray":
            return array
        if kind == "parameter":
            from ..nn.parameter import Parameter

            return Parameter(_wrap(array), requires_grad=requires_grad)
        if kind == "tensor":
            return _wrap(array, requires_grad)
        raise self.fail(f"unknown tensor kind {kind!r}")
