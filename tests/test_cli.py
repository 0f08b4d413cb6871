"""How the command line splits what belongs to dyngraph from what belongs to the script."""

from __future__ import annotations

import pytest

from dyngraph import cli


def _parsed(monkeypatch: pytest.MonkeyPatch, argv: list[str]):
    seen = {}
    monkeypatch.setitem(cli.COMMANDS, argv[0], (__name__, "_capture"))
    globals()["_capture"] = lambda args: seen.setdefault("args", args) and 0
    assert cli.main(argv) == 0
    return seen["args"]


@pytest.mark.parametrize(
    ("argv", "output", "script_args", "graph"),
    [
        (["export", "-o", "out", "train.py", "--steps", "3"], "out", ["--steps", "3"], "forward"),
        (
            ["export", "train.py", "-o", "out", "--", "--steps", "3"],
            "out",
            ["--steps", "3"],
            "forward",
        ),
        (["export", "run.dgtrace", "-o", "out", "--graph", "both"], "out", [], "both"),
        (
            ["export", "-o", "out", "train.py", "--", "--graph", "x"],
            "out",
            ["--graph", "x"],
            "forward",
        ),
    ],
)
def test_export_sorts_its_options_from_the_scripts(monkeypatch, argv, output, script_args, graph):
    args = _parsed(monkeypatch, argv)
    assert (args.output, args.args, args.graph) == (output, script_args, graph)


def test_record_gives_everything_after_the_script_to_it(monkeypatch):
    args = _parsed(
        monkeypatch, ["record", "-o", "x.dgtrace", "train.py", "-o", "y", "--epochs", "3"]
    )
    assert (args.output, args.script, args.args) == (
        "x.dgtrace",
        "train.py",
        ["-o", "y", "--epochs", "3"],
    )


def test_export_without_an_output_folder_is_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["export", "run.dgtrace"])
    assert exit_info.value.code == 2
    assert "-o/--output" in capsys.readouterr().err


def test_a_missing_script_is_named_and_its_arguments_are_optional(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["record"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.strip().endswith("the following arguments are required: script")


def test_user_errors_are_one_line_with_the_command_name(tmp_path, capsys):
    assert cli.main(["view", str(tmp_path / "missing.dgtrace")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("dyngraph view: error:") and "missing.dgtrace" in err
