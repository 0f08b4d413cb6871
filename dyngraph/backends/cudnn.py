"""``torch.backends.cudnn``: flags a script may set (no effect: there is no cuDNN)."""

from ..missing import module_getattr

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None


__getattr__ = module_getattr(__name__)
