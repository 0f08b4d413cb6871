"""The differential test: random programs on dyngraph and on PyTorch, compared step by step.

hypothesis draws short programs (diffprog.py) of elementwise, broadcasting, mixed-dtype
(float16, float32, float64, int64, int32, uint8, bool, mixed with each other), reduction,
shape, view, indexing, matmul and nn.functional ops, on tensors that may have empty dims,
with ``requires_grad_()`` in the middle (and, in the in-place test, in-place ops on bases,
on indexed views and on narrow/split/chunk/unbind pieces, transposes and diagonals, and
setitem). Each line runs on both libraries from the same
numpy data. After every line, every live value must match: dtype, shape, requires_grad and
values; or both libraries must raise the same exception type. At the end the leaves'
gradients of a weighted sum of every float value must match.

Sizes: the CI profile runs a fixed, small set of examples (150 a test, derandomized, so CI
never flakes on a new draw);
``DYNGRAPH_DIFF_EXAMPLES=2000 pytest tests/engine/test_differential.py``
runs a big random search. A failure prints the shrunk program as code: keep it as a named
test once fixed (test_regressions.py, test_regressions_fuzzer_dtypes.py).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from diffprog import (
    FLOATS,
    FUNCTIONAL_FAMILIES,
    INPLACE_FAMILIES,
    STATEMENT_FAMILIES,
    Generator,
    Program,
    Runner,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dyngraph
import dyngraph.nn.functional as dF

torch = pytest.importorskip("torch")

_LOCAL_EXAMPLES = int(os.environ.get("DYNGRAPH_DIFF_EXAMPLES", "0"))
_SETTINGS = settings(
    max_examples=_LOCAL_EXAMPLES or 150,  # (about 3 s a test on a quiet 2-core machine)
    derandomize=not _LOCAL_EXAMPLES,
    deadline=None,
    database=None if not _LOCAL_EXAMPLES else settings.default.database,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

# The exception types a user's ``except`` tells apart, most specific first (PyTorch's
# NotImplementedError is a RuntimeError; numpy's AxisError is an IndexError and a ValueError).
_KINDS = (NotImplementedError, IndexError, TypeError, ValueError, ZeroDivisionError,
          AttributeError, RuntimeError)
_TOL = {"float16": (2e-2, 2e-2), "float32": (2e-4, 2e-4), "float64": (1e-9, 1e-9)}


class Mismatch(AssertionError):
    pass


class ValuesDiffer(Mismatch):
    """Float values beyond the tolerance: excused when PyTorch's own float32 result is at
    least as far from the exact value (``Session._excused``)."""


# Where dyngraph's version check knowingly parts from PyTorch's (test_version_counter.py
# lists it): PyTorch's broadcasting matmul saved expanded copies, where dyngraph refuses;
# dyngraph's message names the node that needed the tensor, so only a matmul's refusal is
# excused. (Never the other way: where PyTorch refuses, dyngraph must too.)
_STRICT_NODE = "Hint: MmBackward0 needs it"


def _known_version_difference(theirs: BaseException | None, ours: BaseException | None
                              ) -> bool:
    return theirs is None and ours is not None and _STRICT_NODE in str(ours)


def _kind(e: BaseException) -> type:
    for kind in _KINDS:
        if isinstance(e, kind):
            return kind
    return type(e)


def _check_outcome(line: str, theirs: BaseException | None, ours: BaseException | None
                   ) -> None:
    if ours is not None and type(ours).__module__.split(".")[0] == "numpy":
        raise Mismatch(f"numpy's {type(ours).__name__} leaked from `{line}`: {ours}")
    if theirs is None and ours is None:
        return
    if theirs is None:
        raise Mismatch(f"`{line}`: dyngraph raised {type(ours).__name__}: {ours}; PyTorch "
                       "did not")
    if ours is None:
        raise Mismatch(f"`{line}`: PyTorch raised {type(theirs).__name__}: {theirs}; "
                       "dyngraph did not")
    if _kind(theirs) is not _kind(ours):
        raise Mismatch(f"`{line}`: PyTorch raised {type(theirs).__name__}: {theirs}; "
                       f"dyngraph raised {type(ours).__name__}: {ours}")


def _dtype_name(d: object) -> str:
    return repr(d).split(".")[-1]


def _check_same(name: str, theirs: object, ours: object, grad: bool = False,
                tol: str | None = None) -> None:
    """``tol``: the dtype whose tolerance applies, when not the values' own (a float64 leaf
    whose gradient went through float32 ops is only as exact as float32)."""
    if not isinstance(theirs, torch.Tensor):
        if theirs != ours:
            raise Mismatch(f"{name}: PyTorch {theirs!r}, dyngraph {ours!r}")
        return
    if not isinstance(ours, dyngraph.Tensor):
        raise Mismatch(f"{name}: PyTorch gave a tensor, dyngraph {ours!r}")
    what = f"{name}{'.grad' if grad else ''}"
    if _dtype_name(theirs.dtype) != _dtype_name(ours.dtype):
        raise Mismatch(f"{what}: dtype {theirs.dtype} in PyTorch, {ours.dtype} in dyngraph")
    if tuple(theirs.shape) != tuple(ours.shape):
        raise Mismatch(f"{what}: shape {tuple(theirs.shape)} in PyTorch, "
                       f"{tuple(ours.shape)} in dyngraph")
    if not grad and theirs.requires_grad != ours.requires_grad:
        raise Mismatch(f"{what}: requires_grad {theirs.requires_grad} in PyTorch, "
                       f"{ours.requires_grad} in dyngraph")
    want = theirs.detach().numpy()
    got = ours.detach().numpy()
    dtype = _dtype_name(theirs.dtype)
    if dtype in _TOL:
        rtol, atol = _TOL[tol or dtype]
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        ok = np.allclose(got, want, rtol=rtol, atol=atol * scale, equal_nan=True)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        kind = ValuesDiffer if dtype in _TOL else Mismatch
        raise kind(f"{what}: values differ\n PyTorch:  {want.tolist()}\n dyngraph: "
                   f"{got.tolist()}")


def _no_farther(theirs: object, ours: object, exact: object, tol: str) -> bool:
    """Is dyngraph's value, element by element, no farther from ``exact`` (the program run
    in float64) than twice PyTorch's, give or take the tolerance? Then the difference is
    PyTorch's own rounding, amplified downstream (1 + erf cancels in its float32 gelu far
    below 0, and a division by the result magnifies it), not a wrong dyngraph."""
    if not isinstance(exact, torch.Tensor) or tuple(exact.shape) != tuple(theirs.shape):
        return False
    want = theirs.detach().double().numpy()
    got = ours.detach().numpy().astype(np.float64)
    ref = exact.detach().double().numpy()
    rtol, atol = _TOL[tol]
    scale = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=1.0))
    with np.errstate(invalid="ignore"):
        near = np.abs(got - ref) <= 2 * np.abs(want - ref) + atol * scale + rtol * np.abs(ref)
    same_special = (np.isnan(got) == np.isnan(want)) & (
        np.isfinite(got) == np.isfinite(want))
    special = ~np.isfinite(want) | ~np.isfinite(got)
    return bool(np.all(np.where(special, same_special & ((got == want) | np.isnan(got)),
                                near)))


class Session:
    """One program being drawn and run on both libraries at once."""

    def __init__(self, data: st.DataObject, families: dict, inplace: bool) -> None:
        self.program = Program()
        self.theirs = Runner(torch, torch.nn.functional)
        self.ours = Runner(dyngraph, dF)
        self.slots: dict[str, object] = {}  # PyTorch's live values, by name
        self.gen = Generator(data, self.program, self.slots, inplace)
        self.families = families
        self._synced = 0
        # After an in-place statement both libraries refused, their states may differ
        # (PyTorch's index_put_ writes the elements before the bad index): the program ends.
        self.ended = False

    def step(self, family: str) -> None:
        if self.ended:
            return
        expr = self.families[family](self.gen)
        if expr is None:
            return
        name = f"v{len(self.program.lines)}"
        line = expr if family in STATEMENT_FAMILIES else f"{name} = {expr}"
        self.run(line, name)

    def run(self, line: str, name: str | None = None) -> bool:
        """Run ``line`` on both libraries and compare; False if both raised."""
        self.program.lines.append(line)
        for i in range(self._synced, len(self.program.arrays)):
            self.theirs.add_array(f"A{i}", self.program.arrays[i])
            self.ours.add_array(f"A{i}", self.program.arrays[i])
        self._synced = len(self.program.arrays)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs, ours = self.theirs.run(line), self.ours.run(line)
        if _known_version_difference(theirs, ours):
            self.program.lines[-1] += "  # a known version-check difference"
            return False
        _check_outcome(line, theirs, ours)
        if theirs is not None:
            self.program.lines[-1] += f"  # raises {_kind(theirs).__name__}"
            self.ended = name is None or not line.startswith(f"{name} = ")
            return False
        if name is not None and name in self.theirs.env and name not in self.slots:
            value = self.theirs[name]
            if isinstance(value, torch.Tensor) and _dtype_name(value.dtype) in (
                    "float32", "float64", "float16", "int64", "int32", "uint8", "bool"):
                self.slots[name] = value
        for n in self.slots:
            self._compare(n, self.theirs[n], self.ours[n])
        return True

    def _compare(self, n: str, theirs: object, ours: object, grad: bool = False) -> None:
        tol = self._least_precise()
        try:
            _check_same(n, theirs, ours, grad=grad, tol=tol)
        except ValuesDiffer:
            exact = self._exact(n, grad)
            if not _no_farther(theirs, ours, exact, tol or _dtype_name(theirs.dtype)):
                raise

    def _exact(self, n: str, grad: bool) -> object:
        """Value ``n`` (or its gradient) of the program so far run in PyTorch with every
        float32 input in float64: the reference a value mismatch is judged against."""
        ref = Runner(torch, torch.nn.functional)
        for i, a in enumerate(self.program.arrays):
            ref.add_array(f"A{i}", a.astype(np.float64) if a.dtype.kind == "f" else a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for line in self.program.lines:  # (and no cast back to float32 or float16)
                for low in (".float()", ".half()"):
                    line = line.replace(low, ".double()")
                for low in ("L.float32", "L.float16"):
                    line = line.replace(low, "L.float64")
                ref.run(line)
        value = ref.env.get(n)
        if grad:
            return getattr(value, "grad", None)
        return value

    def _least_precise(self) -> str | None:
        """float16, else float32, when any value or constant is: a float64 made from
        float32 results (``.double()``) is only as exact as they were (PyTorch's elu and
        numpy's expm1 differ by an ulp), and PyTorch's backward formulas compute with a
        float32 operand in float32 (float64 ** a float32 0-d exponent: its
        ``exponent - 1``)."""
        names = {str(a.dtype) for a in self.program.arrays} | {
            _dtype_name(t.dtype) for t in self.slots.values()}
        for name in ("float16", "float32"):
            if name in names:
                return name
        return None

    def backward(self) -> None:
        """A weighted sum of every float value that requires grad, then backward; the
        leaves' gradients must match."""
        terms = []
        if self.ended:
            return
        for n, t in self.slots.items():
            if t.requires_grad and t.dtype.is_floating_point:
                weights = self.gen.array(tuple(t.shape), _dtype_name(t.dtype))
                terms.append(f"({n} * L.tensor({weights})).sum()")
        if not terms:
            return
        self.run(f"loss = {' + '.join(terms)}")
        if not self.run("loss.backward()"):
            return  # which leaves got a gradient before the error is execution order
        for n, t in self.slots.items():
            if t.is_leaf != self.ours[n].is_leaf:
                raise Mismatch(f"{n}.is_leaf: {t.is_leaf} in PyTorch, {self.ours[n].is_leaf} "
                               "in dyngraph")
            if t.is_leaf and t.requires_grad:
                theirs, ours = t.grad, self.ours[n].grad
                if (theirs is None) != (ours is None):
                    raise Mismatch(f"{n}.grad: PyTorch {theirs!r}, dyngraph {ours!r}")
                if theirs is not None:
                    self._compare(n, theirs, ours, grad=True)


def _run(data: st.DataObject, families: dict, inplace: bool) -> None:
    session = Session(data, families, inplace)
    names = list(families)
    try:
        for _ in range(data.draw(st.integers(1, 2), label="inputs")):
            session.step("input")
        for _ in range(data.draw(st.integers(1, 6), label="steps")):
            session.step(data.draw(st.sampled_from(names), label="family"))
        session.backward()
    except Mismatch as e:
        raise Mismatch(f"{e}\n\nprogram (L = torch or dyngraph):\n"
                       f"{session.program.source()}") from None


@_SETTINGS
@given(st.data())
def test_programs_match_pytorch(data):
    """Functional programs: elementwise, broadcasting, promotion, reductions, shapes, views
    read but not written, indexing, matmul, nn.functional."""
    _run(data, FUNCTIONAL_FAMILIES, inplace=False)


@_SETTINGS
@given(st.data())
def test_programs_with_inplace_ops_match_pytorch(data):
    """The same, plus in-place ops and setitem on views and on their bases."""
    _run(data, {**FUNCTIONAL_FAMILIES, **INPLACE_FAMILIES}, inplace=True)


def test_the_comparison_catches_a_wrong_value():
    """The checker itself: a 1% error, a wrong dtype and a missing exception all fail."""
    t = torch.tensor([1.0, 2.0])
    with pytest.raises(Mismatch, match="values differ"):
        _check_same("v", t, dyngraph.tensor([1.0, 2.02]))
    with pytest.raises(Mismatch, match="dtype"):
        _check_same("v", t, dyngraph.tensor([1.0, 2.0], dtype=dyngraph.float64))
    with pytest.raises(Mismatch, match="did not"):
        _check_outcome("x", IndexError("boom"), None)
    with pytest.raises(Mismatch, match="leaked"):
        _check_outcome("x", IndexError("boom"), np.exceptions.AxisError(3, 1))
    assert FLOATS == ("float32", "float64", "float16")
    # A difference is excused only where PyTorch's own value is as far from the exact one.
    exact = torch.tensor([1.0, -2.36e6], dtype=torch.float64)
    theirs = torch.tensor([1.0, -1.535e6])
    assert _no_farther(theirs, dyngraph.tensor([1.0, -2.36e6]), exact, "float32")
    small = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert not _no_farther(small.float(), dyngraph.tensor([1.01, 2.0]), small, "float32")
    assert not _no_farther(theirs, dyngraph.tensor([1.0, -5e6]), exact, "float32")
