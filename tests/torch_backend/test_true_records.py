"""What the PyTorch capture records is true (issue 22): each output of an op has its own
gradient, the backward graph is autograd's own, in-place changes reach the right node, and
the seed gradient of a backward pass is not counted as a computed gradient."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
from dyngraph.exporters.dot import to_dot  # noqa: E402
from dyngraph.tui.inspector import node_view  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import dyngraph  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.capture.graph import backward_graph  # noqa: E402

SCRIPTS = Path(__file__).parent / "scripts"
SPLIT = '''import torch
w = torch.randn(6, 4, requires_grad=True)
for _ in range(2):
    a, b, c = (w * 1.0).split(2, dim=0)
    loss = a.sum() + 2 * b.sum() + 3 * c.sum()
    loss.backward()
'''
PIECES = [2 * 2**0.5, 4 * 2**0.5, 6 * 2**0.5]  # 2.83, 5.66, 8.49: ‖k · ones(2, 4)‖


def norms(graph, op: str) -> list[float | None]:
    return [None if n.grad is None else n.grad.norm for n in graph.nodes.values() if n.op == op]


def text(renderable) -> str:
    from rich.console import Console

    console = Console(width=100, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.fixture(scope="module")
def split_trace(tmp_path_factory):
    """The issue's reproduction, recorded with ``dyngraph record``."""
    folder = tmp_path_factory.mktemp("split")
    (folder / "split.py").write_text(SPLIT)
    subprocess.run([sys.executable, "-m", "dyngraph", "record", "-o", "run.dgtrace",
                    "split.py"], cwd=folder, check=True, capture_output=True, timeout=180)
    return folder / "run.dgtrace"


def test_split_pieces_have_their_own_gradients_in_the_trace(split_trace):
    trace = dyngraph.read_trace(split_trace)
    assert len(trace.iterations) == 2
    for it in trace.iterations:
        assert norms(it.graph, "split") == pytest.approx(PIECES, rel=1e-6)
        # the mul before split: 1, 2 and 3 on 8 elements each
        assert norms(it.graph, "mul")[0] == pytest.approx(np.sqrt(8 * 14), rel=1e-6)


def test_the_backward_graph_of_split_has_every_edge_and_each_pieces_gradient(split_trace):
    graph = dyngraph.read_trace(split_trace).iterations[0].graph
    back = backward_graph(graph)
    (split,) = [n for n in back.nodes.values() if n.op == "SplitBackward0"]
    assert [g.norm for g in split.grads] == pytest.approx(PIECES, rel=1e-6)
    sums = [n.id for n in back.nodes.values() if n.op == "SumBackward0"]
    assert sorted(e.src for e in back.edges if e.dst == split.id) == sorted(sums)
    dot = to_dot(graph, graph_kind="both")
    assert dot.count(f"-> g{split.id};") == 3  # one edge from each piece's SumBackward0
    for k, norm in enumerate(PIECES):
        assert f"grad of output {k}: norm={norm:.4g}" in dot
    forward = {line.split()[0]: line for line in to_dot(graph).splitlines() if "[" in line}
    pieces = [n.id for n in graph.nodes.values() if n.op == "split"]
    for node_id, norm in zip(pieces, PIECES, strict=True):  # each piece's own, in its tooltip
        assert f"grad: norm={norm:.4g}" in forward[f"n{node_id}"]


def test_the_exported_svg_shows_each_pieces_gradient(split_trace, tmp_path):
    out = tmp_path / "export"
    subprocess.run([sys.executable, "-m", "dyngraph", "export", str(split_trace), "-o",
                    str(out), "--graph", "both", "--format", "svg"], check=True,
                   capture_output=True, timeout=180)
    svg = (out / "iter-0001.svg").read_text()
    for norm in PIECES:
        assert f"grad: norm={norm:.4g}" in svg  # each piece's forward node
        assert svg.count(f"norm={norm:.4g}") >= 2  # ... and its slot of SplitBackward0
    assert svg.count('class="edge"') == 13 + 11  # forward and backward, none missing


