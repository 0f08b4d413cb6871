"""Issue 11, "the debugger and the terminal", through the real CLI: markup and escapes.

Names, arguments, exceptions and paths are the user's (or a stranger's trace's) text:
``record``, ``check``, ``summary`` and the error line print them as written, never parsed
as Rich markup (``[/]`` crashed them with MarkupError; ``[batch, seq]`` vanished) and never
with a raw control character (a trace set the terminal's title and cleared the screen).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "display_names.py"
ESCAPED = "\\x1b]0;pwned\\x07"  # how the module named ESC ] 0 ; pwned BEL must read


def dyngraph(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dyngraph", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, errors="surrogateescape")


def ours(stderr: str) -> str:
    """dyngraph's own lines of stderr (the script's own traceback passes through as is)."""
    return "\n".join(line for line in stderr.splitlines() if line.startswith("dyngraph "))


def assert_no_crash(result: subprocess.CompletedProcess[str]) -> None:
    both = result.stdout + result.stderr
    assert "MarkupError" not in both
    # The only traceback allowed is the one the script raised itself.
    assert both.count("Traceback") <= both.count(f'File "{SCRIPT}"')
    assert "site-packages/rich" not in both and "dyngraph/debug" not in both


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    """The hostile script recorded twice: a clean run and one raising KeyError('[/]')."""
    tmp = tmp_path_factory.mktemp("display")
    out = {"clean": tmp / "clean.dgtrace", "raised": tmp / "raised.dgtrace"}
    assert dyngraph("record", "-o", str(out["clean"]), str(SCRIPT), "[/]").returncode == 0
    raised = dyngraph("record", "-o", str(out["raised"]), str(SCRIPT), "--raise", "markup")
    assert raised.returncode == 1
    return out


def test_record_with_markup_in_names_arguments_and_the_exception(tmp_path: Path) -> None:
    result = dyngraph("record", "-o", str(tmp_path / "t.dgtrace"), str(SCRIPT), "[/]",
                      "--raise", "markup")
    assert_no_crash(result)
    assert result.returncode == 1  # the script's own status
    assert "dyngraph record: the script raised KeyError: '[/]'" in ours(result.stderr)
    assert "['[/]', '--raise', 'markup']" in result.stdout  # its argv reached it intact


def test_record_keeps_literal_brackets_in_an_exception_message(tmp_path: Path) -> None:
    result = dyngraph("record", "-o", str(tmp_path / "t.dgtrace"), str(SCRIPT),
                      "--raise", "shape")
    assert_no_crash(result)
    assert "raised ValueError: expected shape [batch, seq]" in ours(result.stderr)


def test_check_with_markup_in_names_arguments_and_the_exception() -> None:
    clean = dyngraph("check", str(SCRIPT), "[/]")
    assert_no_crash(clean)
    assert clean.returncode == 0 and "Traceback" not in clean.stderr
    assert "dyngraph check: ok" in clean.stderr
    raised = dyngraph("check", str(SCRIPT), "[/]", "--raise", "markup")
    assert_no_crash(raised)
    assert raised.returncode == 1
    assert "dyngraph check: the script raised KeyError: '[/]'" in ours(raised.stderr)


def test_check_failure_names_the_markup_module() -> None:
    result = dyngraph("check", str(SCRIPT), "--nan")
    assert_no_crash(result)
    assert result.returncode == 1  # CHECK_FAILED
    line = ours(result.stderr)
    assert "FAILED, NaN/Inf found" in line
    assert "parameter [/enc].weight" in line and "in module [/enc]" in line


def test_summary_shows_markup_names_literally(traces: dict[str, Path]) -> None:
    result = dyngraph("summary", str(traces["clean"]))
    assert_no_crash(result)
    assert result.returncode == 0
    assert "display_names.py [/]" in result.stdout  # the recorded argv
    assert "[/enc].weight" in result.stdout and "[/enc]w" in result.stdout
    raised = dyngraph("summary", str(traces["raised"]))
    assert_no_crash(raised)
    assert raised.returncode == 0
    assert "the script raised KeyError: '[/]'" in raised.stdout


def test_summary_shows_no_raw_escape_from_a_hostile_trace(traces: dict[str, Path]) -> None:
    result = dyngraph("summary", str(traces["clean"]))
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert f"{ESCAPED}.weight" in result.stdout  # shown, visibly, as the name it is


def test_summary_shows_invisible_characters_in_names(traces: dict[str, Path]) -> None:
    """Issue 23: ``enc\\u200b.weight`` showed as ``enc.weight``."""
    result = dyngraph("summary", str(traces["clean"]))
    assert "enc\\u200b\\u200f.weight" in result.stdout
    assert "\u200b" not in result.stdout and "\u200f" not in result.stdout


def test_exception_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    trace = tmp_path / "t.dgtrace"
    result = dyngraph("record", "-o", str(trace), str(SCRIPT), "--raise", "escape")
    assert_no_crash(result)
    line = ours(result.stderr)
    assert "\x1b" not in line and f"RuntimeError: {ESCAPED}\\x1b[2J" in line
    summary = dyngraph("summary", str(trace))
    assert "\x1b" not in summary.stdout and f"RuntimeError: {ESCAPED}" in summary.stdout


def test_error_line_shows_the_path_as_given() -> None:
    result = dyngraph("summary", "no[/]such\x1b[2J.dgtrace")
    assert result.returncode == 2
    assert result.stderr == ("dyngraph summary: error: no such trace file: "
                             "no[/]such\\x1b[2J.dgtrace\n")


def in_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """Run dyngraph with stdout and stderr on a pseudo-terminal (record's live status line
    and colours only show there); its exit status and everything it wrote."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dyngraph", *args], cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_record_to_an_output_path_that_looks_like_markup(tmp_path: Path) -> None:
    (tmp_path / "run[").mkdir()  # "run[/red].dgtrace" is the file "red].dgtrace" in "run["
    status, text = in_terminal("record", "-o", "run[/red].dgtrace", str(SCRIPT), cwd=tmp_path)
    assert "MarkupError" not in text and "Traceback" not in text
    assert status == 0
    assert "run[/red].dgtrace" in text
    assert (tmp_path / "run[" / "red].dgtrace").stat().st_size > 0
