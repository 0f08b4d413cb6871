"""Each breakpoint kind stops at the right event of a real run (headless sessions)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_helpers import drive, line_of, script

from dyngraph.capture import events as ev
from dyngraph.debug import Breakpoint
from dyngraph.debug.breakpoints import KINDS, Matcher, all_finite, module_matches, parse_condition


# -- parsing and matching (no process) --------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("matmul", Breakpoint.op("matmul")),
    ("op:mat*", Breakpoint.op("mat*")),
    ("module:encoder.*.attn", Breakpoint.module("encoder.*.attn")),
    ("train.py:42", Breakpoint.at_line("train.py", 42)),
    ("iter:3", Breakpoint.at_iteration(3)),
    ("nan", Breakpoint.nan()),
    ("grad>10", Breakpoint.grad_norm(10.0)),
    ("global_grad>1e3", Breakpoint.grad_norm(1e3, "global")),
    ("op:relu if max > 1e3", Breakpoint.op("relu", "max > 1e3")),
])
def test_parse_reads_what_users_type(text, expected):
    bp = Breakpoint.parse(text)
    assert bp == expected
    assert Breakpoint.parse(str(bp)) == bp
    assert Breakpoint.from_dict(bp.to_dict()) == bp


@pytest.mark.parametrize("text", ["", "op:", "x.py:0", "grad>-1", "relu if max >> 3",
                                  "relu if median > 3", "iter:0"])
def test_parse_rejects_nonsense(text):
    with pytest.raises(ValueError):
        Breakpoint.parse(text)


_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,8}(\.[a-z0-9_*]{1,5}){0,3}", fullmatch=True)
_CONDITIONS = st.sampled_from(["", "max > 1e3", "nan > 0 or norm >= 10", "absmax<=2.5"])
BREAKPOINTS = st.one_of(
    st.builds(Breakpoint.op, _NAMES, _CONDITIONS),
    st.builds(Breakpoint.module, _NAMES, _CONDITIONS),
    st.builds(Breakpoint.at_line, st.from_regex(r"([a-z]{1,6}/){0,2}[a-z_]{1,8}\.py",
                                                fullmatch=True),
              st.integers(1, 10**6), _CONDITIONS),
    st.builds(Breakpoint.at_iteration, st.integers(1, 10**6)),
    st.just(Breakpoint.nan()),
    st.builds(Breakpoint.grad_norm,
              st.floats(1e-30, 1e30, allow_nan=False, allow_infinity=False),
              st.sampled_from(["node", "global"])),
)


# A fixed 100 by default (derandomized: the suite never fails on a new draw); a random
# search of any size with ``DYNGRAPH_FUZZ_CASES=5000``.
_TEXT_FORM_CASES = int(os.environ.get("DYNGRAPH_FUZZ_CASES", "0"))


@settings(max_examples=_TEXT_FORM_CASES or 100, derandomize=not _TEXT_FORM_CASES,
          deadline=None, database=None)
@given(BREAKPOINTS, st.sampled_from([None, *KINDS]))
def test_the_text_form_reads_back_whichever_kind_is_selected(bp, kind):
    """What the list shows is what the parser reads, in the CLI and in the dialog with any
    kind selected: one parser, one text form."""
    assert Breakpoint.parse(str(bp), kind) == bp
    assert Breakpoint.parse(str(bp), kind, file="other.py") == bp


@pytest.mark.parametrize("kind, text, expected", [
    ("op", "module:hidden", Breakpoint.module("hidden")),
    ("op", "grad>100", Breakpoint.grad_norm(100.0)),
    ("grad_norm", "grad>100", Breakpoint.grad_norm(100.0)),
    ("grad_norm", "100", Breakpoint.grad_norm(100.0)),
    ("module", "encoder", Breakpoint.module("encoder")),
    ("module", "op:relu", Breakpoint.op("relu")),
    ("iteration", "3", Breakpoint.at_iteration(3)),
    ("line", "42", Breakpoint.at_line("train.py", 42)),
    ("nan", "", Breakpoint.nan()),
    ("op", "relu if max > 3", Breakpoint.op("relu", "max > 3")),
])
def test_a_bare_value_is_read_as_the_selected_kind(kind, text, expected):
    assert Breakpoint.parse(text, kind, file="train.py") == expected


@pytest.mark.parametrize("kind, text, words", [
    ("op", "op:([", "not an op name"),
    ("op", "([", "not an op name"),
    ("line", "42", "FILE:LINE"),  # no file to put it in
    ("line", "relu", "FILE:LINE"),
    ("iteration", "zero", "not an iteration"),
    ("grad_norm", "-1", "threshold"),
    ("grad_norm", "grad>0", "> 0"),
    ("nan", "nan if max > 1", "no condition"),
    ("op", "", "empty"),
    ("op", "module:", "needs a value"),
])
def test_a_form_that_does_not_parse_is_refused_with_a_reason(kind, text, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        Breakpoint.parse(text, kind)


def test_module_glob_matches_the_module_or_an_ancestor():
    assert module_matches("encoder", "encoder.0.fc")
    assert module_matches("encoder.*.fc", "encoder.1.fc")
    assert not module_matches("encoder.*.fc", "encoder.1.act")
    assert not module_matches("decoder", "encoder.0")


def test_conditions_and_exact_finiteness():
    cond = parse_condition("max > 1e3 or nan > 0 and numel >= 2")
    assert cond(np.array([1.0, 2e3]))
    assert cond(np.array([1.0, np.nan]))
    assert not cond(np.array([1.0]))
    # one NaN among a million values is found; a float32 sum that overflows is not a NaN
    big = np.ones(1_000_000, np.float32)
    big[765_432] = np.nan
    assert not all_finite(big)
    assert all_finite(np.full(10, 3e38, np.float32))


@pytest.mark.parametrize("size", [1, 7, 2048, 2049, 16_384, 16_385])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_all_finite_is_exact_on_either_side_of_each_size_threshold(size, dtype):
    a = np.linspace(-1, 1, size).astype(dtype)
    assert all_finite(a) and all_finite(a.reshape(1, -1)[:, ::-1])
    for bad in (np.nan, np.inf, -np.inf):
        b = a.copy()
        b[size // 2] = bad
        assert not all_finite(b), (size, dtype, bad)
    assert not all_finite(np.array(np.nan, dtype)) and all_finite(np.array(2.0, dtype))


def test_matcher_indexes_by_kind():
    m = Matcher.build([Breakpoint.op("relu").with_id(1), Breakpoint.op("mat*").with_id(2),
                       Breakpoint.at_line("a.py", 3).with_id(3)])
    assert [bp.id for bp in m.for_op("matmul")] == [2]
    assert [bp.id for bp in m.for_op("relu")] == [1]
    assert [bp.id for bp in m.for_line("/x/a.py", 3)] == [3]
    assert m.for_line("/x/ba.py", 3) == []


# -- in a running script ---------------------------------------------------------------------
def test_op_breakpoint_stops_after_each_matching_op():
    run = drive("simple.py", breakpoints=[Breakpoint.op("relu")])
    assert [p.hit.reason for p in run.pauses] == ["op", "op"]
    for iteration, pause in enumerate(run.pauses, start=1):
        assert isinstance(pause.at, ev.Op) and pause.at.op == "relu"
        assert pause.at.line == line_of("simple.py", "relu")
        assert pause.at.iteration == iteration
        assert pause.state.at_seq == pause.at.seq
    assert run.state.exit_status == 0


def test_module_glob_stops_on_entering_each_matching_module():
    run = drive("net.py", breakpoints=[Breakpoint.module("encoder.*.fc")])
    modules = [p.at.module for p in run.pauses]
    assert modules == ["encoder.0.fc", "encoder.1.fc"] * 2
    assert all(p.hit.reason == "module" for p in run.pauses)


def test_module_glob_on_an_ancestor_stops_once_per_entry():
    run = drive("net.py", breakpoints=[Breakpoint.module("encoder")])
    assert [(p.at.module, p.at.iteration) for p in run.pauses] == [
        ("encoder.0.fc", 1), ("encoder.0.fc", 2)]


@pytest.mark.parametrize("file", ["simple.py", script("simple.py")])
def test_line_breakpoint_stops_at_the_first_op_of_the_line(file):
    line = line_of("simple.py", "sum")
    run = drive("simple.py", breakpoints=[Breakpoint.at_line(file, line)])
    assert [(p.at.op, p.at.line, p.at.iteration) for p in run.pauses] == [
        ("sum", line, 1), ("sum", line, 2)]


def test_iteration_breakpoint_stops_at_the_first_op_of_that_iteration():
    run = drive("simple.py", breakpoints=[Breakpoint.at_iteration(2)])
    assert len(run.pauses) == 1
    at = run.pauses[0].at
    assert (at.op, at.iteration, at.line) == ("matmul", 2, line_of("simple.py", "matmul"))


def test_nan_in_forward_names_the_op_that_produced_it_not_the_loss():
    run = drive("nan_forward.py", breakpoints=[Breakpoint.nan()])
    assert len(run.pauses) == 1, [p.hit.description for p in run.pauses]
    pause = run.pauses[0]
    assert pause.hit.reason == "nan"
    assert pause.at.op == "log" and pause.at.line == line_of("nan_forward.py", "log")
    assert "1 NaN" in pause.hit.description and "log" in pause.hit.description


def test_nan_in_backward_names_the_backward_step():
    run = drive("nan_backward.py", breakpoints=[Breakpoint.nan()])
    assert len(run.pauses) == 1, [p.hit.description for p in run.pauses]
    pause = run.pauses[0]
    assert isinstance(pause.at, ev.BackwardStep) and pause.at.grad_fn == "SqrtBackward0"
    assert "Inf" in pause.hit.description
    assert f"nan_backward.py:{line_of('nan_backward.py', 'sqrt')}" in pause.hit.description


def test_grad_norm_per_node_stops_at_the_first_large_gradient():
    run = drive("grads.py", breakpoints=[Breakpoint.grad_norm(1000.0)])
    first = run.pauses[0]
    assert first.hit.reason == "grad_norm"
    # d(loss)/dy = 2y = (2000, 4000, 6000): norm 7483, first above 1000 in backward order
    assert isinstance(first.at, ev.BackwardStep)
    assert first.at.op == "mul" and "7483" in first.hit.description
    assert f"grads.py:{line_of('grads.py', 'scale')}" in first.hit.description


def test_grad_norm_per_node_covers_leaf_gradients():
    run = drive("grads.py", breakpoints=[Breakpoint.grad_norm(1e5)])
    first = run.pauses[0]
    assert isinstance(first.at, ev.GradAccumulated)  # w.grad = 2000 * y: norm 7.48e6
    assert "7.483e+06" in first.hit.description


def test_global_grad_norm_stops_at_the_end_of_backward():
    run = drive("grads.py", breakpoints=[Breakpoint.grad_norm(1e5, scope="global")])
    assert [type(p.at) for p in run.pauses] == [ev.BackwardEnd, ev.BackwardEnd]
    assert "global gradient norm 7.483e+06" in run.pauses[0].hit.description


def test_dyngraph_breakpoint_pauses_where_called():
    run = drive("bp_call.py")
    assert len(run.pauses) == 1
    pause = run.pauses[0]
    assert pause.hit.reason == "breakpoint"
    assert pause.at.line == line_of("bp_call.py", "before")
    assert f"bp_call.py:{line_of('bp_call.py', 'call')}" in pause.hit.description
    assert "after the scale" in pause.hit.description
    assert run.text("stdout") == "done\n"


def test_conditional_breakpoints_look_at_the_output_values():
    never = drive("simple.py", breakpoints=[Breakpoint.op("relu", "max > 1e3")])
    assert never.pauses == []
    hits = drive("simple.py", breakpoints=[Breakpoint.op("matmul", "max > 0.5")])
    assert [p.at.op for p in hits.pauses] == ["matmul", "matmul"]


@pytest.mark.parametrize("name, bp", [
    ("nan_forward.py", Breakpoint.nan()),
    ("nan_backward.py", Breakpoint.nan()),
    ("grads.py", Breakpoint.grad_norm(1000.0)),
    ("grads.py", Breakpoint.grad_norm(1e5, scope="global")),
    ("simple.py", Breakpoint.op("matmul", "max > 0.5")),
    ("net.py", Breakpoint.module("encoder.*.fc", "absmax > 0")),
])
def test_checks_on_values_stop_at_the_same_event_whether_values_are_kept_or_not(name, bp):
    """With values kept the hook fills the store; without, it keeps only the newest arrays
    for the checks: both must stop at exactly the same events, for the same reasons."""
    def stops(run):
        return [(p.hit.reason, p.hit.at_seq, p.hit.description) for p in run.pauses]

    kept = drive(name, breakpoints=[bp])
    assert kept.pauses, f"{bp} never hit in {name}"
    assert stops(drive(name, breakpoints=[bp], keep_values=False)) == stops(kept)


def test_breakpoints_that_never_hit_lose_nothing_from_the_stream():
    """A run with a breakpoint of every kind set (none hitting) streams the very events of
    a run without any: same kinds, same seq numbers, nothing dropped or reordered."""
    never = [Breakpoint.op("conv2d"), Breakpoint.module("decoder.*"),
             Breakpoint.at_line(script("net.py"), 10_000), Breakpoint.at_iteration(10**9),
             Breakpoint.nan(), Breakpoint.grad_norm(1e30),
             Breakpoint.grad_norm(1e30, scope="global"),
             Breakpoint.op("matmul", condition="max > 1e30")]
    plain = drive("net.py", keep_values=False)
    watched = drive("net.py", breakpoints=never)
    assert watched.pauses == []
    assert [(type(e), e.seq) for e in watched.events] == [(type(e), e.seq)
                                                          for e in plain.events]
    assert [e.seq for e in watched.events] == list(range(len(watched.events)))  # header: 0


def test_breakpoints_added_and_removed_while_paused():
    ids = {}

    def add(session, run):
        ids["relu"] = session.add_breakpoint(Breakpoint.op("relu"))
        assert [str(bp) for bp in session.breakpoints()] == ["op:relu"]
        session.continue_()

    def remove(session, run):
        session.remove_breakpoint(ids["relu"])
        assert session.breakpoints() == []
        session.continue_()

    run = drive("simple.py", pause_at_start=True, commands=[add, remove])
    assert [p.hit.reason for p in run.pauses] == ["start", "op"]
    assert run.state.exit_status == 0


def test_a_nan_breakpoint_added_at_the_start_pause_sees_exact_values():
    # keep_values=False: nothing needs raw arrays until the NaN breakpoint arrives
    def add(session, run):
        session.add_breakpoint(Breakpoint.nan())
        session.continue_()

    run = drive("nan_forward.py", pause_at_start=True, keep_values=False, commands=[add])
    assert [(p.hit.reason, getattr(p.at, "op", None)) for p in run.pauses] == [
        ("start", None), ("nan", "log")]


def test_nan_breakpoint_leaves_minus_inf_masks_alone():
    run = drive("masks.py", breakpoints=[Breakpoint.nan()])
    assert run.pauses == [], [p.hit.description for p in run.pauses]
    assert run.text("stdout") == "masks ok\n"


@pytest.mark.parametrize("arg, op, marker, what", [
    ("all-masked", "softmax", "allmasked", "NaN"),  # the NaN is made by softmax, not the fill
    ("divide", "div", "divide", "Inf"),
])
def test_nan_breakpoint_still_finds_real_non_finite_values_next_to_masks(arg, op, marker, what):
    run = drive("masks.py", [arg], breakpoints=[Breakpoint.nan()])
    assert len(run.pauses) == 1, [p.hit.description for p in run.pauses]
    pause = run.pauses[0]
    assert pause.at.op == op and pause.at.line == line_of("masks.py", marker)
    assert what in pause.hit.description


def test_breakpoints_hit_when_the_debugger_has_over_a_thousand_files_open():
    """Waits are poll()s: select() refuses descriptors past 1023 (the channel then read
    as closed and no pause ever came)."""

    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        run = drive("simple.py", breakpoints=[Breakpoint.op("relu")])
    finally:
        for fd in held:
            os.close(fd)
    assert [p.hit.reason for p in run.pauses] == ["op", "op"]
