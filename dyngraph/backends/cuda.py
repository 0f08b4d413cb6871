"""``torch.backends.cuda``: ``matmul.allow_tf32`` and friends (no effect: no CUDA)."""

from types import SimpleNamespace

from ..missing import module_getattr

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)


def is_built() -> bool:
    return False


__getattr__ = module_getattr(__name__)
