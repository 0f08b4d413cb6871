"""What ranks say at a checkpoint, and how a divergence is put into words."""

from __future__ import annotations

from dyngraph.ranks.records import Detail, Record, describe, odd_ones

LINEAR = ("linear", "module.encode", "/w/train.py", 20, (32, 16))


def op(name: str, module: str, line: int) -> tuple[str, str, str, int, tuple[int, ...]]:
    return (name, module, "/w/train.py", line, (32, 16))


def test_a_record_round_trips_and_its_shape_leaves_out_the_iteration():
    r = Record("collective", 7, "all_reduce(float32[3])", 12)
    assert Record.decode(r.encode(41)) == (41, r)
    assert r.shape == Record("collective", 9, "all_reduce(float32[3])", 1).shape
    d = Detail(1, r, "/w/train.py", 30, (LINEAR,), (LINEAR,))
    assert Detail.decode(d.encode()) == d


def test_the_odd_rank_is_the_minority_and_a_tie_keeps_rank_0_as_reference():
    same, other = Record("backward", 3, "a"), Record("backward", 3, "b")
    assert odd_ones({0: same, 1: same, 2: other, 3: same}) == ([2], [0, 1, 3])
    assert odd_ones({0: other, 1: same, 2: same, 3: same}) == ([0], [1, 2, 3])
    assert odd_ones({0: same, 1: other}) == ([1], [0])


def test_a_forward_that_went_another_way_names_its_first_op_and_line():
    r0, r1 = Record("backward", 7, "a", 3), Record("backward", 7, "b", 3)
    details = {0: Detail(0, r0, ops=(LINEAR, op("detach", "module.center", 44))),
               1: Detail(1, r1, ops=(LINEAR, op("clamp", "module", 59)))}
    text = describe({0: r0, 1: r1}, details)
    assert text.startswith("ranks diverged at iteration 7: rank 1 ran clamp [module] at ")
    assert "train.py:59" in text and "as op 2 of the iteration" in text
    assert "where rank 0 ran detach [module.center]" in text and "train.py:44" in text
    assert "before backward()" in text


def test_different_collectives_are_named_with_their_call_sites():
    r0 = Record("collective", 2, "all_reduce(float32[3])")
    r1 = Record("collective", 2, "broadcast(float32[3]) src=0")
    text = describe({0: r0, 1: r1, 2: r0},
                    {1: Detail(1, r1, "/w/train.py", 12), 0: Detail(0, r0, "/w/train.py", 10)})
    assert text == ("ranks diverged at iteration 2: rank 1 called broadcast(float32[3]) src=0 "
                    "at /w/train.py:12 where ranks 0 and 2 called all_reduce(float32[3]) at "
                    "/w/train.py:10")


def test_a_rank_at_another_checkpoint_is_named_with_where_each_one_is():
    r0 = Record("collective", 7, "all_reduce(float32[32]) on group 1", 17)
    r1 = Record("backward", 7, "x", 17)
    text = describe({0: r0, 1: r1}, {})
    assert text == ("ranks diverged: rank 1 started backward() in iteration 7 after 17 ops "
                    "while rank 0 called all_reduce(float32[32]) on group 1 in iteration 7")


def test_at_two_backward_passes_the_graphs_they_run_through_are_compared():
    """Rank 0 saved a checkpoint first (ops of its own, outside the loss's graph): the
    first op that differs is the one in the loss's graph, not rank 0's extra one."""
    r0, r1 = Record("backward", 4, "a", 5), Record("backward", 4, "b", 3)
    saving = op("detach", "", 64)
    d0 = Detail(0, r0, ops=(saving, saving, LINEAR, op("tanh", "module", 21)),
                graph=(LINEAR, op("tanh", "module", 21)))
    d1 = Detail(1, r1, ops=(LINEAR, op("relu", "module", 22)),
                graph=(LINEAR, op("relu", "module", 22)))
    text = describe({0: r0, 1: r1}, {0: d0, 1: d1})
    assert "rank 1 ran relu [module] at /w/train.py:22" in text
    assert "where rank 0 ran tanh [module] at /w/train.py:21" in text


def test_ranks_that_ended_agree_whatever_their_last_iteration():
    """Rank 0 saved a checkpoint after the last step (ops of its own: one iteration more)."""
    assert Record("end", 65, "").agrees(Record("end", 64, ""))
    assert not Record("end", 64, "").agrees(Record("backward", 64, "k"))


def test_a_backward_that_reaches_other_parameters_names_them():
    """DDP (without find_unused_parameters) waits for a gradient of every parameter: a rank
    whose backward reaches another head would hang the others."""
    r0, r1 = Record("backward", 5, "d0", 3), Record("backward", 5, "d1", 3)
    d0 = Detail(0, r0, graph=(LINEAR, op("linear", "module.head", 30)),
                params=("module.encode.weight", "module.head.weight"))
    d1 = Detail(1, r1, graph=(LINEAR, op("linear", "module.long_head", 31)),
                params=("module.encode.weight", "module.long_head.weight"))
    text = describe({0: r0, 1: r1}, {0: d0, 1: d1})
    assert "rank 1 ran linear [module.long_head] at /w/train.py:31" in text
    assert ("rank 1's backward() reaches module.long_head.weight, which rank 0's does not; "
            "rank 0's backward() reaches module.head.weight, which rank 1's does not") in text