def test_the_debugger_shows_each_pieces_gradient(split_trace):
    asyncio.run(_pieces_in_the_inspector(replaying(split_trace), PIECES))


def test_a_live_debug_session_shows_each_pieces_gradient(tmp_path):
    """The same in ``dyngraph debug`` on the running script: ``F`` (finish backward), then
    each piece selected."""
    (tmp_path / "split.py").write_text(SPLIT)
    debugging(tmp_path / "split.py", PIECES)


def replaying(path):
    from dyngraph.tui.app import DebuggerApp
    from dyngraph.tui.model import Model
    from dyngraph.tui.sources import ReplaySource

    return DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))


def debugging(script: Path, norms) -> None:
    """``dyngraph debug script``: the first iteration's split pieces show ``norms``."""
    from dyngraph.tui.app import DebuggerApp
    from dyngraph.tui.model import Model
    from dyngraph.tui.sources import LiveSource

    source = LiveSource.start(Model(), str(script), cwd=str(script.parent))
    try:
        asyncio.run(_pieces_in_the_inspector(DebuggerApp(source), norms, live=True))
    finally:
        source.close()


async def _pieces_in_the_inspector(app, norms, live=False):
    """The first iteration's split pieces, selected one by one in the debugger ``app``
    after its backward: the inspector shows each one's ``norms``."""
    from dyngraph.tui.inspector import Inspector

    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        if live:  # (paused before the first line; the session's first state comes first)
            for _ in range(600):
                await pilot.pause(0.05)
                if app.source.state.status == "paused":
                    break
        await pilot.press("F")
        for _ in range(600):
            await pilot.pause(0.05)
            state = app.source.state if live else None
            if app.model.backward_done() and (not live or (
                    "end of backward" in state.description and app._last_state == state)):
                break  # (live: paused there, and the UI has drawn it)
        assert app.model.backward_done()
        pieces = [n.id for n in app.graph.nodes.values() if n.op == "split"]
        assert len(pieces) == len(norms)
        for node_id, norm in zip(pieces, norms, strict=True):
            app.select_node(node_id)
            await pilot.pause()
            shown = text(node_view(app.query_one(Inspector).node, backward_done=True))
            assert f"norm {norm:.4g}" in shown, shown


# nanoGPT's line, ``q, k, v = self.c_attn(x).split(self.n_embd, dim=2)``, in two blocks
@pytest.fixture(scope="module")
def qkv(tmp_path_factory):
    """(the trace ``dyngraph record`` made of scripts/nanogpt_qkv.py, and PyTorch's own
    gradient norms of q, k and v from tensor hooks in a plain run: step -> six norms,
    block by block, q k v)."""
    import runpy

    folder = tmp_path_factory.mktemp("qkv")
    script = SCRIPTS / "nanogpt_qkv.py"
    subprocess.run([sys.executable, "-m", "dyngraph", "record", "-o", "run.dgtrace",
                    str(script)], cwd=folder, check=True, capture_output=True, timeout=180)
    hooks: list[tuple[int, int, str, float]] = []
    runpy.run_path(str(script), run_name="nanogpt_qkv")["main"](hooks)
    truth: dict[int, list[float]] = {}
    for step, _, _, norm in sorted(hooks, key=lambda h: (h[0], h[1], "qkv".index(h[2]))):
        truth.setdefault(step, []).append(norm)
    return folder / "run.dgtrace", truth


def test_nanogpts_q_k_v_each_have_their_own_gradient_in_every_block(qkv):
    path, truth = qkv
    trace = dyngraph.read_trace(path)
    assert len(trace.iterations) == len(truth) == 2
    for step, it in enumerate(trace.iterations):
        pieces = [n for n in it.graph.nodes.values() if n.op == "split"]
        assert [n.module for n in pieces] == ["transformer.h.0.attn"] * 3 + [
            "transformer.h.1.attn"] * 3
        assert all(n.grad is not None for n in pieces)
        norms = [n.grad.norm for n in pieces]
        assert norms == pytest.approx(truth[step], rel=1e-5)  # PyTorch's own, piece by piece
        assert len(set(norms[:3])) == len(set(norms[3:])) == 3  # none charged to another


