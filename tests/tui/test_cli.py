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
