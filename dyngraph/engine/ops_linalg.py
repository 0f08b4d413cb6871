"""Linear algebra: ``matmul``, ``einsum`` and the diagonal ops (``diagonal``, ``diag``,
``diag_embed``, ``trace``), forward and backward side by side (registered into the one
``OPS`` registry, like ``ops.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops import register


def _diagonal_index(shape: tuple[int, ...], offset: int, dim1: int, dim2: int
                    ) -> tuple[Any, ...]:
    """An index that selects the ``offset`` diagonal of dims ``dim1``, ``dim2`` of an array
    of ``shape``, with the diagonal as the last axis (numpy's and PyTorch's layout)."""
    rows, cols = shape[dim1], shape[dim2]
    start_r, start_c = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(rows - start_r, cols - start_c))
    steps = np.arange(length)
    index: list[Any] = []
    others = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    for d in range(len(shape)):
        if d == dim1:
            index.append(start_r + steps)
        elif d == dim2:
            index.append(start_c + steps)
        else:
            # broadcast the other dims against the diagonal, which numpy puts last
            position = others.index(d)
            view = [1] * (len(others) + 1)
            view[position] = shape[d]
            index.append(np.arange(shape[d]).reshape(view))
    return tuple(index)


@register("diag", saves=False, grad_fn="DiagBackward0")
def diag(a, offset=0, dim1=0, dim2=1):
    """``diag`` of a matrix: its diagonal as a new tensor (``diagonal`` is the view)."""
    shape = a.shape
    dim1, dim2 = dim1 % a.ndim, dim2 % a.ndim
    index = _diagonal_index(shape, offset, dim1, dim2)
    dtype = a.dtype

    def backward(g):
        out = np.zeros(shape, dtype)
        out[index] = g
        return (out,)

    return a[index], backward


@register("diag_embed", saves=False)
def diag_embed(a, offset=0, dim1=-2, dim2=-1):
    size = a.shape[-1] + abs(offset)
    ndim = a.ndim + 1
    dim1, dim2 = dim1 % ndim, dim2 % ndim
    if dim1 == dim2:
        raise RuntimeError(f"diag_embed: dim1 and dim2 cannot be the same dimension, got "
                           f"{dim1} and {dim2}")
    batch = list(a.shape[:-1])
    shape = [0] * ndim
    for d in (dim1, dim2):
        shape[d] = size
    rest = iter(batch)
    for d in range(ndim):
        if d not in (dim1, dim2):
            shape[d] = next(rest)
    index = _diagonal_index(tuple(shape), offset, dim1, dim2)
    out = np.zeros(shape, a.dtype)
    out[index] = a

    def backward(g):
        return (g[index],)

    return out, backward


@register("trace", saves=False)
def trace(a):
    if a.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {a.ndim}")
    shape, dtype = a.shape, a.dtype

    def backward(g):
        out = np.zeros(shape, dtype)
        n = min(shape)
        out[np.arange(n), np.arange(n)] = g
        return (out,)

    return np.asarray(np.trace(a), dtype=a.dtype), backward


# -- linear algebra -----------------------------------------------------------------------
@register("matmul", grad_fn="MmBackward0", needs_input_grad=True, saved_for={"a": 1, "b": 0})
def matmul(a, b, needs_input_grad=(True, True)):
    if not (type(a) is np.ndarray and a.ndim and type(b) is np.ndarray and b.ndim):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they "
                               f"are {np.ndim(a)}D and {np.ndim(b)}D")
    if a.dtype is not b.dtype or a.dtype.kind == "b":
        check_matmul_dtypes(a, b)
    try:
        out = a @ b
    except ValueError:
        raise RuntimeError(f"matmul: shapes {a.shape} and {b.shape} do not align") from None
    need_a, need_b = needs_input_grad

    def backward(g):
        if a.ndim == 2 and b.ndim == 2:  # (a layer's every step: the plainest form)
            return (g @ b.T if need_a else None), (a.T @ g if need_b else None)
        if a.ndim == 1 and b.ndim == 1:  # a dot product: g is 0-d
            return (g * b if need_a else None), (g * a if need_b else None)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = np.expand_dims(g2, -2)
        if b.ndim == 1:
            g2 = np.expand_dims(g2, -1)
        ga = gb = None
        if need_a:
            ga = g2 @ b2.swapaxes(-1, -2)
            if a.ndim == 1:
                ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
        if need_b:
            gb = a2.swapaxes(-1, -2) @ g2
            if b.ndim == 1:
                gb = gb.reshape(gb.shape[:-1])
        return ga, gb

    return out, backward


_TORCH_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool"}
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}


def torch_name(dtype: np.dtype) -> str:
    """PyTorch's scalar type name of a dtype, as its errors give it (``Float``)."""
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def check_matmul_dtypes(a: np.ndarray, b: np.ndarray) -> None:
    """PyTorch's matmul does not promote: operands of two dtypes are refused, in the words
    of the kernel the shapes lead to (dot, mv, mm, bmm); bools have no kernel."""
    if a.dtype == b.dtype:
        if a.dtype.kind == "b":
            kernel = ("dot" if a.ndim == 1 and b.ndim == 1 else "addmv_impl_cpu"
                      if b.ndim == 1 else "addmm_impl_cpu_" if b.ndim == 2 else "bmm")
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
        return
    na, nb = torch_name(a.dtype), torch_name(b.dtype)
    if a.ndim == 1 and b.ndim == 1:
        message = f"dot : expected both vectors to have same dtype, but found {na} and {nb}"
    elif b.ndim == 1:
        message = f"addmv input tensors must have the same dtype, but got {nb}, {na}, and {nb}"
    elif b.ndim == 2:
        message = (f"expected m1 and m2 to have the same dtype, but got: "
                   f"{_C_NAMES.get(a.dtype.name)} != {_C_NAMES.get(b.dtype.name)}")
    else:
        message = f"expected scalar type {na} but found {nb}"
    raise RuntimeError(message)