def test_the_debugger_shows_q_k_and_v_gradients_of_each_block(qkv):
    path, truth = qkv
    asyncio.run(_pieces_in_the_inspector(replaying(path), truth[0]))


def test_a_live_debug_session_shows_q_k_and_v_gradients_of_each_block(qkv, tmp_path):
    """nanoGPT's split in ``dyngraph debug`` on the running script (the first step's six
    pieces, PyTorch's own norms)."""
    _, truth = qkv
    script = tmp_path / "nanogpt_qkv.py"
    script.write_text((SCRIPTS / "nanogpt_qkv.py").read_text())
    debugging(script, truth[0])


def test_an_unused_piece_is_said_not_used_and_an_unrecorded_one_why():
    w = torch.randn(6, 4, requires_grad=True)
    for stats in ("cheap", "none"):
        with dyngraph.trace(stats=stats) as t:
            a, b, c = (w * 1.0).split(2, dim=0)
            (a.sum() + 3 * c.sum()).backward()
        graph = t.iterations[0].graph
        pieces = [n for n in graph.nodes.values() if n.op == "split"]
        assert [n.backward_seq > 0 for n in pieces] == [True, True, True]
        unused = text(node_view(pieces[1], backward_done=True, stats=stats))
        if stats == "cheap":
            assert pieces[1].grad is None and pieces[2].grad.norm == pytest.approx(PIECES[2])
            assert "not used by the loss" in unused
        else:
            assert "not recorded" in unused and "--stats none" in unused


def run_and_check(build):
    """Run ``build()`` under capture with retain_grad() on its outputs: each output's
    recorded gradient is its own ``.grad``."""
    torch.manual_seed(0)
    with dyngraph.trace(stats="full") as t:
        outs, loss = build()
        outs = [o for o in outs if o.requires_grad]
        for o in outs:
            o.retain_grad()
        loss.backward()
    graph = t.iterations[0].graph
    assert outs
    for o in outs:
        node = graph.nodes[o._dg_id[1]]
        if o.grad is None:
            assert node.grad is None
        else:
            assert node.grad.norm == pytest.approx(o.grad.norm().item(), rel=1e-5), node
            assert node.grad.min == pytest.approx(o.grad.min().item(), rel=1e-5, abs=1e-7)


class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2 + gb * 3


def _w(*shape):
    return torch.randn(*shape, requires_grad=True)


def _weighted(outs):
    return sum((i + 1) * o.float().sin().sum() for i, o in enumerate(outs) if o.requires_grad)


MULTI_OUTPUT = {
    "split": lambda: (_w(6, 4) * 1.0).split(2),
    "chunk": lambda: (_w(6, 4) * 1.0).chunk(3, dim=1),
    "unbind": lambda: (_w(3, 4) * 1.0).unbind(0),
    "tensor_split": lambda: torch.tensor_split(_w(7, 2) * 1.0, 3),
    "max_dim": lambda: (_w(4, 5) * 1.0).max(dim=1),
    "min_dim": lambda: torch.min(_w(4, 5) * 1.0, 1),
    "sort": lambda: torch.sort(_w(6) * 1.0),
    "topk": lambda: torch.topk(_w(6) * 1.0, 3),
    "var_mean": lambda: torch.var_mean(_w(4, 5) * 1.0, dim=1),
    "std_mean": lambda: torch.std_mean(_w(4, 5) * 1.0, dim=0),
    "aminmax": lambda: torch.aminmax(_w(4, 5) * 1.0, dim=1),
    "linalg_qr": lambda: torch.linalg.qr(_w(4, 3) * 1.0),
    "linalg_slogdet": lambda: torch.linalg.slogdet(_w(3, 3) * 1.0 + 3 * torch.eye(3)),
    "linalg_eigh": lambda: torch.linalg.eigh((lambda a: a @ a.T)(_w(3, 3) * 1.0)),
    "linalg_svd": lambda: torch.linalg.svd(_w(4, 3) * 1.0, full_matrices=False),
    "unique_counts": lambda: (*torch.unique(_w(5).detach().round(), return_counts=True),
                              _w(2) * 1.0),
    "custom_function": lambda: Two.apply(_w(3) * 1.0),
    "lstm": lambda: (lambda out: (out[0], *out[1]))(nn.LSTM(3, 4, num_layers=2)(_w(5, 2, 3))),
    "gru": lambda: (lambda out: (out[0], out[1]))(nn.GRU(3, 4)(_w(5, 2, 3))),
    "multihead_attention": lambda: (lambda x: nn.MultiheadAttention(4, 2)(x, x, x))(
        _w(3, 2, 4)),
}


