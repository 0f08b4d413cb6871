"""Every in-place op through every kind of strided view, on the numpy that is installed.

numpy 2.4's in-place ``np.negative(a, out=a)`` wrote wrong values into strided views of
4- and 8-byte dtypes (``x[:, 3].neg_()`` of a 4x4 float32 tensor gave ``[-3, -4, -5, -6]``
for ``[-3, -7, -11, -15]``); nothing in dyngraph was wrong, yet its answers were. These
tests run each in-place op on a view of a base tensor and check the whole base (the view's
elements and every element around it) against a reference computed out of place on a
contiguous copy and put back by index, and against PyTorch where it is installed. A numpy
release with the next bug of this kind fails here, not in a user's training run.

Shapes 4x4 and 8x8 put a column 16 and 64 bytes apart for 4- and 8-byte dtypes (where the
numpy bug was); 3x5 is odd-sized. Outside a graph numpy writes into the view itself; in a
graph (the float cases, through a base that requires grad) the op is recorded out of place
and copied into the base, so both paths are covered.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.engine.inplace import METHODS

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None

SHAPES = ((4, 4), (8, 8), (3, 5))
FLOATS = ("float32", "float64", "float16")
INTS = ("int32", "int64", "uint8")

# Views of a 2-D base (every one strided, or a piece of one), written once for both
# libraries. Multi-output views (split, chunk, unbind) are not written in a graph.
VIEWS: dict[str, Callable[[Any], Any]] = {
    "column": lambda t: t[:, 3 % t.shape[1]],
    "column range": lambda t: t[:, 3 % t.shape[1]:3 % t.shape[1] + 1],
    "narrow": lambda t: t.narrow(1, 1, 2),
    "select": lambda t: t.select(1, 2),
    "t()[3:4]": lambda t: t.t()[3 % t.shape[1]:3 % t.shape[1] + 1],
    "transpose": lambda t: t.t(),
    "every other row": lambda t: t[::2],
    "every other column": lambda t: t[:, ::2],
    "flat, step 4": lambda t: t.reshape(-1)[::4],
    "flat, step 8": lambda t: t.reshape(-1)[::8],
    "block": lambda t: t[1:3, 1:3],
    "diagonal": lambda t: t.diagonal(),
    "split piece": lambda t: t.split(2, dim=1)[1],
    "chunk piece": lambda t: t.chunk(2, dim=1)[-1],
    "unbind piece": lambda t: t.unbind(1)[2],
}
MULTI_OUTPUT = {"split piece", "chunk piece", "unbind piece"}


class Case:
    """One in-place op: ``inplace(L, view, other)`` and its out-of-place reference
    ``reference(L, values, other)`` (whose result is cast to the view's dtype), the dtypes
    it applies to, and the kinds of second operand it takes."""

    def __init__(self, inplace: Callable[..., Any], reference: Callable[..., Any],
                 dtypes: tuple[str, ...] = FLOATS + INTS,
                 operands: tuple[str, ...] = ("none",), positive: bool = False) -> None:
        self.inplace = inplace
        self.reference = reference
        self.dtypes = dtypes
        self.operands = operands
        self.positive = positive


BINARY = ("scalar", "same shape", "strided", "0-d", "row")
OPERATOR = ("scalar", "strided")


def _iadd(L, v, o):
    v += o


def _isub(L, v, o):
    v -= o


def _imul(L, v, o):
    v *= o


def _idiv(L, v, o):
    v /= o


def _setitem(L, v, o):
    v[...] = o


CASES: dict[str, Case] = {
    "add_": Case(lambda L, v, o: v.add_(o), lambda L, x, o: x + o, operands=BINARY),
    "add_ alpha": Case(lambda L, v, o: v.add_(o, alpha=2), lambda L, x, o: x + o * 2,
                       operands=BINARY),
    "sub_": Case(lambda L, v, o: v.sub_(o), lambda L, x, o: x - o, operands=BINARY),
    "subtract_": Case(lambda L, v, o: v.subtract_(o), lambda L, x, o: x - o,
                      operands=("same shape",)),
    "mul_": Case(lambda L, v, o: v.mul_(o), lambda L, x, o: x * o, operands=BINARY),
    "multiply_": Case(lambda L, v, o: v.multiply_(o), lambda L, x, o: x * o,
                      operands=("strided",)),
    "div_": Case(lambda L, v, o: v.div_(o), lambda L, x, o: x / o, FLOATS, BINARY),
    "divide_": Case(lambda L, v, o: v.divide_(o), lambda L, x, o: x / o, FLOATS,
                    ("scalar",)),
    "pow_": Case(lambda L, v, o: v.pow_(2), lambda L, x, o: x**2),
    "pow_ tensor": Case(lambda L, v, o: v.pow_(o), lambda L, x, o: x**o, FLOATS,
                        ("same shape", "strided"), positive=True),
    "sqrt_": Case(lambda L, v, o: v.sqrt_(), lambda L, x, o: L.sqrt(x), FLOATS,
                  positive=True),
    "neg_": Case(lambda L, v, o: v.neg_(), lambda L, x, o: -x),
    "addcmul_": Case(lambda L, v, o: v.addcmul_(o, o, value=0.5),
                     lambda L, x, o: x + o * o * 0.5, FLOATS, ("same shape", "strided")),
    "addcdiv_": Case(lambda L, v, o: v.addcdiv_(o, o + 4, value=2),
                     lambda L, x, o: x + o / (o + 4) * 2, FLOATS, ("same shape", "strided"),
                     positive=True),
    "lerp_": Case(lambda L, v, o: v.lerp_(o, 0.25), lambda L, x, o: x + (o - x) * 0.25,
                  ("float32", "float64"), ("same shape", "strided")),
    "clamp_": Case(lambda L, v, o: v.clamp_(-2, 3), lambda L, x, o: L.clamp(x, -2, 3),
                   FLOATS + ("int32", "int64")),
    "clip_": Case(lambda L, v, o: v.clip_(-2, 3), lambda L, x, o: L.clamp(x, -2, 3),
                  FLOATS + ("int32", "int64")),
    "clamp_min_": Case(lambda L, v, o: v.clamp_min_(1), lambda L, x, o: L.clamp(x, min=1)),
    "clamp_max_": Case(lambda L, v, o: v.clamp_max_(2), lambda L, x, o: L.clamp(x, max=2)),
    "masked_fill_": Case(lambda L, v, o: v.masked_fill_(v > 2, 7),
                         lambda L, x, o: x.masked_fill(x > 2, 7)),
    # (every row's values added into the first: each write lands on one strided place)
    "scatter_add_": Case(lambda L, v, o: v.scatter_add_(0, L.zeros(v.shape, dtype=L.int64), o),
                         lambda L, x, o: x.scatter_add_(0, L.zeros(x.shape, dtype=L.int64), o),
                         FLOATS, ("same shape", "strided")),
    "zero_": Case(lambda L, v, o: v.zero_(), lambda L, x, o: x * 0),
    "fill_": Case(lambda L, v, o: v.fill_(5), lambda L, x, o: x * 0 + 5),
    "copy_": Case(lambda L, v, o: v.copy_(o), lambda L, x, o: x * 0 + o,
                  operands=("same shape", "strided", "0-d", "row")),
    "setitem": Case(lambda L, v, o: _setitem(L, v, o), lambda L, x, o: x * 0 + o,
                    operands=("same shape", "strided", "0-d", "row")),
    # (the operators are add_ ... underneath: fewer operand kinds)
    "+=": Case(lambda L, v, o: _iadd(L, v, o), lambda L, x, o: x + o, operands=OPERATOR),
    "-=": Case(lambda L, v, o: _isub(L, v, o), lambda L, x, o: x - o, operands=OPERATOR),
    "*=": Case(lambda L, v, o: _imul(L, v, o), lambda L, x, o: x * o, operands=OPERATOR),
    "/=": Case(lambda L, v, o: _idiv(L, v, o), lambda L, x, o: x / o, FLOATS, OPERATOR),
}
# Random fills: the same draws written into a view and into a contiguous copy.
RANDOM = {
    "normal_": lambda v: v.normal_(0.0, 1.0),
    "uniform_": lambda v: v.uniform_(-1.0, 1.0),
}


@functools.cache
def _base_values(shape: tuple[int, ...], dtype: str, positive: bool) -> np.ndarray:
    """Distinct values, signs alternating (positive: all above 0.5), in ``dtype``
    (read-only: each library copies it into a tensor)."""
    n = math.prod(shape)
    k = np.arange(n)
    if dtype in FLOATS:
        values = 0.75 + 0.5 * k if positive else (k + 1) * 0.75 * np.where(k % 2, -1, 1)
    elif dtype == "uint8":
        values = k + 1
    else:
        values = (k + 1) * np.where(k % 3 == 1, -1, 1)
    out = values.reshape(shape).astype(dtype)
    out.flags.writeable = False
    return out


def _operand(L: Any, kind: str, view_shape: tuple[int, ...], dtype: str,
             positive: bool) -> Any:
    """The second operand: a number, or a tensor of the view's dtype (contiguous, a
    strided view of another tensor, 0-d, or one row broadcast over the view)."""
    if kind == "none":
        return None
    if kind == "scalar":
        return 1.5 if dtype in FLOATS else 3
    def make(shape: tuple[int, ...]) -> Any:
        values = np.arange(2, 2 + math.prod(shape)).reshape(shape) % 5 + 1
        return L.tensor(values.astype(dtype) if dtype not in FLOATS
                        else values.astype(dtype) * 0.5)
    if kind == "same shape":
        return make(view_shape)
    if kind == "strided":  # every other element of a twice-as-long last dim
        wide = make(view_shape[:-1] + (2 * view_shape[-1],)) if view_shape else make((2,))
        return wide[..., ::2] if view_shape else wide[0]
    if kind == "0-d":
        return make(())
    if kind == "row":
        return make(view_shape[-1:])
    raise ValueError(kind)


@functools.cache
def _positions(view_name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Flat positions in the base of the view's elements, in the view's order."""
    index = dg.arange(math.prod(shape)).reshape(shape)
    return np.array(VIEWS[view_name](index)._array).ravel()


