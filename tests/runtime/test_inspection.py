"""Python at the paused op through the Session API: frames, locals, eval, watches, the
built-in breakpoint(), all evaluated in the script's own process."""

from __future__ import annotations

import threading
import time

import pytest
from runtime_helpers import Run, dyngraph_cli, line_of, pump_until_paused, script

from dyngraph.debug import Breakpoint, Session
from dyngraph.debug.inspection import InspectError

FRAMES = "frames.py"


def names(variables):
    return [v.name for v in variables]


def row(variables, name):
    return next(v for v in variables if v.name == name)


@pytest.fixture()
def at_tanh():
    """frames.py paused at the tanh inside Net.forward (iteration 1)."""
    session = Session.start(script(FRAMES), breakpoints=[Breakpoint.op("tanh")],
                            pause_at_start=False)
    run = Run(session=session)
    try:
        pump_until_paused(session, run)
        yield session, run
    finally:
        session.close()


def test_locals_of_a_modules_forward_and_moving_up_the_stack(at_tanh):
    session, _ = at_tanh
    stack = session.stack()
    assert [(f.function, f.line) for f in stack] == [
        ("forward", line_of(FRAMES, "tanh")), ("<module>", line_of(FRAMES, "call"))]
    assert all(f.file.endswith(FRAMES) for f in stack)  # no dyngraph or library frames
    forward = session.locals()
    assert names(forward) == ["self", "x", "h"]
    assert row(forward, "self").text == "Net, 49 parameters"
    h = row(forward, "h")
    assert h.type == "Tensor" and h.text.startswith("(3, 8) float32  requires_grad  min ")
    assert h.tensor.summary.shape == (3, 8) and h.tensor.requires_grad
    assert "NaN 0 Inf 0" in h.text
    # The tensor id is the graph's node id: the fc's output op event names it.
    ops = [e for e in at_tanh[1].events if getattr(e, "op", "") == "linear"]
    assert h.tensor.node == ops[-1].output
    top = session.locals(1)  # one frame up: the script's top level
    assert names(top) == ["net", "label", "step", "batch"]  # no modules, classes, dunders
    assert row(top, "label").text == "'frames'" and row(top, "step").text == "0"
    with pytest.raises(InspectError, match="no frame 2"):
        session.locals(2)


def test_locals_at_top_level_from_a_line_breakpoint():
    session = Session.start(script(FRAMES), pause_at_start=False,
                            breakpoints=[Breakpoint.at_line(script(FRAMES),
                                                            line_of(FRAMES, "loss"))])
    try:
        pump_until_paused(session, Run())
        assert [f.function for f in session.stack()] == ["<module>"]
        variables = session.locals()
        assert names(variables) == ["net", "label", "step", "batch", "out"]
        assert row(variables, "out").text.startswith("(3, 1) float32  requires_grad")
    finally:
        session.close()


def test_eval_of_expressions_and_statements_whose_names_persist_across_pauses(at_tanh):
    session, run = at_tanh
    assert session.eval("tuple(h.shape)").value == "(3, 8)"
    assert session.eval("label.upper()").value == "'FRAMES'"  # the frame's globals too
    result = session.eval("z = h * 2\nfor i in range(2):\n    print('row', i)\n")
    assert result.ok and result.value is None and result.output == "row 0\nrow 1\n"
    shown = session.eval("z")
    assert shown.tensor.summary.shape == (3, 8)
    assert shown.value.startswith("(3, 8) float32") and "\n[" in shown.value  # then a preview
    assert session.eval("x", frame=1).error == "NameError: name 'x' is not defined"
    # The console's own ops are not the script's: no events, no graph nodes, no breakpoint
    # (the tanh breakpoint would otherwise pause again inside the evaluation).
    assert session.eval("tuple(net(batch).tanh().shape)", frame=1, timeout=20).value == "(3, 1)"
    run.events.extend(session.poll(0.3))
    assert not [e for e in run.events if getattr(e, "file", "").startswith("<")]
    assert [e.reason for e in run.events if e.kind == "breakpoint"] == ["op"]
    # Assignments never write back into the frame; they live in the console's namespace.
    session.eval("scale = 99")
    assert session.eval("scale").value == "99"  # at this pause, in this frame: the console's
    session.step_op()  # to the head's linear: `scale = 0.5` ran in the frame meanwhile
    pump_until_paused(session, run)
    assert session.eval("scale").value == "0.5"  # the frame's own variable wins now
    assert session.eval("type(z).__name__").value == "'Tensor'"  # kept across the pause


def test_an_exception_in_eval_shows_only_the_consoles_frames_and_the_run_goes_on(at_tanh):
    session, run = at_tanh
    result = session.eval("def f(v):\n    return v / 0\n\nf(1)")
    assert result.error == "ZeroDivisionError: division by zero"
    tb = result.traceback
    assert tb.startswith("Traceback") and "<console:" in tb and "return v / 0" in tb
    assert "dyngraph" not in tb and "evaluation.py" not in tb
    called = session.eval("net(h)").traceback  # a shape error inside the user's forward
    assert "in forward" in called and "engine" not in called
    assert "frame(s) in dyngraph or in libraries not shown" in called
    syntax = session.eval("h +")
    assert syntax.error.startswith("SyntaxError") and "dyngraph" not in syntax.traceback
    assert session.eval("exit()").error.startswith("SystemExit")  # the console never ends it
    before = session.state.pause
    session.step_op()
    pump_until_paused(session, run)
    assert session.state.pause > before and session.eval("1 + 1").value == "2"


