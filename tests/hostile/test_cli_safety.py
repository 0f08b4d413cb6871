"""Recording and exporting under careless commands (issue 11), through the real CLI.

Each test runs ``python -m dyngraph ...`` in a subprocess, as a user would, and checks that
a mistake gets one line and exit status 2 (never a traceback), that no file but a trace or
dyngraph's own export is ever overwritten, and that what was there before survives a run
that fails.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dyngraph
from dyngraph.capture import events as ev

HERE = Path(__file__).parent
TIMEOUT = 60

TRAIN = """\
import dyngraph as torch
import dyngraph.nn as nn
net = nn.Linear(3, 2)
for i in range(ITERATIONS):
    loss = net(torch.ones(4, 3)).sum()
    loss.backward()
    print("step", i)
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def train_script(folder: Path, iterations: int = 3, name: str = "train.py") -> Path:
    return write(folder, name, TRAIN.replace("ITERATIONS", str(iterations)))


def dyngraph_cli(*args: str | Path, cwd: Path | None = None,
                 **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dyngraph", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT, **kwargs)


def make_trace(path: Path, iterations: int = 3) -> Path:
    """A real trace, recorded in this process (faster than a run of the CLI)."""
    net = dyngraph.nn.Linear(3, 2)
    with dyngraph.record(path, stats="full"):
        for _ in range(iterations):
            net(dyngraph.ones(4, 3)).sum().backward()
    return path


def one_line_error(done: subprocess.CompletedProcess, *words: str) -> str:
    """The run failed with status 2 and exactly one line on stderr, naming ``words``."""
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


def leftovers(folder: Path) -> list[str]:
    """Temporary files left behind (there must be none)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- 1. the output path ----------------------------------------------------------------------
def test_record_refuses_to_overwrite_its_own_script(tmp_path):
    script = train_script(tmp_path)
    source = script.read_text()
    (tmp_path / "link.py").symlink_to(script)
    os.link(script, tmp_path / "hard.py")
    for output in (script, tmp_path / "link.py", tmp_path / "hard.py"):
        done = dyngraph_cli("record", "-o", output, script)
        one_line_error(done, "is the script itself")
        assert done.stdout == ""  # refused before the script ran
        assert script.read_text() == source


def test_record_refuses_a_file_that_is_not_a_trace(tmp_path):
    script = train_script(tmp_path)
    notes = write(tmp_path, "notes.txt", "my notes\n")
    one_line_error(dyngraph_cli("record", "-o", notes, script), "is not a dyngraph trace")
    assert notes.read_text() == "my notes\n"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line_error(dyngraph_cli("record", "-o", fifo, script), "not a regular file")
    one_line_error(dyngraph_cli("record", "-o", tmp_path, script), "is a directory")
    # an existing trace (see below), an empty file and /dev/null are fine
    empty = tmp_path / "empty.dgtrace"
    empty.touch()
    assert dyngraph_cli("record", "-o", empty, script).returncode == 0
    assert dyngraph_cli("record", "-o", os.devnull, script).returncode == 0
    assert leftovers(tmp_path) == []


def test_record_and_export_refuse_empty_and_too_long_names(tmp_path):
    script = train_script(tmp_path)
    trace = make_trace(tmp_path / "run.dgtrace")
    long_name = "a" * 300
    one_line_error(dyngraph_cli("record", "-o", "", script), "no trace file name")
    one_line_error(dyngraph_cli("record", "-o", long_name, script), "longer than")
    # '' used to mean the current folder: the export landed among the user's files
    one_line_error(dyngraph_cli("export", trace, "-o", "", cwd=tmp_path), "no output folder")
    one_line_error(dyngraph_cli("export", trace, "-o", long_name, cwd=tmp_path),
                   "File name too long")
    one_line_error(dyngraph_cli("export", "-o", "out", long_name + ".py", cwd=tmp_path),
                   "File name too long")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.dgtrace", "train.py"]
    assert leftovers(tmp_path) == []


# -- 2. replacing a trace ----------------------------------------------------------------------
def test_a_run_failing_before_its_first_op_keeps_the_earlier_trace(tmp_path):
    trace = tmp_path / "run.dgtrace"
    assert dyngraph_cli("record", "-o", trace, train_script(tmp_path)).returncode == 0
    before = trace.read_bytes()
    broken = write(tmp_path, "broken.py", "import no_such_module_here\n")
    done = dyngraph_cli("record", "-o", trace, broken)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr
    assert "still holds the trace recorded before" in done.stderr
    assert trace.read_bytes() == before
    # a run that fails part-way replaces it with what it recorded (as before: the prefix)
    partway = write(tmp_path, "partway.py", TRAIN.replace("ITERATIONS", "2") +
                    "raise RuntimeError('late')\n")
    assert dyngraph_cli("record", "-o", trace, partway).returncode == 1
    recorded = dyngraph.read_trace(trace)
    assert len(recorded.iterations) == 2 and recorded.events[-1].kind == "run_end"
    assert leftovers(tmp_path) == []


def test_sigterm_ends_record_with_the_trace_kept_and_the_script_ended(tmp_path):
    script = write(tmp_path, "forever.py", """\
        import os, time
        import dyngraph as torch
        print(os.getpid(), flush=True)
        x = torch.ones(2, requires_grad=True)
        while True:
            (x * 2).sum().backward()
            time.sleep(0.001)
        """)
    trace = tmp_path / "run.dgtrace"
    proc = subprocess.Popen([sys.executable, "-m", "dyngraph", "record", "-o", str(trace),
                             str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        while not (trace.exists() and trace.stat().st_size > 5_000):  # recording
            assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()
    recorded = dyngraph.read_trace(trace)  # whole frames only, and the run's end
    assert len(recorded.iterations) > 1 and type(recorded.events[-1]) is ev.RunEnd
    assert leftovers(tmp_path) == []


def test_dyngraph_record_in_python_keeps_the_earlier_trace_on_an_early_failure(tmp_path):
    trace = tmp_path / "run.dgtrace"
    program = write(tmp_path, "prog.py", f"""\
        import sys
        import dyngraph
        path = {str(trace)!r}
        ops = int(sys.argv[1])
        try:
            with dyngraph.record(path):
                x = dyngraph.ones(2, requires_grad=True)
                for _ in range(ops):
                    (x * 2).sum().backward()
                raise KeyError("stop")
        except KeyError:
            pass
        """)
    def run(ops: int) -> None:
        done = subprocess.run([sys.executable, str(program), str(ops)], capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr

    run(3)
    before = trace.read_bytes()
    assert len(dyngraph.read_trace(trace).iterations) == 3
    run(0)  # failed before recording anything: the old trace stays
    assert trace.read_bytes() == before
    run(1)  # failed after recording: replaced by what it recorded
    assert len(dyngraph.read_trace(trace).iterations) == 1
    assert leftovers(tmp_path) == []


# -- 3. exports --------------------------------------------------------------------------------
def test_a_failed_export_leaves_the_earlier_export_untouched(tmp_path):
    trace = make_trace(tmp_path / "run.dgtrace")
    out = tmp_path / "out"
    assert dyngraph_cli("export", trace, "-o", out, "--format", "dot").returncode == 0
    before = {p.name: (p.stat().st_ino, p.read_bytes()) for p in out.iterdir()}
    assert "index.html" in before and "iter-0003.dot" in before
    # the third iteration's target is in the way: the export fails at its very end
    (out / "iter-0003.dot").unlink()
    (out / "iter-0003.dot").mkdir()
    del before["iter-0003.dot"]
    one_line_error(dyngraph_cli("export", trace, "-o", out, "--format", "dot"),
                   "iter-0003.dot", "nothing was exported")
    after = {p.name: (p.stat().st_ino, p.read_bytes()) for p in out.iterdir()
             if p.is_file()}
    assert after == before  # the same files, not even rewritten; index.html still whole
    assert leftovers(out) == []


def test_export_never_overwrites_a_file_dyngraph_did_not_write(tmp_path):
    trace = make_trace(tmp_path / "run.dgtrace")
    site = tmp_path / "site"
    site.mkdir()
    page = write(site, "index.html", "<html>my own page</html>\n")
    one_line_error(dyngraph_cli("export", trace, "-o", site, "--format", "dot"),
                   "was not written by dyngraph")
    assert page.read_text() == "<html>my own page</html>\n"
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]


def test_debug_export_dir_never_overwrites_a_file_dyngraph_did_not_write(tmp_path):
    out = tmp_path / "graphs"
    out.mkdir()
    mine = write(out, "iter-0001.dot", "my own graph\n")
    done = subprocess.run([sys.executable, str(HERE / "headless_cli.py"), "debug",
                           "--export-dir", str(out), str(train_script(tmp_path))],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert mine.read_text() == "my own graph\n"  # and iteration 1's .svg was not written
    assert sorted(p.name for p in out.iterdir()) == [
        "iter-0001.dot", "iter-0002.dot", "iter-0002.svg", "iter-0003.dot", "iter-0003.svg"]


# -- 4. a full disk ------------------------------------------------------------------------------
def _file_size_limit(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_is_one_line_and_keeps_the_readable_prefix(tmp_path):
    """RLIMIT_FSIZE: the kernel refuses the write past the limit with EFBIG (Python ignores
    SIGXFSZ), as a full disk refuses it with ENOSPC."""
    # The limit is met near step 150; the script could run 3,000 steps. (With 300, a
    # loaded machine once let the script outrun the writer's frames to its last step.)
    script = train_script(tmp_path, iterations=3000)
    trace = tmp_path / "run.dgtrace"
    done = dyngraph_cli("record", "-o", trace, script, preexec_fn=_file_size_limit(40_000))
    one_line_error(done, "cannot write", "File too large", "the script was stopped")
    assert "step 2999" not in done.stdout  # the child was ended, not left running
    recorded = dyngraph.read_trace(trace)  # whole frames only: no cut-short warning
    assert 0 < len(recorded.iterations) < 3000
    assert leftovers(tmp_path) == []


def test_a_full_disk_is_one_line_and_keeps_the_readable_prefix(tmp_path):
    """ENOSPC in the middle of a frame once 6 kB are written, simulated in the recording
    process (the real CLI entry point, with the trace writer's file patched)."""
    script = train_script(tmp_path, iterations=100)
    trace = tmp_path / "run.dgtrace"
    runner = """
import errno, os, sys
from dyngraph.capture import tracefile
from dyngraph.cli import main
real = tracefile.TraceWriter._write_frame
class Full:  # the disk fills up in the middle of a frame: half of it lands, then ENOSPC
    def __init__(self, file):
        self.file = file
    def write(self, data):
        self.file.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    def fileno(self):
        return self.file.fileno()
def full(self, events):
    if self.bytes_written < 6000:
        return real(self, events)
    self._file, real_file = Full(self._file), self._file
    try:
        return real(self, events)
    finally:
        self._file = real_file
tracefile.TraceWriter._write_frame = full
sys.exit(main(sys.argv[1:]))
"""
    done = subprocess.run([sys.executable, "-c", runner, "record", "-o", str(trace),
                           str(script)], capture_output=True, text=True, timeout=TIMEOUT)
    one_line_error(done, os.strerror(errno.ENOSPC), "kept")
    recorded = dyngraph.read_trace(trace)
    assert 0 < len(recorded.iterations) < 100
    assert leftovers(tmp_path) == []


# -- 5. a closed pipe --------------------------------------------------------------------------
def test_record_into_a_closed_pipe_stops_printing_and_keeps_the_whole_trace(tmp_path):
    """``dyngraph record ... | head -1``"""
    script = train_script(tmp_path, iterations=200)
    trace = tmp_path / "run.dgtrace"
    proc = subprocess.Popen([sys.executable, "-m", "dyngraph", "record", "-o", str(trace),
                             str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"step 0\n"
        proc.stdout.close()  # what head does after its line
        err = proc.stderr.read().decode()
        assert proc.wait(TIMEOUT) == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    recorded = dyngraph.read_trace(trace)
    assert len(recorded.iterations) == 200  # the script ran to its end
    assert type(recorded.events[-1]) is ev.RunEnd and recorded.events[-1].status == 0


# -- 7. exit statuses ----------------------------------------------------------------------------
SEGFAULT = """\
import ctypes
import dyngraph as torch
x = torch.ones(2, requires_grad=True)
(x * 2).sum().backward()
ctypes.string_at(0)
"""


def test_a_segfault_exits_139_from_record_check_and_debug(tmp_path):
    script = write(tmp_path, "segv.py", SEGFAULT)
    assert dyngraph_cli("record", "-o", tmp_path / "s.dgtrace", script).returncode == 139
    assert dyngraph_cli("check", script).returncode == 139
    done = subprocess.run([sys.executable, str(HERE / "headless_cli.py"), "debug", str(script)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 128 + signal.SIGSEGV, done.stderr[-2000:]


def test_view_exits_non_zero_when_the_app_crashed(tmp_path):
    trace = make_trace(tmp_path / "run.dgtrace")
    command = [sys.executable, str(HERE / "headless_cli.py"), "view", str(trace)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    crash = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                           env={**os.environ, "DYNGRAPH_TEST_CRASH": "1"})
    assert crash.returncode == 1 and "a pane failed" in crash.stderr


# -- 8. numpy's warnings -----------------------------------------------------------------------
WARNS = """\
import dyngraph as torch
x = torch.tensor([0.0, 1.0], requires_grad=True)
for i in range(3):
    y = torch.tensor([1.0, 1.0]) / x
big = torch.exp(torch.tensor([1000.0]))
(torch.tensor([1.0, 2.0]) / x).sum().backward()
empty = torch.tensor([]).var()
print("done")
"""


@pytest.mark.parametrize("how", ["python", "record"])
def test_numpy_warnings_point_at_the_users_line_and_op(tmp_path, how):
    script = write(tmp_path, "warns.py", WARNS)
    if how == "python":
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=TIMEOUT)
    else:
        done = dyngraph_cli("record", "-o", tmp_path / "w.dgtrace", script)
    assert done.returncode == 0 and done.stdout == "done\n"
    err = done.stderr
    assert "dyngraph" + os.sep + "engine" not in err and "ops.py" not in err, err
    assert f"{script}:4: RuntimeWarning: divide by zero encountered in divide (op div)" in err
    assert err.count("warns.py:4:") == 1  # once per line, as Python's default does
    assert f"{script}:5: RuntimeWarning: overflow encountered in exp (op exp)" in err
    assert f"{script}:6: RuntimeWarning: divide by zero encountered in divide (op div)" in err
    assert "warns.py:6: RuntimeWarning: divide by zero encountered in divide " \
           "(backward of op div)" in err
    # raised in numpy's own Python code, called by an op
    assert f"{script}:7: RuntimeWarning: Mean of empty slice (op var)" in err
    assert "numpy" + os.sep not in err, err


def test_the_users_warning_filters_still_win(tmp_path):
    script = write(tmp_path, "warns.py", WARNS)
    quiet = subprocess.run([sys.executable, "-W", "ignore", str(script)], capture_output=True,
                           text=True, timeout=TIMEOUT)
    assert quiet.returncode == 0 and quiet.stderr == ""
    strict = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", str(script)],
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert strict.returncode == 1 and "RuntimeWarning: divide by zero" in strict.stderr


# -- 9. threads ------------------------------------------------------------------------------------
THREADS = """\
import threading
import dyngraph as torch
def worker():
    for _ in range(40):
        a = torch.ones(2, requires_grad=True)
        (a * 3).mean().backward()
thread = threading.Thread(target=worker, name="loader")
thread.start()
for _ in range(40):
    b = torch.ones(2, requires_grad=True)
    (b + 1).sum().backward()
thread.join()
"""


def test_only_the_main_thread_is_captured_and_the_note_says_so(tmp_path):
    script = write(tmp_path, "threads.py", THREADS)
    trace = tmp_path / "t.dgtrace"
    done = dyngraph_cli("record", "-o", trace, script)
    assert done.returncode == 0, done.stderr
    assert "note: ops on thread 'loader' were not captured" in done.stderr
    recorded = dyngraph.read_trace(trace)
    assert len(recorded.iterations) == 40  # the main thread's, none interleaved
    ops = [e for e in recorded.events if type(e) is ev.Op]
    assert {e.op for e in ops} == {"add", "sum"} and len(ops) == 80
    for it in recorded.iterations:
        assert [e.op for e in it.events if type(e) is ev.Op] == ["add", "sum"]
