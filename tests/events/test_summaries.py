"""Tensor summaries: exact where promised, bounded where sampled, NaN/Inf always counted."""

from __future__ import annotations

import numpy as np
import pytest

import dyngraph as dg
from dyngraph.capture import summaries as S
from dyngraph.capture.rows import summary_of


@pytest.mark.parametrize("stats", ["cheap", "full"])
def test_nan_produced_by_an_op_shows_in_that_ops_summary(stats):
    x = dg.tensor([-1.0, 1.0, 4.0], requires_grad=True)
    with dg.trace(stats=stats) as t, np.errstate(invalid="ignore", divide="ignore"):
        y = x.log()
        z = (y * 0).sum()
        z.backward()
    ops = {e.op: e for e in t.events if e.kind == "op"}
    assert ops["log"].summary.nan == 1 and ops["log"].summary.inf == 0
    assert not ops["log"].summary.finite
    assert t.iterations[0].graph.nodes[y._id].has_nonfinite
    leaf = t.iterations[0].graph.nodes[x._id].summary
    # entering tensors are summarised with full stats only
    assert leaf.finite if stats == "full" else leaf is None


@pytest.mark.parametrize("shape", [(7,), (3, 5), (64, 256), (130, 130)])
def test_full_summary_matches_numpy(shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 3 + 1
    s = S.summarize(a, "full")
    exact = a.size <= S.EXACT_LIMIT
    assert s.shape == shape and s.dtype == "float32" and s.sampled == (not exact)
    assert s.preview == tuple(float(v) for v in a.reshape(-1)[: S.PREVIEW])
    tol = 1e-4 if exact else 0.05
    assert s.mean == pytest.approx(a.mean(), rel=tol, abs=tol)
    assert s.std == pytest.approx(a.std(ddof=1), rel=tol)
    assert s.norm == pytest.approx(np.linalg.norm(a), rel=tol)
    if exact:
        assert (s.min, s.max) == (float(a.min()), float(a.max()))


def test_cheap_summary_has_norm_and_nan_counts_only():
    a = np.array([[3.0, 4.0], [np.nan, np.inf]], np.float32)
    s = S.summarize(a, "cheap")
    assert (s.nan, s.inf, s.norm) == (1, 1, 5.0)
    assert s.min is s.max is s.mean is s.std is None and s.preview == ()
    assert S.summarize(a[:1], "cheap") == S.cheap(a[:1])
    assert S.summarize(a, "none") is None


def test_std_is_accurate_when_the_mean_dwarfs_it():
    a = 1000.0 + np.random.default_rng(2).standard_normal(500) * 1e-3
    assert S.summarize(a, "full").std == pytest.approx(a.std(ddof=1), rel=1e-3)


def test_other_dtypes_views_and_empty_tensors():
    ints = S.summarize(np.arange(10), "full")
    assert (ints.min, ints.max, ints.mean, ints.dtype) == (0.0, 9.0, 4.5, "int64")
    assert S.summarize(np.array([True, False, True]), "cheap").norm == pytest.approx(2 ** 0.5)
    half = S.summarize(np.full(10, 60000, np.float16), "cheap")  # would overflow in float16
    assert half.nan == half.inf == 0 and half.norm == pytest.approx(60000 * 10 ** 0.5, rel=1e-3)
    view = np.arange(200 * 300, dtype=np.float32).reshape(200, 300).T
    s = S.summarize(view, "full")
    assert s.shape == (300, 200) and s.sampled and s.preview[:2] == (0.0, 300.0)
    empty = S.summarize(np.zeros((0, 3)), "full")
    assert empty.shape == (0, 3) and empty.norm is None and empty.finite


def test_cost_is_bounded_by_sampling():
    big = np.ones(4_000_000, np.float32)
    big[::7] = np.nan
    for mode, cap in (("cheap", S.CHEAP_SAMPLE), ("full", S.FULL_SAMPLE)):
        s = S.summarize(big, mode)
        assert s.sampled and 0 < s.nan <= cap  # counted in the sample
        assert s.norm == pytest.approx((big.size * 6 / 7) ** 0.5, rel=0.05)


def test_l2_norm_is_exact_then_bounded():
    rng = np.random.default_rng(3)
    small = rng.standard_normal((300, 200)).astype(np.float32)
    assert S.l2_norm(small) == pytest.approx(np.linalg.norm(small.astype(np.float64)), rel=1e-5)
    assert S.l2_norm(small.T) == pytest.approx(S.l2_norm(small), rel=1e-5)
    huge = np.full((S.NORM_LIMIT * 3,), 2.0, np.float32)
    assert S.l2_norm(huge) == pytest.approx(2.0 * huge.size ** 0.5, rel=1e-6)
    with np.errstate(over="ignore"):  # float32 overflows: the float64 fallback answers
        assert S.l2_norm(np.array([1e30, 1e30], np.float32)) == pytest.approx(2 ** 0.5 * 1e30)
    assert np.isnan(S.l2_norm(np.array([np.nan, 1.0])))


def test_update_norm_is_exact_then_a_bounded_estimate():
    small = np.arange(100, dtype=np.float32)
    assert S.update_norm(small) == pytest.approx(np.linalg.norm(small.astype(np.float64)))
    rng = np.random.default_rng(0)
    big = rng.standard_normal((784, 256)).astype(np.float32)
    exact = float(np.linalg.norm(big.astype(np.float64)))
    assert S.update_norm(big) == pytest.approx(exact, rel=0.05)
    assert S.update_norm(big.T) == pytest.approx(exact, rel=0.05)
    big[::7, ::3] = np.nan  # a sample that sees NaN says so
    assert np.isnan(S.update_norm(big))


def test_a_permuted_view_is_summarised_on_its_owner_without_a_copy():
    rng = np.random.default_rng(1)
    owner = rng.standard_normal((8, 32, 4, 16)).astype(np.float32)
    view = owner.transpose(0, 2, 1, 3)
    assert S._dense_owner(view) is owner
    for mode in ("cheap", "full"):
        got, want = S.summarize(view, mode), S.summarize(np.ascontiguousarray(view), mode)
        assert got.preview == want.preview and got.sampled == want.sampled
        for f in ("min", "max", "mean", "std", "norm"):
            assert getattr(got, f) == pytest.approx(getattr(want, f), rel=1e-5, abs=1e-6)
    view[1, 2, 3, 4] = np.nan
    assert S.cheap(view).nan == 1
    # not a permutation of the whole owner: a slice, a flip, overlapping strides
    assert S._dense_owner(owner[:, :16]) is None
    assert S._dense_owner(owner[::-1]) is None
    flat = owner.reshape(-1)[:4]
    assert S._dense_owner(np.lib.stride_tricks.as_strided(flat, (2, 2), (4, 4))) is None


@pytest.mark.parametrize("values", [[2.5], [1.0, -3.0, 7.0], [1.0, np.nan, np.inf, -np.inf, 2.0],
                                    [np.nan], [0, 1, 2]])
def test_tiny_full_summaries_match_the_numpy_path(values):
    a = np.array(values, np.float32 if isinstance(values[0], float) else np.int64)
    got = summary_of(S._small_full(a, a.shape, str(a.dtype)))  # (summary rows: internal)
    want = summary_of(S._full(a, a.shape, str(a.dtype), a.size))
    assert (got.nan, got.inf, repr(got.preview), got.sampled) == (
        want.nan, want.inf, repr(want.preview), want.sampled)
    for f in ("min", "max", "mean", "std", "norm"):
        g, w = getattr(got, f), getattr(want, f)
        assert (g is None and w is None) or g == pytest.approx(w, rel=1e-6, abs=1e-9)


def _fast_path_cases():
    rng = np.random.default_rng(4)
    cases = [np.ones((), np.float32) * 2.5, np.full((1, 1), -3.0), np.array([np.nan], np.float32),
             np.array(np.inf, np.float32)]
    for shape in [(17,), (64, 256), (130, 126), (5, 7), (3, 4, 5), (300, 200)]:
        for dt in (np.float32, np.float64):
            a = (rng.standard_normal(shape) * 3 + 1).astype(dt)
            cases += [a, a.T, np.full(shape, 1000.0, dt) + a * 1e-5]  # (the last: two-pass std)
    holed = rng.standard_normal((40, 40)).astype(np.float32)
    holed[3, 4] = np.nan
    return [*cases, holed, holed.T, holed[::2]]


@pytest.mark.parametrize("mode", ["cheap", "full"])
def test_the_fast_paths_give_what_the_general_path_gives(mode):
    fast = getattr(S, mode)  # what the tracer calls (SUMMARIZERS)
    for a in _fast_path_cases():
        got, want = fast(a), S.summarize(a, mode)
        if mode == "cheap" and not a.flags.c_contiguous and S._dense_owner(a) is None:
            # summed in place by einsum (see the next test): the same up to rounding
            assert got.replace(norm=want.norm) == want
            assert got.norm == pytest.approx(want.norm, rel=1e-6)
            continue
        # repr: a NaN in a preview never equals itself
        assert repr(got) == repr(want), (a.shape, a.dtype)


def test_a_nan_outside_a_sampled_summarys_sample_is_still_found():
    from dyngraph.debug.breakpoints import all_finite

    big = np.ones((784, 256), np.float32)
    big.reshape(-1)[S.BLOCK] = np.nan  # just after the sample's first run of elements
    assert big.size > S.EXACT_LIMIT
    for mode in ("cheap", "full"):
        s = S.SUMMARIZERS[mode](big)
        assert s.sampled and s.nan == 0  # the estimate did not see it ...
        assert not all_finite(big, s)  # ... and the NaN check does not trust it


def test_a_strided_slice_is_summarised_in_place_and_still_counts_nan():
    owner = np.random.default_rng(5).standard_normal((8, 32, 3, 4, 16)).astype(np.float32)
    q = owner.transpose(2, 0, 3, 1, 4)[0]  # attention's q: strided, not a permutation
    assert S._dense_owner(q) is None and not q.flags.c_contiguous
    got, want = S.cheap(q), S.summarize(np.ascontiguousarray(q), "cheap")
    assert (got.shape, got.nan, got.inf, got.sampled) == (want.shape, 0, 0, False)
    assert got.norm == pytest.approx(want.norm, rel=1e-5)
    q[1, 2, 3, 4] = np.nan
    q[0, 0, 0, 0] = -np.inf
    holed = S.cheap(q)
    assert (holed.nan, holed.inf) == (1, 1) and holed.norm is not None
