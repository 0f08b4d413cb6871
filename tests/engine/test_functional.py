"""nn.functional against PyTorch (forward values and gradients) and against float64
central differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dyngraph as dg
import dyngraph.nn.functional as F
from dyngraph.engine.ops_nn import NN_OPS, _erf

RNG = np.random.default_rng(0)


def _randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# -- float64 central differences ----------------------------------------------------------
def numeric_grads(fn, arrays, wrt, eps=1e-6):
    """d(sum(fn(*arrays) * probe))/d(arrays[i]) for i in wrt, by central differences."""
    probe = None
    grads = []
    for i in wrt:
        a = arrays[i]
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            old = a[idx]
            a[idx] = old + eps
            plus = fn(*arrays)
            a[idx] = old - eps
            minus = fn(*arrays)
            a[idx] = old
            if probe is None:
                probe = np.random.default_rng(1).standard_normal(np.shape(plus))
            g[idx] = ((plus - minus) * probe).sum() / (2 * eps)
        grads.append(g)
    return grads


def analytic_grads(dg_fn, arrays, wrt):
    tensors = [dg.tensor(a, requires_grad=i in wrt) if a.dtype.kind == "f" else dg.tensor(a)
               for i, a in enumerate(arrays)]
    out = dg_fn(*tensors)
    probe = np.random.default_rng(1).standard_normal(out.shape)
    (out * dg.tensor(probe)).sum().backward()
    return [tensors[i].grad.numpy() for i in wrt]


def gradcheck(dg_fn, arrays, wrt, atol=1e-5, rtol=1e-3):
    def plain(*xs):
        with dg.no_grad():
            return dg_fn(*[dg.tensor(x) for x in xs]).detach().numpy().astype(np.float64)

    expected = numeric_grads(plain, [a.copy() for a in arrays], wrt)
    got = analytic_grads(dg_fn, arrays, wrt)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=atol, rtol=rtol)


def f64(*shape):
    return RNG.standard_normal(shape)


GRADCHECK_CASES = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [f64(2, 3, 4), f64(5, 4), f64(5)], [0, 1, 2]),
    "softmax": (lambda x: F.softmax(x, dim=1), [f64(3, 4, 2)], [0]),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), [f64(3, 4)], [0]),
    "gelu": (F.gelu, [f64(4, 5)], [0]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [f64(7)], [0]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3, 4), w, b), [f64(2, 3, 4), f64(3, 4),
                                                                   f64(3, 4)], [0, 1, 2]),
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         [f64(4, 3, 2), f64(3), f64(3)], [0, 1, 2]),
    "batch_norm_eval": (lambda x, m, v, w: F.batch_norm(x, m, v, w),
                        [f64(4, 3), f64(3), np.abs(f64(3)) + 0.5, f64(3)], [0, 3]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [f64(3, 4, 5), f64(4), f64(4)],
                   [0, 1, 2]),
    "cross_entropy": (lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=1,
                                                      label_smoothing=0.1),
                      [f64(6, 4), np.array([0, 1, 3, 2, 3, 0]), np.abs(f64(4)) + 0.5], [0]),
    "cross_entropy_probs": (lambda x, t: F.cross_entropy(x, t), [f64(3, 4, 2),
                                                               np.abs(f64(3, 4, 2))], [0, 1]),
    "nll_loss": (lambda x, t: F.nll_loss(x, t, reduction="sum"),
                 [f64(2, 3, 4), np.array([[0, 2, 1, 1], [2, 2, 0, 1]])], [0]),
    "mse_loss": (lambda a, b: F.mse_loss(a, b), [f64(3, 2), f64(3, 2)], [0, 1]),
    "l1_loss": (lambda a, b: F.l1_loss(a, b, reduction="none"), [f64(3, 2), f64(3, 2)], [0, 1]),
    "bce": (lambda p, y: F.binary_cross_entropy(p, y),
            [RNG.uniform(0.1, 0.9, (4, 3)), RNG.uniform(0, 1, (4, 3))], [0, 1]),
    "bce_logits": (lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, pos_weight=pw),
                   [f64(4, 3), RNG.uniform(0, 1, (4, 3)), np.abs(f64(3)), np.abs(f64(3))],
                   [0, 1]),
    "embedding": (lambda i, w: F.embedding(i, w),
                  [np.array([[0, 2, 1], [1, 1, 3]]), f64(4, 3)], [1]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2)),
               [f64(2, 2, 5, 6), f64(3, 2, 3, 2), f64(3)], [0, 1, 2]),
    "conv2d_groups": (lambda x, w: F.conv2d(x, w, groups=2), [f64(1, 4, 4, 4), f64(4, 2, 2, 2)],
                      [0, 1]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
                   [f64(2, 2, 6, 5)], [0]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
                   [f64(1, 2, 5, 6)], [0]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 4)), [f64(2, 5, 7)], [0]),
    "softplus": (lambda x: F.softplus(x * 8, beta=2, threshold=10), [f64(3, 4)], [0]),
    "elu": (lambda x: F.elu(x, alpha=0.7), [f64(3, 4)], [0]),
    "smooth_l1": (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), [f64(4, 3), f64(4, 3)], [0, 1]),
    "huber": (lambda a, b: F.huber_loss(a, b, delta=0.7, reduction="sum"),
              [f64(4, 3), f64(4, 3)], [0, 1]),
    "kl_div": (lambda a, b: F.kl_div(a, b, reduction="batchmean"),
               [f64(3, 4), np.abs(f64(3, 4))], [0]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
               [f64(2, 2, 9), f64(3, 2, 3), f64(3)], [0, 1, 2]),
    "normalize": (lambda x: F.normalize(x, dim=-1), [f64(3, 4)], [0]),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b), [f64(3, 4, 2), f64(3, 4, 2)],
                          [0, 1]),
    "pad": (lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), [f64(2, 3, 4)], [0]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             [f64(2, 3, 4), f64(2, 3, 4), f64(2, 3, 4)], [0, 1, 2]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK_CASES))
def test_gradients_match_central_differences(name):
    fn, arrays, wrt = GRADCHECK_CASES[name]
    gradcheck(fn, arrays, wrt)


def test_gradcheck_catches_a_gradient_one_percent_wrong():
    op = NN_OPS["softmax"]
    original = op.forward

    def wrong(a, dim):
        out, backward = original(a, dim)
        return out, lambda g: tuple(x * 1.01 for x in backward(g))

    op.forward = wrong
    try:
        with pytest.raises(AssertionError):
            gradcheck(lambda x: F.softmax(x, dim=-1), [f64(3, 4)], [0])
    finally:
        op.forward = original


def test_erf_fit_is_accurate_to_float32():
    z = np.linspace(-6, 6, 2001)
    exact = np.array([math.erf(v) for v in z])
    assert np.max(np.abs(_erf(z) - exact)) < 2e-7


# -- against PyTorch ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: threads only oversubscribe the shared cores
    yield torch
    torch.set_num_threads(threads)


def _both(arrays, wrt, torch):
    ours = [dg.tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    return ours, theirs


def check_against_torch(torch, ours_fn, torch_fn, arrays, wrt, atol=1e-5, rtol=1e-4):
    ours, theirs = _both(arrays, wrt, torch)
    out = ours_fn(*ours)
    ref = torch_fn(*theirs)
    assert tuple(out.shape) == tuple(ref.shape)
    assert str(out.detach().numpy().dtype) == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=atol, rtol=rtol)
    if not wrt:
        return
    probe = RNG.standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * dg.tensor(probe)).sum().backward()
    (ref * torch.tensor(probe)).sum().backward()
    for i in wrt:
        np.testing.assert_allclose(ours[i].grad.numpy(), theirs[i].grad.numpy(), atol=atol * 10,
                                   rtol=rtol * 10, err_msg=f"gradient of input {i}")


def test_activations_match_torch(torch):
    x = _randn(4, 5) * 3
    tf = torch.nn.functional
    for ours, theirs in [
        (F.gelu, tf.gelu),
        (lambda t: F.gelu(t, approximate="tanh"), lambda t: tf.gelu(t, approximate="tanh")),
        (lambda t: F.softmax(t, dim=0), lambda t: tf.softmax(t, dim=0)),
        (lambda t: F.log_softmax(t, dim=-1), lambda t: tf.log_softmax(t, dim=-1)),
        (F.relu, tf.relu), (F.tanh, torch.tanh), (F.sigmoid, torch.sigmoid),
        (F.silu, tf.silu), (F.leaky_relu, tf.leaky_relu), (F.elu, tf.elu),
        (lambda t: F.softplus(t, beta=2, threshold=3), lambda t: tf.softplus(t, beta=2,
                                                                             threshold=3)),
        (lambda t: F.normalize(t, p=1, dim=0), lambda t: tf.normalize(t, p=1, dim=0)),
    ]:
        check_against_torch(torch, ours, theirs, [x], [0])


def test_softmax_is_stable_for_large_logits(torch):
    x = np.array([[1000.0, 0.0, -1000.0]], dtype=np.float32)
    check_against_torch(torch, lambda t: F.log_softmax(t, 1),
                        lambda t: torch.nn.functional.log_softmax(t, 1), [x], [0])


def test_linear_matches_torch(torch):
    tf = torch.nn.functional
    check_against_torch(torch, F.linear, tf.linear, [_randn(2, 3, 4), _randn(5, 4), _randn(5)],
                        [0, 1, 2])
    check_against_torch(torch, F.linear, tf.linear, [_randn(4), _randn(5, 4)], [0, 1])


@pytest.mark.parametrize("kwargs", [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 2},
    {"label_smoothing": 0.2}, {"weight": True}, {"weight": True, "ignore_index": 0},
    {"weight": True, "label_smoothing": 0.1, "reduction": "sum"},
])
def test_cross_entropy_matches_torch(torch, kwargs):
    kwargs = dict(kwargs)
    x = _randn(6, 4)
    t = np.array([0, 1, 2, 3, 2, 2])
    w = np.abs(_randn(4)) + 0.1
    ours_kw = dict(kwargs)
    theirs_kw = dict(kwargs)
    if kwargs.pop("weight", None):
        ours_kw["weight"] = dg.tensor(w)
        theirs_kw["weight"] = torch.tensor(w)
    check_against_torch(torch, lambda a: F.cross_entropy(a, dg.tensor(t), **ours_kw),
                        lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(t),
                                                                    **theirs_kw), [x], [0])


def test_cross_entropy_spatial_and_probability_targets_match_torch(torch):
    tf = torch.nn.functional
    x = _randn(2, 3, 4, 5)
    t = RNG.integers(0, 3, (2, 4, 5))
    check_against_torch(torch, lambda a: F.cross_entropy(a, dg.tensor(t), reduction="none"),
                        lambda a: tf.cross_entropy(a, torch.tensor(t), reduction="none"), [x], [0])
    probs = np.abs(_randn(2, 3, 4, 5))
    check_against_torch(torch, lambda a, p: F.cross_entropy(a, p, label_smoothing=0.1),
                        lambda a, p: tf.cross_entropy(a, p, label_smoothing=0.1),
                        [x, probs], [0, 1])
    check_against_torch(torch, lambda a: F.cross_entropy(a, dg.tensor(np.array(2))),
                        lambda a: tf.cross_entropy(a, torch.tensor(2)), [_randn(4)], [0])


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_nll_and_regression_losses_match_torch(torch, red):
    tf = torch.nn.functional
    logp = np.log(np.abs(_randn(5, 3)) + 0.1)
    t = np.array([0, 2, 1, 1, 0])
    check_against_torch(torch, lambda a: F.nll_loss(a, dg.tensor(t), reduction=red),
                        lambda a: tf.nll_loss(a, torch.tensor(t), reduction=red), [logp], [0])
    check_against_torch(torch, lambda a, b: F.mse_loss(a, b, reduction=red),
                        lambda a, b: tf.mse_loss(a, b, reduction=red),
                        [_randn(3, 4), _randn(3, 4)], [0, 1])
    check_against_torch(torch, lambda a, b: F.l1_loss(a, b, reduction=red),
                        lambda a, b: tf.l1_loss(a, b, reduction=red),
                        [_randn(3, 4), _randn(3, 4)], [0, 1])


def test_binary_cross_entropies_match_torch(torch):
    tf = torch.nn.functional
    p = RNG.uniform(0.01, 0.99, (4, 3)).astype(np.float32)
    y = RNG.uniform(0, 1, (4, 3)).astype(np.float32)
    w = np.abs(_randn(3))
    check_against_torch(torch, F.binary_cross_entropy, tf.binary_cross_entropy, [p, y], [0, 1])
    check_against_torch(
        torch, lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction="none"),
        lambda a, b, c: tf.binary_cross_entropy(a, b, c, reduction="none"), [p, y, w], [0])
    x = _randn(4, 3) * 20  # large logits: no overflow
    check_against_torch(torch, F.binary_cross_entropy_with_logits,
                        tf.binary_cross_entropy_with_logits, [x, y], [0, 1])
    check_against_torch(
        torch, lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, pos_weight=c,
                                                                  reduction="sum"),
        lambda a, b, c: tf.binary_cross_entropy_with_logits(a, b, pos_weight=c, reduction="sum"),
        [x, y, w], [0, 1])


def test_layer_norm_and_embedding_match_torch(torch):
    tf = torch.nn.functional
    check_against_torch(torch, lambda x, w, b: F.layer_norm(x, (4,), w, b, eps=1e-3),
                        lambda x, w, b: tf.layer_norm(x, (4,), w, b, eps=1e-3),
                        [_randn(2, 3, 4), _randn(4), _randn(4)], [0, 1, 2])
    check_against_torch(torch, lambda x: F.layer_norm(x, (3, 4)),
                        lambda x: tf.layer_norm(x, (3, 4)), [_randn(2, 3, 4)], [0])
    idx = np.array([[0, 3, 3], [2, 1, 0]])
    check_against_torch(torch, lambda w: F.embedding(dg.tensor(idx), w, padding_idx=3),
                        lambda w: tf.embedding(torch.tensor(idx), w, padding_idx=3),
                        [_randn(4, 5)], [0])


@pytest.mark.parametrize("kwargs", [
    {}, {"stride": 2, "padding": 1}, {"padding": (2, 1), "dilation": 2}, {"groups": 2},
    {"padding": "same"}, {"stride": (1, 2), "padding": "valid"},
])
def test_conv2d_matches_torch(torch, kwargs):
    x = _randn(2, 4, 7, 6)
    w = _randn(6, 4 // kwargs.get("groups", 1), 3, 3)
    b = _randn(6)
    check_against_torch(torch, lambda a, c, d: F.conv2d(a, c, d, **kwargs),
                        lambda a, c, d: torch.nn.functional.conv2d(a, c, d, **kwargs),
                        [x, w, b], [0, 1, 2], atol=1e-4)


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": (1, 2), "dilation": (2, 1)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
])
def test_max_pool2d_matches_torch(torch, kwargs):
    x = _randn(2, 3, 7, 8)
    check_against_torch(torch, lambda a: F.max_pool2d(a, **kwargs),
                        lambda a: torch.nn.functional.max_pool2d(a, **kwargs), [x], [0])


def test_pad_one_hot_and_sdpa_match_torch(torch):
    tf = torch.nn.functional
    check_against_torch(torch, lambda a: F.pad(a, (1, 2, 0, 3), value=-1.0),
                        lambda a: tf.pad(a, (1, 2, 0, 3), value=-1.0), [_randn(2, 3, 4)], [0])
    idx = np.array([[1, 0], [3, 2]])
    ours = F.one_hot(dg.tensor(idx), 5)
    assert ours.detach().numpy().dtype == np.int64
    np.testing.assert_array_equal(ours.detach().numpy(), tf.one_hot(torch.tensor(idx), 5).numpy())
    mask = RNG.uniform(size=(3, 3)) > 0.7
    np.fill_diagonal(mask, False)
    check_against_torch(
        torch, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=dg.tensor(mask)),
        lambda q, k, v: tf.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(~mask)),
        [_randn(2, 3, 4), _randn(2, 3, 4), _randn(2, 3, 4)], [0, 1, 2])


def test_dropout_scales_kept_values_and_is_identity_in_eval():
    dg.manual_seed(0)
    x = dg.ones(1000, requires_grad=True)
    y = F.dropout(x, 0.25)
    kept = y.detach().numpy() != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert not F.dropout(x, 1.0).detach().numpy().any()


def test_errors_name_the_problem():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3"):
        F.linear(dg.zeros(2, 3), dg.zeros(4, 5))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(dg.zeros(2, 3), dg.tensor([0, 5]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(dg.zeros(2), dg.zeros(2), reduction="avg")
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of "
                       r"tensor b \(3\)"), pytest.warns(UserWarning, match="different to the"):
        F.mse_loss(dg.zeros(2), dg.zeros(3))  # PyTorch broadcasts, warns, then fails
    with pytest.raises(RuntimeError, match="expected input with shape"):
        F.layer_norm(dg.zeros(2, 3), (4,))
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(dg.tensor([7]), dg.zeros(3, 2))
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(dg.zeros(2), approximate="fast")


def test_ops_are_single_named_graph_nodes():
    seen = []
    x = dg.randn(3, 4, requires_grad=True)
    with dg.subscribe(seen.append):
        F.cross_entropy(F.linear(x, dg.randn(2, 4)), dg.tensor([0, 1, 1])).backward()
    ops = [e.op for e in seen if e.kind == "op"]
    assert ops == ["linear", "cross_entropy"]
    steps = [e.grad_fn for e in seen if e.kind == "backward_step"]
    assert steps == ["NllLossBackward0", "AddmmBackward0"]


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_robust_and_divergence_losses_match_torch(torch, red):
    tf = torch.nn.functional
    a, b = _randn(5, 4) * 2, _randn(5, 4)
    check_against_torch(torch, lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=0.5),
                        lambda x, y: tf.smooth_l1_loss(x, y, reduction=red, beta=0.5), [a, b],
                        [0, 1])
    check_against_torch(torch, lambda x, y: F.huber_loss(x, y, reduction=red, delta=0.8),
                        lambda x, y: tf.huber_loss(x, y, reduction=red, delta=0.8), [a, b],
                        [0, 1])
    logq = np.log(np.abs(_randn(5, 4)) + 0.1)
    p = np.abs(_randn(5, 4))
    p[0, 0] = 0.0
    for log_target in (False, True):
        target = np.log(p + 0.1) if log_target else p
        check_against_torch(
            torch,
            lambda x, t=target, lt=log_target: F.kl_div(x, dg.tensor(t), reduction=red,
                                                        log_target=lt),
            lambda x, t=target, lt=log_target: tf.kl_div(x, torch.tensor(t), reduction=red,
                                                         log_target=lt),
            [logq], [0])


def test_conv1d_and_cosine_similarity_match_torch(torch):
    tf = torch.nn.functional
    for kwargs in ({}, {"stride": 2, "padding": 2}, {"groups": 2, "dilation": 2},
                   {"padding": "same"}):
        w = _randn(4, 4 // kwargs.get("groups", 1), 3)
        check_against_torch(torch, lambda x, k, kw=kwargs: F.conv1d(x, k, **kw),
                            lambda x, k, kw=kwargs: tf.conv1d(x, k, **kw), [_randn(2, 4, 9), w],
                            [0, 1], atol=1e-4)
    check_against_torch(torch, lambda x, y: F.cosine_similarity(x, y, dim=-1),
                        lambda x, y: tf.cosine_similarity(x, y, dim=-1),
                        [_randn(3, 5), _randn(3, 5)], [0, 1])


def test_weights_only_gradients_skip_the_input_gradient(torch):
    # A first layer: the data needs no gradient, so linear/conv skip computing it.
    tf = torch.nn.functional
    check_against_torch(torch, F.linear, tf.linear, [_randn(3, 4), _randn(5, 4), _randn(5)],
                        [1, 2])
    check_against_torch(torch, lambda x, w: F.conv2d(x, w, padding=1),
                        lambda x, w: tf.conv2d(x, w, padding=1), [_randn(2, 3, 5, 5),
                                                                  _randn(4, 3, 3, 3)], [1],
                        atol=1e-4)
    check_against_torch(torch, lambda x, w: F.conv1d(x, w), lambda x, w: tf.conv1d(x, w),
                        [_randn(2, 3, 7), _randn(4, 3, 3)], [1], atol=1e-4)
    check_against_torch(torch, lambda x, w: F.conv2d(x, w), lambda x, w: tf.conv2d(x, w),
                        [_randn(2, 3, 5, 5), _randn(4, 3, 3, 3)], [0], atol=1e-4)