def _expected(base: np.ndarray, positions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The base with the view's elements replaced (by index, no strided write)."""
    flat = base.ravel().copy()
    flat[positions] = np.broadcast_to(values, values.shape).ravel()
    return flat.reshape(base.shape)


def _run(L: Any, case: Case, view_name: str, shape: tuple[int, ...], dtype: str,
         kind: str, in_graph: bool) -> tuple[np.ndarray, np.ndarray]:
    """The base after the in-place op on the view, and the view's values that the
    reference computes from a contiguous copy."""
    values = _base_values(shape, dtype, case.positive)
    view = VIEWS[view_name]
    leaf = L.tensor(values, requires_grad=in_graph)
    base = leaf * 1 if in_graph else leaf
    target = view(base)
    other = _operand(L, kind, tuple(target.shape), dtype, case.positive)
    copy = target.detach().clone()
    with _no_grad(L, not in_graph):
        reference = case.reference(L, copy, other)
        if not isinstance(reference, type(copy)):
            reference = L.tensor(reference)
        case.inplace(L, target, other)
    ref = reference.detach().to(copy.dtype).numpy()
    return base.detach().numpy().copy(), ref


class _no_grad:
    def __init__(self, L: Any, on: bool) -> None:
        self.mode = L.no_grad() if on else None

    def __enter__(self) -> None:
        if self.mode is not None:
            self.mode.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self.mode is not None:
            self.mode.__exit__(*exc)


def _close(got: np.ndarray, want: np.ndarray, dtype: str, exact: bool) -> bool:
    if dtype not in FLOATS:
        return bool(np.array_equal(got, want))
    if exact:
        return bool(np.array_equal(got, want, equal_nan=True))
    rtol = 2e-3 if dtype == "float16" else 1e-5
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                            atol=rtol, equal_nan=True))


