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


def _steps(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, n: int,
           resize_at: int = -1) -> list[list[float]]:
    """``n`` steps; each step's parameters' update norms, measured by hand (before and after
    copies). At step ``resize_at`` the first parameter is replaced in place (``p.data``) by
    a larger one, as pruning or growing code does."""
    found = []
    for i in range(n):
        if i == resize_at:
            p = next(model.parameters())
            with torch.no_grad():
                p.data = torch.randn(p.shape[0], p.shape[1] + 3)
            model[0].in_features += 3
            x = torch.randn(x.shape[0], x.shape[1] + 3, generator=torch.Generator().manual_seed(i))
            opt.state.clear()
        before = [p.detach().clone() for p in model.parameters()]
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        found.append([float((p.detach() - b).norm())
                      for p, b in zip(model.parameters(), before, strict=True)])
    return found


def test_update_norms_are_each_steps_own_change_with_the_copies_kept_between_steps():
    """The capture keeps a CPU parameter's copy from step to step (no fresh memory per
    step): every step's update norm is still that step's change, also after a parameter
    was replaced by a larger one in place."""
    def run(record: bool) -> tuple[list[list[float]], list[list[float]]]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = torch.randn(8, 5)
        if not record:
            return _steps(model, opt, x, 5, resize_at=3), []
        with dyngraph.trace(stats="cheap", backend="torch") as tr:
            by_hand = _steps(model, opt, x, 5, resize_at=3)
        steps = [e for e in tr.events if e.kind == "optimizer_step"]
        return by_hand, [[n for _, n in e.updates] for e in steps]

    by_hand, recorded = run(True)
    assert len(recorded) == 5
    for want, got in zip(by_hand, recorded, strict=True):
        assert got == pytest.approx(want, rel=1e-6)
    assert run(False)[0] == by_hand  # (and the capture changed no step)
