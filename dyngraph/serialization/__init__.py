"""``torch.save`` / ``torch.load`` (``dyngraph.save``, ``dyngraph.load``), without pickle.

``save`` writes dyngraph's own format (``format.py``): tensors, Parameters, numpy arrays,
numbers, strings, None, bytes, dtypes and sizes, in lists, tuples, sets and (ordered)
dicts, which covers the state dicts of models, optimizers and schedulers. ``load`` reads
it back building only those values, so a file from a stranger runs no code. ``load`` also
reads checkpoints PyTorch wrote with ``torch.save`` (a zip around a pickle) through a
restricted reader that runs nothing (``torch_zip.py``), and refuses plain pickle files on
one line.

>>> import io, dyngraph as torch
>>> model = torch.nn.Linear(2, 1)
>>> buffer = io.BytesIO()
>>> torch.save({"model": model.state_dict(), "epoch": 3}, buffer)
>>> _ = buffer.seek(0)
>>> checkpoint = torch.load(buffer, weights_only=True)
>>> checkpoint["epoch"], list(checkpoint["model"])
(3, ['weight', 'bias'])
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..missing import module_getattr
from .format import MAGIC, SerializationError, dumps, loads
from .torch_zip import load_torch_zip

__all__ = ["SerializationError", "add_safe_globals", "get_safe_globals", "load", "safe_globals",
           "save"]

_PICKLE = b"\x80"  # a pickle of protocol 2 or later starts with PROTO
_ZIP = b"PK\x03\x04"


def save(obj: Any, f: Any, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False
         ) -> None:
    """Write ``obj`` to ``f`` (a path or a binary file object) in dyngraph's format.

    A path is written to a temporary file first and renamed into place, so an interrupted
    save never leaves a half-written checkpoint where the last good one was.
    """
    data = dumps(obj)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        temporary = f"{path}.tmp-{os.getpid()}"
        try:
            with open(temporary, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"save: f must be a path or a binary file object, not "
                        f"{type(f).__name__}")
    f.write(data)


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Read what ``save`` (dyngraph's or PyTorch's) wrote to ``f`` (a path or file object).

    Tensors and plain values load whatever ``weights_only`` says: building them runs no
    code. A whole model (``save(model, f)``) is rebuilt only with ``weights_only=False``,
    as PyTorch requires: that imports the model's class (never unpickles). Everything loads
    onto the CPU (``map_location`` is accepted and needs no work).
    """
    where, data = _read(f)
    if data.startswith(MAGIC):
        return loads(data, where, weights_only=weights_only is not False)
    if data.startswith(_ZIP):
        return load_torch_zip(io.BytesIO(data), where)
    if data.startswith(_PICKLE):
        raise SerializationError(
            f"load: {where} is a pickle file (PyTorch's legacy format or pickle.dump), which "
            "can run code when read, so dyngraph refuses it: re-save it with a current "
            "PyTorch (torch.save(obj, path)) or with dyngraph.save")
    raise SerializationError(f"load: {where} is not a dyngraph or PyTorch checkpoint")


def _read(f: Any) -> tuple[str, bytes]:
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as stream:
            return path, stream.read()
    if not hasattr(f, "read"):
        raise TypeError(f"load: f must be a path or a binary file object, not "
                        f"{type(f).__name__}")
    data = f.read()
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError("load: the file object must be opened in binary mode ('rb')")
    return getattr(f, "name", "the file object"), bytes(data)


@contextmanager
def safe_globals(safe_globals: Any) -> Iterator[None]:
    """A no-op context: PyTorch's allow-list for ``weights_only`` loading. dyngraph never
    builds arbitrary objects from a file, so there is nothing to allow."""
    yield


def add_safe_globals(safe_globals: Any) -> None:
    """A no-op, as ``safe_globals``."""


def get_safe_globals() -> list[Any]:
    return []


__getattr__ = module_getattr(__name__)
