"""Issue 11: the source pane reads only what is safe to read and show.

A trace names the files its ops ran in, and ``dyngraph view`` used to read whatever it named:
``/dev/zero`` grew the viewer to 10 GB, a FIFO hung it, ``/etc/shadow`` was put on screen.
Now only regular files up to a few MB are read (checked with stat before opening), a replay
shows only Python files, and the pane says why it shows nothing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.model import Model
from dyngraph.tui.source_view import (
    MAX_SOURCE_BYTES,
    SourceNotShown,
    SourceView,
    read_source,
)
from dyngraph.tui.sources import LiveSource, ReplaySource

import dyngraph

SCRIPT = Path(__file__).parent / "scripts" / "display_files.py"
SIZE = (160, 45)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    """One of each kind of file a trace may name."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    secret = tmp_path / "shadow"
    secret.write_text("root:SECRET-HASH:19000:0:99999:7:::\n")
    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(MAX_SOURCE_BYTES + 1)  # sparse: costs no disk
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"x = 1\n\0\0\0")
    good = tmp_path / "good.py"
    good.write_text("y = (x * 2).sum()  # good \x1b]0;pwned\x07\n")  # a raw ESC in source
    return {"fifo": str(fifo), "zero": "/dev/zero", "secret": str(secret), "big": str(big),
            "binary": str(binary), "dir": str(tmp_path), "good": str(good)}


class Unblocker(threading.Thread):
    """Opens the FIFO's write end after a while, so a reader that blocked on it (the bug)
    is let go instead of hanging the suite, and remembers whether there was one to let
    go: the verdict does not depend on how loaded the machine is."""

    def __init__(self, fifo: str, after: float) -> None:
        super().__init__(daemon=True)
        self.fifo = fifo
        self.after = after
        self.found_reader = False

    def run(self) -> None:
        time.sleep(self.after)
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)  # fails without a reader
        except OSError:
            return
        self.found_reader = True
        os.close(fd)

    def let_a_reader_go(self, started: float) -> bool:
        """Whether a reader blocked on the FIFO since ``started`` until this let it go."""
        if time.monotonic() - started >= self.after:
            self.join()  # it may have let one go a moment ago: wait for its verdict
        return self.found_reader


def unblock_later(fifo: str, after: float = 3.0) -> Unblocker:
    unblocker = Unblocker(fifo, after)
    unblocker.start()
    return unblocker


def refused_in_a_bounded_child(path: str) -> str:
    """``read_source(path)`` in a child with 1 GB of address space and 30 s: a reader that
    regressed into reading /dev/zero dies there, not in the test process."""
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
            "from dyngraph.tui.source_view import read_source, SourceNotShown\n"
            "try:\n    read_source(sys.argv[1])\nexcept SourceNotShown as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-c", code, path], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stderr[-500:]
    return result.stdout.strip()


def test_dev_zero_is_refused_without_reading_it() -> None:
    assert refused_in_a_bounded_child("/dev/zero") == "/dev/zero is not a regular file"


def test_a_fifo_is_refused_without_blocking(files: dict[str, str]) -> None:
    unblocker = unblock_later(files["fifo"])
    started = time.monotonic()
    with pytest.raises(SourceNotShown, match="not a regular file"):
        read_source(files["fifo"])
    assert not unblocker.let_a_reader_go(started)


@pytest.mark.parametrize(("kind", "why"), [
    ("big", "larger than 4 MB"), ("binary", "is a binary file"), ("dir", "not a regular file"),
])
def test_other_files_that_are_no_source_are_refused(files: dict[str, str], kind: str,
                                                    why: str) -> None:
    with pytest.raises(SourceNotShown, match=why):
        read_source(files[kind])


def test_a_replay_reads_only_python_files(files: dict[str, str]) -> None:
    with pytest.raises(SourceNotShown, match="not a Python file"):
        read_source(files["secret"], python_only=True)
    assert read_source(files["good"], python_only=True) == [
        "y = (x * 2).sum()  # good \x1b]0;pwned\x07"]
    # A live run's files are the user's own script's: any regular file will do.
    assert read_source(files["secret"])[0].startswith("root:")


def test_a_python_name_linking_to_a_secret_is_refused(files: dict[str, str],
                                                      tmp_path: Path) -> None:
    link = tmp_path / "innocent.py"
    link.symlink_to(files["secret"])
    with pytest.raises(SourceNotShown, match="not a Python file"):
        read_source(str(link), python_only=True)


@pytest.mark.parametrize("name", ["nul\0in-the-name.py", "/no/such/file.py", ""])
def test_names_that_cannot_be_opened_say_so(name: str) -> None:
    with pytest.raises(SourceNotShown, match="cannot read"):
        read_source(name, python_only=True)


