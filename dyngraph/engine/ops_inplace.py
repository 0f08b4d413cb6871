"""The ops in-place methods record when they replace a tensor's values wholesale:
``copy_`` (``copy``), ``fill_`` (``fill``), ``zero_`` (``zero``), ``normal_``, ``uniform_``.

Each takes the tensor's old value ``dst`` (its history gets a zero gradient, as PyTorch's
CopyBackwards and FillBackward give) and the new values ``src``, broadcast to ``dst``'s
shape and cast to its dtype (which receives the gradient, summed back to its shape by the
engine, when it is a tensor that requires grad). Registered into ``ops.OPS``.
"""

from __future__ import annotations

import numpy as np

from .ops import register


def _backward(g):
    return np.zeros_like(g), g


def _overwrite(dst, src):
    out = np.empty(dst.shape, dst.dtype)
    out[...] = src  # broadcasts; casts as copy_ does (float to int truncates)
    return out, _backward


for _name, _grad_fn in (("copy", "CopyBackwards"), ("fill", "FillBackward2"),
                        ("zero", "ZeroBackward0"), ("normal", "NormalBackward0"),
                        ("uniform", "UniformBackward0")):
    register(_name, saves=False, grad_fn=_grad_fn, exact=True)(_overwrite)
