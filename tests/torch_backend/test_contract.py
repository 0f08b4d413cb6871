"""The capture contract on PyTorch: a captured script computes exactly what it computes
plainly, never crashes because of the capture, and dyngraph's own failures stay dyngraph's.

Each case below was a reproduction in issue 22: a script that ran plainly and gave other
numbers, or raised, when captured.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import dyngraph  # noqa: E402
from dyngraph.capture import backends  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402

STATS = ("none", "cheap", "full")


def captured(fn: Callable[[], Any], stats: str = "cheap") -> tuple[Any, list[ev.Event], list[str]]:
    """``fn()`` under capture: its result, the events, the notes."""
    notes: list[str] = []
    with backends.on_note(notes.append), dyngraph.trace(stats=stats) as t:
        result = fn()
    return result, list(t.events), notes


def same(a: Any, b: Any) -> bool:
    """Bitwise equality of results: tensors (any layout), numbers, nested tuples."""
    if isinstance(a, torch.Tensor):
        if a.is_nested:
            a, b = a.to_padded_tensor(0.0), b.to_padded_tensor(0.0)
        elif a.layout is not torch.strided:
            a, b = a.to_dense(), b.to_dense()
        return (a.shape == b.shape and a.dtype == b.dtype
                and bool(torch.equal(a.view(torch.uint8) if a.is_floating_point() and
                                     a.element_size() == 1 else a,
                                     b.view(torch.uint8) if b.is_floating_point() and
                                     b.element_size() == 1 else b)))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def ops(events: list[ev.Event]) -> list[ev.Op]:
    return [e for e in events if type(e) is ev.Op]


# -- the library's paths: a mode on the stack must not change them -----------------------------
def attention_in_eval() -> tuple[Any, ...]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    attention = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (nested tensors are a prototype, torch says)
        y = encoder(x, src_key_padding_mask=mask)
        out, weights = attention(x, x, x, key_padding_mask=mask)
    return y, out, weights, torch._C._len_torch_function_stack(), \
        torch.overrides._get_current_function_mode_stack()


@pytest.mark.parametrize("stats", STATS)
def test_fused_attention_runs_as_uncaptured_and_the_mode_is_not_seen(stats):
    """Issue 22: an eval-mode TransformerEncoder / MultiheadAttention under no_grad with a
    padding mask gave 0.0 at padded positions plainly and 13.36 captured (PyTorch takes the
    fused fast path only without a torch-function mode), and the script read a mode stack
    of length 1."""
    plain = attention_in_eval()
    assert plain[0][1, 3:].abs().sum().item() == 0.0  # (the fused path's padded rows)
    result, events, _ = captured(attention_in_eval, stats)
    assert same(result, plain)
    assert result[3] == 0 and result[4] == []
    names = {e.op for e in ops(events)}
    assert {"_transformer_encoder_layer_fwd", "_native_multi_head_attention"} <= names


def test_the_scripts_own_modes_still_see_the_stack_they_made():
    class Mine(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def run() -> tuple[int, bool, bool]:
        with Mine() as mine:
            seen = (torch._C._len_torch_function_stack(),
                    torch.overrides._get_current_function_mode_stack() == [mine],
                    torch.overrides.has_torch_function((torch.ones(1),)))
        return seen

    assert captured(run)[0] == run() == (1, True, True)


def test_the_scripts_dispatch_modes_see_the_scripts_calls_only():
    """A TorchDispatchMode of the script's (a FlopCounterMode, a logging mode) sees the
    script's aten calls, not dyngraph's statistics."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls.append(str(func))
            return func(*args, **(kwargs or {}))

    def run() -> list[str]:
        torch.manual_seed(0)
        a, b = torch.randn(16, 32, requires_grad=True), torch.randn(32, 8)
        with Log() as log:
            (a @ b).relu().sum().backward()
        return log.calls

    plain = run()
    for stats in STATS:
        assert captured(run, stats)[0] == plain


