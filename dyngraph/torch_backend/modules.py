"""Module paths for PyTorch: global forward hooks report module calls to the tracer.

Every ``nn.Module`` call enters its qualified name (``tracer.enter_module``) and exits it
when the call ends, also when it raises. Names come from registration (``registry.py``:
``self.fc1 = nn.Linear(...)`` makes ``fc1``, whatever method calls it), so the model itself
is ``""`` and its layers ``encoder.0.fc``. A module built before the capture started was
never seen registering: it is named from the outermost module called (``named_modules()``
of that root), as is anything under it. ``torch.compile`` wraps a model as ``_orig_mod``;
that prefix is dropped, so compiled and eager runs name modules alike.
Parameters and buffers get their qualified names the same way: their module's path and
the name they were registered under.

The global hooks fire in every thread; only the capturing thread's calls count.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch
from torch.nn.modules import module as module_mod

from ..capture.tracing import tracer
from .guard import guarded
from .ids import id_of
from .registry import Registry

_COMPILED_PREFIX = "_orig_mod"


def _strip(path: str) -> str:
    if path == _COMPILED_PREFIX:
        return ""
    return path.removeprefix(_COMPILED_PREFIX + ".")


class ModulePaths:
    """Installs the hooks; knows every named module, parameter and buffer seen so far."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.depth = 0
        # id(root) -> (weakref to root, {id(module): path})
        self._roots: dict[int, tuple[weakref.ref[Any], dict[int, str]]] = {}
        self._paths: dict[int, str] = {}
        self._root: weakref.ref[Any] | None = None
        # tensor id -> (qualified name, is a parameter)
        self.names: dict[int, tuple[str, bool]] = {}
        self._handles: list[Any] = []
        self.registry = Registry()
        # id(top of a chain) -> (ref, registry generation) its tensors were named at
        self._named: dict[int, tuple[weakref.ref[Any], int]] = {}

    def install(self) -> None:
        self.depth = 0  # (a call a Ctrl-C cut short never left: see Tracer.restart)
        self.registry.install()
        self._handles = [
            module_mod.register_module_forward_pre_hook(self._enter),
            module_mod.register_module_forward_hook(self._leave, always_call=True),
        ]

    def remove(self) -> None:
        self.registry.remove()
        for h in self._handles:
            h.remove()
        self._handles = []

    # -- hooks -----------------------------------------------------------------------------
    @guarded("a module call")
    def _enter(self, module: torch.nn.Module, args: Any) -> None:
        if not tracer.listening:
            return
        if threading.get_ident() != self.owner:
            tracer.other_thread()  # (named once)
            return
        tracer.enter_module(self.path_of(module))
        self.depth += 1

    @guarded("the end of a module call")
    def _leave(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self.depth == 0 or threading.get_ident() != self.owner:
            return  # entered before capture began (or by another thread)
        self.depth -= 1
        if len(tracer.module_stack) > 1:
            tracer.exit_module()

    # -- naming ----------------------------------------------------------------------------
    def path_of(self, module: torch.nn.Module) -> str:
        registry = self.registry
        if registry.known(module):
            registered, top = registry.path(module)
            if self.depth == 0:  # (modules under it built before the capture: see below)
                root = self._root() if self._root is not None else None
                if root is not top:
                    self._use_root(top)
            named = self._named.get(id(top))
            if named is None or named[0]() is not top or named[1] != registry.generation:
                self._name_tensors(top)
            return registered
        key = id(module)
        if self.depth == 0:
            root = self._root() if self._root is not None else None
            if root is not module:
                self._use_root(module)
            return self._paths.get(key, "")
        path = self._paths.get(key)
        if path is None:
            root = self._root() if self._root is not None else None
            if root is not None:
                self._use_root(root, rename=True)  # a module added since: look again
            path = self._paths.get(key)
            if path is None:  # not under the root at all: name it by its class
                parent = tracer.module_stack[-1]
                name = type(module).__name__
                path = self._paths[key] = f"{parent}.{name}" if parent else name
        return path

    def _use_root(self, root: torch.nn.Module, rename: bool = False) -> None:
        """Name what the registry does not know from ``root``'s ``named_modules()``."""
        key = id(root)
        entry = self._roots.get(key)
        if rename or entry is None or entry[0]() is not root:
            if len(self._roots) >= 16:
                self._roots.clear()
            paths = {id(m): _strip(name) for name, m in root.named_modules()}
            entry = self._roots[key] = (weakref.ref(root), paths)
            self._name_tensors(root)
        self._root, self._paths = entry[0], entry[1]

    def _name_tensors(self, root: torch.nn.Module) -> None:
        """Name the parameters and buffers of every module under ``root``: the module's
        path (registered, else under ``root``) and their own registered name."""
        registry = self.registry
        if len(self._named) > 10_000:
            self._named.clear()
        self._named[id(root)] = (weakref.ref(root), registry.generation)
        if len(self.names) > 1_000_000:
            self.names.clear()
        done: set[int] = set()
        for relative, module in root.named_modules():
            path = registry.path(module)[0] if registry.known(module) else _strip(relative)
            for table, is_param in ((module._parameters, True), (module._buffers, False)):
                for name, t in table.items():
                    if t is None or id(t) in done:
                        continue
                    done.add(id(t))  # a tied weight keeps its first name, as named_parameters
                    self.names[id_of(t)] = (f"{path}.{name}" if path else name, is_param)
