"""``nn.Module``: parameters, submodules and buffers registered by attribute assignment.

Calling a module runs ``forward``. When a tracer listens, the call also pushes the
module's qualified path ("encoder.layers.1.attn") so every op inside records where it
ran, and parameters carry their qualified names ("encoder.0.weight") into the events.
With nobody listening and no hooks, ``__call__`` is ``forward`` plus one check.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from ..capture.tracing import Handle, tracer
from ..engine.autograd import no_grad
from ..engine.dtypes import to_numpy_dtype
from ..engine.tensor import Tensor
from ..missing import name_unexpected_keywords, not_implemented
from .parameter import Parameter

# Bumped whenever any module's parameters, buffers or submodules change, so the cached
# qualified names of a traced model are recomputed only when its structure changed.
_structure_version = 0


def _bump() -> None:
    global _structure_version
    _structure_version += 1


class _Naming:
    """The paths modules run under and the names their tensors carry.

    A module's path is where it was first registered, from its outermost owner:
    ``blocks.3.0`` for ``model.blocks[3][0]``, whoever calls it. Each module remembers its
    owner and attribute name when it is assigned (``_adopt``), so a block taken out of an
    ``nn.ModuleList`` and called at top level is named as inside its model, with no root
    call needed. A module that no module owns is a root: its path is "" (its ops are at
    top level). A module built on the fly inside a call, owned by nothing, is named by
    its class under the caller (``encoder.Linear``).
    """

    def __init__(self) -> None:
        self.depth = 0

    def path_of(self, module: Module) -> str:
        d = module.__dict__
        cached = d.get("_path")
        if cached is not None and cached[0] == _structure_version:
            path: str = cached[1]
        else:
            owned = _live_owner(module) is not None
            if not owned and self.depth > 0:
                # Not registered anywhere (a module built on the fly): name it by class.
                parent = tracer.module_stack[-1]
                name = type(module).__name__
                return f"{parent}.{name}" if parent else name
            path = registered_path(module)
            d["_path"] = (_structure_version, path)
        if d.get("_named") != _structure_version:
            self.name_tensors(module, path)
        return path

    @staticmethod
    def name_tensors(module: Module, path: str) -> None:
        """Give the parameters and buffers under ``module`` their qualified names; each
        module is done once per structure version (a tied weight keeps its first name)."""
        for name, p in module.named_parameters(prefix=path):
            p._name = name
            p._is_param = True
        for name, b in module.named_buffers(prefix=path):
            b._name = name
        for _, sub in module.named_modules():
            sub.__dict__["_named"] = _structure_version


def _adopt(owner: Module, name: str, module: Module | None) -> None:
    """Remember where ``module`` was registered, unless a module still holding it did first.

    A strong reference (the owner also holds the child): ``copy.deepcopy`` of a model then
    gives each copied block its copied owner.
    """
    if module is not None and _live_owner(module) is None:
        module.__dict__["_owner"] = owner
        module.__dict__["_owner_attr"] = name


def _live_owner(module: Module) -> Module | None:
    """The module ``module`` was first registered in, while that one still holds it."""
    owner = module.__dict__.get("_owner")
    if owner is None:
        return None
    attr = module.__dict__.get("_owner_attr", "")
    modules = owner.__dict__.get("_modules", {})
    if modules.get(attr) is module:
        return owner
    for key, value in modules.items():  # renumbered (ModuleList.insert, del)
        if value is module:
            module.__dict__["_owner_attr"] = key
            return owner
    return None


def registered_path(module: Module) -> str:
    """``module``'s qualified name from its outermost owner ("" for a root).

    >>> import dyngraph.nn as nn
    >>> model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Tanh()))
    >>> registered_path(model[1][0])
    '1.0'
    """
    parts: list[str] = []
    seen = {id(module)}
    while True:
        owner = _live_owner(module)
        if owner is None or id(owner) in seen:  # a cycle of ownership: stop at it
            break
        parts.append(module.__dict__["_owner_attr"])
        seen.add(id(owner))
        module = owner
    return ".".join(reversed(parts))


_naming = _Naming()


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


def _as_array(value: Any) -> np.ndarray:
    """A state-dict value as an ndarray: dyngraph Tensors, numpy arrays or torch tensors."""
    if isinstance(value, Tensor):
        return value._array
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch.Tensor
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value)


class Module:
    """Base class of every layer and model, as ``torch.nn.Module``.

    >>> import dyngraph.nn as nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> [name for name, _ in Net().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init__(self) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers"] = set()
        d["_modules"] = {}
        d["_forward_hooks"] = {}
        d["_forward_pre_hooks"] = {}
        d["_hooked"] = False
        d["_owner"] = None  # the module this one was first registered in (see _Naming)
        d["_owner_attr"] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("dyngraph."):
            name_unexpected_keywords(cls, "nn")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (tracer.listening or self._hooked):
            return self.forward(*args, **kwargs)
        return self._call_traced(args, kwargs)

    def _call_traced(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not tracer.listening:
            return self._run_with_hooks(args, kwargs)
        tracer.enter_module(_naming.path_of(self))
        _naming.depth += 1
        try:
            if self._hooked:
                return self._run_with_hooks(args, kwargs)
            return self.forward(*args, **kwargs)
        finally:
            _naming.depth -= 1
            tracer.exit_module()

    def _run_with_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # Hooks run inside the module's scope: ops they run belong to the module.
        for hook in tuple(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in tuple(self._forward_hooks.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    def register_forward_pre_hook(self, hook: Callable[..., Any], *,
                                  prepend: bool = False) -> Handle:
        """``hook(module, args)`` runs before ``forward``; a return value replaces ``args``."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False) -> Handle:
        """``hook(module, args, output)`` runs after ``forward``; a return value replaces
        the output."""
        return self._add_hook(self._forward_hooks, hook, prepend)

    def _add_hook(self, hooks: dict[int, Callable[..., Any]], hook: Callable[..., Any],
                  prepend: bool) -> Handle:
        key = id(hook) ^ len(hooks) << 48
        while key in hooks:
            key += 1
        if prepend:
            items = list(hooks.items())
            hooks.clear()
            hooks[key] = hook
            hooks.update(items)
        else:
            hooks[key] = hook
        self.__dict__["_hooked"] = True

        def remove() -> None:
            hooks.pop(key, None)
            self.__dict__["_hooked"] = bool(self._forward_hooks or self._forward_pre_hooks)

        return Handle(remove)

    # -- registration --------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            if name not in params:
                self._forget(name)
            params[name] = value  # replacing keeps the registration order, as PyTorch
            d[name] = value
            _bump()
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign 'dyngraph.{type(value).__name__}' as parameter "
                                f"'{name}' "
                                "(dyngraph.nn.Parameter or None expected)")
            params[name] = None
            d[name] = None
            _bump()
        elif isinstance(value, Module):
            modules = d.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            if name not in modules:
                self._forget(name)
            modules[name] = value
            d[name] = value
            _adopt(self, name, value)
            _bump()
        elif name in d.get("_modules", ()):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (dyngraph.nn.Module or None expected)")
            d["_modules"][name] = None
            d[name] = None
            _bump()
        elif name in d.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(dyngraph.Tensor or None expected)")
            d["_buffers"][name] = value
            d[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup failed (registered values also live in __dict__).
        message = f"'{type(self).__name__}' object has no attribute '{name}'"
        if name in _TORCH_MODULE_ATTRIBUTES:
            message += ": " + not_implemented(f"nn.Module.{name}")
        raise AttributeError(message)

    def __delattr__(self, name: str) -> None:
        if self._forget(name):
            _bump()
        else:
            object.__delattr__(self, name)

    def _forget(self, name: str) -> bool:
        d = self.__dict__
        found = False
        for key in ("_parameters", "_buffers", "_modules"):
            registry = d.get(key)
            if registry is not None and name in registry:
                del registry[name]
                found = True
        d.get("_non_persistent_buffers", set()).discard(name)
        d.pop(name, None)
        return found

    def _check_name(self, name: Any, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if name in self.__dict__ and name not in self._parameters and name not in \
                self._buffers and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (dyngraph.nn.Parameter or None required)")
        self._forget(name)
        self._parameters[name] = param
        self.__dict__[name] = param
        _bump()

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (dyngraph.Tensor or None required)")
        self._forget(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers.add(name)
        self.__dict__[name] = tensor
        _bump()

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._forget(name)
        self._modules[name] = module
        self.__dict__[name] = module
        _adopt(self, name, module)
        _bump()

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        module = self
        for part in target.split(".") if target else ():
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        owner, _, name = target.rpartition(".")
        param = self.get_submodule(owner)._parameters.get(name)
        if param is None:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    # -- traversal -----------------------------------------------------------------------
    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = f"{prefix}.{name}" if prefix else name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        if recurse:
            modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            modules = iter([(prefix, self)])
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # -- modes and bulk changes ----------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            module.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad._array = np.zeros_like(p.grad._array)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``to(dtype)``, ``to("cpu")`` or ``to(tensor)``: floating parameters and buffers
        change dtype in place (the Parameter objects stay the same)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, Tensor):
                dtype = arg.dtype
            elif isinstance(arg, str) or type(arg).__name__ == "device":
                device = arg
            else:
                dtype = arg
        if device is not None and str(device) != "cpu":
            raise NotImplementedError(f"dyngraph runs on the CPU only (asked for {device!r})")
        if dtype is not None:
            target = to_numpy_dtype(dtype)
            if target.kind != "f":
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got "
                                f"desired dtype={dtype}")
            self._cast(target)
        return self

    def _cast(self, target: np.dtype) -> None:
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if t._array.dtype.kind == "f" and t._array.dtype != target:
                    t._array = t._array.astype(target)
                    if t._grad is not None:
                        t._grad._array = t._grad._array.astype(target)

    def float(self) -> Module:
        return self.to(np.float32)

    def double(self) -> Module:
        return self.to(np.float64)

    def cpu(self) -> Module:
        return self

    def half(self) -> Module:
        return self.to(np.float16)

    def bfloat16(self) -> Module:
        from ..engine.dtypes import bfloat16

        return self.to(bfloat16)

    def cuda(self, device: Any = None) -> Module:
        raise NotImplementedError("dyngraph runs on the CPU only (Module.cuda() was called)")

    def type(self, dst_type: Any) -> Module:
        """``module.type(torch.float64)`` or ``module.type(torch.DoubleTensor)``."""
        from ..engine.legacy import dtype_of_type

        return self.to(dtype_of_type(dst_type))

    def share_memory(self) -> Module:
        return self  # one process: nothing to share

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """A no-op: dyngraph runs every module eagerly, op by op, to show each op."""

    def get_buffer(self, target: str) -> Tensor:
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner)
        if name not in module._buffers or module._buffers[name] is None:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]  # type: ignore[return-value]

    # -- state dicts ---------------------------------------------------------------------
    def state_dict(self, *, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """Parameters and persistent buffers by qualified name (sharing memory, detached)."""
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=out, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values into this module's parameters and buffers (in place).

        Accepts dyngraph or torch tensors and numpy arrays; with ``strict`` missing or
        unexpected keys raise PyTorch's error.
        """
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors: list[str] = []
        updates: list[tuple[Tensor, np.ndarray]] = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            array = _as_array(state_dict[key])
            if array.shape != target._array.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {_size(array.shape)} "
                    f"from checkpoint, the shape in current model is {_size(target._array.shape)}."
                )
                continue
            updates.append((target, array))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        for target, array in updates:
            if assign:
                target._array = np.array(array, copy=True)
            else:
                target._array[...] = array.astype(target._array.dtype, copy=False)
        return _IncompatibleKeys(missing, unexpected)

    # -- printing ------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = []
        for name, module in self._modules.items():
            body = repr(module).replace("\n", "\n  ")
            child_lines.append(f"({name}): {body}")
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        elif lines:
            text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


# nn.Module attributes PyTorch has and dyngraph lacks: a miss on one of these names the
# missing piece; any other miss is a typo in the user's model and gets PyTorch's message.
_TORCH_MODULE_ATTRIBUTES = frozenset("""
    T_destination call_super_init dump_patches get_extra_state ipu mtia xpu to_empty
    register_backward_hook register_full_backward_hook register_full_backward_pre_hook
    register_load_state_dict_post_hook register_load_state_dict_pre_hook
    register_state_dict_post_hook register_state_dict_pre_hook set_extra_state set_submodule
    """.split())


def _size(shape: tuple[int, ...]) -> str:
    return f"dyngraph.Size({list(shape)})"
