"""Drive headless debug sessions over the scripts in tests/runtime/scripts, never hanging.

Every wait has a deadline: a bug in the runtime fails a test instead of stalling CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dyngraph.capture import events as ev
from dyngraph.debug import Breakpoint, Session, SessionState

SCRIPTS = Path(__file__).parent / "scripts"
# A deadline, never a wait: a passing run returns as soon as it is done. 20 s failed once
# under a load of 16 on 2 cores (a 1-second script, still running), so it is generous.
TIMEOUT = 60.0


def script(name: str) -> str:
    return str(SCRIPTS / name)


def line_of(name: str, marker: str) -> int:
    """The line of ``scripts/name`` carrying the comment ``# @marker``."""
    for number, text in enumerate((SCRIPTS / name).read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# @{marker}"):
            return number
    raise AssertionError(f"no line marked @{marker} in {name}")


@dataclass
class Pause:
    state: SessionState
    hit: ev.BreakpointHit
    at: ev.Event | None  # the event the pause is at (by at_seq), if it was received


@dataclass
class Run:
    events: list[ev.Event] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)
    state: SessionState | None = None
    session: Session | None = None

    def by_seq(self, seq: int) -> ev.Event | None:
        for e in self.events:
            if e.seq == seq:
                return e
        return None

    def of(self, kind: type[ev.Event]) -> list[ev.Event]:
        return [e for e in self.events if type(e) is kind]

    @property
    def output(self) -> list[tuple[str, str]]:
        return [(e.stream, e.text) for e in self.events if type(e) is ev.ScriptOutput]

    def text(self, stream: str | None = None) -> str:
        return "".join(t for s, t in self.output if stream is None or s == stream)


Command = Callable[[Session, Run], None]


def drive(name: str, args: Sequence[str] = (), *, breakpoints: Sequence[Breakpoint] = (),
          commands: Sequence[Command] = (), pause_at_start: bool = False,
          timeout: float = TIMEOUT, keep_open: bool = False, **options: object) -> Run:
    """Run ``scripts/name`` to the end; on the i-th pause apply ``commands[i]`` (continue
    once they run out). With ``keep_open`` the session is left to the caller to close."""
    session = Session.start(script(name), args, breakpoints=breakpoints,
                            pause_at_start=pause_at_start, **options)  # type: ignore[arg-type]
    run = Run(session=session)
    deadline = time.monotonic() + timeout
    handled = 0
    try:
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"session over {name} did not finish in {timeout} s: "
                                     f"{session.state}")
            run.events.extend(session.poll(0.05))
            state = session.state
            hits = run.of(ev.BreakpointHit)
            if state.paused and len(hits) > handled:
                hit = hits[handled]
                handled += 1
                run.pauses.append(Pause(state, hit, run.by_seq(hit.at_seq)))  # type: ignore[arg-type]
                if len(run.pauses) <= len(commands):
                    commands[len(run.pauses) - 1](session, run)
                else:
                    session.continue_()
            elif state.finished:
                run.events.extend(session.poll())
                run.state = state
                return run
    finally:
        if not keep_open:
            session.close()


def wait_for(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def pump_until_paused(session: Session, run: Run, timeout: float = TIMEOUT) -> None:
    """Collect events until the session pauses (or fail)."""
    deadline = time.monotonic() + timeout
    while not session.state.paused:
        if time.monotonic() > deadline or session.state.finished:
            raise AssertionError(f"expected a pause, got {session.state}")
        run.events.extend(session.poll(0.05))
    run.events.extend(session.poll(0.05))


def dyngraph_cli(*args: str, timeout: float = 60.0, cwd: str | None = None
                 ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "dyngraph", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


def process_alive(pid: int) -> bool:
    """True if ``pid`` is a live process (zombies count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
