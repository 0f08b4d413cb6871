"""The graphs of issue 12 export, whole, with every SVG parsing: a residual loop whose
weights are shared 60 times, a GRU stepped over 300 tokens, a 4,500-node chain with no
modules. Graphviz took minutes (or 12.5 GB) on each; now dyngraph's layered layout takes
over where Graphviz has no chance."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from dyngraph.exporters import export_iterations

import dyngraph
import dyngraph.nn as nn
import dyngraph.nn.functional as F

SVG = "{http://www.w3.org/2000/svg}"


def residual_loop() -> dyngraph.Trace:
    dyngraph.manual_seed(0)
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(8)])
    with dyngraph.trace(stats="full") as t:
        h = dyngraph.randn(4, 16)
        for _ in range(60):
            for block in blocks:  # at top level, outside any parent's forward
                h = h + 0.1 * block(h)
        h.pow(2).mean().backward()
    return t


class LanguageModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.cell, self.head = nn.Embedding(50, 8), nn.GRUCell(8, 16), \
            nn.Linear(16, 50)


def gru_language_model() -> dyngraph.Trace:
    dyngraph.manual_seed(0)
    model = LanguageModel()
    tokens = dyngraph.randint(0, 50, (301, 2))
    with dyngraph.trace() as t:
        h = dyngraph.zeros(2, 16)
        loss = dyngraph.zeros(())
        for step in range(300):  # its modules called one by one, at top level
            h = model.cell(model.embed(tokens[step]), h)
            loss = loss + F.cross_entropy(model.head(h), tokens[step + 1])
        (loss / 300).backward()
    return t


def plain_chain() -> dyngraph.Trace:
    with dyngraph.trace() as t:
        h = dyngraph.randn(4, 4, requires_grad=True)
        for _ in range(2250):
            h = (h * 1.01).tanh()
        h.sum().backward()
    return t


@pytest.mark.parametrize("make, least", [(residual_loop, 1939), (gru_language_model, 3000),
                                         (plain_chain, 4500)])
def test_big_graphs_export_and_the_svg_parses(tmp_path: Path, make, least: int) -> None:
    trace = make()
    graph = trace.iteration(1).graph  # (the GRU's first token is picked in setup, iteration 0)
    assert len(graph.nodes) >= least
    result = export_iterations(trace, tmp_path, iterations=[1], whole=True)
    [info] = result.iterations
    root = ET.parse(tmp_path / "iter-0001.svg").getroot()
    drawn = [g for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    assert len(drawn) >= info.drawn > 0
    assert info.layout_note.startswith("drawn by dyngraph's layered layout")
    text = (tmp_path / "iter-0001.svg").read_text()
    assert "drawn by dyngraph's layered layout" in text  # the picture says so
    if make is residual_loop:  # every block by its path, each call its own frame
        titles = {t.text for g in root.iter(f"{SVG}g") if g.get("class") == "cluster"
                  for t in g.iter(f"{SVG}title")}
        assert {"3.0 #60", "7 #1"} <= titles  # the ModuleList is the outermost owner
