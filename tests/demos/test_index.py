"""The demo index: every script is listed, every listed name has a script."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dyngraph import demos
from dyngraph.errors import UserError

DEMO_DIR = Path(demos.__file__).parent
ENGINE_DEMOS = {"mlp", "rnn_varlen", "tree_rnn", "dynamic_routing", "gnn", "transformer",
                "rl_policy", "nan_hunt"}
TORCH_DEMOS = {"torch_gpt", "torch_compile_varlen", "torch_ddp_divergence"}
EXPECTED = ENGINE_DEMOS | TORCH_DEMOS


def test_index_lists_exactly_the_scripts():
    scripts = {p.stem for p in DEMO_DIR.glob("*.py") if p.stem != "__init__"}
    assert set(demos.DEMOS) == scripts == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_path_points_at_the_script(name):
    p = demos.path(name)
    assert p.is_file() and p.name == f"{name}.py"
    assert demos.DEMOS[name] and "\n" not in demos.DEMOS[name]


def test_unknown_name_is_a_user_error_listing_the_demos():
    with pytest.raises(UserError) as info:
        demos.path("resnet")
    message = str(info.value)
    assert "resnet" in message and all(name in message for name in demos.DEMOS)


@pytest.mark.parametrize("name", sorted(ENGINE_DEMOS))
def test_script_is_written_like_a_pytorch_script(name):
    """Imports dyngraph under PyTorch's names, has main(steps) and a --steps option."""
    source = demos.path(name).read_text()
    tree = ast.parse(source)
    aliases = {(a.name, a.asname) for node in ast.walk(tree) if isinstance(node, ast.Import)
               for a in node.names}
    assert ("dyngraph", "torch") in aliases and ("dyngraph.nn", "nn") in aliases
    assert not any(a.name.split(".")[0] == "torch" for node in ast.walk(tree)
                   if isinstance(node, ast.Import) for a in node.names)
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert mains and mains[0].args.args[0].arg == "steps"
    assert '"--steps"' in source and 'if __name__ == "__main__":' in source


def test_torch_demos_are_marked_and_import_pytorch_itself():
    assert demos.NEEDS_TORCH == TORCH_DEMOS
    for name in TORCH_DEMOS:
        tree = ast.parse(demos.path(name).read_text())
        imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for a in node.names}
        assert "torch" in imported and not any(m.startswith("dyngraph") for m in imported)


def test_bundled_text_is_next_to_the_transformer():
    # pyproject packages demos/*.txt, so the installed copy finds it the same way.
    assert (DEMO_DIR / "transformer_text.txt").stat().st_size > 500
