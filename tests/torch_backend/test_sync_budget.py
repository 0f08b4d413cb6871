"""PyTorch capture on a GPU's terms (issue 24): statistics stay on the device until the
iteration ends. On a GPU each host read is a synchronisation, so the tests count dyngraph's
own reads of torch tensors (on CPU: the same calls) and check what the single read gives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import dyngraph  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.capture.traces import read_trace  # noqa: E402
from dyngraph.capture.tracing import tracer  # noqa: E402
from dyngraph.debug import Session  # noqa: E402

SCRIPTS = Path(__file__).parent / "scripts"
BUDGET = str(SCRIPTS / "sync_budget.py")
sys.path.insert(0, str(SCRIPTS))


def reads_of(stdout: str) -> dict[str, object]:
    line = [x for x in stdout.splitlines() if x.startswith("READS ")]
    assert line, stdout
    return json.loads(line[-1][len("READS "):])  # type: ignore[no-any-return]


def assert_within_budget(reads: dict[str, object]) -> None:
    """At most 2 reads per training step, whatever its op count (an MLP step is 8 ops and
    gradients, a GPT block's 40, the LSTM's up to 60): none per op."""
    for name in ("mlp", "gpt", "lstm"):
        assert all(n <= 2 for n in reads[name]), reads  # type: ignore[attr-defined]
        assert reads[name + "_first"] <= 2, reads  # type: ignore[operator]


def side_by_side(*commands: tuple[str, ...], timeout: float = 120
                 ) -> list[subprocess.CompletedProcess[str]]:
    """Run several ``dyngraph`` commands at once (each pays PyTorch's import)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-m", "dyngraph", *c], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for c in commands]
    done = []
    for c, p in zip(commands, procs, strict=True):
        out, err = p.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess(c, p.returncode, out, err))
    return done


def test_record_and_check_read_the_device_at_most_twice_per_iteration(tmp_path):
    out = tmp_path / "budget.dgtrace"
    done, checked = side_by_side(("record", "-o", str(out), BUDGET), ("check", BUDGET))
    assert done.returncode == 0, done.stderr
    assert_within_budget(reads_of(done.stdout))
    events = read_trace(str(out)).events
    ops = sum(1 for e in events if type(e) is ev.Op)
    steps = sum(1 for e in events if type(e) is ev.BackwardStep)
    assert ops > 100 and steps > 100  # (so "0 per op" is what the counts above say)
    assert all(e.summary is not None for e in events if type(e) is ev.Op)

    assert checked.returncode == 0, checked.stderr
    assert_within_budget(reads_of(checked.stdout))


def debugged_to_the_end(script: str) -> tuple[Session, str]:
    """``script`` run to its end under the debugger (full statistics, no pause): the
    session and what the script printed."""
    session = Session.start(script, (), stats="full", pause_at_start=False)
    text = []
    try:
        deadline = time.monotonic() + 120
        while not session.state.finished and time.monotonic() < deadline:
            text += [e.text for e in session.poll(0.1) if type(e) is ev.ScriptOutput]
        text += [e.text for e in session.poll() if type(e) is ev.ScriptOutput]
    finally:
        session.close()
    return session, "".join(text)


def test_debug_without_value_breakpoints_reads_nothing_per_op():
    session, text = debugged_to_the_end(BUDGET)
    assert session.state.exit_status == 0
    assert_within_budget(reads_of(text))


@pytest.mark.parametrize("stats", ["cheap", "full"])
def test_summaries_after_the_read_equal_those_read_per_op(stats):
    """The one read per iteration gives exactly the numbers a read per op gives: every
    op's, gradient's and leaf gradient's summary and every update norm, on the MLP, the
    GPT block (its -inf mask: non-finite norms, repaired) and the LSTM."""
    from sync_budget import WORKLOADS

    def recorded(eager: bool) -> list[tuple[object, ...]]:
        torch.manual_seed(0)
        with dyngraph.trace(stats=stats, backend="torch") as t:
            tracer.eager_stats = eager
            try:
                for steps in WORKLOADS.values():
                    for _ in steps():
                        pass
            finally:
                tracer.eager_stats = False
        found = []
        for e in t.events:
            if type(e) is ev.Op:
                found.append((e.op, e.summary))
            elif type(e) is ev.BackwardStep:
                found.append((e.grad_fn, e.grad_outputs, e.grad_inputs))
            elif type(e) is ev.GradAccumulated:
                found.append((e.name, e.summary))
            elif type(e) is ev.OptimizerStep:
                found.append((e.optimizer, tuple(n for _, n in e.updates)))  # (ids differ)
        return found

    per_op, per_iteration = recorded(True), recorded(False)
    assert len(per_op) > 300
    assert per_iteration == per_op
    masked = [s for _, s in (x for x in per_op if len(x) == 2)
              if isinstance(s, ev.Summary) and s.inf]
    assert masked  # (the -inf attention scores: the repaired non-finite path was compared)


