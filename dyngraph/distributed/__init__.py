"""``torch.distributed``: dyngraph runs in one process, so scripts that check
``is_available()`` / ``is_initialized()`` take their single-process path. Anything else
(``init_process_group``, ``all_reduce`` ...) names itself as missing."""

from ..missing import module_getattr

__all__ = ["is_available", "is_initialized"]


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


__getattr__ = module_getattr(__name__)
