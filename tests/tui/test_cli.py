"""``dyngraph debug`` / ``view`` / ``demo``: listing, and one-line errors for bad input."""

from __future__ import annotations

from dyngraph import demos
from dyngraph.cli import main


def test_demo_list_prints_every_demo_with_its_description(capsys):
    assert main(["demo", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(demos.DEMOS)
    for line, (name, description) in zip(out, demos.DEMOS.items(), strict=True):
        needs = " (needs PyTorch)" if name in demos.NEEDS_TORCH else ""
        assert line.startswith(name) and line.endswith(description + needs)
    assert any(line.endswith("(needs PyTorch)") for line in out)


def test_a_torch_demo_without_torch_is_one_line(capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    one_line_error(capsys, ["demo", "torch_gpt"], "torch_gpt", "needs PyTorch")


def one_line_error(capsys, argv: list[str], *words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for word in words:
        assert word in err


def test_bad_input_is_one_line(capsys, tmp_path):
    one_line_error(capsys, ["demo", "no_such_demo"], "no_such_demo", "mlp")
    one_line_error(capsys, ["debug", str(tmp_path / "missing.py")], "missing.py")
    one_line_error(capsys, ["debug", str(tmp_path)], "directory")
    one_line_error(capsys, ["view", str(tmp_path / "missing.dgtrace")], "missing.dgtrace")
    garbage = tmp_path / "garbage.dgtrace"
    garbage.write_bytes(b"this is not a trace file at all\n" * 10)
    one_line_error(capsys, ["view", str(garbage)], "garbage.dgtrace")
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    one_line_error(capsys, ["debug", str(bad)], "bad.py")


def test_view_shows_the_cut_short_warning_in_the_app(tmp_path, nan_trace_path, monkeypatch):
    import argparse

    from dyngraph.tui import app as app_module
    from dyngraph.tui import cli

    cut = tmp_path / "cut.dgtrace"
    data = nan_trace_path.read_bytes()
    cut.write_bytes(data[: len(data) - 200])
    seen = {}

    def fake_run(self):  # no terminal in tests: record what the app would show
        seen["notices"] = self.notices
        seen["events"] = len(self.source.trace.events)
        return 0

    monkeypatch.setattr(app_module.DebuggerApp, "run", fake_run)
    assert cli.run_view(argparse.Namespace(trace=str(cut))) == 0
    assert seen["events"] > 0
    assert any("cut short" in n for n in seen["notices"]), seen["notices"]


MODULES_SCRIPT = '''\
import dyngraph as torch
import dyngraph.nn as nn



class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


model = Net()
for _ in range(2):
    model(torch.randn(5, 3)).sum().backward()
print("trained")
'''


def run_to_the_end(self):
    """Stands in for the app (no terminal in tests): ``c`` until the script has ended."""
    import time

    source = self.source
    deadline = time.monotonic() + 60
    while source.state.status != "finished" and time.monotonic() < deadline:
        source.pump()
        if source.state.status == "paused":
            source.continue_()
        time.sleep(0.02)
    source.pump()
    assert source.state.status == "finished"
    return None


def test_breakpoints_that_never_hit_are_said_at_exit_with_the_nearest_name(
        tmp_path, capsys, monkeypatch):
    """Issue 27: a module path or an op that matched nothing in the whole run is said at
    exit, as a line in a file that never loaded is; breakpoints that hit are not."""
    from dyngraph.tui import app as app_module

    script = tmp_path / "train.py"
    script.write_text(MODULES_SCRIPT)
    monkeypatch.setattr(app_module.DebuggerApp, "run", run_to_the_end)
    breaks = ["module:encodr", "module:encoder.0", "op:conv2d", "op:lineer", "op:linear"]
    argv = ["debug", *(a for b in breaks for a in ("--break", b)), str(script)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "trained" in out
    said = [line for line in err.splitlines() if "never hit" in line]
    assert said == [
        "dyngraph: breakpoint module:encodr never hit: "
        "no module encodr has run (did you mean module:encoder?)",
        "dyngraph: breakpoint op:conv2d never hit: no op conv2d ran",
        "dyngraph: breakpoint op:lineer never hit: no op lineer ran (did you mean op:linear?)",
    ], err
