"""Breakpoints that cannot hit say why, with the nearest name (``dyngraph.debug.reach``).

No process: ``check`` reads what a run has shown so far (``Seen``) and the files on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dyngraph.debug import Breakpoint
from dyngraph.debug.reach import Seen, check

TRAIN = "import helpers\n\nmodel = helpers.build()\nloss = model(3)\n"
HELPERS = '"""Helpers."""\n\n\ndef build():\n    return lambda x: x * 2\n'


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A script that imports a helper file: (train.py, helpers.py)."""
    train, helpers = tmp_path / "train.py", tmp_path / "helpers.py"
    train.write_text(TRAIN)
    helpers.write_text(HELPERS)
    return train, helpers


def test_a_module_no_module_has_says_so_with_the_nearest_path():
    seen = Seen(modules={"encoder", "encoder.0", "encoder.1", "decoder"})
    assert check(Breakpoint.module("encodr"), seen) == \
        "no module encodr has run (did you mean module:encoder?)"
    assert check(Breakpoint.module("encoder.*"), seen) == ""  # a glob that matches
    assert check(Breakpoint.module("encoder"), seen) == ""
    assert check(Breakpoint.module("zzz"), seen) == "no module zzz has run"  # nothing near


def test_a_module_before_any_model_ran_waits_until_the_run_has_ended():
    assert check(Breakpoint.module("encoder"), Seen()) == ""  # the model may not exist yet
    assert check(Breakpoint.module("encoder"), Seen(), ended=True) == "no module has run"


def test_an_op_that_did_not_run_is_said_once_the_run_has_ended():
    seen = Seen(ops={"linear", "relu", "matmul"})
    assert check(Breakpoint.op("conv2d"), seen) == ""  # the engine has it: it may come
    assert check(Breakpoint.op("conv2d"), seen, ended=True) == "no op conv2d ran"
    assert check(Breakpoint.op("lineer"), seen) == \
        "dyngraph emits no op named lineer (did you mean op:linear?)"
    assert check(Breakpoint.op("lineer"), seen, ended=True) == \
        "no op lineer ran (did you mean op:linear?)"
    assert check(Breakpoint.op("relu"), seen, ended=True) == ""
    # a PyTorch run: op names are not known in advance, only what ran
    assert check(Breakpoint.op("gelu"), Seen(ops={"aten.gelu"}), torch=True) == \
        "no op gelu has run yet (did you mean op:aten.gelu?)"


def test_a_file_not_imported_yet_hits_once_it_runs(project):
    train, helpers = project
    seen = Seen(files={str(train)})
    why = check(Breakpoint.at_line("helpers.py", 5), seen, script=str(train))
    assert why == ("helpers.py is not the script and nothing has run in it yet: "
                   "it hits once the file is imported and runs that line")
    seen.files.add(str(helpers))  # now it ran
    assert check(Breakpoint.at_line("helpers.py", 5), seen, script=str(train)) == ""
    assert check(Breakpoint.at_line(str(helpers), 5), seen, script=str(train)) == ""


def test_a_file_that_does_not_exist_names_the_nearest_file(project):
    train, helpers = project
    seen = Seen(files={str(train), str(helpers)})
    assert check(Breakpoint.at_line("helper.py", 5), seen, script=str(train)) == \
        "no file helper.py (did you mean helpers.py:5?)"
    assert check(Breakpoint.at_line("nowhere/xyz.py", 2), seen, script=str(train)) == \
        "no file nowhere/xyz.py"


def test_a_line_without_code_names_the_nearest_line(project):
    train, helpers = project
    seen = Seen(files={str(train), str(helpers)})
    assert check(Breakpoint.at_line("train.py", 2), seen, script=str(train)) == \
        "line 2 of train.py holds no code (did you mean train.py:1?)"
    # a docstring is no code either
    assert check(Breakpoint.at_line("helpers.py", 1), seen, script=str(train)) == \
        "line 1 of helpers.py holds no code (did you mean helpers.py:4?)"
