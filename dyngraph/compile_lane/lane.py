"""The compile lane at work: hears torch.compile (``torch_api``), turns what it hears into
``CompileEvent`` rows of the trace (``records``), and runs compiled code out of the
capture's sight.

``CompileLane(capture)`` is made by the PyTorch capture at the script's first
``torch.compile`` in ``observe`` mode. ``wrap`` gives back what ``torch.compile`` returned,
its calls taken out of the capture's sight: ``capture.aside()`` removes the mode from the
stack and undoes every global hook and patch for the call, and puts them back after. The
outermost compiled call of the capture's thread does this; calls nested in it are already
out of sight.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from ..capture import backends
from ..capture.tracing import tracer
from . import torch_api
from .records import Assembler, Fact

OBSERVE_NOTE = ("torch.compile observed: compiled code runs as without dyngraph, its ops "
                "unseen (--compile eager shows them)")
# Tests (and a user whose torch's structured trace misbehaves) choose the text fallback.
SOURCE_ENV = "DYNGRAPH_COMPILE_SOURCE"


class CompileLane:
    """Records compile events while a recording listens; see the module docstring."""

    def __init__(self, capture: Any) -> None:
        self.capture = capture
        self.owner = capture.owner
        self.depth = 0
        self.assembler = Assembler(self._emit, tracer.is_internal, torch_api.interned_strings)
        self.listener: torch_api.Listener | None = None
        self.source = ""
        self._text_metrics_seen = 0

    # -- start and stop ------------------------------------------------------------------------
    def start(self) -> None:
        force_text = os.environ.get(SOURCE_ENV, "") == "text"
        self.listener = torch_api.Listener(self._record, self._text, self._timing,
                                           force_text=force_text)
        self.source = self.listener.start()
        backends.note(OBSERVE_NOTE)
        if not self.source:
            reason = (f"compile events unavailable on torch {torch_api.version()}: "
                      f"{self.listener.missing}")
            self._emit(Fact("unavailable", reason=reason))
            backends.note(reason)
        elif not torch_api.checked():
            backends.note(f"compile events read from torch {torch_api.version()}, a version "
                          f"dyngraph was not checked on ({', '.join(torch_api.CHECKED_VERSIONS)})")

    def stop(self) -> None:
        self.flush()
        if self.listener is not None:
            self.listener.stop()
            self.listener = None

    # -- compiled calls ------------------------------------------------------------------------
    def wrap(self, compiled: Any) -> Any:
        """``compiled`` (a ``torch.compile`` result) with its calls out of the capture's
        sight. A compiled module keeps its class: its ``forward`` is wrapped."""
        if isinstance(getattr(compiled, "__dict__", None), dict) and "_orig_mod" in vars(
                compiled) and callable(vars(compiled).get("forward")):
            compiled.forward = self._wrap_function(compiled.forward)
            return compiled
        if callable(compiled):
            return self._wrap_function(compiled)
        return compiled  # (a decorator factory is wrapped when it is applied)

    def _wrap_function(self, fn: Any) -> Any:
        lane = self

        @functools.wraps(fn)
        def observed(*args: Any, **kwargs: Any) -> Any:
            if lane.depth or threading.get_ident() != lane.owner:
                return fn(*args, **kwargs)
            if tracer.listening:
                # A compiled call after a backward ended begins the next iteration, as an
                # op would (its ops are not seen: without this, iterations run together).
                tracer.flush_iteration()
            restore = lane.capture.aside()
            lane.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                lane.depth -= 1
                restore()
                lane.after_call()

        observed._dyngraph_observed = True  # type: ignore[attr-defined]
        return observed

    def after_call(self) -> None:
        """Back in the user's code: emit what waits, let a debugger pause for it."""
        listener = self.listener
        if listener is not None and listener.callbacks_lost():  # torch._dynamo.reset()
            listener.renew_callbacks()
        self.flush()
        backends.safe_point()

    def flush(self) -> None:
        if self.source == "text":
            self.assembler.flush(self._metrics())

    # -- what the listener hears ---------------------------------------------------------------
    def _record(self, name: str, metadata: dict[str, Any], payload: str) -> None:
        self.assembler.record(name, metadata, payload)

    def _text(self, artifact: str, message: str, compile_id: str) -> None:
        self.assembler.text(artifact, message, compile_id)

    def _timing(self, which: str, compile_id: str, trigger: str, ns: int) -> None:
        self.assembler.timing(which, compile_id, trigger, ns)

    def _emit(self, fact: Fact) -> None:
        if tracer.listening:
            tracer.record("compile", *fact)

    def _metrics(self) -> list[dict[str, Any]]:
        try:
            metrics = list(torch_api.dynamo().utils.get_compilation_metrics())
        except Exception:  # noqa: BLE001 - no metrics on this torch: frames stay unnamed
            return []
        keys = ("compile_id", "co_name", "co_filename", "co_firstlineno", "fail_type",
                "fail_reason", "fail_user_frame_filename", "fail_user_frame_lineno",
                "graph_op_count", "guard_count", "duration_us")
        return [{k: getattr(m, k, None) for k in keys} for m in metrics]