def test_a_long_evaluation_is_interrupted_and_the_script_stays_pausable(at_tanh):
    session, run = at_tanh
    for source in ("while True:\n    pass", "import time\ntime.sleep(60)"):
        timer = threading.Timer(0.3, session.interrupt_eval)
        timer.start()
        started = time.monotonic()
        result = session.eval(source, timeout=20)
        assert result.interrupted and result.error.startswith("KeyboardInterrupt")
        assert time.monotonic() - started < 10
    assert session.state.paused and session.eval("h.shape[0]").value == "3"
    session.interrupt_eval()  # with nothing running: ignored, the script goes on
    session.continue_()
    pump_until_paused(session, run)  # the tanh breakpoint again, in iteration 2
    assert session.locals()[0].name == "self"


def test_output_of_one_evaluation_is_capped_and_says_so(at_tanh):
    session, _ = at_tanh
    result = session.eval("print('x' * 200_000)")
    assert result.truncated and len(result.output) < 70_000
    assert "output is capped at 65,536 characters per evaluation" in result.output


def test_watches_are_reevaluated_at_every_pause_with_errors_inline(at_tanh):
    session, run = at_tanh
    session.watch("step")
    session.watch("h.tanh().shape[1]")  # a watch running the op of a breakpoint
    missing = session.watch("no_such_name")
    first = session.watches(timeout=20)
    assert [(w.expression, w.value, w.error) for w in first] == [
        ("step", "0", None), ("h.tanh().shape[1]", "8", None),
        ("no_such_name", None, "NameError: name 'no_such_name' is not defined")]
    session.unwatch(missing)
    session.continue_()  # to the tanh of iteration 2
    pump_until_paused(session, run)
    assert [(w.expression, w.value) for w in session.watches()] == [
        ("step", "1"), ("h.tanh().shape[1]", "8")]
    session.close()
    with pytest.raises(InspectError):
        session.watches()


def test_the_builtin_breakpoint_pauses_at_its_line_with_the_frame_ready():
    session = Session.start(script(FRAMES), ["--builtin"], pause_at_start=False)
    try:
        pump_until_paused(session, Run())
        state = session.state
        line = line_of(FRAMES, "builtin")
        assert state.reason == "breakpoint"
        assert f"breakpoint() at tests/runtime/scripts/{FRAMES}:{line}" in state.description \
            or f"{FRAMES}:{line}" in state.description
        assert [(f.function, f.line) for f in session.stack()] == [("<module>", line)]
        assert session.eval("round(loss.item(), 6) > 0").value == "True"
    finally:
        session.close()


def test_dyngraph_breakpoint_and_post_mortem_show_their_frames():
    session = Session.start(script("bp_call.py"), pause_at_start=False)
    try:
        pump_until_paused(session, Run())
        assert session.stack()[0].line == line_of("bp_call.py", "call")
        assert names(session.locals()) == ["x", "y"]
    finally:
        session.close()
    session = Session.start(script("raises.py"), pause_at_start=False)
    try:
        pump_until_paused(session, Run())
        assert session.state.reason == "exception"
        stack = session.stack()
        assert (stack[0].function, stack[0].line) == ("forward", line_of("raises.py", "raise"))
        assert session.eval("tuple(h.shape)").value == "(4, 2)"
        assert "During handling" not in session.eval("h @ h").traceback
    finally:
        session.close()


def test_record_and_check_ignore_breakpoints_with_one_notice():
    for command in ("record", "check"):
        extra = ["-o", "/dev/null"] if command == "record" else []
        done = dyngraph_cli(command, *extra, script(FRAMES), "--builtin")
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("ignored: only `dyngraph debug` pauses") == 1
        assert f"breakpoint() at {FRAMES}:{line_of(FRAMES, 'builtin')}" in done.stderr


def test_a_pytorch_script_shows_its_own_frames_and_tensors():
    pytest.importorskip("torch")
    name = "torch_breakpoint.py"
    session = Session.start(script(name), pause_at_start=False)
    try:
        pump_until_paused(session, Run(), timeout=60)
        # torch's Module.__call__ frames between the two are library frames: left out
        assert [(f.function, f.line) for f in session.stack()] == [
            ("forward", line_of(name, "bp")), ("<module>", line_of(name, "call"))]
        variables = session.locals()
        assert names(variables) == ["self", "x", "h"]
        assert row(variables, "self").text == "Net, 40 parameters"
        assert row(variables, "h").text.startswith("(3, 8) float32  requires_grad  min 0 ")
        assert session.eval("h.shape").value == "torch.Size([3, 8])"
    finally:
        session.close()