def test_a_full_buffer_is_read_at_the_cap_and_every_summary_is_filled(monkeypatch):
    """An iteration with more statistics waiting than ``deferred.CAP`` is read at the cap
    as well as at its end, and gives the summaries one read per iteration gives."""
    from sync_budget import WORKLOADS

    from dyngraph.torch_backend import deferred

    def recorded() -> tuple[list[tuple[object, ...]], int, int]:
        torch.manual_seed(0)
        with dyngraph.trace(stats="cheap", backend="torch") as t:
            buffer = tracer.read_pending.__self__  # type: ignore[union-attr]
            for _ in WORKLOADS["mlp"]():
                pass
            reads = buffer.reads
        summaries = [(e.op, e.summary) for e in t.events if type(e) is ev.Op]
        summaries += [(e.grad_fn, e.grad_outputs, e.grad_inputs) for e in t.events
                      if type(e) is ev.BackwardStep]
        return summaries, reads, sum(1 for e in t.events if type(e) is ev.IterationEnd)

    once, once_reads, iterations = recorded()
    monkeypatch.setattr(deferred, "CAP", 4)
    capped, capped_reads, capped_iterations = recorded()
    assert capped_iterations == iterations == 3
    assert once_reads <= 2 * iterations < capped_reads  # (read at the cap, not only per step)
    ops = [x for x in capped if len(x) == 2]
    assert len(ops) == 12 and all(isinstance(s, ev.Summary) and s.norm is not None
                                  for _, s in ops)  # (float outputs: every norm read)
    grads = [g for x in capped if len(x) == 3 for g in x[1]]  # type: ignore[attr-defined]
    assert grads and all(isinstance(g, ev.Summary) and g.norm is not None for g in grads)
    assert capped == once

