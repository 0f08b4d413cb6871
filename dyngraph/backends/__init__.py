"""``torch.backends``: the flags real scripts set on any machine (``cudnn.benchmark``,
``cuda.matmul.allow_tf32``) and the queries they make (``mps.is_available()``).

Setting a flag is accepted and changes nothing: dyngraph has one backend, numpy on the CPU.
"""

from ..missing import module_getattr
from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]

__getattr__ = module_getattr(__name__)