def _einsum_parse(equation: str, n: int) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    if "." in eq:
        raise NotImplementedError("einsum with '...' is not supported by dyngraph")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:  # implicit output: the letters used once, in alphabetical order
        lhs = eq
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = lhs.split(",")
    if len(terms) != n:
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if n > len(terms) else
            "einsum(): fewer operands were provided than specified in the equation"
        )
    for t in terms:
        if len(set(t)) != len(t):
            raise NotImplementedError(
                f"einsum with a repeated index in one operand ({t!r}) is not supported by "
                "dyngraph"
            )
    return terms, out


@register("einsum", grad_fn="EinsumBackward0", needs_input_grad=True)
def einsum(*operands, equation, needs_input_grad=()):
    terms, out_terms = _einsum_parse(equation, len(operands))
    out = np.einsum(f"{','.join(terms)}->{out_terms}", *operands)
    shapes = [o.shape for o in operands]
    # An operand is held only if another operand's gradient needs it, as PyTorch's
    # products save (so the version counter ignores one nothing differentiates against).
    held = tuple(o if any(needs_input_grad[j] for j in range(len(operands)) if j != i)
                 else None for i, o in enumerate(operands))

    def backward(g):
        grads = []
        for i, (term, a_shape) in enumerate(zip(terms, shapes, strict=True)):
            if not needs_input_grad[i]:
                grads.append(None)
                continue
            others = [(t, o) for j, (t, o) in enumerate(zip(terms, held, strict=True))
                      if j != i]
            present = set(out_terms).union(*[set(t) for t, _ in others])
            kept = "".join(c for c in term if c in present)  # the rest was summed away
            spec = ",".join([out_terms] + [t for t, _ in others]) + "->" + kept
            gi = np.einsum(spec, g, *[o for _, o in others])
            shape = tuple(a_shape[k] if c in present else 1 for k, c in enumerate(term))
            grads.append(np.broadcast_to(gi.reshape(shape), a_shape))
        return tuple(grads)

    return out, backward
