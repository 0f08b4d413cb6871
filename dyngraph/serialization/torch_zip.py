"""Read a checkpoint PyTorch wrote (``torch.save``: a zip holding ``data.pkl`` and one file
per storage) without running any of its code.

``data.pkl`` is a pickle, and unpickling can call any importable function. dyngraph never
unpickles: ``pickle_reader.py`` runs the pickle's opcodes itself, and the only names it can
reach are a fixed table of dyngraph's own builders (tensors, Parameters, OrderedDict,
torch.Size, dtypes, sets, bytes): nothing is imported, and any other name, a whole
``nn.Module`` for example, stops the load with a line naming it. That is what PyTorch's own
``weights_only=True`` loader allows, implemented without PyTorch or ``pickle``.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..engine import dtypes
from ..engine.tensor import Size, _wrap
from .format import SerializationError
from .pickle_reader import Builder, DamagedPickle, read_pickle

_STORAGES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "LongStorage": "int64", "IntStorage": "int32", "ByteStorage": "uint8",
    "BoolStorage": "bool",
}
_UNSUPPORTED_STORAGES = {"BFloat16Storage": "bfloat16", "ShortStorage": "int16",
                         "CharStorage": "int8", "ComplexFloatStorage": "complex64",
                         "ComplexDoubleStorage": "complex128"}
_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
           "float16": "float16", "half": "float16", "int64": "int64", "long": "int64",
           "int32": "int32", "int": "int32", "uint8": "uint8", "bool": "bool"}


class _StorageType:
    """What ``torch.FloatStorage`` stands for in a pickle: the dtype of a storage."""

    def __init__(self, dtype: str) -> None:
        self.dtype = np.dtype(dtype)


def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode``, which protocol-2 pickles use to spell bytes objects."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise SerializationError(f"load: refused _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


def _empty_bytes() -> bytes:
    """``bytes()``: how a protocol-2 pickle spells ``b""``."""
    return b""


def _rebuild_tensor(storage: np.ndarray, offset: int, size: Any, stride: Any,
                    requires_grad: bool = False, backward_hooks: Any = None,
                    metadata: Any = None) -> Any:
    if not isinstance(storage, np.ndarray) or not isinstance(size, tuple) \
            or not isinstance(stride, tuple):
        raise TypeError("a tensor needs a storage, a size and a stride")
    array = _strided(storage, offset, tuple(size), tuple(stride))
    return _wrap(array, bool(requires_grad) and array.dtype.kind == "f")


def _rebuild_parameter(data: Any, requires_grad: bool, backward_hooks: Any,
                       state: Any = None) -> Any:
    """``Parameter(data, requires_grad)``. The state PyTorch passes (attributes the user
    set on the parameter) is not restored: setting names from a file on an object could
    hide its methods."""
    from ..engine.tensor import Tensor
    from ..nn.parameter import Parameter

    if type(data) is not Tensor:
        raise TypeError("a Parameter wraps a tensor")
    return Parameter(data, requires_grad=bool(requires_grad) and data._array.dtype.kind == "f")


def _ordered_dict(items: Any = ()) -> OrderedDict[Any, Any]:
    if not isinstance(items, (list, tuple, dict)):
        raise TypeError("OrderedDict of something other than pairs")
    return OrderedDict(items)


def _set(items: Any = ()) -> set[Any]:
    if not isinstance(items, (list, tuple)):
        raise TypeError("set of something other than a list")
    return set(items)


def _frozenset(items: Any = ()) -> frozenset[Any]:
    if not isinstance(items, (list, tuple)):
        raise TypeError("frozenset of something other than a list")
    return frozenset(items)


def _size(dims: Any = ()) -> Size:
    if not isinstance(dims, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError("torch.Size of something other than ints")
    return Size(dims)


def _strided(storage: np.ndarray, offset: int, shape: tuple[int, ...],
             stride: tuple[int, ...]) -> np.ndarray:
    """The tensor's elements in the storage, as a view (so tensors saved sharing a storage,
    a weight and a slice of it say, share it here too, as in PyTorch). Bounds are checked
    first: a damaged file cannot make us read outside the storage."""
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (offset, *shape, *stride))
    if not ints or len(shape) != len(stride) or offset < 0 or min(shape, default=0) < 0 \
            or min(stride, default=0) < 0:
        raise SerializationError("load: a tensor in the checkpoint has a damaged layout")
    count = math.prod(shape)
    if count == 0:
        return np.zeros(shape, storage.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    if last >= storage.size:
        raise SerializationError("load: a tensor in the checkpoint lies outside its storage")
    contiguous, step = [], 1
    for n in reversed(shape):
        contiguous.append(step)
        step *= n
    if tuple(reversed(contiguous)) == stride or count == 1:
        return storage[offset:offset + count].reshape(shape)
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], shape, [s * item for s in stride])


_BUILDERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): _ordered_dict,
    ("builtins", "set"): _set,
    ("builtins", "frozenset"): _frozenset,
    ("builtins", "bytes"): _empty_bytes,
    ("_codecs", "encode"): _latin1_encode,
    ("torch", "Size"): _size,
}
_BUILDER_OF = {key: Builder(".".join(key), function) for key, function in _BUILDERS.items()}


def _allowed(module: str, name: str) -> Any:
    """What a global of the pickle stands for: a builder, a dtype or a storage type;
    None for every name dyngraph will not build."""
    if (module, name) in _BUILDER_OF:
        return _BUILDER_OF[module, name]
    if module == "torch":
        if name in _STORAGES:
            return _StorageType(_STORAGES[name])
        if name in _UNSUPPORTED_STORAGES:
            raise SerializationError(
                f"load: the checkpoint holds {_UNSUPPORTED_STORAGES[name]} tensors: dyngraph "
                f"does not implement {_UNSUPPORTED_STORAGES[name]} tensors")
        if name in _DTYPES:
            return dtypes.dtype_of(np.dtype(_DTYPES[name]))
    return None


class _Checkpoint:
    """One ``data.pkl`` being read: resolves its globals and its storages."""

    def __init__(self, archive: zipfile.ZipFile, prefix: str, where: str,
                 big_endian: bool) -> None:
        self.archive = archive
        self.prefix = prefix
        self.where = where
        self.big_endian = big_endian
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        found = _allowed(module, name)
        if found is None:
            what = _printable(f"{module}.{name}")
            hint = (" (a whole model saved with torch.save(model): save and load "
                    "model.state_dict() instead)") if module.startswith("torch.nn") or \
                "__main__" in module else ""
            raise SerializationError(f"load: {self.where} holds a {what} object, which dyngraph "
                                     f"will not run; it loads tensors, numbers, strings and "
                                     f"containers of them{hint}")
        return found

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)):
            raise SerializationError(f"load: {self.where} refers to storage {_describe(pid)}, "
                                     "which dyngraph cannot read")
        storage_type, key, numel = pid[1], pid[2], pid[4]
        if key not in self.storages:
            try:
                raw = self.archive.read(f"{self.prefix}data/{key}")
            except KeyError:
                raise SerializationError(f"load: {self.where} lacks storage "
                                         f"{_printable(key)} (damaged)") from None
            dtype = storage_type.dtype
            if len(raw) % dtype.itemsize or (isinstance(numel, int) and
                                             len(raw) != numel * dtype.itemsize):
                raise SerializationError(f"load: storage {_printable(key)} of {self.where} "
                                         "has the wrong size (damaged)")
            # Native byte order once per storage, so tensors sharing it still share it.
            storage = np.frombuffer(bytearray(raw), dtype=dtype.newbyteorder(
                ">" if self.big_endian else "<"))
            self.storages[key] = storage if storage.dtype.isnative else storage.astype(dtype)
        return self.storages[key]


def load_torch_zip(stream: io.BufferedIOBase | io.BytesIO, where: str) -> Any:
    """Load a PyTorch zip checkpoint through the restricted pickle reader."""
    try:
        archive = zipfile.ZipFile(stream)
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl")
                   and n.count("/") == 1]
        if not pickles:
            raise SerializationError(f"load: {where} is a zip file but not a PyTorch "
                                     "checkpoint (no data.pkl)")
        prefix = pickles[0][:-len("data.pkl")]
        names = set(archive.namelist())
        big_endian = f"{prefix}byteorder" in names and \
            archive.read(f"{prefix}byteorder") == b"big"
        checkpoint = _Checkpoint(archive, prefix, where, big_endian)
        return read_pickle(archive.read(pickles[0]), checkpoint.find_class,
                           checkpoint.persistent_load)
    except SerializationError:
        raise
    except DamagedPickle as e:
        raise SerializationError(f"load: {where} is a damaged PyTorch checkpoint "
                                 f"({_one_line(str(e))})") from None
    except (zipfile.BadZipFile, EOFError, ValueError, TypeError, IndexError, KeyError,
            OSError, NotImplementedError, RecursionError, MemoryError) as e:
        raise SerializationError(f"load: {where} is a damaged PyTorch checkpoint "
                                 f"({type(e).__name__}: {_one_line(str(e))})") from None


def _printable(name: str) -> str:
    """A name from the file as it is, unless a damaged file made it span lines or pages."""
    return name if name.isprintable() and len(name) <= 100 else repr(name[:100])


def _describe(pid: Any) -> str:
    """A persistent id in a message: short values as they are, others by their type (a
    damaged id can hold a whole tensor, whose repr spans lines)."""
    def short(value: Any) -> str:
        text = repr(value)
        return text if isinstance(value, (str, int, float, type(None))) and len(text) < 24 \
            else type(value).__name__
    items = pid if isinstance(pid, tuple) else (pid,)
    text = ", ".join(short(v) for v in items[:6]) + (", ..." if len(items) > 6 else "")
    return _one_line(f"({text})" if isinstance(pid, tuple) else text, 80)


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
