"""The clusters a drawing nests its nodes in: one per module *call*, else one per module.

A graph recorded with module calls (``Graph.calls``, schema 2) gets one cluster per call:
the 60 calls of a shared block, or a Tree-RNN's ``combine`` called at every tree node, are
drawn as 60 boxes along the data flow, not one box that every edge runs up into and back
out of. A module with several calls labels each ``combine #3``. A graph without calls
(an older trace) nests by module path, one cluster per module, as before.

Clusters are named by keys that stay the same from one iteration to the next (``path``
and the call's number among that module's calls), so layouts are shared between them.
Calls of the outermost module (path "") draw no cluster: their ops are at top level.
"""

from __future__ import annotations

from dyngraph.capture.graph import Graph, GraphNode


class Scopes:
    """Cluster keys: "" is the top level; every other key has a parent, a path, a label."""

    def __init__(self, graph: Graph) -> None:
        # key -> (parent key, module path, label)
        self.info: dict[str, tuple[str, str, str]] = {"": ("", "", "")}
        self.call_key: dict[int, str] = {0: ""}
        self.per_call = bool(graph.calls)
        counts: dict[str, int] = {}
        for path, _ in graph.calls.values():
            counts[path] = counts.get(path, 0) + 1
        seen: dict[str, int] = {}
        for call, (path, parent) in graph.calls.items():  # in the order they were made
            up = self.call_key.get(parent, "")
            if not path:
                self.call_key[call] = up
                continue
            k = seen[path] = seen.get(path, 0) + 1
            key = f"{path}#{k}" if counts[path] > 1 else path
            if key in self.info:  # a path that also names a path-mode cluster
                key = f"{path}#{k}"
            self.call_key[call] = key
            self.info[key] = (up, path, key.replace("#", " #"))

    def of_op(self, node: GraphNode) -> str:
        """The cluster an op is drawn in."""
        if self.per_call and node.call in self.call_key:
            return self.call_key[node.call]
        return self.of_path(node.module)

    def of_path(self, path: str) -> str:
        """The cluster of module ``path`` when calls are not known (nested by path)."""
        if path in self.info:
            return path
        parent = self.of_path(path.rpartition(".")[0]) if "." in path else ""
        self.info[path] = (parent, path, path)
        return path

    def chain(self, key: str) -> list[str]:
        """Keys from the outermost cluster down to ``key`` (not including the top level)."""
        out = []
        while key:
            out.append(key)
            key = self.info[key][0]
        out.reverse()
        return out

    def path(self, key: str) -> str:
        return self.info[key][1]

    def parent(self, key: str) -> str:
        return self.info[key][0]

    def label(self, key: str) -> str:
        return self.info[key][2]

    def within(self, key: str, path: str) -> str | None:
        """The cluster of module ``path`` that holds ``key`` (itself or an ancestor)."""
        for k in reversed(self.chain(key)):
            if self.info[k][1] == path:
                return k
        return None

    def collapse_target(self, key: str, depth: int) -> str | None:
        """The outermost cluster around ``key`` whose module is deeper than ``depth``
        (it is drawn as one box), if any."""
        for k in self.chain(key):
            p = self.info[k][1]
            if p and p.count(".") + 1 > depth:
                return k
        return None
