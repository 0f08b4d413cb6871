"""Module names from registration: which module holds which, as the program built them.

Naming a module from the outermost module *called* fails whenever a program calls
something other than the model's ``forward``: minimalRL's PPO calls ``model.pi(x)`` and
``model.v(x)``, so each layer was called first and became a root of its own (parameters
read ``weight``, ``bias``; exports had no clusters). So the capture listens to PyTorch's
global registration hooks instead: every ``self.fc1 = nn.Linear(...)``, ``add_module``,
``nn.Sequential(...)`` records a parent and a name, and a module's path is the chain of
names up to a module nobody holds (``fc1``, ``encoder.0.attn``), whichever method called it.

One exception keeps a library's wrappers out of the user's names: a module built on its own
(not while another module was being built) and later wrapped by third-party library code
keeps the names it had (torchdiffeq wraps the user's ``func`` in ``_PerturbFunc`` and
``_TupleFunc``: its layers stay ``net.0``, not ``base_func.base_func.net.0``). Wrapping done
by the user's own code (``Seq2Seq(encoder, decoder)``) or by PyTorch (``nn.Sequential(a,
b)``, DDP's ``module``, ``torch.compile``'s ``_orig_mod``, which is dropped) names as usual.

Modules built before the capture started were never seen registering: ``known`` says so, and
``modules.py`` names those from the outermost call, as before.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any

import torch
from torch.nn.modules import module as module_mod

from ..debug.frames import is_user_file

_COMPILED_PREFIX = "_orig_mod"
_MODULE_FILE = os.path.abspath(module_mod.__file__)
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep
_Module = torch.nn.Module


class Registry:
    """Parents and names of the modules registered while installed."""

    def __init__(self) -> None:
        # id(module) -> (ref, built on its own: not while another module was being built)
        self._seen: dict[int, tuple[weakref.ref[Any], bool]] = {}
        # id(child) -> (ref to child, ref to parent, name)
        self._parent: dict[int, tuple[weakref.ref[Any], weakref.ref[Any], str]] = {}
        self.generation = 0  # moves whenever a path may have changed
        self._paths: dict[int, tuple[int, weakref.ref[Any], str, Any]] = {}
        self._handles: list[Any] = []

    def install(self) -> None:
        self._handles = [
            module_mod.register_module_module_registration_hook(self._on_module),
            module_mod.register_module_parameter_registration_hook(self._on_tensor),
            module_mod.register_module_buffer_registration_hook(self._on_tensor),
        ]

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    # -- hooks (module construction time, not per op) --------------------------------------
    def _on_tensor(self, module: Any, name: str, value: Any) -> None:
        try:
            self._see(module)
        except Exception:  # noqa: BLE001 - naming must never fail a model's construction
            pass

    def _on_module(self, module: Any, name: str, submodule: Any) -> None:
        try:
            self._see(module)
            if not isinstance(submodule, _Module):
                return
            built_alone = self._see(submodule, module)
            key = id(submodule)
            old = self._parent.get(key)
            if old is not None and old[0]() is submodule:
                return  # named by its first holder (a module shared by two: as named_modules)
            if built_alone and _registered_by_a_library():
                return  # a library wrapping the user's module: its names stay the user's
            self._parent[key] = (weakref.ref(submodule), weakref.ref(module), name)
            self.generation += 1
        except Exception:  # noqa: BLE001
            pass

    def _see(self, module: Any, holder: Any = None) -> bool:
        """Remember ``module`` at its first registration; whether it was built on its own.

        Mostly that first registration is one of its own (a parameter, a layer), made while
        it is being built: it was built alone if no other module was being built around it.
        A module that registers nothing (``nn.ReLU()``, a parameterless ``Lambda()``) is
        first seen as ``holder`` registers it: built alone if it was handed to ``holder``'s
        ``__init__`` as an argument and nothing else was being built around that."""
        key = id(module)
        entry = self._seen.get(key)
        if entry is not None and entry[0]() is module:
            return entry[1]
        if len(self._seen) > 200_000:
            self._seen = {k: v for k, v in self._seen.items() if v[0]() is not None}
        if holder is None:
            alone = not _inside_another_construction(module)
        else:
            alone = _handed_in(module, holder) and not _inside_another_construction(holder)
        self._seen[key] = (weakref.ref(module), alone)
        return alone

    # -- names ---------------------------------------------------------------------------------
    def known(self, module: Any) -> bool:
        """Was ``module`` seen registering, or being registered?"""
        entry = self._seen.get(id(module))
        return entry is not None and entry[0]() is module

    def path(self, module: Any) -> tuple[str, Any]:
        """(``module``'s qualified path, the module at the top of its chain)."""
        key = id(module)
        cached = self._paths.get(key)
        if cached is not None and cached[0] == self.generation and cached[1]() is module:
            return cached[2], cached[3]()
        names: list[str] = []
        current, seen = module, {key}
        while True:
            entry = self._parent.get(id(current))
            if entry is None or entry[0]() is not current:
                break
            parent = entry[1]()
            if parent is None or id(parent) in seen:
                break
            names.append(entry[2])
            seen.add(id(parent))
            current = parent
        names.reverse()
        if names and names[0] == _COMPILED_PREFIX:
            names = names[1:]
        path = ".".join(names)
        if len(self._paths) > 100_000:
            self._paths.clear()
        self._paths[key] = (self.generation, weakref.ref(module), path, weakref.ref(current))
        return path, current


def _inside_another_construction(module: Any) -> bool:
    """Is some other module's ``__init__`` running (``module`` is a part being built)?"""
    frame: Any = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "__init__":
            owner = frame.f_locals.get("self")
            if owner is not module and isinstance(owner, _Module):
                return True
        frame = frame.f_back
    return False


def _handed_in(module: Any, holder: Any) -> bool:
    """Is ``module`` an argument of the running ``holder.__init__`` (built before it)?"""
    frame: Any = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__init__" and frame.f_locals.get("self") is holder:
            count = code.co_argcount + code.co_kwonlyargcount
            names = list(code.co_varnames[:count])
            if code.co_flags & 0x04:  # *args
                names.append(code.co_varnames[count])
            for name in names:
                value = frame.f_locals.get(name)
                if value is module or (type(value) is tuple and any(v is module
                                                                    for v in value)):
                    return True
        frame = frame.f_back
    return False


def _registered_by_a_library() -> bool:
    """Is the code making this registration a third-party library's (not the user's, not
    PyTorch's own)?"""
    frame: Any = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name != _MODULE_FILE and (not name.startswith(_PACKAGE_DIR)
                                     or name.startswith(_DEMOS_DIR)):
            return not name.startswith(_TORCH_DIR) and not is_user_file(name)
        frame = frame.f_back
    return False
