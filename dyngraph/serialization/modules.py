"""Whole modules in dyngraph's checkpoint format: ``torch.save(model, path)``.

PyTorch pickles the model. dyngraph stores what pickle would have stored, as data: the
class by its import path, the ``training`` flag, the plain attributes (numbers, strings,
tuples ... as the format holds them), the parameters, the buffers and the child modules,
each child the same way. ``load`` rebuilds it only when asked with ``weights_only=False``,
as PyTorch requires for whole models: it imports the class by name (its module's code runs,
as it would to unpickle) and fills a new instance without calling ``__init__`` (whose
arguments were never stored). Nothing is unpickled.

VALUE: ``{"module": {"class": "pkg.mod:Qual.Name", "training": bool, "attrs": [[name,
VALUE]...], "parameters": [...], "buffers": [...], "persistent": [names], "modules":
[[name, VALUE]...]}}``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .format import SerializationError

# What Module.__init__ keeps in __dict__ besides the user's attributes: not stored, made
# again by Module.__init__ on load (hooks are code and are not kept, as in a state dict).
_INTERNAL = frozenset({"training", "_parameters", "_buffers", "_non_persistent_buffers",
                       "_modules", "_forward_hooks", "_forward_pre_hooks", "_hooked", "_owner",
                       "_owner_attr", "_path", "_named"})


def class_path(cls: type) -> str:
    if "<locals>" in cls.__qualname__:
        raise SerializationError(
            f"save: cannot store a {cls.__qualname__} model: its class is defined inside a "
            "function, so it cannot be imported when loading (save model.state_dict())")
    return f"{cls.__module__}:{cls.__qualname__}"


def describe(writer: Any, module: Any, depth: int) -> dict[str, Any]:
    """The ``{"module": ...}`` VALUE of ``module``; ``writer.value`` stores the parts."""
    d = module.__dict__
    if d.get("_forward_hooks") or d.get("_forward_pre_hooks"):
        raise SerializationError(
            f"save: cannot store a {type(module).__qualname__} with forward hooks (hooks are "
            "code); remove them or save model.state_dict()")
    owned = set(d["_parameters"]) | set(d["_buffers"]) | set(d["_modules"])
    attrs = []
    for name, value in d.items():
        if name in _INTERNAL or name in owned:
            continue
        try:
            attrs.append([name, writer.value(value, depth + 1)])
        except SerializationError:
            raise SerializationError(
                f"save: cannot store attribute {name!r} of {type(module).__qualname__} (a "
                f"{type(value).__module__}.{type(value).__qualname__}); save "
                "model.state_dict() instead") from None
    def entries(table: dict[str, Any]) -> list[list[Any]]:
        return [[name, writer.value(v, depth + 1)] for name, v in table.items()]

    return {"module": {
        "class": class_path(type(module)), "training": bool(d["training"]), "attrs": attrs,
        "parameters": entries(d["_parameters"]), "buffers": entries(d["_buffers"]),
        "persistent": [n for n in d["_buffers"] if n not in d["_non_persistent_buffers"]],
        "modules": entries(d["_modules"]),
    }}


def rebuild(reader: Any, body: Any, depth: int) -> Any:
    """The module ``body`` describes (``reader.value`` builds the parts)."""
    from ..nn.module import Module

    if not isinstance(body, dict) or not isinstance(body.get("class"), str):
        raise reader.fail("a module without a class")
    cls = _import_class(body["class"], reader.where)
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise SerializationError(f"load: {reader.where} names {body['class']}, which is not "
                                 "a dyngraph.nn.Module class")
    module = cls.__new__(cls)
    Module.__init__(module)
    module.__dict__["training"] = body.get("training") is True
    for name, value in _pairs(reader, body, "attrs"):
        object.__setattr__(module, name, reader.value(value, depth + 1))
    for name, value in _pairs(reader, body, "parameters"):
        module.register_parameter(name, reader.value(value, depth + 1))
    persistent = body.get("persistent")
    if not isinstance(persistent, list):
        raise reader.fail("a module without its list of persistent buffers")
    for name, value in _pairs(reader, body, "buffers"):
        module.register_buffer(name, reader.value(value, depth + 1),
                               persistent=name in persistent)
    for name, value in _pairs(reader, body, "modules"):
        module.add_module(name, reader.value(value, depth + 1))
    return module


def _pairs(reader: Any, body: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    items = body.get(key)
    if not isinstance(items, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in items):
        raise reader.fail(f"a module's {key} are not names and values")
    return [(p[0], p[1]) for p in items]


def _import_class(path: str, where: str) -> Any:
    module_name, _, qualname = path.partition(":")
    try:
        found: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as e:
        raise SerializationError(f"load: {where} holds a {path} model, which cannot be "
                                 f"imported here ({type(e).__name__}: {e})") from None
    return found
