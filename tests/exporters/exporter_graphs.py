"""Small, fully deterministic graphs built by hand for the exporter tests (no engine, no
file paths that vary between machines)."""

from __future__ import annotations

from dyngraph.capture.events import Summary
from dyngraph.capture.graph import Graph, GraphEdge, GraphNode

HOSTILE = '"><script>alert(1)</script>'


class GraphMaker:
    """``g = GraphMaker(); x = g.leaf("x", (2, 3)); g.op("relu", [x], (2, 3))``."""

    def __init__(self, iteration: int = 1, first_id: int = 1) -> None:
        self.graph = Graph(iteration, complete=True)
        self._next = first_id
        self._seq = 0
        self._occ: dict[tuple[str, str, str, int], int] = {}

    def _ids(self) -> tuple[int, int]:
        self._next += 1
        self._seq += 1
        return self._next - 1, self._seq

    def _occurrence(self, *key: object) -> int:
        n = self._occ.get(key, 0)  # type: ignore[arg-type]
        self._occ[key] = n + 1  # type: ignore[index]
        return n

    def leaf(self, name: str, shape: tuple[int, ...], *, param: bool = False,
             grad: float | None = None, nan: int = 0) -> int:
        i, seq = self._ids()
        self.graph.nodes[i] = GraphNode(
            i, "param" if param else "leaf", name=name, shape=shape, seq=seq,
            requires_grad=param or grad is not None,
            summary=Summary(shape, "float32", norm=1.5, mean=0.25, nan=nan),
            grad=None if grad is None else Summary(shape, "float32", norm=grad),
            grad_fn="AccumulateGrad" if grad is not None else "",
            backward_seq=0, occurrence=self._occurrence("", name or "leaf", "", 0),
        )
        return i

    def op(self, op: str, inputs: list[int], shape: tuple[int, ...], *, module: str = "",
           grad: float | None = None, line: int = 10, nan: int = 0) -> int:
        i, seq = self._ids()
        self.graph.nodes[i] = GraphNode(
            i, "op", op=op, shape=shape, module=module, file="train.py", line=line,
            function="forward", seq=seq, requires_grad=True,
            summary=Summary(shape, "float32", norm=2.0, mean=0.5, nan=nan),
            grad=None if grad is None else Summary(shape, "float32", norm=grad),
            grad_fn=(op.capitalize() + "Backward0") if grad is not None else "",
            occurrence=self._occurrence(module, op, "train.py", line),
        )
        for k, src in enumerate(inputs):
            self.graph.edges.append(GraphEdge(src, i, k))
        return i

    def backward(self) -> Graph:
        """Mark every node with a grad as reached by backward, in reverse seq order."""
        g = self.graph
        reached = sorted((n for n in g.nodes.values() if n.grad is not None),
                         key=lambda n: -n.seq)
        for k, n in enumerate(reached):
            n.backward_seq = 1000 + k
            g.backward_order.append(n.id)
        return g


def mlp(iteration: int = 1, first_id: int = 1, *, hidden: int = 4, grads: bool = True,
        extra: bool = False, grad_scale: float = 1.0) -> Graph:
    """x -> enc.0 (linear) -> enc.1 (relu) -> head (linear) -> sum; params named per module."""
    g = GraphMaker(iteration, first_id)
    g.graph._structure_key = f"mlp-{hidden}-{extra}"
    gr = (lambda v: v * grad_scale) if grads else (lambda v: None)
    x = g.leaf("x", (2, 3))
    w = g.leaf("enc.0.weight", (hidden, 3), param=True, grad=gr(0.02))
    b = g.leaf("enc.0.bias", (hidden,), param=True, grad=gr(0.3))
    h = g.op("linear", [x, w, b], (2, hidden), module="enc.0", grad=gr(0.05), line=11)
    h = g.op("relu", [h], (2, hidden), module="enc.1", grad=gr(0.04), line=11)
    if extra:
        h = g.op("mul", [h, h], (2, hidden), module="enc.1", grad=gr(0.04), line=12)
    w2 = g.leaf("head.weight", (1, hidden), param=True, grad=gr(2.5))
    y = g.op("linear", [h, w2], (2, 1), module="head", grad=gr(0.5), line=13)
    g.op("sum", [y], (), grad=gr(1.0), line=14)
    return g.backward() if grads else g.graph


def stack(layers: int = 3, iteration: int = 1, first_id: int = 1) -> Graph:
    """encoder.layers.{i} (attn: matmul+softmax, mlp: linear+relu) x layers, then a loss."""
    g = GraphMaker(iteration, first_id)
    g.graph._structure_key = f"stack-{layers}"
    h = g.leaf("x", (4, 8))
    for i in range(layers):
        m = f"encoder.layers.{i}"
        wq = g.leaf(f"{m}.attn.wq", (8, 8), param=True, grad=0.1 * (i + 1))
        a = g.op("matmul", [h, wq], (4, 8), module=f"{m}.attn", grad=0.01, line=20)
        a = g.op("softmax", [a], (4, 8), module=f"{m}.attn", grad=0.01, line=21)
        w1 = g.leaf(f"{m}.mlp.weight", (8, 8), param=True, grad=0.2)
        f = g.op("linear", [a, w1], (4, 8), module=f"{m}.mlp", grad=0.02, line=30)
        f = g.op("relu", [f], (4, 8), module=f"{m}.mlp", grad=0.02, line=31)
        h = g.op("add", [f, h], (4, 8), module=m, grad=0.03, line=40)
    g.op("mean", [h], (), grad=1.0, line=50)
    return g.backward()
