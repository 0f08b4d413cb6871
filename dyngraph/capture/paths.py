"""File names as a shared trace shows them: relative to the script's folder, not the
machine's absolute paths.

``dyngraph record`` writes ``model.py`` or ``lib/data.py`` (relative to the recorded
script's folder), ``<site-packages>/torch/nn/modules/linear.py`` and
``<stdlib>/json/decoder.py`` for installed code; a file anywhere else keeps its absolute
path. ``record --absolute-paths`` keeps every path as it is. The debugger opens a relative
path against the folder the trace names its script in (``resolve``).

>>> display_path("/home/me/proj/lib/data.py", "/home/me/proj")
'lib/data.py'
"""

from __future__ import annotations

import os
import site
import sysconfig
from typing import Any


def _roots() -> list[tuple[str, str]]:
    roots: list[tuple[str, str]] = []
    for d in [*site.getsitepackages(), site.getusersitepackages(),
              sysconfig.get_paths().get("purelib", ""), sysconfig.get_paths().get("platlib", "")]:
        if d and os.path.isdir(d):
            roots.append((os.path.realpath(d), "<site-packages>"))
    stdlib = sysconfig.get_paths().get("stdlib", "")
    if stdlib:
        roots.append((os.path.realpath(stdlib), "<stdlib>"))
    # Longest first: a site-packages inside the standard library's folder wins.
    return sorted(set(roots), key=lambda r: -len(r[0]))


_ROOTS: list[tuple[str, str]] | None = None


def display_path(file: str, base: str) -> str:
    """``file`` as a shared trace shows it (see the module docstring); ``base`` is the
    recorded script's folder."""
    global _ROOTS
    if not file or file.startswith("<") or not os.path.isabs(file):
        return file
    real = os.path.realpath(file)
    base = os.path.realpath(base)
    if real == base or real.startswith(base + os.sep):
        return os.path.relpath(real, base)
    if _ROOTS is None:
        _ROOTS = _roots()
    for root, name in _ROOTS:
        if real.startswith(root + os.sep):
            return f"{name}/{os.path.relpath(real, root)}"
    return file


def resolve(file: str, script: str, near: str | None = None) -> str:
    """The file on this machine a trace's ``file`` names: a relative one against the
    folder of the recorded ``script`` (itself relative to ``near``, the trace file, or the
    working folder); ``<site-packages>/…`` and ``<stdlib>/…`` against this Python's."""
    if not file or os.path.isabs(file):
        return file
    global _ROOTS
    if file.startswith(("<site-packages>/", "<stdlib>/")):
        if _ROOTS is None:
            _ROOTS = _roots()
        name, rest = file.split("/", 1)
        for root, root_name in _ROOTS:
            if root_name == name and os.path.exists(os.path.join(root, rest)):
                return os.path.join(root, rest)
        return file
    folders = []
    script_dir = os.path.dirname(script)
    for start in ([os.path.dirname(os.path.abspath(near))] if near else []) + [os.getcwd()]:
        folders.append(os.path.join(start, script_dir) if not os.path.isabs(script_dir)
                       else script_dir)
    for folder in folders:
        candidate = os.path.normpath(os.path.join(folder, file))
        if os.path.exists(candidate):
            return candidate
    return file


def shared_graph(graph: Any, base: str) -> Any:
    """A copy of ``graph`` (a ``capture.graph.Graph``) naming its files as a shared trace
    does (``display_path`` against ``base``): what an export from the live debugger
    writes into its tooltips. Nodes without a file are shared, not copied."""
    from dataclasses import replace

    out = replace(graph, nodes=dict(graph.nodes))
    names: dict[str, str] = {}
    for node_id, node in graph.nodes.items():
        if node.file and os.path.isabs(node.file):
            name = names.get(node.file)
            if name is None:
                name = names[node.file] = display_path(node.file, base)
            if name != node.file:
                out.nodes[node_id] = replace(node, file=name)
    return out