@pytest.mark.parametrize("name", list(MULTI_OUTPUT))
def test_each_output_of_a_multi_output_op_has_its_own_gradient(name):
    def build():
        outs = MULTI_OUTPUT[name]()
        return outs, _weighted(outs)

    run_and_check(build)


def test_the_backward_graph_draws_nodes_of_no_forward_op_as_what_they_are():
    lin = nn.Linear(4, 4)
    with dyngraph.trace(stats="cheap") as t:
        x = torch.randn(2, 4, requires_grad=True)
        y = checkpoint(lambda z: torch.tanh(z) * 2.0, x * 1.0, use_reentrant=True)
        a, b = Two.apply(lin(y))
        (a.sum() + b.sum()).backward()
    graph = t.iterations[0].graph
    back = backward_graph(graph)
    ops = {n.op for n in back.nodes.values()}
    assert {"CheckpointFunctionBackward", "TwoBackward", "AddmmBackward0", "TBackward0",
            "AccumulateGrad"} <= ops
    (tnode,) = [n for n in back.nodes.values() if n.op == "TBackward0"]
    assert tnode.id not in graph.nodes  # a node of its own: no forward tensor is its output
    (addmm,) = [n for n in back.nodes.values() if n.op == "AddmmBackward0"]
    assert (addmm.id, tnode.id, 2) in {(e.src, e.dst, e.index) for e in back.edges}
    weight = [n for n in back.nodes.values() if n.kind == "accumulate" and n.name == "weight"]
    assert [(e.src, e.dst) for e in back.edges if e.dst == weight[0].id] == [(tnode.id,
                                                                             weight[0].id)]
    dot = to_dot(graph, graph_kind="backward")
    for name in ("CheckpointFunctionBackward", "TwoBackward", "TBackward0"):
        assert name in dot


class DoubleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_a_function_that_marks_its_input_dirty_is_recorded():
    with dyngraph.trace(stats="full") as t:
        w = torch.ones(3, requires_grad=True)
        y = w * 1.0
        before = y._dg_id[1]
        z = DoubleInPlace.apply(y)
        out = (z * 3.0).sum()
        out.backward()
    ops = [e for e in t.events if type(e) is ev.Op]
    (dirty,) = [e for e in ops if e.op == "DoubleInPlace"]
    assert dirty.inputs == (before,) and dirty.output == y._dg_id[1] != before
    assert dirty.summary.max == 2.0
    assert [e.op for e in ops if dirty.output in e.inputs] == ["mul"]  # z * 3.0: the new value
    graph = t.iterations[0].graph
    assert graph.nodes[dirty.output].grad.norm == pytest.approx(3 * 3**0.5)
    assert graph.nodes[dirty.output].grad_fn == "DoubleInPlaceBackward"


def test_an_in_place_change_through_a_view_updates_the_base():
    with dyngraph.trace(stats="full") as t:
        x = torch.ones(4, 3, requires_grad=True)
        y = x * 2.0
        old = y._dg_id[1]
        y[:2].mul_(3)
        z = y.sum()  # a later op on y: wired to the changed value
        z.backward()
    ops = [e for e in t.events if type(e) is ev.Op]
    (copy,) = [e for e in ops if e.op == "copy_slices"]
    (mul,) = [e for e in ops if e.op == "mul_"]
    assert copy.inputs == (old, mul.output) and copy.output == y._dg_id[1]
    assert copy.summary.max == 6.0 and copy.summary.min == 2.0
    (total,) = [e for e in ops if e.op == "sum"]
    assert total.inputs == (copy.output,)
    graph = t.iterations[0].graph
    assert graph.nodes[copy.output].grad_fn == "CopySlices"
    assert graph.nodes[copy.output].grad.norm == pytest.approx(12**0.5)


