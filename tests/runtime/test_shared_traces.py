"""A trace to share (issue 27, part 4): ``record`` names source files relative to the
script's folder, ``--absolute-paths`` keeps them; ``summary`` piped never cuts a name."""

from __future__ import annotations

from runtime_helpers import dyngraph_cli

import dyngraph

SCRIPT = '''\
import dyngraph as torch
import dyngraph.nn as nn
from helpers.blocks import make


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a_rather_long_name_for_the_projection_layer_of_this_model = make()

    def forward(self, x):
        return self.a_rather_long_name_for_the_projection_layer_of_this_model(x)


net = Net()
net(torch.randn(2, 3)).sum().backward()
'''
HELPER = '''\
import dyngraph.nn as nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 2)

    def forward(self, x):
        return self.inner(x) * 2.0


def make():
    return Scaled()
'''


def test_record_names_files_relative_to_the_script_and_summary_keeps_names_whole(tmp_path):
    project = tmp_path / "project"
    (project / "helpers").mkdir(parents=True)
    (project / "helpers" / "__init__.py").write_text("")
    (project / "helpers" / "blocks.py").write_text(HELPER)
    (project / "train.py").write_text(SCRIPT)
    shared, local = tmp_path / "shared.dgtrace", tmp_path / "local.dgtrace"
    done = dyngraph_cli("record", "-o", str(shared), str(project / "train.py"))
    assert done.returncode == 0, done.stderr
    files = {e.file for e in dyngraph.read_trace(shared).events if getattr(e, "file", "")}
    assert files == {"train.py", "helpers/blocks.py"}
    done = dyngraph_cli("record", "--absolute-paths", "-o", str(local),
                        str(project / "train.py"))
    assert done.returncode == 0, done.stderr
    files = {e.file for e in dyngraph.read_trace(local).events if getattr(e, "file", "")}
    assert files == {str(project / "train.py"), str(project / "helpers" / "blocks.py")}
    # Piped (as in CI), the table is as wide as it needs: the longest name is whole.
    summary = dyngraph_cli("summary", str(shared))
    assert summary.returncode == 0, summary.stderr
    name = "a_rather_long_name_for_the_projection_layer_of_this_model.inner.weight"
    assert name in summary.stdout
    assert "iterations end at each backward()" in summary.stdout
    narrow = dyngraph_cli("summary", "--width", "80", str(shared))
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines())
