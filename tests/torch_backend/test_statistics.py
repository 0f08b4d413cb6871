"""The PyTorch backend's statistics where they are cheap to get wrong: a non-finite tensor's
exact counts and finite-element statistics (built from ``nan_to_num`` and sums since issue
24's cost work), judged against numpy on the same values, in every mode and on both paths
(read at once, and on the device read at the iteration's end)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dyngraph  # noqa: E402
from dyngraph.capture.tracing import tracer  # noqa: E402
from dyngraph.torch_backend import stats  # noqa: E402


def _odd_values(dtype: torch.dtype) -> torch.Tensor:
    """Finite values, NaNs, +Inf and -Inf in one tensor (an attention mask's -inf, a NaN
    from 0/0), with finite values large and small."""
    g = torch.Generator().manual_seed(3)
    t = torch.randn(6, 50, generator=g, dtype=torch.float64) * 3 + 1
    t[0, :7] = math.nan
    t[1, 3:30] = -math.inf
    t[2, ::9] = math.inf
    t[3, 5] = 1e30  # (its square overflows float32; the value itself does not)
    return t.to(dtype)


def _truth(t: torch.Tensor) -> dict[str, float]:
    f = t.detach().to(torch.float64).numpy().reshape(-1)
    finite = f[np.isfinite(f)]
    return {"nan": int(np.isnan(f).sum()), "inf": int(np.isinf(f).sum()),
            "norm": float(np.sqrt((finite * finite).sum())), "min": float(finite.min()),
            "max": float(finite.max()), "mean": float(finite.mean()),
            "std": float(finite.std(ddof=1))}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_a_non_finite_tensors_counts_are_exact_and_its_finite_statistics_true(dtype):
    t = _odd_values(dtype)
    before = t.clone()
    want = _truth(t)
    cheap, full = stats.cheap([t])[0], stats.full([t])[0]
    assert torch.equal(t.isnan(), before.isnan()) and torch.equal(
        t.nan_to_num(0.0, 0.0, 0.0), before.nan_to_num(0.0, 0.0, 0.0))  # (left alone)
    for s in (cheap, full):
        assert (s.nan, s.inf) == (want["nan"], want["inf"])
        assert s.norm == pytest.approx(want["norm"], rel=1e-5)
    for k in ("min", "max", "mean", "std"):
        assert getattr(full, k) == pytest.approx(want[k], rel=1e-6), k
    assert len(full.preview) == 8 and math.isnan(full.preview[0])


def test_a_tensor_all_non_finite_has_counts_and_no_statistics():
    t = torch.tensor([math.nan, math.inf, -math.inf, math.nan])
    for s in (stats.cheap([t])[0], stats.full([t])[0]):
        assert (s.nan, s.inf, s.norm) == (2, 2, None)


def test_a_complex_tensor_counts_its_real_and_imaginary_parts():
    t = torch.tensor([1 + 2j, complex(math.nan, 0.0), complex(3.0, math.inf)])
    s = stats.cheap([t])[0]
    assert (s.nan, s.inf) == (1, 1)
    assert s.norm == pytest.approx(math.sqrt(1 + 4 + 0 + 9), rel=1e-6)


def test_summaries_read_at_the_iterations_end_equal_those_read_at_once_for_non_finite_outputs():
    """The device path (one read per iteration) and the per-op path give the same numbers,
    exactly, for outputs that need the second look: a mask of -inf and a NaN."""
    x = _odd_values(torch.float32)

    def run() -> list[object]:
        w = torch.ones(50, requires_grad=True)
        y = x * w
        (y.nan_to_num(0.0, 0.0, 0.0) * 2).sum().backward()
        return [y, w]

    found = {}
    for mode in ("cheap", "full"):
        for eager in (False, True):
            with dyngraph.trace(stats=mode, backend="torch") as tr:
                tracer.eager_stats = eager
                try:
                    run()
                finally:
                    tracer.eager_stats = False
            ops = [e for e in tr.events if e.kind == "op"]
            found[mode, eager] = [repr(e.summary) for e in ops]  # (NaN: by its text)
        assert found[mode, False] == found[mode, True], mode
        want = _truth(x)
        assert f"nan={want['nan']}, inf={want['inf']}" in found[mode, False][0]
