"""Where iterations begin and end (issue 27): iteration 0 is setup, the work before the
first differentiable op; ``iteration="step"`` ends iterations at optimizer steps."""

from __future__ import annotations

import dyngraph
import dyngraph.nn as nn
from dyngraph.capture import events as ev


def corpus_then_training(steps: int = 2, micro: int = 1, iteration: str = "backward"):
    """word_language_model's shape: tokenise (integer ops), evaluate under no_grad, then
    train with ``micro`` backward passes per optimizer step."""
    dyngraph.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = dyngraph.optim.SGD(model.parameters(), lr=0.1)
    with dyngraph.trace(iteration=iteration) as t:
        ids = dyngraph.tensor([3, 1, 4, 1, 5, 9, 2, 6])
        tokens = (ids * 2 + 1) % 7  # corpus bookkeeping: setup
        data = dyngraph.randn(8, 4) * 0.5
        with dyngraph.no_grad():
            model(data).sum()  # an evaluation before training: setup too
        for _ in range(steps):
            for _ in range(micro):
                batch = data[tokens[:4]]  # slicing by the corpus' tokens
                model(batch).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
    return t


def test_work_before_the_first_differentiable_op_is_iteration_0():
    t = corpus_then_training(steps=3)
    assert [it.index for it in t.iterations] == [0, 1, 2, 3]
    setup = t.iterations[0].graph
    # Tokenising, the evaluation under no_grad, and the first batch's slicing (it comes
    # before the first op that requires gradients: iteration 1 begins there).
    assert {n.op for n in setup.nodes.values() if n.kind == "op"} >= {
        "mul", "add", "remainder", "linear", "sum", "getitem"}
    assert all(not n.requires_grad for n in setup.nodes.values() if n.kind == "op")
    # Iteration 1 is the first training step: the batch carried in from setup.
    first = t.iterations[1].graph
    assert {"linear", "pow", "mean"} <= {n.op for n in first.nodes.values()}
    assert any(n.carried or n.kind == "leaf" for n in first.nodes.values())
    assert first.backward_order  # its backward is in it
    ends = [e.iteration for e in t.events if isinstance(e, ev.IterationEnd)]
    assert ends == [0, 1, 2, 3]
    # Later steps slice their batch inside the loop: they compare equal to each other.
    assert t.iterations[2].structure_key == t.iterations[3].structure_key
    assert t.iterations[3].diff(t.iterations[2]).unchanged


def test_a_run_that_starts_differentiable_has_no_iteration_0():
    model = nn.Linear(3, 1)
    with dyngraph.trace() as t:
        model(dyngraph.randn(2, 3)).sum().backward()
    assert [it.index for it in t.iterations] == [1]


def test_iteration_step_keeps_gradient_accumulation_in_one_iteration():
    by_backward = corpus_then_training(steps=2, micro=3)
    by_step = corpus_then_training(steps=2, micro=3, iteration="step")
    assert [it.index for it in by_backward.iterations] == [0, 1, 2, 3, 4, 5, 6]
    assert [it.index for it in by_step.iterations] == [0, 1, 2]
    assert by_step.header.iteration_mode == "step"
    assert by_backward.header.iteration_mode == "backward"
    steps = [sum(isinstance(e, ev.BackwardStart) for e in it.events)
             for it in by_step.iterations]
    assert steps == [0, 3, 3]
    # Each step's iteration ends with its optimizer step.
    for it in by_step.iterations[1:]:
        kinds = [e.kind for e in it.events]
        assert kinds[-2:] == ["optimizer_step", "iteration_end"]


def test_a_recorded_file_keeps_setup_and_the_mode(tmp_path):
    path = tmp_path / "run.dgtrace"
    model = nn.Linear(3, 1)
    opt = dyngraph.optim.SGD(model.parameters(), lr=0.1)
    with dyngraph.record(path, iteration="step"):
        x = dyngraph.randn(4, 3) * 2  # setup
        for _ in range(2):
            model(x).sum().backward()
            model(x).sum().backward()
            opt.step()
    t = dyngraph.read_trace(path)
    assert t.header.iteration_mode == "step" and t.header.schema_version >= 3
    assert [(it.index, it.complete) for it in t.iterations] == [(0, True), (1, True),
                                                                (2, True)]


def test_a_recording_by_steps_leaves_the_next_listener_ending_iterations_at_backward():
    # The mode was the process's once set: an in-process subscriber after a
    # trace(iteration="step") saw every backward of its run in one iteration (found as
    # tests of the debugger's model failing after this file in the same worker).
    corpus_then_training(steps=1, micro=2, iteration="step")
    seen: list[ev.Event] = []
    dyngraph.manual_seed(0)
    model = nn.Linear(4, 2)
    with dyngraph.subscribe(seen.append):
        for _ in range(3):
            model(dyngraph.randn(2, 4)).sum().backward()
    assert [e.iteration for e in seen if e.kind == "backward_start"] == [1, 2, 3]