def _combinations(case: Case) -> list[tuple[tuple[int, ...], str, str, str, bool]]:
    """(shape, view, dtype, operand kind, in a graph) to run: every view and dtype on
    every shape; every kind of operand, and the graph path, on the first shape only (the
    numpy bug was in the write, whatever the operand; this keeps the default run short).
    PyTorch, where installed, is asked about the first shape."""
    out = []
    for shape in SHAPES:
        kinds = case.operands if shape == SHAPES[0] else case.operands[:1]
        for view_name in VIEWS:
            for dtype in case.dtypes:
                for kind in kinds:
                    out.append((shape, view_name, dtype, kind, False))
                    if (shape == SHAPES[0] and dtype in FLOATS
                            and view_name not in MULTI_OUTPUT):
                        out.append((shape, view_name, dtype, kind, True))
    return out


def _failures(name: str, case: Case) -> list[str]:
    failures = []
    # The same numpy loops compute both: exactly equal (lerp_ and addc*_ are formulas of a
    # few roundings, computed in another order in place).
    exact = name not in ("lerp_", "addcmul_", "addcdiv_")
    for shape, view_name, dtype, kind, in_graph in _combinations(case):
        where = (f"{name} on {view_name} of a {shape} {dtype} base, operand {kind}"
                 f"{', in a graph' if in_graph else ''}")
        got, ref = _run(dg, case, view_name, shape, dtype, kind, in_graph)
        want = _expected(_base_values(shape, dtype, case.positive),
                         _positions(view_name, shape), ref)
        if not _close(got, want, dtype, exact):
            failures.append(f"{where}:\n  got  {got.tolist()}\n  want {want.tolist()}")
            continue
        if torch is not None and shape == SHAPES[0]:
            theirs, _ = _run(torch, case, view_name, shape, dtype, kind, in_graph)
            if not _close(got, theirs, dtype, exact=False):
                failures.append(f"{where}: PyTorch gives {theirs.tolist()}, dyngraph "
                                f"{got.tolist()}")
    return failures


