"""What the viewer page is fed (viewer/data.py), and the page itself as text: no browser."""

from __future__ import annotations

import json
import re

from dyngraph.viewer import ViewerData, page_html
from dyngraph.viewer.page import json_block, read_parts, script_text
from viewer_runs import BLOCKS, EVIL_MODULE, EVIL_PARAM, NAN_ITERATION, setup_run, training_run

import dyngraph
from dyngraph.capture import folding as fd
from dyngraph.debug.commands import summarize_trace

RUN = training_run()
SETUP_RUN = setup_run()


def test_meta_marks_changes_nans_and_the_first_nan():
    meta = ViewerData.from_trace(RUN).meta()
    its = meta["iterations"]
    assert [it["index"] for it in its] == [1, 2, 3, 4]
    # 1: nothing before it to change from; 2: a batch of 5; 3: one op more (x * nan);
    # 4: as 1 again, but changed since 3.
    assert [it["changed"] for it in its] == [False, True, True, True]
    assert not any(it["setup"] for it in its)  # (it begins differentiable: no setup)
    assert its[0]["structure"] == its[3]["structure"]  # the same structure: stored once
    assert meta["structures"] == len({it["structure"] for it in its})
    assert its[0]["nan"] == 0 and its[NAN_ITERATION - 1]["nan"] > 0
    first = meta["firstNaN"]
    assert first["index"] == NAN_ITERATION and first["where"] == "value"
    assert first["label"] == "mul" and first["module"] == ""
    lo, hi = meta["gradRange"]
    assert 0 < lo <= hi


def test_setup_is_shown_but_is_nobodys_baseline():
    """Issue 27's iteration 0 (the work before the first differentiable op) is in the
    viewer, named setup; neither it nor iteration 1 is "changed", as `dyngraph summary`
    marks them (a change needs a baseline, and setup is nobody's)."""
    its = ViewerData.from_trace(SETUP_RUN).meta()["iterations"]
    assert [it["index"] for it in its] == [0, 1, 2, 3, 4, 5]
    assert [it["setup"] for it in its] == [True, False, False, False, False, False]
    assert its[0]["key"] != its[1]["key"]  # (so "changed" would be true against setup)
    rows, _ = summarize_trace(SETUP_RUN.events)
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3, 4, 5]
    assert [it["changed"] for it in its] == [r["changed"] for r in rows]
    assert [it["changed"] for it in its] == [False, False, True, True, True, False]
    # "changed" is against the iteration before it on the slider: with only setup
    # before it there, iteration 3 has no baseline either.
    chosen = ViewerData.from_trace(SETUP_RUN, iterations=[0, 3, 4]).meta()["iterations"]
    assert [it["changed"] for it in chosen] == [False, False, True]


def test_structure_carries_the_folding_model_as_python_built_it():
    data = ViewerData.from_trace(RUN)
    s = data.structure(0)
    graph = RUN.iterations[0].graph
    tree = fd.ModuleTree.from_graph(graph)
    assert s["tree"] == json.loads(json.dumps(tree.to_dict()))
    assert s["open"] == sorted(fd.auto_expanded(tree))
    assert len(s["open"]) < len(tree.calls)  # 331 nodes: opens folded
    assert any(r["label"].endswith(f"×{BLOCKS}") for r in s["tree"]["runs"])
    assert s["n"] == len(graph.nodes) == len(s["key"]) == len(s["inStart"]) - 1
    labels = [s["tables"]["label"][k] for k in s["label"]]
    assert EVIL_PARAM in labels
    assert EVIL_MODULE in s["tables"]["module"]


def test_values_follow_each_iteration_and_history_matches_nodes_by_key():
    data = ViewerData.from_trace(RUN)
    s = data.structure(0)
    i = next(k for k, key in enumerate(s["key"]) if key.startswith("inp\tlinear"))
    norms = data.history(s["key"][i])
    assert len(norms) == 4
    assert isinstance(norms[0], float) and norms[0] > 0
    assert norms[NAN_ITERATION - 1] == "NaN"  # the NaN iteration's gradient
    v = data.values(0)
    assert v["gnorm"][i] == norms[0]
    assert v["id"] != data.values(3)["id"]  # tensor ids are per iteration
    assert "vmin" in v and "vpreview" in v  # stats="full"
    # Everything is JSON the browser parses: no bare NaN or Infinity anywhere.
    json.dumps(data.everything(), allow_nan=False)