def test_a_view_of_a_base_changed_in_place_is_read_again_from_it():
    with dyngraph.trace(stats="full") as t:
        y = torch.ones(4, requires_grad=True) * 1.0
        v = y[2:]
        y.mul_(5.0)
        w = v * 1.0  # reads the changed memory
        w.sum().backward()
    ops = [e for e in t.events if type(e) is ev.Op]
    (again,) = [e for e in ops if e.op == "as_strided"]
    (mul_,) = [e for e in ops if e.op == "mul_"]
    assert again.inputs == (mul_.output,) and again.summary.max == 5.0
    assert ops[ops.index(again) + 1].inputs == (again.output, -1)  # v * 1.0 reads it


def check_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dyngraph", "check", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("engine", ["torch", "dyngraph"])
def test_check_max_grad_norm_counts_no_seed_and_names_what_exceeds(engine):
    clipped = str(SCRIPTS / "clipped.py")
    healthy = check_script("--max-grad-norm", "0.5", clipped, "--engine", engine)
    assert healthy.returncode == 0, healthy.stderr
    assert "every gradient norm <= 0.5" in healthy.stderr
    large = check_script("--max-grad-norm", "0.5", clipped, "--engine", engine,
                         "--scale", "20")
    assert large.returncode == 1, large.stderr
    assert "gradient norm 20 > 0.5 flowing into cross_entropy" in large.stderr


def test_check_help_explains_max_grad_norm_and_the_seed(capsys):
    from dyngraph import cli

    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert "--max-grad-norm X" in flat and "seed" in flat and "not counted" in flat


def test_a_grad_breakpoint_does_not_stop_at_the_seed():
    from runtime_helpers import drive

    from dyngraph.debug import Breakpoint

    # loss = cross_entropy(...) * 3: backward starts at the mul with the seed 1 > 0.8 (no
    # stop: nobody computed it), whose gradient for the cross entropy is 3 (a stop).
    run = drive(str(SCRIPTS / "clipped.py"), ["--steps", "2", "--scale", "3"],
                breakpoints=[Breakpoint.grad_norm(0.8)], stats="cheap", timeout=120)
    hit = run.pauses[0].hit
    assert hit.reason == "grad_norm" and "gradient norm 3 > 0.8" in hit.description
    assert type(run.pauses[0].at) is ev.BackwardStep
    assert run.pauses[0].at.grad_fn == "NllLossBackward0"
    steps = [e for e in run.events if type(e) is ev.BackwardStep]
    assert steps[0].grad_fn == "MulBackward0" and steps[0].grad_output.norm == 1.0


def test_ddps_node_is_drawn_as_what_it_is():
    import socket

    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                            world_size=1)
    try:
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(
            nn.Sequential(nn.Linear(4, 3), nn.Tanh()), find_unused_parameters=True)
        with dyngraph.trace(stats="cheap") as t:
            model(torch.randn(5, 4)).sum().backward()
        expected = {n: p.grad.norm().item() for n, p in model.named_parameters()}
        # (DDP's reducer ended while its group lives: ended after destroy_process_group,
        # gloo's destructor once waited for good on its worker thread inside the test)
        del model
    finally:
        dist.destroy_process_group()
    graph = t.iterations[0].graph
    back = backward_graph(graph)
    ops = [n.op for n in back.nodes.values()]
    assert ops[:3] == ["SumBackward0", "_DDPSinkBackward", "TanhBackward0"]
    names = {n.name for n in back.nodes.values() if n.kind == "accumulate"}
    assert names == {"module.0.weight", "module.0.bias"}
    grads = {n.name: n.grad.norm for n in graph.nodes.values() if n.kind == "param"}
    assert grads == {n: pytest.approx(v) for n, v in expected.items()}
