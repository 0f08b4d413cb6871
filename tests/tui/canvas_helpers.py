"""Shared by the graph-canvas tests: small graphs and a stand-in layout.

``fake_layout`` is a test stand-in for ``dyngraph.exporters.layout``: it reads the canvas's
own terminal DOT (node widths, edges), ranks nodes by longest path and lines each rank up
left to right. No Graphviz, so the unit and Pilot tests are fast and exact; one test in
test_raster.py runs the real layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import dyngraph
from dyngraph import nn
from dyngraph.capture.events import Summary
from dyngraph.capture.graph import Graph, GraphEdge, GraphNode, build_graphs


@dataclass
class Box:
    name: str
    x: float
    y: float
    width: float
    height: float


@dataclass
class Path:
    tail: str
    head: str
    points: list[tuple[float, float]]


@dataclass
class FakeLayout:
    width: float
    height: float
    nodes: dict[str, Box] = field(default_factory=dict)
    edges: list[Path] = field(default_factory=list)


def fake_layout(dot_text: str) -> FakeLayout:
    widths = {m[1]: float(m[2]) * 72 for m in re.finditer(r"^(\w+) \[width=([\d.]+)\];",
                                                           dot_text, re.M)}
    height = float(re.search(r"height=([\d.]+)", dot_text)[1]) * 72
    edges = re.findall(r"^(\w+) -> (\w+)", dot_text, re.M)
    rank = dict.fromkeys(widths, 0)
    for _ in range(len(widths)):  # longest path; graphs here are tiny DAGs
        for a, b in edges:
            rank[b] = max(rank[b], rank[a] + 1)
    step = height + 4 * 14.4
    top = (max(rank.values(), default=0) + 1) * step
    lay = FakeLayout(width=0, height=top)
    cursor: dict[int, float] = {}
    for name in widths:
        r = rank[name]
        x = cursor.get(r, 0.0) + widths[name] / 2
        cursor[r] = x + widths[name] / 2 + 3 * 7.2
        lay.nodes[name] = Box(name, x, top - r * step - height / 2, widths[name], height)
        lay.width = max(lay.width, cursor[r])
    for a, b in edges:
        ta, hb = lay.nodes[a], lay.nodes[b]
        lay.edges.append(Path(a, b, [(ta.x, ta.y - height / 2), (hb.x, hb.y + height / 2)]))
    return lay


class Counting:
    """``fake_layout``, remembering how many boxes each layout was given."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, dot: str):
        self.sizes.append(dot.count("[width="))
        return fake_layout(dot)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(3, 2), nn.ReLU())

    def forward(self, x):
        return (self.enc(x) * 2).sum()


def traced_graphs(iterations: int = 2) -> list[Graph]:
    """Forward+backward of a tiny two-module net, ``iterations`` times (same structure)."""
    dyngraph.manual_seed(0)
    net = Net()
    events: list = []
    with dyngraph.subscribe(events.append, stats="cheap"):
        for _ in range(iterations):
            net(dyngraph.ones(4, 3)).backward()
        dyngraph.capture.tracing.tracer.flush_iteration()
    return list(build_graphs(events))


def chain(n: int = 3, nan_at: int | None = None) -> Graph:
    """leaf -> op -> op ... built by hand; node ``nan_at`` (an id) carries a NaN summary."""
    g = Graph(iteration=1)
    g.nodes[1] = GraphNode(1, "leaf", shape=(4, 3), seq=1)
    for i in range(2, n + 1):
        bad = Summary(shape=(4, 3), dtype="float32", nan=1) if i == nan_at else None
        g.nodes[i] = GraphNode(i, "op", op=f"op{i}", shape=(4, 3), seq=i, summary=bad)
        g.edges.append(GraphEdge(i - 1, i, 0))
    return g


def grow(graph: Graph, node: GraphNode, inputs: list[int]) -> None:
    graph.nodes[node.id] = node
    graph.edges.extend(GraphEdge(src, node.id, k) for k, src in enumerate(inputs))



def shared_weight(consumers: int = 3) -> Graph:
    """A weight ``cell.weight_ih`` used by ``consumers`` chained ``matmul`` ops (``W @ h``),
    by hand. Ids: the weight 1, an input 2, the matmuls 3, 4, ... (each takes the weight,
    then the previous one)."""
    g = Graph(iteration=1)
    g.nodes[1] = GraphNode(1, "param", name="cell.weight_ih", shape=(4, 4), seq=1,
                           requires_grad=True)
    g.nodes[2] = GraphNode(2, "leaf", shape=(2, 4), seq=2)
    for k in range(consumers):
        nid = 3 + k
        grow(g, GraphNode(nid, "op", op="matmul", shape=(4, 2), seq=nid), [1, nid - 1])
    return g


def rnn_loop(steps: int) -> Graph:
    """The traced forward graph of ``h = (x @ U + h @ W).tanh()`` run ``steps`` times."""
    U = nn.Parameter(dyngraph.ones(3, 3))
    W = nn.Parameter(dyngraph.ones(3, 3))
    x = dyngraph.ones(2, 3)
    events: list = []
    with dyngraph.subscribe(events.append, stats="none"):
        h = dyngraph.zeros(2, 3)
        for _ in range(steps):
            h = (x @ U + h @ W).tanh()
        h.sum().backward()
        dyngraph.capture.tracing.tracer.flush_iteration()
    return next(iter(build_graphs(events)))


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(4)
        self.attn = nn.Linear(4, 4)
        self.mlp = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(x)


class _GPT(nn.Module):
    """nanoGPT's module tree in miniature: transformer.{wte, h.N, ln_f}, lm_head."""

    def __init__(self, layers: int) -> None:
        super().__init__()
        self.transformer = nn.ModuleDict({"wte": nn.Embedding(10, 4),
                                          "h": nn.ModuleList([_Block() for _ in range(layers)]),
                                          "ln_f": nn.LayerNorm(4)})
        self.lm_head = nn.Linear(4, 10)

    def forward(self, idx):
        x = self.transformer["wte"](idx)
        for block in self.transformer["h"]:
            x = block(x)
        return self.lm_head(self.transformer["ln_f"](x)).pow(2).mean()


def gpt_events(layers: int = 24, iterations: int = 1) -> list:
    """Events of a GPT-shaped model (``layers`` blocks, ~21 nodes each), forward and
    backward, ``iterations`` times."""
    dyngraph.manual_seed(0)
    model = _GPT(layers)
    events: list = []
    with dyngraph.subscribe(events.append, stats="cheap"):
        for _ in range(iterations):
            model(dyngraph.tensor([[1, 2, 3]])).backward()
        dyngraph.capture.tracing.tracer.flush_iteration()
    return events


def gpt_graph(layers: int = 24) -> Graph:
    return next(iter(build_graphs(gpt_events(layers))))
