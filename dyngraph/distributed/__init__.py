"""``torch.distributed`` for one process.

dyngraph's engine runs in one process. ``is_available()`` is False, so scripts that check
it take their single-process path. A script that calls ``init_process_group`` anyway (as
nanoGPT's ``train.py`` does when launched by torchrun) gets a group of one rank when the
world size is 1, in which every collective is the identity (a sum, mean or broadcast over
one rank is the tensor itself); a larger world is refused in one line naming what to do.
Anything else (``all_gather``, ``new_group`` ...) names itself as missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..missing import module_getattr

__all__ = ["ReduceOp", "all_reduce", "barrier", "broadcast", "destroy_process_group",
           "get_rank", "get_world_size", "init_process_group", "is_available",
           "is_initialized"]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to "
                    "call init_process_group.")
_group: dict[str, Any] | None = None  # the one-rank group, once init_process_group ran


class ReduceOp:
    """The reduction names collectives take; over one rank each leaves the tensor as is."""
    SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG, PREMUL_SUM = (
        "sum", "product", "min", "max", "band", "bor", "bxor", "avg", "premul_sum")


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return _group is not None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       **options: Any) -> None:
    """A process group of this one process. The world size is ``world_size`` or torchrun's
    ``WORLD_SIZE`` (1 when neither is set); dyngraph cannot take part in a larger one."""
    global _group
    world = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "1"))
    if world != 1:
        raise RuntimeError(
            f"init_process_group: dyngraph runs in one process and cannot join a world of "
            f"{world} ranks (dyngraph does not implement multi-process torch.distributed); "
            "run it without torchrun, or run it on PyTorch")
    if _group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    _group = {"backend": backend or "gloo", "rank": 0, "world_size": 1}


def _initialized() -> dict[str, Any]:
    if _group is None:
        raise ValueError(_NOT_INITIALIZED)
    return _group


def destroy_process_group(group: Any = None) -> None:
    global _group
    _initialized()
    _group = None


def get_rank(group: Any = None) -> int:
    return int(_initialized()["rank"])


def get_world_size(group: Any = None) -> int:
    return int(_initialized()["world_size"])


def get_backend(group: Any = None) -> str:
    return str(_initialized()["backend"])


def _one_rank(name: str) -> Callable[..., None]:
    def collective(*args: Any, **kwargs: Any) -> None:
        _initialized()  # over one rank, the tensor is already the result

    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = f"``{name}`` over a group of one rank: the tensor stays as it is."
    return collective


all_reduce = _one_rank("all_reduce")
broadcast = _one_rank("broadcast")
barrier = _one_rank("barrier")

__getattr__ = module_getattr(__name__)