@pytest.mark.parametrize("name", list(CASES))
def test_in_place_op_through_strided_views_matches_out_of_place(name):
    failures = _failures(name, CASES[name])
    assert not failures, f"{len(failures)} wrong:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_fill_of_strided_views_writes_the_same_draws(name):
    for shape in SHAPES:
        for view_name, view in VIEWS.items():
            base = dg.tensor(_base_values(shape, "float32", False))
            target = view(base)
            copy = target.clone()
            dg.manual_seed(7)
            RANDOM[name](copy)
            dg.manual_seed(7)
            RANDOM[name](target)
            want = _expected(_base_values(shape, "float32", False), _positions(view_name, shape),
                             copy.numpy())
            np.testing.assert_array_equal(base.numpy(), want, err_msg=f"{name} {view_name}")


def test_every_in_place_method_is_covered():
    """A new in-place method joins these tables (operators and aliases by their own
    entries)."""
    covered = set(CASES) | set(RANDOM) | {"__setitem__", "__iadd__", "__isub__", "__imul__",
                                          "__itruediv__"}
    assert set(METHODS) - covered == set()


def test_negating_a_column_of_a_4x4_tensor():
    """The reproduction: a column of 4-byte values, 16 bytes apart."""
    for dtype in (dg.float32, dg.int32, dg.float64, dg.int64):
        x = dg.arange(16).reshape(4, 4).to(dtype)
        x[:, 3].neg_()
        assert x[:, 3].tolist() == [-3, -7, -11, -15]
        assert x[:, :3].tolist() == dg.arange(16).reshape(4, 4)[:, :3].tolist()
        y = dg.arange(64).reshape(8, 8).to(dtype)
        y.reshape(-1)[::8].neg_()
        assert y[:, 0].tolist() == [0, -8, -16, -24, -32, -40, -48, -56]


def test_the_check_catches_a_wrong_strided_write(monkeypatch):
    """The checker itself: an in-place op that writes one element wrong is reported."""
    import dyngraph.engine.inplace as inplace

    real = inplace._bumped

    def spoil(self):
        if self._array.size > 1 and self._array.dtype.kind == "f":
            self._array.flat[1] += 1
        return real(self)

    monkeypatch.setattr(inplace, "_bumped", spoil)
    failures = _failures("neg_", Case(lambda L, v, o: v.neg_(), lambda L, x, o: -x,
                                      ("float32",)))
    assert failures and "got" in failures[0]