# -- optimizer steps: every push has its pop, in the thread that pushed --------------------------
class TimesTen(TorchFunctionMode):
    """The script's own mode: every Tensor.add comes out ten times larger."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out * 10 if func is torch.Tensor.add else out


def failed_step_then_own_mode() -> tuple[list[float], list[float]]:
    w = nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=0.1)
    w.grad = torch.ones(2)
    opt.param_groups[0]["lr"] = "not a number"
    with pytest.raises(TypeError):
        opt.step()
    with TimesTen():
        nn.Linear(2, 2)(torch.ones(1, 2))  # a module call inside the script's mode
        inside = torch.ones(2).add(torch.ones(2)).tolist()
    return inside, torch.ones(2).add(torch.ones(2)).tolist()


def test_a_failed_optimizer_step_leaves_the_scripts_mode_as_it_was():
    """Issue 22: after a step that raised, the script's own mode stayed on for the rest of
    the run ([20, 20] instead of [2, 2])."""
    assert failed_step_then_own_mode() == ([20.0, 20.0], [2.0, 2.0])
    result, events, _ = captured(failed_step_then_own_mode)
    assert result == ([20.0, 20.0], [2.0, 2.0])
    assert "linear" in {e.op for e in ops(events)}  # (captured again after the failed step)


def test_an_optimizer_step_in_a_helper_thread_leaves_the_main_capture_alone():
    """Issue 22: optimizer.step() and clip_grad_norm_ in a helper thread moved or ended the
    main thread's capture: the trace held 1 iteration of 300."""
    torch.manual_seed(0)
    model, other = nn.Linear(4, 1), nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    other_opt = torch.optim.SGD(other.parameters(), lr=0.01)
    stop = threading.Event()

    def helper() -> None:
        while not stop.is_set():
            other(torch.randn(2, 4)).sum().backward()
            nn.utils.clip_grad_norm_(other.parameters(), 1.0)
            other_opt.step()
            other_opt.zero_grad()

    def train() -> None:
        thread = threading.Thread(target=helper, name="helper")
        thread.start()
        try:
            for _ in range(300):
                loss = model(torch.ones(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        finally:
            stop.set()
            thread.join(30)

    _, events, notes = captured(train)
    iterations = {e.iteration for e in ops(events)}
    assert iterations == set(range(1, 301))
    assert sum(type(e) is ev.OptimizerStep for e in events) == 300
    assert [n for n in notes if "'helper'" in n] == [
        "ops on thread 'helper' were not captured: a recording captures only the thread "
        "that started it (the script's main thread)"]


# -- tensors dyngraph cannot read: they run unchanged, recorded with what can be known -----------
def vmap_and_grad() -> tuple[Any, ...]:
    from torch.func import grad, vmap

    torch.manual_seed(0)
    x, w = torch.randn(4, 3, requires_grad=True), torch.randn(3)
    per_row = vmap(lambda r: (r * w).sum())(x)
    grads = vmap(grad(lambda wt, r: (r * wt).sum() ** 2), in_dims=(None, 0))(w, x.detach())
    (x * w).sum().backward()
    return per_row, grads, x.grad


def batched_gradients() -> tuple[Any, ...]:
    x = torch.arange(3.0, requires_grad=True)
    return torch.autograd.grad(x * 2, x, torch.eye(3), is_grads_batched=True)


def sparse_tensors() -> tuple[Any, ...]:
    torch.manual_seed(0)
    s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3., 4, 5]),
                                (2, 3))
    w = torch.randn(3, 4, requires_grad=True)
    (torch.sparse.mm(s, w).sum() + (s @ w).sum()).backward()
    emb = nn.Embedding(10, 4, sparse=True)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    for _ in range(2):
        emb(torch.tensor([1, 2, 3])).sum().backward()
        opt.step()
        opt.zero_grad()
    diagonal = torch.diag(torch.tensor([1., 2.])).to_sparse()  # pytorch/examples gcn, gat
    return w.grad, emb.weight.detach(), diagonal @ torch.ones(2, 2), diagonal


def meta_fake_and_export() -> tuple[Any, ...]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    m = nn.Linear(4, 3, device="meta")
    y = m(torch.randn(2, 4, device="meta"))
    with FakeTensorMode():
        a = torch.randn(2, 3)
        shape = tuple((a @ a.T).relu().shape)

    class Small(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x).relu()

    torch.manual_seed(0)
    model = Small()
    exported = torch.export.export(model, (torch.randn(2, 3),))
    x = torch.randn(2, 3)
    return tuple(y.shape), y.device.type, shape, exported.module()(x), model(x)


