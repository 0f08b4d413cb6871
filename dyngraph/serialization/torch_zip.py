"""Read a checkpoint PyTorch wrote (``torch.save``: a zip holding ``data.pkl`` and one file
per storage) without running any of its code.

``data.pkl`` is a pickle, and unpickling can call any importable function. Here the pickle
machine may only reach a fixed table of dyngraph's own builders (tensors, Parameters,
OrderedDict, torch.Size, dtypes, sets, bytes): nothing is imported, and any other name,
a whole ``nn.Module`` for example, stops the load with a line naming it. That is what
PyTorch's own ``weights_only=True`` loader allows, implemented without PyTorch.
"""

from __future__ import annotations

import io
import math
import pickle
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from ..engine import dtypes
from ..engine.tensor import Size, _wrap
from .format import SerializationError

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
    if encoding not in ("latin1", "latin-1"):
        raise SerializationError(f"load: refused _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


def _rebuild_tensor(storage: np.ndarray, offset: int, size: Any, stride: Any,
                    requires_grad: bool = False, backward_hooks: Any = None,
                    metadata: Any = None) -> Any:
    array = _strided(storage, offset, tuple(size), tuple(stride))
    return _wrap(array, bool(requires_grad) and array.dtype.kind == "f")


def _rebuild_parameter(data: Any, requires_grad: bool, backward_hooks: Any,
                       state: Any = None) -> Any:
    from ..nn.parameter import Parameter

    return Parameter(data, requires_grad=bool(requires_grad) and data._array.dtype.kind == "f")


def _strided(storage: np.ndarray, offset: int, shape: tuple[int, ...],
             stride: tuple[int, ...]) -> np.ndarray:
    """The tensor's elements in the storage: a view when they are one C-ordered run (so
    tensors saved sharing a storage share it here too), else a copy. Bounds are checked:
    a damaged file cannot make us read outside the storage."""
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
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape, [s * item for s in stride],
                                           writeable=False)
    return view.copy()


def _allowed(module: str, name: str) -> Any:
    if module == "torch._utils" and name == "_rebuild_tensor_v2":
        return _rebuild_tensor
    if module == "torch._utils" and name in ("_rebuild_parameter",
                                             "_rebuild_parameter_with_state"):
        return _rebuild_parameter
    if (module, name) == ("collections", "OrderedDict"):
        return OrderedDict
    if module in ("builtins", "__builtin__") and name in ("set", "frozenset"):
        return set if name == "set" else frozenset
    if (module, name) == ("_codecs", "encode"):
        return _latin1_encode
    if module == "torch":
        if name == "Size":
            return Size
        if name in _STORAGES:
            return _StorageType(_STORAGES[name])
        if name in _UNSUPPORTED_STORAGES:
            raise SerializationError(
                f"load: the checkpoint holds {_UNSUPPORTED_STORAGES[name]} tensors: dyngraph "
                f"does not implement {_UNSUPPORTED_STORAGES[name]} tensors")
        if name in _DTYPES:
            return dtypes.dtype_of(np.dtype(_DTYPES[name]))
    return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, where: str) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.archive = archive
        self.prefix = prefix
        self.where = where
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        found = _allowed(module, name)
        if found is None:
            what = f"{module}.{name}"
            hint = (" (a whole model saved with torch.save(model): save and load "
                    "model.state_dict() instead)") if module.startswith("torch.nn") or \
                "__main__" in module else ""
            raise SerializationError(f"load: {self.where} holds a {what} object, which dyngraph "
                                     f"will not run; it loads tensors, numbers, strings and "
                                     f"containers of them{hint}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)):
            raise SerializationError(f"load: {self.where} refers to storage {str(pid)[:60]}, "
                                     "which dyngraph cannot read")
        storage_type, key, numel = pid[1], pid[2], pid[4]
        if key not in self.storages:
            try:
                raw = self.archive.read(f"{self.prefix}data/{key}")
            except KeyError:
                raise SerializationError(f"load: {self.where} lacks storage {key} (damaged)"
                                         ) from None
            dtype = storage_type.dtype
            if len(raw) % dtype.itemsize or (isinstance(numel, int) and
                                             len(raw) != numel * dtype.itemsize):
                raise SerializationError(f"load: storage {key} of {self.where} has the wrong "
                                         "size (damaged)")
            order = dtype.newbyteorder(">" if self.big_endian else "<")
            self.storages[key] = np.frombuffer(bytearray(raw), dtype=order)
        return self.storages[key]

    big_endian = False


def load_torch_zip(stream: io.BufferedIOBase | io.BytesIO, where: str) -> Any:
    """Load a PyTorch zip checkpoint through the restricted unpickler."""
    try:
        archive = zipfile.ZipFile(stream)
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl")
                   and n.count("/") == 1]
        if not pickles:
            raise SerializationError(f"load: {where} is a zip file but not a PyTorch "
                                     "checkpoint (no data.pkl)")
        prefix = pickles[0][:-len("data.pkl")]
        unpickler = _Unpickler(archive.read(pickles[0]), archive, prefix, where)
        names = set(archive.namelist())
        if f"{prefix}byteorder" in names and archive.read(f"{prefix}byteorder") == b"big":
            unpickler.big_endian = True
        result = unpickler.load()
    except SerializationError:
        raise
    except (zipfile.BadZipFile, pickle.UnpicklingError, EOFError, ValueError, TypeError,
            IndexError, KeyError, AttributeError, RecursionError, MemoryError) as e:
        raise SerializationError(f"load: {where} is a damaged PyTorch checkpoint "
                                 f"({type(e).__name__}: {str(e)[:80]})") from None
    return _native(result)


def _native(value: Any) -> Any:
    """Storages are read big- or little-endian; hand back arrays in native order (and check
that every tensor still holds an array)."""
    from ..engine.tensor import Tensor

    if isinstance(value, Tensor):
        if not isinstance(value._array, np.ndarray):  # a pickle BUILD that set the slot
            raise SerializationError("load: a tensor in the checkpoint is damaged")
        if not value._array.dtype.isnative:
            value._array = value._array.astype(value._array.dtype.newbyteorder("="))
    elif isinstance(value, dict):
        for k, v in value.items():
            value[k] = _native(v)
    elif isinstance(value, list):
        value[:] = [_native(v) for v in value]
    elif isinstance(value, tuple) and not isinstance(value, Size):
        return type(value)(_native(v) for v in value)
    return value
