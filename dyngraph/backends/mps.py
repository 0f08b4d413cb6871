"""``torch.backends.mps``: Apple's Metal backend, never available here."""

from ..missing import module_getattr


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


__getattr__ = module_getattr(__name__)
