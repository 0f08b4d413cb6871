"""After ``q``: the script's output and its traceback on the terminal, as without the
debugger (``tui/afterwards.py``)."""

from __future__ import annotations

import io

from dyngraph.tui.afterwards import TAIL_LINES, print_output

from dyngraph.capture import events as ev

TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
             '    loss = model(x)\nValueError: shapes (4,3) and (2,1) do not match\n')


def after_q(chunks, exception=None, near=None) -> tuple[str, str, object]:
    out, err = io.StringIO(), io.StringIO()
    saved = print_output(chunks, exception, near=near, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), saved


def raised(traceback: str) -> ev.ExceptionRaised:
    return ev.ExceptionRaised(seq=9, iteration=1, type="ValueError",
                              message="shapes (4,3) and (2,1) do not match", traceback=traceback)


def test_a_traceback_the_output_lacks_is_printed_after_it():
    """The script raised while paused under the debugger: its stderr never held the
    traceback, so it comes after what the script printed, on stderr."""
    out, err, saved = after_q([("stdout", "epoch 1\n"), ("stderr", "warning: slow\n")],
                              raised(TRACEBACK))
    assert out == "epoch 1\n"
    assert err == "warning: slow\n" + TRACEBACK
    assert saved is None


def test_a_traceback_the_output_already_holds_is_not_printed_twice():
    out, err, _ = after_q([("stdout", "epoch 1\n"), ("stderr", TRACEBACK)],
                          raised(TRACEBACK.rstrip("\n")))
    assert err.count("Traceback (most recent call last)") == 1
    assert out == "epoch 1\n"


def test_a_long_output_prints_its_tail_and_the_file_with_all_of_it(tmp_path):
    lines = [("stdout", f"line {i}\n") for i in range(1500)]
    out, err, saved = after_q(lines, raised(TRACEBACK), near=str(tmp_path / "train.py"))
    assert saved is not None and saved.parent == tmp_path / "dyngraph-out"
    whole = saved.read_text()
    assert whole.startswith("line 0\n") and whole.endswith(TRACEBACK)
    assert "the script printed 1,504 lines" in err and err.endswith(TRACEBACK)
    printed = out + err
    assert "line 0\n" not in printed and "line 1499\n" in printed
    assert len(out.splitlines()) == TAIL_LINES - TRACEBACK.count("\n")