def nested_tensors() -> tuple[Any, ...]:
    torch.manual_seed(0)
    a, b = torch.randn(2, 3, requires_grad=True), torch.randn(4, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jagged = torch.nested.nested_tensor([a, b], layout=torch.jagged)
        strided = torch.nested.nested_tensor([a.detach(), b.detach()])
        return (jagged * 2).sin().values(), (strided * 2).to_padded_tensor(0.0)


def quantized_and_float8() -> tuple[Any, ...]:
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (quantize_per_tensor is deprecated)
        q = torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
    f8 = x.to(torch.float8_e4m3fn)
    return q.dequantize(), f8.float() * 2, f8


def jit_trace() -> tuple[Any, ...]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    traced = torch.jit.trace(model, torch.randn(2, 3))  # its check traces twice: must agree
    return (traced(torch.ones(2, 3)),)


CASES = {f.__name__: f for f in (vmap_and_grad, batched_gradients, sparse_tensors,
                                 meta_fake_and_export, nested_tensors, quantized_and_float8,
                                 jit_trace)}


@pytest.mark.parametrize("name", CASES)
def test_scripts_that_run_plainly_run_unchanged_when_captured(name):
    """Issue 22: each of these raised under capture (statistics and .numpy() on a sparse,
    nested, meta, fake, quantized or batched tensor; 'cannot store SymInt in a trace' even
    with --stats none; torch.jit.trace's 'Graphs differed across invocations')."""
    case = CASES[name]
    plain = case()
    for stats in STATS:
        result, events, notes = captured(case, stats)
        assert same(result, plain), stats
        assert not [n for n in notes if "could not record" in n], notes
        for e in events:  # a trace holds plain data only: ints in shapes
            if type(e) in (ev.Op, ev.TensorCreated):
                assert all(type(d) is int and d >= 0 for d in e.shape), e


def test_unreadable_tensors_are_recorded_with_shape_dtype_layout_and_a_reason():
    result, events, notes = captured(sparse_tensors, "full")
    sparse = [e for e in ops(events) if e.dtype == "float32 sparse_coo"]
    assert sparse and all(e.summary is None for e in sparse)
    assert (2, 2) in {e.shape for e in sparse}  # to_sparse() of the diagonal
    assert "statistics and values are not recorded for sparse_coo tensors: they are " \
           "recorded with shape, dtype and layout only" in notes
    _, events, notes = captured(nested_tensors, "full")
    nested = [e for e in ops(events) if e.dtype == "float32 nested"]
    assert nested and all(e.summary is None for e in nested)
    assert (2, 4, 3) in {e.shape for e in nested}  # the padded shape of (2, j, 3)
    assert any("nested tensors" in n for n in notes)
    _, events, _ = captured(quantized_and_float8, "full")
    float8 = [e for e in ops(events) if e.dtype == "float8_e4m3fn"]
    assert float8 and float8[0].summary is not None and float8[0].summary.norm > 0


# -- dyngraph's own failures ---------------------------------------------------------------------
def test_a_failure_inside_dyngraph_is_one_note_and_the_script_goes_on(monkeypatch):
    from dyngraph.torch_backend.deferred import StatsBuffer

    original = StatsBuffer.cheap_one

    def broken(self, t, value=True):
        if not value:  # (a backward step's gradients: those still work)
            return original(self, t, value)
        raise RuntimeError("summaries broke\n" + "dispatcher listing line\n" * 500)

    monkeypatch.setattr(StatsBuffer, "cheap_one", broken)

    def run() -> float:
        x = torch.ones(3, requires_grad=True)
        loss = (x * 2).sum()
        loss.backward()
        return float(x.grad.sum())

    result, events, notes = captured(run)
    assert result == 6.0
    assert len(notes) == 1 and "\n" not in notes[0] and len(notes[0]) < 400
    assert notes[0].startswith("dyngraph could not record the op mul (RuntimeError: "
                               "summaries broke at dyngraph/torch_backend/")
    assert any(type(e) is ev.BackwardStep for e in events)  # the rest was recorded


# -- where it points -----------------------------------------------------------------------------
def warn_three_ways() -> list[tuple[str, int, str]]:
    import torch.nn.functional as F

    x = torch.randn(2, 3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        F.softmax(x)  # @python-warning
        torch.add(x, x, out=torch.ones(2))  # @cpp-warning
        x.view(6).add_(1)  # (no warning)
    return [(w.filename, w.lineno, w.category.__name__) for w in seen]


def marked(marker: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(warn_three_ways)
    return start + next(i for i, t in enumerate(lines) if t.rstrip().endswith(f"# @{marker}"))


def test_warnings_inside_a_captured_call_point_at_the_scripts_line():
    """Issue 22: warnings raised inside a captured call were placed at
    dyngraph/torch_backend/forward.py, so -W and filterwarnings by module or line saw
    dyngraph instead of the script."""
    plain = warn_three_ways()
    assert [(line, cat) for _, line, cat in plain] == [
        (marked("python-warning"), "UserWarning"), (marked("cpp-warning"), "UserWarning")]
    assert {file for file, _, _ in plain} == {__file__}
    for stats in ("none", "full"):
        assert captured(warn_three_ways, stats)[0] == plain


def test_a_module_or_line_filter_of_the_scripts_applies_to_a_captured_call():
    def run() -> int:
        x = torch.randn(2, 3)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", module=__name__.replace(".", r"\."))
            torch.nn.functional.softmax(x)
        return len(seen)

    assert run() == 0
    assert captured(run)[0] == 0


def test_an_exception_raised_inside_torch_is_placed_at_the_scripts_line():
    """Issue 22: "the script raised ..." named torch-internal files (torch/nn/functional.py)
    instead of the user's line; and PyTorch's kilobytes-long messages fill one line."""
    from dyngraph.debug.describe import first_line, locate_exception

    def run() -> BaseException:
        try:
            torch.nn.functional.cross_entropy(torch.randn(3, 4), torch.tensor([0, 1]))  # @raise
        except ValueError as exc:
            return exc
        raise AssertionError("no error")

    import inspect

    lines, start = inspect.getsourcelines(run)
    line = start + next(i for i, t in enumerate(lines) if t.rstrip().endswith("# @raise"))
    for exc in (run(), captured(run)[0]):
        raised = locate_exception(exc.__traceback__)
        assert (raised.file, raised.line) == (__file__, line)
    assert first_line("boom\n" + "listing\n" * 1000) == "boom ..."
    assert len(first_line("x" * 10_000)) == 303
