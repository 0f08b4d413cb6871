"""Containers: Sequential, ModuleList, ModuleDict, ParameterList (named "0", "1", ...)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .module import Module
from .parameter import Parameter


def _index(index: int, length: int, kind: str) -> int:
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


class _NumberedModules(Module):
    """What Sequential and ModuleList share: children named "0", "1", ... kept in order."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Any:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Any:
        for module in modules:
            self.append(module)
        return self

    def _renumber(self, modules: list[Any]) -> None:
        """Replace the children by ``modules`` named 0..n-1, as PyTorch keeps them."""
        for key in list(self._modules):
            delattr(self, key)
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def _insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)


class Sequential(_NumberedModules):
    """Calls its modules in order, each on the previous one's output.

    >>> import dyngraph.nn as nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> [name for name, _ in net.named_parameters()]
    ['0.weight', '0.bias', '2.weight', '2.bias']
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            if module is not None:
                input = module(input)
        return input

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self), "Sequential")]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_index(index, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        targets = keys[index] if isinstance(index, slice) else [keys[_index(index, len(keys),
                                                                             "Sequential")]]
        for key in targets:
            delattr(self, key)
        self._renumber(list(self._modules.values()))

    def insert(self, index: int, module: Module) -> Sequential:
        self._insert(index, module)
        return self


class ModuleList(_NumberedModules):
    """A list of modules whose parameters the owner sees (``layers.0.weight`` ...)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)([m for m in list(self._modules.values())[index] if m is not None])
        return self._modules[str(_index(index, len(self), "ModuleList"))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_index(index, len(self), "ModuleList")), module)

    def __delitem__(self, index: int | slice) -> None:
        modules = list(self._modules.values())
        del modules[index]
        self._renumber(modules)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def insert(self, index: int, module: Module) -> None:
        self._insert(index, module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList is not callable: iterate over its modules")


class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None
                 ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Any:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def pop(self, key: str) -> Any:
        module = self._modules[key]
        delattr(self, key)
        return module

    def clear(self) -> None:
        for key in list(self._modules):
            delattr(self, key)

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        items = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in items:
            self.add_module(key, module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleDict is not callable: index it by key")


class ParameterList(Module):
    """A list of parameters registered as "0", "1", ..."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        for value in values or ():
            self.append(value)

    def append(self, value: Any) -> ParameterList:
        param = value if isinstance(value, Parameter) else Parameter(value)
        self.register_parameter(str(len(self)), param)
        return self

    def __getitem__(self, index: int) -> Parameter:
        return self._parameters[str(_index(index, len(self), "ParameterList"))]  # type: ignore

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())  # type: ignore[arg-type]

    def extra_repr(self) -> str:
        lines = []
        for name, p in self._parameters.items():
            if p is None:
                continue
            size = "x".join(str(d) for d in p._array.shape)
            lines.append(f"({name}): Parameter containing: [{p.dtype} of size {size}]")
        return "\n".join(lines)
