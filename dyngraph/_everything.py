"""What ``import dyngraph`` loaded before its names were lazy: every engine name bound on
the package root and every submodule imported. ``dyngraph/__init__.py`` imports this module
at the first engine name a script reads.

A module rather than a function so that Python's import locks order the threads: a second
thread reading its first engine name while the first thread's load is under way waits for
it, instead of importing the engine's modules alongside and finding one half made.
"""

import importlib

import dyngraph as _root

for _name, (_module, _attribute) in _root._ENGINE_NAMES.items():
    setattr(_root, _name, getattr(importlib.import_module(_module, "dyngraph"), _attribute))
for _name in sorted(_root._SUBMODULES):
    importlib.import_module(f"dyngraph.{_name}")
