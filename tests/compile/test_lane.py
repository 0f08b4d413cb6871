"""The compile lane in process (``dyngraph.trace`` around real torch.compile): the demo's
recompiles and graph break reported where they happened, duplicates folded, fullgraph,
no lane without a compile, the TORCH_LOGS text fallback, and zero interference.

Each test runs the demo afresh (``runpy``: new code objects, so Dynamo compiles anew)
after ``torch._dynamo.reset()``, on the CPU with the ``eager``/``aot_eager`` backends.
``DYNGRAPH_INDUCTOR=1`` adds the zero-interference test with the default inductor backend
(a C++ compile per graph: minutes on a busy 2-core machine).
"""

from __future__ import annotations

import fcntl
import json
import os
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import dyngraph  # noqa: E402
from dyngraph import demos  # noqa: E402
from dyngraph.capture import backends  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.compile_lane import report  # noqa: E402
from dyngraph.compile_lane.lane import EARLY_NOTE, OBSERVE_NOTE, SOURCE_ENV  # noqa: E402

DEMO = demos.path("torch_compile_varlen")


def demo_module() -> dict:
    """The demo's namespace, new: its functions are code Dynamo has not seen."""
    torch._dynamo.reset()
    return runpy.run_path(str(DEMO), run_name="torch_compile_varlen_demo")


