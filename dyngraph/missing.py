"""How dyngraph names what it lacks: every miss says "dyngraph does not implement X".

A ported PyTorch script that reaches past the supported surface (docs/api.md) stops on one
line that names the missing piece, whether it is an attribute of a module
(``torch.fft``), a submodule imported by name (``import torch.onnx``) or a keyword argument.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

SEE = "the supported surface is listed in docs/api.md"


def not_implemented(what: str) -> str:
    """The message for a missing piece: ``dyngraph does not implement torch.onnx (...)``."""
    return f"dyngraph does not implement {what} ({SEE})"


def torch_name(module_name: str) -> str:
    """``dyngraph.nn.functional`` -> ``torch.nn.functional``: the name the user wrote."""
    return "torch" + module_name[len("dyngraph"):] if module_name.startswith("dyngraph") \
        else module_name


def module_getattr(module_name: str) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module_name``: only reached for names the module
    lacks, it raises an AttributeError naming the missing ``torch.<module>.<name>``."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"module '{module_name}' has no attribute '{name}': "
                             + not_implemented(f"{torch_name(module_name)}.{name}"))

    return __getattr__


def reject_kwargs(function: str, kwargs: dict[str, Any],
                  harmless: dict[str, Any] | None = None) -> None:
    """Refuse keyword arguments PyTorch takes but dyngraph does not, by name.

    ``harmless`` maps keywords that are fine at one value (``pin_memory=False``) to it.
    """
    for key, value in kwargs.items():
        if harmless and key in harmless and value == harmless[key]:
            continue
        raise TypeError(f"{function}() got an unsupported keyword argument '{key}': "
                        + not_implemented(f"{function}({key}=...)"))


_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def name_unexpected_keywords(cls: type, namespace: str) -> None:
    """Make ``cls(...)`` with a keyword its ``__init__`` lacks say which PyTorch option
    dyngraph does not implement (``nn.LSTM(proj_size=2)`` is refused by its own check)
    instead of Python's bare TypeError. Called from ``__init_subclass__`` of dyngraph's
    base classes, for dyngraph's own subclasses only: a user's class keeps Python's
    message for its own mistakes."""
    init = cls.__dict__.get("__init__")
    if init is None or getattr(init, "_names_keywords", False):
        return
    where = f"{namespace}.{cls.__name__}" if namespace else cls.__name__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError as e:
            found = _UNEXPECTED.search(str(e))
            # Only a failure to bind the call itself (no frame inside __init__).
            if found is None or e.__traceback__ is None or e.__traceback__.tb_next is not None:
                raise
            key = found.group(1)
            raise TypeError(f"{where}() got an unsupported keyword argument '{key}': "
                            + not_implemented(f"{where}({key}=...)")) from None

    __init__._names_keywords = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]


class _MissingSubmodules:
    """Last on ``sys.meta_path``: a ``dyngraph.<x>`` module no other finder found is one
    PyTorch has and dyngraph lacks (``import dyngraph.onnx`` as ``import torch.onnx``)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith("dyngraph."):
            return None
        raise ModuleNotFoundError(f"No module named '{fullname}': "
                                  + not_implemented(torch_name(fullname)), name=fullname)


def install_submodule_finder() -> None:
    if not any(isinstance(f, _MissingSubmodules) for f in sys.meta_path):
        sys.meta_path.append(_MissingSubmodules())
