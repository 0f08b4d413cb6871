"""Each stepping command stops at the right place; post-mortem pauses at the raising op."""

from __future__ import annotations

import time

from runtime_helpers import Run, drive, line_of, pump_until_paused, script, wait_for

from dyngraph.capture import events as ev
from dyngraph.debug import Breakpoint, Session


def _then(method, *args):
    return lambda session, run: getattr(session, method)(*args)


def where(pause):
    at = pause.at
    if isinstance(at, ev.Op):
        return ("op", at.op, at.iteration)
    return (type(at).__name__ if at is not None else None, pause.hit.reason,
            at.iteration if at is not None else None)


def test_initial_pause_then_step_op_walks_forward_then_backward():
    run = drive("simple.py", pause_at_start=True,
                commands=[_then("step_op")] * 4 + [_then("continue_")])
    assert run.pauses[0].hit.reason == "start" and type(run.pauses[0].at) is ev.Header
    assert [where(p) for p in run.pauses[1:4]] == [
        ("op", "matmul", 1), ("op", "relu", 1), ("op", "sum", 1)]
    assert run.pauses[3].hit.reason == "step"
    fourth = run.pauses[4]
    assert isinstance(fourth.at, ev.BackwardStep) and fourth.at.op == "sum"
    assert len(run.pauses) == 5 and run.state.exit_status == 0


def test_finish_forward_then_finish_backward_then_next_iteration():
    run = drive("simple.py", pause_at_start=True, commands=[
        _then("finish_forward"), _then("finish_backward"), _then("next_iteration"),
        _then("continue_")])
    kinds = [type(p.at) for p in run.pauses[1:]]
    assert kinds == [ev.BackwardStart, ev.BackwardEnd, ev.Op]
    assert [p.at.iteration for p in run.pauses[1:]] == [1, 1, 2]
    assert run.pauses[3].at.op == "matmul"
    # The backward started after the last forward op of iteration 1 and before any step.
    events = run.events
    start = events.index(run.pauses[1].at)
    assert isinstance(events[start - 1], ev.Op) and events[start - 1].op == "sum"
    assert not any(isinstance(e, ev.BackwardStep) for e in events[:start])


def test_run_to_line_stops_at_the_next_op_on_that_line_each_time():
    line = line_of("simple.py", "sum")
    run = drive("simple.py", pause_at_start=True, commands=[
        _then("run_to_line", "simple.py", line), _then("run_to_line", "simple.py", line),
        _then("continue_")])
    assert [(p.at.op, p.at.line, p.at.iteration) for p in run.pauses[1:]] == [
        ("sum", line, 1), ("sum", line, 2)]


def test_breakpoints_still_hit_while_stepping_far():
    run = drive("simple.py", pause_at_start=True, breakpoints=[Breakpoint.op("relu")],
                commands=[_then("step_op"), _then("next_iteration"), _then("continue_")])
    assert [(p.hit.reason, p.at.op, p.at.iteration) for p in run.pauses[1:]] == [
        ("step", "matmul", 1), ("op", "relu", 1), ("op", "relu", 2)]


def test_continue_runs_to_the_end_without_stopping():
    run = drive("simple.py", pause_at_start=True, commands=[_then("continue_")])
    assert len(run.pauses) == 1
    assert run.state.status == "finished" and run.state.exit_status == 0
    assert type(run.events[-1]) is ev.RunEnd


def test_pause_stops_a_running_script_at_its_next_op():
    session = Session.start(script("long.py"), pause_at_start=False)
    try:
        run = Run()
        wait_for(lambda: run.events.extend(session.poll(0.05)) or len(run.of(ev.Op)) > 100)
        session.pause()
        pump_until_paused(session, run)
        hit = run.of(ev.BreakpointHit)[-1]
        assert hit.reason == "step" and session.state.reason == "step"
        at = run.by_seq(hit.at_seq)
        assert isinstance(at, (ev.Op, ev.BackwardStep))
        # paused means paused: nothing more arrives until told to go on
        seen = len(run.events)
        time.sleep(0.3)
        run.events.extend(session.poll(0.05))
        assert len(run.events) == seen
        session.step_op()
        pump_until_paused(session, run)
        assert run.of(ev.BreakpointHit)[-1].seq > hit.seq
    finally:
        session.close()


def test_exception_pauses_post_mortem_at_the_raising_op():
    run = drive("raises.py")
    assert len(run.pauses) == 1
    pause = run.pauses[0]
    assert pause.hit.reason == "exception"
    text = pause.hit.description
    assert text.startswith("RuntimeError: matmul: shapes (4, 2) and (5, 7) do not align")
    assert "in op matmul" in text and "(module 1, a Bad)" in text and "iteration 1" in text
    assert f"raises.py:{line_of('raises.py', 'raise')}" in text
    # the pause is at the last op that completed: the Linear before the failing matmul
    assert isinstance(pause.at, ev.Op) and pause.at.op == "linear" and pause.at.module == "0"
    exc = run.of(ev.ExceptionRaised)[0]
    assert exc.type == "RuntimeError" and exc.line == line_of("raises.py", "raise")
    assert exc.at_seq == pause.at.seq
    assert "Traceback" in run.text("stderr") and "child.py" not in run.text("stderr")
    assert run.state.exit_status == 1


def test_values_can_be_fetched_post_mortem():
    got = {}

    def fetch(session, run):
        got["value"] = session.fetch_values(run.pauses[-1].at.output)
        session.continue_()

    drive("raises.py", commands=[fetch])
    assert got["value"] is not None and got["value"].shape == (4, 2)


def test_exception_outside_modules_without_post_mortem():
    run = drive("exits.py", ["raise"], post_mortem=False)
    assert run.pauses == []
    assert run.state.exit_status == 1
    description = run.session.exception_description
    assert description.startswith("ValueError: top-level failure after op sum")
    assert "module" not in description
    assert f"exits.py:{line_of('exits.py', 'raise')}" in description


def test_exception_in_backward_pauses_at_the_last_backward_step():
    run = drive("raises_backward.py")
    assert len(run.pauses) == 1
    pause = run.pauses[0]
    assert pause.hit.reason == "exception"
    assert isinstance(pause.at, ev.BackwardStep) and pause.at.grad_fn == "MulBackward0"
    text = pause.hit.description
    assert text.startswith("ZeroDivisionError: division by zero during backward, after "
                           "MulBackward0 of mul")
    assert f"raises_backward.py:{line_of('raises_backward.py', 'hook')}" in text


def test_a_handled_exception_does_not_lend_its_module_to_a_later_one():
    run = drive("raises_handled.py", post_mortem=False)
    description = run.session.exception_description
    assert description.startswith("KeyError: 'fatal' after op mul, iteration 1")
    assert "module" not in description
    assert f"raises_handled.py:{line_of('raises_handled.py', 'raise')}" in description


def test_next_iteration_from_the_start_stops_at_the_first_op():
    run = drive("simple.py", pause_at_start=True,
                commands=[_then("next_iteration"), _then("next_iteration"),
                          _then("next_iteration")])
    assert [where(p) for p in run.pauses[1:]] == [("op", "matmul", 1), ("op", "matmul", 2)]
    assert run.state.exit_status == 0  # the third one ran to the end: no iteration 3