def line_of(text: str) -> int:
    """The demo's line holding ``text`` (once)."""
    lines = [i for i, line in enumerate(DEMO.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, text
    return lines[0]


def compiles(t: dyngraph.Trace, what: str) -> list[ev.CompileEvent]:
    return [e for e in t.events if type(e) is ev.CompileEvent and e.what == what]


def new_lengths(lengths: tuple[int, ...], steps: int) -> list[int]:
    """The iterations (from 1) whose length the run has not seen before, but the first."""
    seen: set[int] = set()
    out = []
    for i, n in enumerate(lengths[:steps], 1):
        if n not in seen and seen:
            out.append(i)
        seen.add(n)
    return out


STEPS = 5  # lengths 5, 5, 7, 9, 5: two recompiles, and a length seen before
BACKEND = "aot_eager"


def computed_once(folder: Path, name: str, compute: Callable[[Path], Any]) -> Any:
    """``compute(folder)``'s JSON-able result, computed by one worker of the session and
    read from ``folder/name.json`` by the others (``compute`` may leave files there)."""
    result = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not result.exists():
                result.write_text(json.dumps(compute(folder)))
            return json.loads(result.read_text())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _runs(folder: Path) -> dict:
    """The demo as written, without dyngraph and then recorded in observe mode (the
    default): each run's losses and what Dynamo compiled, the capture's notes; the trace
    is left in ``folder``."""
    plain = counted(lambda: demo_module()["main"](STEPS, backend=BACKEND))
    module = demo_module()
    notes: list[str] = []
    with backends.on_note(notes.append), dyngraph.trace() as t:
        seen = counted(lambda: module["main"](STEPS, backend=BACKEND))
    t.save(folder / "observed.dgtrace")
    return {"plain": plain, "seen": seen, "notes": notes}


@pytest.fixture(scope="module")
def runs(shared_dir: Path) -> dict:
    """``_runs``, once per session (pytest-xdist workers share it)."""
    return computed_once(shared_dir, "compile_lane_runs", _runs)


@pytest.fixture(scope="module")
def plain(runs: dict) -> list:
    return runs["plain"]


@pytest.fixture(scope="module")
def observed(runs: dict, shared_dir: Path) -> tuple[dyngraph.Trace, dict, list[str], list]:
    """The recorded run: its trace, the demo's constants, the notes, its counts."""
    constants = runpy.run_path(str(DEMO), run_name="torch_compile_varlen_constants")
    return (dyngraph.read_trace(shared_dir / "observed.dgtrace"), constants, runs["notes"],
            runs["seen"])


def test_every_recompile_is_reported_at_its_iteration_with_its_guard(observed):
    t, module, _, _ = observed
    lengths = module["LENGTHS"]
    recompiles = [e for e in compiles(t, "recompile") if e.frame == "train_step"]
    assert [e.iteration for e in recompiles] == new_lengths(lengths, STEPS)
    # train_step's first entry (length 5) is tried first; each guard names the input.
    for e in recompiles:
        n = lengths[e.iteration - 1]
        assert e.reason.startswith("tensor 'x' size mismatch at index 1. expected ")
        assert e.reason.endswith(f"actual {n}") and e.input == "x"
        assert e.file == str(DEMO) and e.line == line_of("def train_step(")
        # ... and the guard (on x, whole) was made where the model first read x
        assert e.stack == f"{DEMO}:{line_of('def forward(self, x):') + 1} in forward"
        assert f"iteration {e.iteration}" not in report.describe(e)  # (said elsewhere)
        assert "guard failed: tensor 'x' size mismatch" in report.describe(e)


def test_every_graph_break_is_reported_with_its_user_line(observed):
    t, _, notes, _ = observed
    breaks = compiles(t, "break")
    starts = [e for e in compiles(t, "start") if e.frame == "train_step"]
    assert breaks and len(breaks) == len(starts)  # train_step breaks in each of its compiles
    line = line_of("if loss.item() > 1.0:")
    for e in breaks:
        assert (e.file, e.line, e.frame) == (str(DEMO), line, "train_step")
        assert "Tensor.item()" in e.type and e.detail  # its type, and a hint
        assert e.stack.splitlines()[-1] == f"{DEMO}:{line} in train_step"
    assert OBSERVE_NOTE in notes


def test_breaks_are_deduplicated_by_type_and_place(observed):
    t, _, _, _ = observed
    table = report.compile_table(t.events)
    breaks = compiles(t, "break")
    assert len(table.breaks) == 1
    row = table.breaks[0]
    assert row.count == len(breaks) > 1
    assert row.iterations == sorted({e.iteration for e in breaks})
    step = next(f for f in table.recompiles if f.frame == "train_step")
    assert step.count == len([e for e in compiles(t, "recompile") if e.frame == "train_step"])
    assert list(step.inputs) == ["x"] and len(step.reasons) == 1  # one kind of guard


def test_each_compile_has_its_time_and_each_entry_its_guards(observed):
    t, _, _, _ = observed
    ends = compiles(t, "end")
    assert len(ends) == len(compiles(t, "start")) > 1
    assert all(e.duration_ns > 0 for e in ends)
    guards = {e.compile_id: e for e in compiles(t, "guards")}
    # every compile that made code has its guards (the resume function may make none)
    steps = {e.compile_id for e in compiles(t, "start") if e.frame == "train_step"}
    assert steps <= set(guards) <= {e.compile_id for e in ends}
    first = guards[compiles(t, "start")[0].compile_id]
    assert "L['x']" in first.detail and "size=[4, 5, 3]" in first.detail


def test_a_fullgraph_compile_is_captured_and_the_fix_removes_every_recompile():
    module = demo_module()
    with dyngraph.trace() as t:
        losses = module["main"](fixed=True, backend="eager")
    assert len(losses) == len(module["LENGTHS"])
    assert len(compiles(t, "start")) == len(compiles(t, "end")) == 1
    assert compiles(t, "recompile") == [] and compiles(t, "break") == []
    assert compiles(t, "start")[0].frame == "train_step_fixed"
    assert compiles(t, "start")[0].iteration == 1


def test_code_compiled_in_one_recording_is_observed_in_the_next_and_runs_as_it_is_outside(
        monkeypatch):
    torch._dynamo.reset()
    monkeypatch.setattr(torch._dynamo.config, "automatic_dynamic_shapes", False)
    with dyngraph.trace() as first:
        compiled = torch.compile(double, backend="eager")
        assert compiled(torch.ones(2)).tolist() == [2.0, 2.0]
    assert compiled(torch.ones(3)).tolist() == [2.0] * 3  # outside: compiles, as without us
    with dyngraph.trace() as second:
        assert compiled(torch.ones(4)).tolist() == [2.0] * 4
    assert [e.what for e in compiles(first, "start")] == ["start"]
    assert compiles(second, "recompile")[0].reason.endswith("actual 4")
    metrics = torch._dynamo.utils.get_compilation_metrics()[-3:]
    assert [m.co_name for m in metrics] == ["double"] * 3  # three shapes, three compiles


def test_a_script_that_never_compiles_shows_no_compile_lane():
    notes: list[str] = []
    model = torch.nn.Linear(3, 2)
    with backends.on_note(notes.append), dyngraph.trace() as t:
        model(torch.randn(4, 3)).sum().backward()
    assert [e for e in t.events if type(e) is ev.CompileEvent] == []
    assert report.compile_table(t.events).empty and report.render(
        report.compile_table(t.events)) == []
    assert not any("compile" in n for n in notes)


def test_the_torch_logs_text_fallback_reports_the_same(observed, monkeypatch):
    t, _, _, _ = observed
    monkeypatch.setenv(SOURCE_ENV, "text")
    again = demo_module()
    with dyngraph.trace() as text:
        again["main"](STEPS, backend=BACKEND)

    def facts(trace: dyngraph.Trace) -> list[tuple]:
        return [(e.iteration, e.what, e.frame, e.line, e.reason, e.input)
                for e in trace.events if type(e) is ev.CompileEvent
                and e.what in ("recompile", "break") and e.frame == "train_step"]

    assert facts(text) == facts(t)
    assert len(compiles(text, "end")) == len(compiles(t, "end"))


# -- zero interference ---------------------------------------------------------------------------
def compile_signature(since: int) -> list[tuple]:
    """What Dynamo compiled after the first ``since`` entries of its metrics: per compile
    the function, why it recompiled, its guard and op counts, whether it failed."""
    metrics = torch._dynamo.utils.get_compilation_metrics()[since:]
    return [(m.co_name, m.recompile_reason, m.guard_count, m.graph_op_count,
             m.fail_type) for m in metrics]


def counted(run) -> list:
    counters = torch._dynamo.utils.counters
    since = len(torch._dynamo.utils.get_compilation_metrics())
    breaks = sum(counters["graph_break"].values())
    graphs = counters["stats"]["unique_graphs"]
    losses = run()
    # (as JSON keeps it: workers share it through a file)
    return json.loads(json.dumps([losses, compile_signature(since),
                                  sum(counters["graph_break"].values()) - breaks,
                                  counters["stats"]["unique_graphs"] - graphs]))


def same_with_and_without_dyngraph(plain: list, seen: list, t: dyngraph.Trace) -> None:
    assert seen == plain  # losses bit for bit, and the compiles one for one
    losses, signature, breaks, graphs = plain
    assert breaks > 0 and sum(1 for s in signature if s[1]) >= 2 and graphs > 1
    assert len(compiles(t, "end")) == sum(1 for s in signature if s[0])  # (frames': not
    # the entries of the backward compiles aot_eager adds, which name no function)
    assert torch._C._len_torch_function_stack() == 0  # and nothing of ours is left
    assert not torch.nn.modules.module._has_any_global_hook()


def test_zero_interference_the_compiles_and_outputs_are_the_same_as_without_dyngraph(
        plain, observed):
    t, _, _, seen = observed
    same_with_and_without_dyngraph(plain, seen, t)


@pytest.mark.skipif(not os.environ.get("DYNGRAPH_INDUCTOR"),
                    reason="inductor compiles C++: set DYNGRAPH_INDUCTOR=1 (slow)")
def test_zero_interference_with_the_default_inductor_backend(monkeypatch):
    # Inductor's caches on disk would let whichever run comes second skip compiling
    # (and recording) its backward: both runs compile everything instead.
    monkeypatch.setattr(torch._inductor.config, "fx_graph_cache", False)
    monkeypatch.setattr(torch._functorch.config, "enable_autograd_cache", False)
    plain = counted(lambda: demo_module()["main"](STEPS, backend="inductor"))
    module = demo_module()
    with dyngraph.trace() as t:
        seen = counted(lambda: module["main"](STEPS, backend="inductor"))
    same_with_and_without_dyngraph(plain, seen, t)


# -- the recompile limit, falling back to eager, and a torch that tells nothing ------------------
def double(x):
    return x * 2


def test_the_recompile_limit_and_a_fallback_to_eager_are_reported(monkeypatch):
    torch._dynamo.reset()
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)
    monkeypatch.setattr(torch._dynamo.config, "automatic_dynamic_shapes", False)
    monkeypatch.setattr(torch._dynamo.config, "suppress_errors", True)

    def failing_backend(gm, example_inputs):
        raise RuntimeError("this backend cannot compile")

    with dyngraph.trace() as t:
        compiled = torch.compile(double, backend="eager")
        for n in (2, 3, 4):  # a new shape each time: the second one is over the limit
            with dyngraph.iteration():
                assert compiled(torch.ones(n)).tolist() == [2.0] * n
        broken = torch.compile(lambda x: x + 1, backend=failing_backend)
        with dyngraph.iteration():
            assert broken(torch.ones(2)).tolist() == [2.0, 2.0]  # ran eagerly instead
    limit = compiles(t, "limit")
    assert [(e.iteration, e.frame) for e in limit] == [(2, "double")]
    assert "recompile limit (1) hit: double runs eagerly" in limit[0].reason
    assert "expected 2, actual 3" in limit[0].detail
    fallback = compiles(t, "fallback")
    assert [e.iteration for e in fallback] == [4] and fallback[0].type
    assert "this backend cannot compile" in fallback[0].detail


def test_a_torch_that_tells_nothing_gives_a_note_not_a_crash(monkeypatch):
    from dyngraph.compile_lane import torch_api

    torch._dynamo.reset()
    monkeypatch.setattr(torch_api, "TRACE_LOGGER", "no.such.logger")
    monkeypatch.setattr(torch_api, "TEXT_LOGGERS", {})
    notes: list[str] = []
    with backends.on_note(notes.append), dyngraph.trace() as t:
        assert torch.compile(double, backend="eager")(torch.ones(2)).tolist() == [2.0, 2.0]
    unavailable = compiles(t, "unavailable")
    version = torch.__version__.split("+")[0]
    assert len(unavailable) == 1
    assert unavailable[0].reason.startswith(f"compile events unavailable on torch {version}: ")
    assert unavailable[0].reason in notes
    assert report.compile_table(t.events).unavailable == unavailable[0].reason


def test_code_compiled_before_the_recording_runs_eagerly_and_is_said_so():
    torch._dynamo.reset()
    before = torch.compile(double, backend="eager")  # out of the lane's sight
    notes: list[str] = []
    with backends.on_note(notes.append), dyngraph.trace(stats="full") as t:
        assert before(torch.ones(3)).tolist() == [2.0] * 3  # (the capture's mode, traced
        # by Dynamo, would have broken it: it runs eagerly, its ops seen)
    assert EARLY_NOTE in notes and compiles(t, "start") == []
    assert [e.op for e in t.events if type(e) is ev.Op] == ["mul"]
    assert torch.compiler.is_compiling() is False and before(torch.ones(2)).tolist() == [
        2.0, 2.0]  # and compiled again once the recording is over


def nested_run() -> list:
    """A compiled module and a compiled function, called from another compiled function."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 4)
    module = torch.compile(linear, backend="eager")
    inner = torch.compile(lambda x: x.relu() * 2, backend="eager")
    assert isinstance(module, torch.nn.Module) and list(module.parameters()) == list(
        linear.parameters())  # (still the module torch.compile returns)

    @torch.compile(backend="eager")
    def outer(x):
        return inner(module(x)).sum()

    return counted(lambda: [outer(torch.randn(3, 4)).item() for _ in range(2)]
                   + [module(torch.randn(2, 4)).sum().item()])


def test_zero_interference_for_compiled_modules_and_compiles_inside_compiles():
    plain = nested_run()
    with dyngraph.trace() as t:
        seen = nested_run()
    assert seen == plain
    # outer (with inner and the module inlined), then the module on its own (torch wraps a
    # torch.nn module's forward in a function of its own, ``inner``)
    assert [e.frame for e in compiles(t, "start")][0] == "outer"
    assert len(compiles(t, "start")) == len(seen[1]) == 2
