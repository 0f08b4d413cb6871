"""Big graphs export by module (issue 27): a module-level SVG, one SVG per folded module
linked from its box and from index.html, a run's gradient strip, no SVG too wide."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from dyngraph.exporters import export_iterations, modular
from dyngraph.exporters.svg import MAX_PT, SvgTemplate

import dyngraph
import dyngraph.nn as nn

SVG = "{http://www.w3.org/2000/svg}"


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(4)
        self.mlp = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4))

    def forward(self, x):
        return x + self.mlp(self.ln_1(x))


class GPT(nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        self.transformer = nn.ModuleDict({"wte": nn.Embedding(10, 4),
                                          "h": nn.ModuleList([Block() for _ in range(layers)])})
        self.lm_head = nn.Linear(4, 10)

    def forward(self, idx):
        x = self.transformer["wte"](idx)
        for block in self.transformer["h"]:
            x = block(x)
        return self.lm_head(x).pow(2).mean()


def gpt_trace(layers: int = 24) -> dyngraph.Trace:
    dyngraph.manual_seed(0)
    model = GPT(layers)
    with dyngraph.trace(stats="cheap") as t:
        model(dyngraph.tensor([[1, 2, 3]])).backward()
    return t


def test_a_big_graph_exports_a_module_level_page_and_one_page_per_module(tmp_path, monkeypatch):
    monkeypatch.setattr(modular, "FOLD_ABOVE", 100)  # 24 blocks: ~300 nodes is "big" here
    trace = gpt_trace()
    result = export_iterations(trace, tmp_path, iterations=[1])
    [info] = result.iterations
    assert info.modules == [("transformer.h.0 … h.23 ×24", "iter-0001--transformer.h.0.svg")]
    main = (tmp_path / "iter-0001.svg").read_text()
    root = ET.fromstring(main)
    boxes = [g for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    assert len(boxes) < 15  # the module-level picture, not 300 boxes
    # The run's box links to its page and carries one strip cell per block.
    link = next(a for a in root.iter(f"{SVG}a")
                if a.get("href") == "iter-0001--transformer.h.0.svg")
    run = next(link.iter(f"{SVG}g"))
    assert "transformer.h.0 … h.23 ×24" in "".join(run.itertext())
    assert len([r for r in run.iter(f"{SVG}rect") if r.get("height") == "6"]) == 24
    # The block's own page: its ops, what comes in and where it goes.
    page = (tmp_path / "iter-0001--transformer.h.0.svg").read_text()
    assert "layer_norm" in page and "gelu" in page
    assert "from embedding" in page and "to transformer.h.1" in page
    # index.html offers every page.
    html = (tmp_path / "index.html").read_text()
    from dyngraph.viewer.page import read_parts

    meta = read_parts(html)["meta"]
    assert meta["iterations"][0]["pages"][0][1] == "iter-0001--transformer.h.0.svg"
    # --whole still draws every op in one picture.
    whole = export_iterations(trace, tmp_path / "whole", iterations=[1], whole=True)
    assert whole.iterations[0].modules == [] and whole.iterations[0].drawn > 250


def test_no_svg_is_wider_or_taller_than_a_rasteriser_opens():
    template = SvgTemplate.__new__(SvgTemplate)
    template.width, template.height = 57_240.0, 400.0  # the 42,930 pt diff of the issue
    template.background = template.clusters = template.legend = ""
    svg = template.assemble("wide", [], [])
    width = float(re.search(r'<svg width="([\d.]+)pt"', svg)[1])
    assert width <= MAX_PT and MAX_PT * 96 / 72 <= 32_767
    assert 'viewBox="0.00 0.00 57240 400"' in svg  # the drawing itself is all there


def shrinking_trace() -> dyngraph.Trace:
    """Setup (data scaled before anything differentiable), a 30-step recurrence, then a
    5-step one: the second iteration loses 125 nodes; and an evaluation under no_grad the
    run ends in."""
    dyngraph.manual_seed(0)
    cell = nn.RNNCell(4, 8)
    with dyngraph.trace() as t:
        data = dyngraph.randn(40, 2, 4) * 0.5
        for steps in (30, 5):
            h = dyngraph.zeros(2, 8)
            for k in range(steps):
                h = cell(data[k], h)
            h.pow(2).mean().backward()
        with dyngraph.no_grad():
            cell(data[0], dyngraph.zeros(2, 8)).sum()
    return t


def test_setup_is_exported_but_no_baseline_and_many_ghosts_are_one_box(tmp_path):
    from dyngraph.debug.commands import summarize_trace

    trace = shrinking_trace()
    result = export_iterations(trace, tmp_path, iterations="all", diff=True)
    infos = {i.index: i for i in result.iterations}
    assert sorted(infos) == [0, 1, 2, 3]
    assert (tmp_path / "iter-0000.svg").exists()
    assert infos[1].added == infos[1].removed == 0  # not diffed against setup
    assert "stroke-dasharray" not in (tmp_path / "iter-0001.svg").read_text()
    # 125 removed nodes: one dashed box that says what they were, not 125 ghosts.
    assert infos[2].removed == 125
    second = (tmp_path / "iter-0002.svg").read_text()
    assert re.findall(r"− 125 nodes: \d+ × [a-z]+", second)
    assert len(re.findall(r'<g id="x[^"]*" class="node"', second)) == 1  # one ghost
    assert float(re.search(r'<svg width="([\d.]+)pt"', second)[1]) < 3000
    # summary and export agree on the last iteration, an evaluation under no_grad.
    rows, _ = summarize_trace(trace.events)
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
    assert rows[-1]["nodes"] == infos[3].nodes > 0


class Distinct(nn.Module):
    """70 one-op modules of different shapes: no run, too many to open in the first page."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3 + i, 4) for i in range(70)])

    def forward(self):
        out = dyngraph.zeros(())
        for i, layer in enumerate(self.layers):
            out = out + layer(dyngraph.ones(2, 3 + i)).sum()
        return out


def test_a_folded_module_of_one_op_says_1_op(tmp_path, monkeypatch):
    monkeypatch.setattr(modular, "FOLD_ABOVE", 100)
    with dyngraph.trace(stats="cheap") as trace:
        Distinct()().backward()
    export_iterations(trace, tmp_path, iterations=[1])
    labels = {"".join(g.itertext()).strip()
              for g in ET.parse(tmp_path / "iter-0001.svg").getroot().iter(f"{SVG}g")
              if g.get("class") == "node"}
    assert "layers.7 (×1 op)" in "\n".join(labels), labels
    assert not any("×1 ops" in label for label in labels)
