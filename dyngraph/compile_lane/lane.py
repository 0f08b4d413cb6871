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
EARLY_NOTE = ("functions torch.compile'd before the recording began run eagerly while it "
              "records (compile them inside it to observe them)")
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
        # Outside the lane's compiled calls, compiled code runs eagerly: code compiled
        # before the capture began (not made through its torch.compile) would otherwise
        # run with the capture's mode on the stack, which Dynamo traces. Inside them, the
        # script's own stance holds.
        self._eager: Any = None
        self._stance: Any = None
        self._undo_early: Any = None

    # -- start and stop ------------------------------------------------------------------------
    def start(self, early: bool = False) -> None:
        """Make compiled code outside the lane's calls run eagerly; ``early``: the capture
        starts after the script imported torch._dynamo, so something may have been compiled
        out of the lane's sight already (the first time such code runs, a note says so).
        Listening begins with the first ``torch.compile`` (``wrap``): until then a
        recording shows no compile lane."""
        global _running
        self._stance = torch_api.stance()
        self._eager = torch_api.eager_stance()
        torch_api.set_stance(self._eager)
        _running = self
        if early:
            self._undo_early = torch_api.on_eager_entry(
                self._eager, lambda: backends.note(EARLY_NOTE))

    def _listen(self) -> None:
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
        global _running
        if _running is self:
            _running = None
        self.flush()
        if self._undo_early is not None:
            self._undo_early()
            self._undo_early = None
        if self._eager is not None and torch_api.stance() is self._eager:
            torch_api.set_stance(self._stance)  # (a stance the script set since stays)
        self._eager = None
        if self.listener is not None:
            self.listener.stop()
            self.listener = None

    # -- compiled calls ------------------------------------------------------------------------
    def wrap(self, compiled: Any) -> Any:
        """``compiled`` (a ``torch.compile`` result) with its calls out of the capture's
        sight. A compiled module keeps its class: its ``forward`` is wrapped."""
        if self.listener is None:
            self._listen()
        if torch_api.is_compiled_module(compiled):
            # (Dynamo, meeting it inside another compiled function, traces its ``_orig_mod``
            # and never this ``forward``: nested, it is as if we were not there.)
            compiled.forward = self._wrap_function(compiled.forward)
            return compiled
        if callable(compiled):
            return self._wrap_function(compiled)
        return compiled  # (a decorator factory is wrapped when it is applied)

    def _wrap_function(self, fn: Any) -> Any:
        return _observed(fn)

    def call(self, fn: Any, args: Any, kwargs: Any) -> Any:
        """Run compiled ``fn`` out of the capture's sight, with the script's stance."""
        if self.listener is None:  # (compiled in an earlier recording)
            self._listen()
        if tracer.listening:
            # A compiled call after a backward ended begins the next iteration, as an op
            # would (its ops are not seen: without this, iterations run together).
            tracer.flush_iteration()
        restore = self.capture.aside()
        stance = torch_api.stance()
        if stance is not self._eager:
            self._stance = stance  # the script set one since: it holds
        torch_api.set_stance(self._stance)
        self.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self.depth -= 1
            self._stance = torch_api.stance()
            torch_api.set_stance(self._eager)
            restore()
            self.after_call()

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


_running: CompileLane | None = None  # the lane of the recording under way


def _observed(fn: Any) -> Any:
    """``fn`` (compiled code) run by the lane of whichever recording is under way when it
    is called: one made in an earlier recording is observed in a later one, and runs as
    it is outside any. Nested in another compiled function, Dynamo never runs this: it
    traces ``_torchdynamo_inline`` (copied from ``fn`` by ``functools.wraps``) instead."""

    @functools.wraps(fn)
    def observed(*args: Any, **kwargs: Any) -> Any:
        lane = _running
        if lane is None or lane.depth or threading.get_ident() != lane.owner:
            return fn(*args, **kwargs)
        return lane.call(fn, args, kwargs)

    observed._dyngraph_observed = True  # type: ignore[attr-defined]
    return observed