def source_pane(app: DebuggerApp) -> tuple[str, str]:
    """(the source pane's title, its first row) as text."""
    view = app.main.query_one(SourceView)
    first = view.row_text(0).plain if view.row_count else ""
    return str(view.border_title), first


async def walk_ops(app: DebuggerApp, pilot, count: int) -> list[tuple[str, str]]:
    """The source pane after each of the next ``count`` steps."""
    seen = []
    for _ in range(count):
        await pilot.press("n")
        await pilot.pause(0.05)
        seen.append(source_pane(app))
    return seen


ORDER = ("zero", "fifo", "secret", "big", "good")


def test_view_of_a_trace_naming_devices_fifos_and_secrets(files: dict[str, str],
                                                          tmp_path: Path) -> None:
    assert refused_in_a_bounded_child("/dev/zero")  # the pane's reader is safe to run here
    trace = tmp_path / "files.dgtrace"
    subprocess.run([sys.executable, "-m", "dyngraph", "record", "-o", str(trace), str(SCRIPT),
                    *(files[k] for k in ORDER)], check=True, capture_output=True, timeout=120)
    unblocker = unblock_later(files["fifo"])

    async def run() -> list[tuple[str, str]]:
        app = DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(trace)))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            first = source_pane(app)
            return [first, *await walk_ops(app, pilot, 2 * len(ORDER) - 1)]

    started = time.monotonic()
    seen = asyncio.run(run())
    assert not unblocker.let_a_reader_go(started)  # the FIFO was never opened to be read
    by_file = dict(zip(ORDER, seen[::2], strict=True))  # two ops (mul, sum) per file
    assert by_file["zero"][1] == "source not shown: /dev/zero is not a regular file"
    assert by_file["fifo"][1].endswith("pipe.py is not a regular file")
    assert "not a Python file" in by_file["secret"][1]
    assert "larger than 4 MB" in by_file["big"][1]
    assert "SECRET" not in repr(seen)
    assert by_file["good"][0] == "good.py"
    assert by_file["good"][1].endswith("# good \\x1b]0;pwned\\x07")  # shown, not obeyed
    assert by_file["zero"][0] == "source: zero (not shown)"


def test_live_debugger_refuses_a_fifo_and_a_device(files: dict[str, str]) -> None:
    unblocker = unblock_later(files["fifo"])

    async def run() -> list[tuple[str, str]]:
        source = LiveSource.start(Model(), str(SCRIPT), [files["fifo"], "/dev/zero",
                                                         files["secret"]])
        app = DebuggerApp(source)
        try:
            async with app.run_test(size=SIZE) as pilot:
                deadline = time.monotonic() + 20
                while source.state.status != "paused" and time.monotonic() < deadline:
                    await pilot.pause(0.05)
                seen = []
                for _ in range(5):  # fifo: mul, sum; zero: mul, sum; secret: mul
                    await pilot.press("n")
                    deadline = time.monotonic() + 10
                    while source.state.status != "paused" and time.monotonic() < deadline:
                        await pilot.pause(0.05)
                    await pilot.pause(0.1)
                    seen.append(source_pane(app))
                return seen
        finally:
            source.close()

    started = time.monotonic()
    seen = asyncio.run(run())
    assert not unblocker.let_a_reader_go(started)
    rows = [row for _, row in seen]
    assert any(row.endswith("pipe.py is not a regular file") for row in rows), rows
    assert "source not shown: /dev/zero is not a regular file" in rows
    # The user's own run may show any regular file it ran code from.
    assert any(row.endswith("root:SECRET-HASH:19000:0:99999:7:::") for row in rows), rows


def bounded_memory() -> None:
    """In the child: 2 GB of address space, so a regression that reads /dev/zero fails
    there rather than filling the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))


@pytest.mark.parametrize("command", ["check", "debug"])
def test_a_script_that_is_a_fifo_or_a_device_is_refused_in_one_line(files: dict[str, str],
                                                                     command: str) -> None:
    unblocker = unblock_later(files["fifo"])
    started = time.monotonic()
    for path in (files["fifo"], "/dev/zero"):
        result = subprocess.run([sys.executable, "-m", "dyngraph", command, path],
                                capture_output=True, text=True, timeout=30,
                                preexec_fn=bounded_memory)
        assert result.returncode == 2
        assert result.stderr == (f"dyngraph {command}: error: {path} is not a regular file: "
                                 "give a Python script\n")
    assert not unblocker.let_a_reader_go(started)