def test_the_diff_signatures_agree_with_graph_diff():
    data = ViewerData.from_trace(RUN)
    a, b = data.structure(0), data.structure(data.meta()["iterations"][1]["structure"])
    ga, gb = RUN.iterations[0].graph, RUN.iterations[1].graph
    diff = gb.diff(ga)
    in_a = dict(zip(a["key"], a["sig"], strict=True))
    changed = [k for k, sig in zip(b["key"], b["sig"], strict=True)
               if k in in_a and in_a[k] != sig]
    assert len(changed) == len(diff.reshaped) + len(diff.rewired) > 0


def test_backward_graph_and_a_chosen_subset():
    data = ViewerData.from_trace(RUN, graph_kind="backward", iterations=[2, 4])
    meta = data.meta()
    assert [it["index"] for it in meta["iterations"]] == [2, 4]
    assert meta["graph"] == "backward"
    ops = set(data.structure(0)["tables"]["op"])
    assert any(op.endswith("Backward0") for op in ops)


def test_page_embeds_data_that_cannot_break_out_and_allows_only_its_own_script():
    data = ViewerData.from_trace(RUN)
    page = page_html(data.everything())
    assert "<script>self['__pwned']" not in page and "<img src=x" not in page
    parts = 1 + data.meta()["structures"] + len(data.meta()["iterations"])
    assert page.count("</script>") == parts + 2  # and the config's and the code's own
    assert EVIL_PARAM in read_parts(page)["structures"][0]["name"]
    assert read_parts(page) == json.loads(json.dumps(data.everything()))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)[1]
    assert "default-src &#x27;none&#x27;" in csp and "connect-src &#x27;none&#x27;" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    # Nothing is loaded from anywhere: no src= or href= to fetch, no URL in the code.
    assert not re.search(r"\b(src|href)=\"(https?:)?//", page)
    code = script_text().replace('"http://www.w3.org/2000/svg"', "")  # a namespace name
    assert "http://" not in code and "https://" not in code
    assert json_block("</script>\u2028") == '"\\u003c/script\\u003e\\u2028"'


def test_a_trace_without_graphs_still_makes_a_page():
    with dyngraph.trace() as t:
        pass
    data = ViewerData.from_trace(t)
    assert data.meta()["iterations"] == [] and data.meta()["firstNaN"] is None
    assert "dg-root" in page_html(data.everything())


def test_a_page_carries_its_parts_packed_and_gives_them_back_exactly():
    """The exported page and view --web send each part packed (keys rebuilt from columns,
    scopes, calls and signatures as indexes, statistics as float32 bytes): smaller, and
    unpacked it is the very part made, NaN, Inf and missing summaries included."""
    from dyngraph.viewer import packing

    data = ViewerData.from_trace(RUN)
    plain = json.loads(json.dumps(data.everything()))
    for s, part in enumerate(plain["structures"]):
        packed = packing.pack_structure(part)
        assert {"keyOcc", "sigIdx"} <= set(packed) and "key" not in packed
        assert {"scopeIdx", "callCols"} <= set(packed["tree"])
        assert len(json_block(packed)) < len(json_block(part)) * 0.75, s
        assert packing.unpack_structure(json.loads(json_block(packed))) == part
    nan = plain["values"][NAN_ITERATION - 1]
    assert None in nan["vnorm"] and None in nan["gnorm"]
    spelled = dict(nan, vmax=["NaN", "Infinity", "-Infinity", None, -0.0] + nan["vmax"][5:])
    for part in [*plain["values"], spelled]:
        packed = packing.pack_values(part)
        assert isinstance(packed["vnorm"], dict) and "$f32" in packed["vnorm"]
        assert packing.unpack_values(json.loads(json_block(packed))) == part
    # A number float32 cannot hold stays as it was.
    odd = dict(nan, vmax=[1e300] + nan["vmax"][1:])
    assert packing.pack_values(odd)["vmax"] == odd["vmax"]
