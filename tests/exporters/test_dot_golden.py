"""Golden DOT text for small hand-built graphs, compared byte for byte.

Regenerate after an intended change with ``DYNGRAPH_UPDATE_GOLDEN=1 pytest tests/exporters``
and read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dyngraph.exporters import ViewCache, to_dot
from exporter_graphs import mlp, stack

from dyngraph.capture.graph import backward_graph

GOLDEN = Path(__file__).parent / "golden"


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.dot"
    if os.environ.get("DYNGRAPH_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name}.dot differs from the golden file"


CASES = {
    "forward": lambda: to_dot(mlp()),
    "forward_shapes": lambda: to_dot(mlp(grads=False), show_shapes=True),
    "backward": lambda: to_dot(mlp(), graph_kind="backward"),
    "both": lambda: to_dot(mlp(), graph_kind="both", legend=False),
    "clustered": lambda: to_dot(stack(2)),
    "collapsed": lambda: to_dot(stack(3), depth=2),
    "collapsed_top": lambda: to_dot(stack(3), depth=0),
    "folded": lambda: to_dot(stack(4), fold_repeats=True),
    "diff": lambda: to_dot(mlp(2, 100, extra=True), diff_against=mlp(1, 1)),
    "diff_removed": lambda: to_dot(mlp(2, 100), diff_against=mlp(1, 1, extra=True)),
    "diff_reshaped": lambda: to_dot(mlp(2, 100, hidden=5), diff_against=mlp(1, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    check(name, CASES[name]())


def test_same_graph_gives_the_same_bytes() -> None:
    for make in CASES.values():
        assert make() == make()


def test_backward_kind_accepts_a_backward_graph() -> None:
    g = mlp()
    assert to_dot(backward_graph(g), graph_kind="backward") == to_dot(g, graph_kind="backward")


def test_node_names_are_graph_ids() -> None:
    g = mlp(first_id=40)
    text = to_dot(g)
    for node_id in g.nodes:
        assert f"  n{node_id} [" in text


def test_backward_graph_names_grad_fns_and_reverses_edges() -> None:
    text = to_dot(mlp(), graph_kind="backward")
    assert 'label="SumBackward0\\n() float32"' in text
    assert "AccumulateGrad\\nenc.0.weight" in text
    assert "n8 -> n7;" in text  # gradient flows from the loss towards the inputs
    assert "n1" not in text  # x does not require grad: backward never reaches it


def test_collapsed_counts_ops_and_names_the_module() -> None:
    text = to_dot(stack(3), depth=2)
    assert 'm_encoder_layers_1 [label="encoder.layers.1 (×5 ops)"' in text
    assert "subgraph cluster_encoder_layers {" in text
    assert "cluster_encoder_layers_1" not in text


def test_a_collapsed_module_of_one_op_says_1_op() -> None:
    text = to_dot(mlp(), depth=1)
    assert 'label="enc.0 (×1 op)"' in text and 'label="enc.1 (×1 op)"' in text
    assert "module: enc.1\\n1 node, 1 op\\n" in text  # its tooltip
    assert "×1 ops" not in text and "1 nodes" not in text


def test_fold_draws_one_block_and_drops_the_chain() -> None:
    text = to_dot(stack(4), fold_repeats=True)
    assert 'label="encoder.layers.0-3 ×4"' in text
    assert "encoder.layers.2" not in text
    assert text.count('label="add') == 1


def test_fold_keeps_blocks_that_differ() -> None:
    g = stack(3)
    odd = next(n for n in g.nodes.values() if n.module == "encoder.layers.1.mlp" and n.op == "relu")
    odd.op = "gelu"
    text = to_dot(g, fold_repeats=True)
    assert "×" not in text
    assert "cluster_encoder_layers_2" in text


def test_diff_marks_added_and_ghosts_removed() -> None:
    added = to_dot(mlp(2, 100, extra=True), diff_against=mlp(1, 1))
    assert "added since the previous graph" in added
    removed = to_dot(mlp(2, 100), diff_against=mlp(1, 1, extra=True))
    assert 'style="rounded,dashed"' in removed and "removed since the previous graph" in removed


def test_nonfinite_nodes_are_marked() -> None:
    g = mlp()
    node = next(n for n in g.nodes.values() if n.op == "relu")
    node.summary = node.summary.__class__(node.shape, "float32", norm=float("nan"), nan=3)
    text = to_dot(g)
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"n{node.id} "))
    assert 'fillcolor="#e41a1c"' in line and 'penwidth="3"' in line and "NaN×3" in line


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="graph_kind"):
        to_dot(mlp(), graph_kind="sideways")
    with pytest.raises(ValueError, match="depth"):
        to_dot(mlp(), depth=-1)


@pytest.mark.parametrize("options", [{}, {"depth": 1}, {"fold_repeats": True},
                                     {"graph_kind": "backward", "show_shapes": True}])
def test_a_view_cache_changes_nothing_but_speed(options: dict) -> None:
    cache = ViewCache()
    graphs = [mlp(1, 1), mlp(2, 100, grad_scale=10.0), stack(3), stack(3, 2, 500),
              mlp(3, 200, grad_scale=0.1), stack(4)]
    for g in graphs:
        assert to_dot(g, cache=cache, **options) == to_dot(g, **options)
    assert len(cache._entries) == 3


def test_inf_in_a_value_only_marks_the_border() -> None:
    g = mlp()
    node = next(n for n in g.nodes.values() if n.op == "relu")
    node.summary = node.summary.__class__(node.shape, "float32", norm=float("inf"), inf=2)
    line = next(ln for ln in to_dot(g).splitlines() if ln.strip().startswith(f"n{node.id} "))
    assert 'fillcolor="#ffffd9"' in line and 'color="#e41a1c", penwidth="3"' in line
    assert "Inf×2" in line


def test_same_text_in_another_process_with_another_hash_seed() -> None:
    import subprocess
    import sys

    here = str(Path(__file__).parent)
    code = (f"import sys; sys.path.insert(0, {here!r})\n"
            "from exporter_graphs import mlp, stack\n"
            "from dyngraph.exporters import to_dot\n"
            "sys.stdout.write(to_dot(stack(4), fold_repeats=True, show_shapes=True)"
            " + to_dot(mlp(2, 100, extra=True), diff_against=mlp(1, 1, hidden=5),"
            " graph_kind='both'))\n")
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert next(iter(outputs)) == (to_dot(stack(4), fold_repeats=True, show_shapes=True)
                                   + to_dot(mlp(2, 100, extra=True),
                                            diff_against=mlp(1, 1, hidden=5), graph_kind="both"))
