"""``torch.nn.parallel``: ``DistributedDataParallel`` over the one-rank group that
``dyngraph.distributed.init_process_group`` makes. Averaging gradients over one rank
leaves them as they are, so the wrapper only forwards to its module (kept as ``.module``,
so ``state_dict`` keys carry PyTorch's ``module.`` prefix)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import distributed
from ..missing import module_getattr
from .module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group: Any = None,
                 bucket_cap_mb: Any = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, **options: Any) -> None:
        super().__init__()
        if process_group is None and not distributed.is_initialized():
            raise ValueError(distributed._NOT_INITIALIZED)
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Skip the gradient all-reduce inside the block: with one rank there is none."""
        yield


__getattr__ = module_getattr(__name__)