def mlp_gradients(stats: str | None, in_backward: list[bool] | None = None
                  ) -> tuple[dict[str, tuple[int, int]], object]:
    """One MLP step, plain (``stats`` None) or captured: for each parameter, where its
    ``.grad`` lives and where the gradient autograd computed for it lived (a post hook on
    the node that computed it), and the trace. ``in_backward[0]`` is True while backward
    runs."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 8))
    x = torch.randn(16, 32)
    computed: dict[int, int] = {}  # id of the parameter -> data_ptr of its gradient

    def seen(grad_inputs, grad_outputs, node=None):  # noqa: ARG001
        node = torch._C._current_autograd_node()
        for (nxt, _), g in zip(node.next_functions, grad_inputs, strict=True):
            if g is not None and type(nxt).__name__ == "AccumulateGrad":
                computed[id(nxt.variable)] = g.data_ptr()

    def step() -> None:
        loss = model(x).square().mean()
        todo = [loss.grad_fn]
        while todo:
            node = todo.pop()
            node.register_hook(seen)
            todo += [n for n, _ in node.next_functions
                     if n is not None and type(n).__name__ != "AccumulateGrad"]
        if in_backward is not None:
            in_backward[0] = True
        loss.backward()
        if in_backward is not None:
            in_backward[0] = False

    trace = None
    if stats is None:
        step()
    else:
        with dyngraph.trace(stats=stats, backend="torch") as trace:
            step()
    where = {name: (p.grad.data_ptr(), computed[id(p)]) for name, p in
             model.named_parameters()}
    return where, trace


@pytest.mark.parametrize("stats", ["cheap", "full"])
def test_a_gradient_handed_on_is_summarised_once_and_reaches_grad_uncopied(stats):
    """A gradient a node hands on is the very tensor the next node takes in, and autograd
    hands one nobody else holds to ``.grad`` as it is. Captured, both steps show the same
    summary, and ``.grad`` is still the tensor autograd computed wherever it is so in the
    plain run (the statistics do not hold it: holding it made autograd copy it)."""
    from dyngraph.torch_backend import deferred

    plain, _ = mlp_gradients(None)
    reduced = []
    in_backward = [False]
    original = deferred.StatsBuffer._add

    def add(self, kind, numbers, t):
        if in_backward[0]:
            reduced.append(kind)
        return original(self, kind, numbers, t)

    deferred.StatsBuffer._add = add
    try:
        captured, trace = mlp_gradients(stats, in_backward)
    finally:
        deferred.StatsBuffer._add = original
    handed_over = {name for name, (grad, computed) in plain.items() if grad == computed}
    assert handed_over  # (the biases' gradients, at least)
    assert {name for name, (grad, computed) in captured.items() if grad == computed
            } == handed_over

    steps = [e for e in trace.events if type(e) is ev.BackwardStep]
    by_node = {e.grad_node: e for e in steps}
    handed = 0
    for e in steps:
        for nxt, g in zip(e.next_nodes, e.grad_inputs, strict=True):
            taker = by_node.get(nxt)
            if taker is not None and g is not None:
                assert taker.grad_outputs[0] == g  # (the same tensor: the same summary)
                handed += 1
    assert handed >= 4
    # Each gradient reduced once: a slot's gradient handed on is not reduced again.
    slots = sum(1 for e in steps for g in (*e.grad_inputs, *e.grad_outputs) if g is not None)
    leaves = sum(1 for e in trace.events if type(e) is ev.GradAccumulated)
    assert len(reduced) <= slots + leaves - handed


def test_the_debugger_keeps_gradients_without_autograd_copying_them():
    """The debugger keeps each gradient for the inspector; it keeps an alias, so autograd
    still hands every parameter its gradient as computed, as the plain run does."""
    script = str(SCRIPTS / "handover.py")
    plain = subprocess.run([sys.executable, script], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    session, text = debugged_to_the_end(script)
    handed = [x for x in text.splitlines() if x.startswith("HANDED")]
    assert "HANDED ['0.bias', '0.weight', '2.bias', '2.weight']" in plain.stdout
    assert handed == [plain.stdout.strip()]


# -- nothing lost -------------------------------------------------------------------------------
STOPS = {
    "crash": "raise RuntimeError('crash')",
    "exit": "sys.exit(3)",
    "sigterm": "os.kill(os.getpid(), signal.SIGTERM)",
    "ctrl-c": "os.kill(os.getpid(), signal.SIGINT)",
}


def test_pending_statistics_are_written_when_the_script_stops_mid_iteration(tmp_path):
    """A crash, ``sys.exit``, SIGTERM and Ctrl-C in the middle of an iteration: the
    statistics its ops computed on the device are still read and written."""
    commands = []
    for how, stop in STOPS.items():
        script = tmp_path / f"{how}.py"
        script.write_text(
            "import os, signal, sys, time, torch\n"
            "x = torch.randn(4, 4, requires_grad=True)\n"
            "y = (x * 2).relu()\n"
            "z = y.sum()\n"
            f"{stop}\n"
            "time.sleep(30)\n"
        )
        commands.append(("record", "-o", str(tmp_path / f"{how}.dgtrace"), str(script)))
    for how, done in zip(STOPS, side_by_side(*commands), strict=True):
        assert done.returncode != 0, how
        if how == "sigterm":
            assert done.returncode in (128 + signal.SIGTERM, -signal.SIGTERM), done.stderr
        events = read_trace(str(tmp_path / f"{how}.dgtrace")).events
        ops = [e for e in events if type(e) is ev.Op]
        assert [e.op for e in ops] == ["mul", "relu", "sum"], how
        assert all(e.summary is not None and e.summary.norm is not None for e in ops), how
        assert ops[-1].summary.mean == pytest.approx(float(ops[-1].summary.norm)), how
        assert type(events[-1]) is ev.RunEnd, how


# (That ``check`` names the first NaN as the debugger does: test_runtime.py, which runs
# train.py's NaNs once for the three tests that read them.)


def test_a_ctrl_c_while_the_statistics_are_read_loses_no_row(monkeypatch):
    """A KeyboardInterrupt inside the iteration's one read left the summaries it had taken
    out unfilled: every row behind the first of them waited for ever. A Ctrl-C'd
    ``dyngraph record`` of a PyTorch script lost the rest of its run that way (its
    traceback, its end: about 2 in 100 runs interrupted at random)."""
    from dyngraph.torch_backend import deferred

    real, reads = deferred._to_host, []

    def interrupted(numbers):
        reads.append(len(numbers))
        if len(reads) == 2:
            raise KeyboardInterrupt  # (where a Ctrl-C lands about 1 time in 50)
        return real(numbers)

    monkeypatch.setattr(deferred, "_to_host", interrupted)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # (its update norms are read too)
    interrupts = 0
    with dyngraph.trace(stats="cheap", backend="torch") as t:
        for _ in range(4):
            try:
                opt.zero_grad()
                model(torch.randn(3, 4)).sum().backward()
                opt.step()
            except KeyboardInterrupt:
                interrupts += 1
    # The interrupt came as the third pass began (its first op ends iteration 2 and reads
    # its statistics), so that pass made nothing; the fourth is iteration 3, all of it.
    assert interrupts == 1 and len(reads) >= 3
    assert [e.iteration for e in t.events if type(e) is ev.IterationEnd] == [1, 2, 3]
    assert [e.iteration for e in t.events if type(e) is ev.BackwardEnd] == [1, 2, 3]
    assert sum(type(e) is ev.Op for e in t.events if e.iteration == 3) == sum(
        type(e) is ev.Op for e in t.events if e.iteration == 1)
    steps = [e for e in t.events if type(e) is ev.OptimizerStep]
    assert [len(e.updates) for e in steps] == [2, 0, 2]  # (iteration 2's were in the read)
    # The module call the interrupt cut short is not left open for the next recording.
    with dyngraph.trace(stats="cheap", backend="torch") as again:
        model(torch.randn(3, 4)).sum().backward()
    assert [e.module for e in again.events if type(e) is ev.ModuleCall] == [""]
    assert all(e.module == "" for e in again.events if type(e) is ev.Op)
