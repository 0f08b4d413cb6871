"""``torch.nn.modules.container``: Sequential, ModuleList, ModuleDict ..."""

from ..container import ModuleDict, ModuleList, ParameterList, Sequential

__all__ = ["ModuleDict", "ModuleList", "ParameterList", "Sequential"]
