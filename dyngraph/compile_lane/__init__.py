"""The compile lane: torch.compile's compiles, graph breaks, guards and recompiles, per
iteration, beside the op lane's dynamic graph.

Two ways to record a script that calls ``torch.compile`` (``--compile`` on the command line,
``set_mode`` here, before the script compiles anything):

- ``observe`` (the default once the script compiles): compiled code runs exactly as it
  would without dyngraph. Around each call of a compiled function or module the PyTorch
  capture steps aside (no ``TorchFunctionMode`` on the stack, no global hooks: Dynamo
  guards on the one and traces the other), and the compile lane records what torch.compile
  does as ``CompileEvent`` events of the trace: compile start and end, graph breaks (reason,
  type, hints, the user's line and stack), recompiles (the guard that failed, the input it
  names), each compiled entry's guards, the recompile limit, falling back to eager. Ops
  outside compiled code are captured as usual.
- ``eager``: ``torch.compile`` is switched off while recording (``force_eager``), so every
  op of the compiled code is seen in the op lane; nothing is compiled.

This package imports ``dyngraph.capture`` and never the reverse. Only ``torch_api.py``
imports torch: every private PyTorch API the lane reads is there, with the versions it was
checked on. ``lane.py`` speaks to it; the PyTorch capture loads both at the script's first
``torch.compile``. ``records.py`` and ``report.py`` are plain Python, read by ``dyngraph
summary``/``check`` and the debugger without torch.
"""

from __future__ import annotations

MODES = ("observe", "eager")
_mode: str | None = None


def set_mode(mode: str | None) -> None:
    """``"observe"``, ``"eager"``, or None (observe, the default)."""
    global _mode
    if mode is not None and mode not in MODES:
        raise ValueError(f"compile mode must be one of {', '.join(MODES)}, not {mode!r}")
    _mode = mode


def mode() -> str:
    """The mode recordings use for ``torch.compile``d code."""
    return _mode or "observe"
