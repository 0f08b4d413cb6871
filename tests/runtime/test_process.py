"""The child process: exit statuses, crashes, output capture, arguments, abort and cleanup."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from runtime_helpers import (
    TIMEOUT,
    Run,
    drive,
    process_alive,
    pump_until_paused,
    script,
    wait_for,
)

from dyngraph.capture import events as ev
from dyngraph.debug import Breakpoint, Session
from dyngraph.debug.values import ValueStore


def test_sys_exit_status_reaches_the_session():
    run = drive("exits.py", ["exit", "3"])
    assert run.state.exit_status == 3
    assert run.of(ev.RunEnd)[-1].status == 3
    assert run.text("stdout") == "before\n"


def test_segfault_ends_the_session_cleanly_with_the_signal_status():
    run = drive("exits.py", ["segv"])
    assert run.state.status == "finished"
    assert run.state.exit_status == -signal.SIGSEGV  # as subprocess reports it; a shell: 139
    assert "SIGSEGV" in run.state.reason and "SIGSEGV" in run.state.description
    end = run.of(ev.RunEnd)
    assert len(end) == 1 and end[0].status == -signal.SIGSEGV
    assert run.text("stdout") == "before\n"  # output written before the crash is kept
    assert [e.op for e in run.of(ev.Op)] == ["mul", "sum"]


def test_os_exit_still_delivers_events_and_status():
    run = drive("exits.py", ["osexit", "5"])
    assert run.state.exit_status == 5
    assert [e.reason for e in run.of(ev.RunEnd)] == ["os._exit"]
    assert [e.op for e in run.of(ev.Op)] == ["mul", "sum"]


def test_keyboard_interrupt_exits_as_python_does():
    run = drive("exits.py", ["interrupt"])
    assert run.state.exit_status == -signal.SIGINT
    assert "KeyboardInterrupt" in run.text("stderr")


def test_interrupt_sends_ctrl_c_to_the_script_only():
    session = Session.start(script("exits.py"), ["sleep"], pause_at_start=False)
    try:
        assert os.getpgid(session.pid) != os.getpgid(0)  # Ctrl-C at our terminal skips it
        run = Run()
        wait_for(lambda: run.events.extend(session.poll(0.05)) or "before\n" in run.text())
        session.interrupt()
        assert session.wait(TIMEOUT) == -signal.SIGINT
    finally:
        session.close()


def test_abort_of_a_busy_loop_leaves_no_process():
    session = Session.start(script("exits.py"), ["loop"], pause_at_start=False)
    try:
        run = Run()
        wait_for(lambda: run.events.extend(session.poll(0.05)) or "before\n" in run.text())
        session.abort()
        assert session.wait(TIMEOUT) == -signal.SIGKILL
        assert session.state.reason == "aborted"
        assert not process_alive(session.pid)
    finally:
        session.close()


def test_aborting_a_paused_session_leaves_no_child_process():
    session = Session.start(script("simple.py"), pause_at_start=True)
    pid = session.pid
    pump_until_paused(session, Run())
    session.abort()
    session.close()
    assert session.state.status == "finished" and session.state.reason == "aborted"
    assert not process_alive(pid)


def test_close_of_a_running_session_leaves_no_child_process():
    session = Session.start(script("exits.py"), ["sleep"], pause_at_start=False)
    pid = session.pid
    session.close()
    assert not process_alive(pid)
    assert session.state.finished


def test_output_is_captured_in_order_down_to_the_fds():
    run = drive("output.py")
    texts = [t for _, t in run.output]
    joined = "".join(texts)
    assert joined.index("one") < joined.index("two") < joined.index("three") < joined.index(
        "four") < joined.index("five") < joined.index("six") < joined.index("seven")
    assert run.text("stderr") == "three\nfive\n"
    stdout = run.text("stdout")
    assert stdout.startswith("one\ntwo\nfour\nsix\nseven 6.0\n")
    assert "from C printf\n" in stdout
    # the op ran between "six" and "seven": output events keep their place among op events
    kinds = [(type(e).__name__, getattr(e, "text", "")) for e in run.events
             if type(e) in (ev.Op, ev.ScriptOutput)]
    first_op = next(i for i, k in enumerate(kinds) if k[0] == "Op")
    assert "six" in "".join(t for _, t in kinds[:first_op])
    assert "seven" not in "".join(t for _, t in kinds[:first_op])


def test_arguments_cwd_path_and_main_reach_the_script(tmp_path):
    run = drive("output.py", ["--epochs", "3", "two words"], cwd=str(tmp_path))
    stdout = run.text("stdout")
    assert "argv ['--epochs', '3', 'two words']\n" in stdout
    assert f"cwd {tmp_path}\n" in stdout
    assert f"path0 {os.path.dirname(script('output.py'))}\n" in stdout
    assert "name __main__\n" in stdout
    assert run.session.header.argv == ("--epochs", "3", "two words")


def test_script_breakpoint_is_a_no_op_outside_the_debugger():
    done = subprocess.run([sys.executable, script("bp_call.py")], capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0 and done.stdout == "done\n"


def test_a_child_that_cannot_start_is_reported():
    session = Session.start(script("simple.py"), python=shutil.which("false"),
                            pause_at_start=False)
    try:
        assert session.wait(TIMEOUT) == 1
        assert session.state.finished and "failed to start" in session.state.description
        assert session.poll()[-1].reason == "exited"  # a RunEnd made up by the session
    finally:
        session.close()


# -- values ----------------------------------------------------------------------------------
def test_fetch_values_of_a_million_elements_is_fast():
    session = Session.start(script("big.py"), pause_at_start=False)
    try:
        run = Run()
        pump_until_paused(session, run)
        op = [e for e in run.events if type(e) is ev.Op][-1]
        assert op.shape == (1000, 1000)
        start = time.perf_counter()
        values = session.fetch_values(op.output)
        elapsed = time.perf_counter() - start
        expected = np.arange(1_000_000, dtype=np.float32).reshape(1000, 1000) * 0.5
        np.testing.assert_array_equal(values, expected)
        assert elapsed < 1.0, f"fetching 1M values took {elapsed:.2f} s"
        assert session.fetch_values(10**9) is None  # an id the child never saw
        session.continue_()
        assert session.wait(TIMEOUT) == 0
    finally:
        session.close()


def test_values_of_earlier_iterations_and_gradients_are_kept():
    got = {}

    def second_relu(session, run):
        relus = [e for e in run.events if type(e) is ev.Op and e.op == "relu"]
        assert [e.iteration for e in relus] == [1, 2]
        got["earlier"] = session.fetch_values(relus[0].output)
        weight = next(e for e in run.events if type(e) is ev.TensorCreated and e.requires_grad)
        got["grad"] = session.fetch_values(weight.tensor, grad=True)
        session.continue_()

    drive("simple.py", breakpoints=[Breakpoint.op("relu")],
          commands=[lambda s, r: s.continue_(), second_relu])
    np.testing.assert_allclose(got["earlier"], np.tile([0.3, 0.5, 0.7], (4, 1)), rtol=1e-6)
    np.testing.assert_allclose(got["grad"], np.full((2, 3), 4.0))


def test_value_store_keeps_few_iterations_under_a_byte_cap():
    store = ValueStore(keep_iterations=1, max_bytes=1000)
    store.put(1, np.zeros(50))  # 400 bytes
    store.new_iteration(2)
    store.put(2, np.zeros(50))
    store.new_iteration(3)
    store.put(3, np.zeros(50))
    assert store.get(1) is None and store.get(2) is not None and store.get(3) is not None
    store.put(4, np.zeros(50))  # 1200 bytes kept: iteration 2 goes first
    assert store.get(2) is None and store.get(3) is not None and store.nbytes <= 1000
    store.put(5, np.zeros(100))  # 800 more: the current iteration's oldest values go
    assert store.get(5) is not None and store.get(3) is None and store.nbytes <= 1000


def test_a_slow_reader_slows_the_writer_down_but_never_breaks_the_channel():
    import threading

    from dyngraph.debug.channel import socket_pair

    writer, raw = socket_pair()
    from dyngraph.debug.channel import Channel

    reader = Channel(raw)
    stop = threading.Event()
    # the child's command thread waits on the same socket while the script's thread writes
    waiting = threading.Thread(target=lambda: [writer.recv(0.05) for _ in iter(stop.is_set,
                                                                               True)])
    waiting.start()
    payload = b"x" * (1 << 20)
    received = []

    def late_reader():
        time.sleep(1.0)  # longer than any poll timeout
        total = 0
        while total < 16 * len(payload):
            data = reader.recv(5.0)
            assert data, "channel closed"
            total += len(data)
        received.append(total)

    t = threading.Thread(target=late_reader)
    t.start()
    try:
        for _ in range(16):
            writer.send(payload)
        t.join(TIMEOUT)
        assert received == [16 * len(payload)]
    finally:
        stop.set()
        waiting.join(TIMEOUT)
        writer.close()
        reader.close()


def test_a_flood_of_output_arrives_complete_and_in_order():
    run = drive("flood.py")
    expected = []
    for i in range(20_000):
        expected.append(f"line {i}\n")
        if i % 1000 == 0:
            expected.append(f"c-level {i}\n")
    expected.append("end 4.0\n")
    assert run.text("stdout") == "".join(expected)
    assert run.text("stderr") == "".join(f"err {i}\n" for i in range(0, 20_000, 1000))
    assert len(run.output) < 2_000  # pieces of one stream are merged, not one event a write


@pytest.mark.parametrize("paused", [True, False])
def test_the_child_ends_when_its_parent_dies(paused):
    code = (
        "import os, sys\n"
        "from dyngraph.debug import Session\n"
        f"s = Session.start({script('long.py')!r}, pause_at_start={paused})\n"
        "print(s.pid, flush=True)\n"
        "os._exit(0)\n"  # no close(): the parent just vanishes
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT)
    pid = int(done.stdout.strip())
    try:
        wait_for(lambda: not process_alive(pid), timeout=10)
    finally:
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_child_speaks_frames_over_tcp_to_a_parent_it_does_not_share_anything_with():
    """The protocol alone, over loopback TCP, with a child started independently."""
    import socket

    from dyngraph.capture import tracefile

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TIMEOUT)
    port = listener.getsockname()[1]
    child = subprocess.Popen([sys.executable, "-m", "dyngraph.debug.child", "--connect",
                              f"127.0.0.1:{port}", script("simple.py"), "tcp"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        conn, _ = listener.accept()
        conn.settimeout(TIMEOUT)
        conn.sendall(tracefile.encode_message({"cmd": "start", "pause_at_start": True,
                                               "breakpoints": [Breakpoint.op("relu").to_dict()]}))
        decoder = tracefile.FrameDecoder()
        events: list[ev.Event] = []
        while not events or type(events[-1]) is not ev.RunEnd:
            data = conn.recv(1 << 16)
            assert data, child.stderr.read() if child.poll() is not None else "closed"
            for item in decoder.feed(data):
                if isinstance(item, list):
                    events.extend(item)
                    if type(events[-1]) is ev.BreakpointHit:
                        conn.sendall(tracefile.encode_message({"cmd": "continue"}))
        hits = [e.reason for e in events if type(e) is ev.BreakpointHit]
        assert hits == ["start", "op", "op"]
        assert "args: ['tcp']\n" in "".join(e.text for e in events if type(e) is ev.ScriptOutput)
        assert child.wait(TIMEOUT) == 0
        conn.close()
        # and a child nobody can signal is aborted by message
        child = subprocess.Popen([sys.executable, "-m", "dyngraph.debug.child", "--connect",
                                  f"127.0.0.1:{port}", script("simple.py")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        conn, _ = listener.accept()
        conn.sendall(tracefile.encode_message({"cmd": "start", "pause_at_start": True}))
        conn.sendall(tracefile.encode_message({"cmd": "abort"}))
        assert child.wait(TIMEOUT) == 137
        conn.close()
    finally:
        listener.close()
        if child.poll() is None:
            child.kill()
            child.wait()


def test_output_of_subprocesses_is_captured_too():
    run = drive("subproc.py")
    assert run.text("stdout") == "parent says hi\nchild says hi\nparent says bye\n"
    assert run.state.exit_status == 0


def test_a_forked_worker_is_not_traced_but_its_output_is_kept():
    run = drive("forks.py")
    assert run.state.exit_status == 0
    assert run.text("stdout") == "worker 15.0\nmain 6.0\n"
    assert [e.op for e in run.of(ev.Op)] == ["mul", "sum"]  # the main process's ops only
