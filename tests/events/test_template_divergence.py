"""An iteration that leaves its template: at its first op, in its middle, at its last op,
by an op of another kind, by one op more, or by ending early or late. Whatever the
change, every event reads back as recorded from the templated files (formats 4 and 5)
and the plain one (format 3); the changed iteration follows its template up to the
change and is written as it is from there; the next one follows the template again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from template_check import assert_templates_read_back_identical, saved

import dyngraph as dg
from dyngraph.capture import tracefile as tf

sys.path.insert(0, str(Path(__file__).parents[1] / "hostile"))
import columnfuzz as cf  # noqa: E402

OPS = 40  # per iteration: several iterations share a frame (format 4 templates them too)
CHANGED = 3  # the iteration that leaves its template (1 makes it, 2 repeats it)


def _run(names: list[str], x: dg.Tensor) -> None:
    y = x
    for name in names:
        if name == "mul":
            y = y * 1.0001
        elif name == "add":
            y = y + 0.5
        else:  # (another op, from another line)
            y = y - 0.25
    y.sum().backward()


def _ops(change: str, at: int) -> list[str]:
    """The changed iteration's ops: ``OPS`` alternating mul and add, with ``change`` at
    op ``at``: ``other`` (a sub in its place), ``extra`` (a sub before it), ``shorter``
    (the ops from it on left out), ``longer`` (three more after the last)."""
    names = ["mul", "add"] * (OPS // 2)
    if change == "other":
        names[at] = "sub"
    elif change == "extra":
        names.insert(at, "sub")
    elif change == "shorter":
        del names[at:]
    elif change == "longer":
        names += ["sub", "mul", "add"]
    return names


def _events(change: str, at: int, iterations: int = 5) -> list:
    x = dg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    with dg.trace(stats="cheap") as t:
        for it in range(1, iterations + 1):
            _run(_ops(change, at) if it == CHANGED else ["mul", "add"] * (OPS // 2), x)
            x.grad = None
    return list(t.events)


def _templates_by_iteration(path: Path) -> dict[int, list[int]]:
    """The template each format-5 segment of each iteration names (0: written as it is),
    in order."""
    out: dict[int, list[int]] = {}
    for ftype, version, payload in cf.split_versions(path.read_bytes()):
        if ftype == tf.EVENTS and version == tf.TABLE_VERSION:
            _, parts = cf.blocks(payload)
            table = parts[1]
            for k in range(0, len(table), 16):
                _, it, template, _ = (int.from_bytes(table[k + i:k + i + 4], "little")
                                      for i in (0, 4, 8, 12))
                out.setdefault(it, []).append(template)
    return out


POSITIONS = {"first": 0, "middle": OPS // 2, "last": OPS - 1}


@pytest.mark.parametrize("where", list(POSITIONS))
@pytest.mark.parametrize("change", ["other", "extra"])
def test_an_iteration_diverging_at_its_first_middle_or_last_op_reads_back(
        tmp_path, change, where):
    events = _events(change, POSITIONS[where])
    assert_templates_read_back_identical(events, tmp_path, f"{change}-{where}")
    path = saved(events, tmp_path / "table.dgtrace", tf.TABLE_VERSION)
    used = _templates_by_iteration(path)
    assert set(used[2]) == {1}  # (iteration 1 made the template; 2 follows it whole)
    assert set(used[CHANGED + 1]) == {1}, used  # back on the template after the change
    if change == "other":  # (the same kinds of events: values that differ are written)
        assert set(used[CHANGED]) == {1}, used
    else:  # (followed to where its kinds leave the template, as it is from there)
        assert 0 in used[CHANGED], used


@pytest.mark.parametrize("change", ["shorter", "longer"])
def test_an_iteration_shorter_or_longer_than_its_template_reads_back(tmp_path, change):
    """Shorter: it stops three quarters in and goes to its backward pass; longer: three
    ops more after the template's last. The part of it like the template follows it;
    the next iteration follows the template whole."""
    events = _events(change, 3 * OPS // 4)
    assert_templates_read_back_identical(events, tmp_path, change)
    path = saved(events, tmp_path / "table.dgtrace", tf.TABLE_VERSION)
    used = _templates_by_iteration(path)
    assert used[CHANGED][0] == 1 and 0 in used[CHANGED], used
    assert set(used[CHANGED + 1]) == {1}, used


def test_an_iteration_diverging_in_a_frame_of_its_own_reads_back(tmp_path):
    """A 400-op chain (an iteration spans frames): a sub in the middle of iteration 3's
    ops, by kind the same, and one more op in the middle of iteration 4's."""
    x = dg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    plain = ["mul", "add"] * 200
    with dg.trace(stats="full") as t:
        for it in range(1, 6):
            names = list(plain)
            if it == 3:
                names[200] = "sub"
            elif it == 4:
                names.insert(200, "sub")
            _run(names, x)
            x.grad = None
    events = list(t.events)
    assert_templates_read_back_identical(events, tmp_path, "long", in_frames=False)
    used = _templates_by_iteration(saved(events, tmp_path / "t.dgtrace", tf.TABLE_VERSION))
    assert set(used[3]) == {1} and 0 in used[4] and set(used[5]) == {1}, used
