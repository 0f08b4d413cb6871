"""The adapter: every private PyTorch API the compile lane touches, and nothing else.

torch.compile tells what it does through three private channels, all read here:

- the structured-trace logger (``torch.__trace``, the records ``TORCH_TRACE`` writes and
  tlparse reads): one record per compile start, graph break, recompile reason, guard set
  and compile's metrics, each with a ``frame_id``/``frame_compile_id``;
- the compile callbacks (``torch._dynamo.callback_handler``): the start and end of each
  compile, timed here;
- ``torch._dynamo.utils.get_compilation_metrics()`` and ``counters``: the run's totals.

When the structured logger is missing (an older or newer torch that moved it), the lane
falls back to the text PyTorch prints with ``TORCH_LOGS=recompiles,graph_breaks,guards``,
taken from the same loggers ``TORCH_LOGS`` turns on (parsed in ``records.py``); when
neither is there, it says "compile events unavailable on torch X" and the script runs on.

Nothing here changes what is compiled: a handler on a logger, a callback in a list. The
loggers keep the levels and propagation they had, so the user's own ``TORCH_LOGS`` output
is what it would be without dyngraph (a text-fallback logger is set to DEBUG to hear it,
with propagation off unless ``TORCH_LOGS`` already turned it on; the ``guards`` text is
heard only if ``TORCH_LOGS`` asked for it: see ``HEARD_ONLY``).

Checked on (the lane's tests pass on each; other versions try the same names and say what
they miss):
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import torch

CHECKED_VERSIONS: dict[str, str] = {
    # torch (major.minor): what was checked there
    "2.13": "structured trace, compile callbacks, get_compilation_metrics, TORCH_LOGS text",
}
__doc__ = (__doc__ or "") + "".join(
    f"\n- torch {v}: {what}" for v, what in CHECKED_VERSIONS.items()) + "\n"

TRACE_LOGGER = "torch.__trace"
# TORCH_LOGS artifact -> the loggers that print it (``getArtifactLogger(module, name)``
# names a logger ``<module>.__<name>``).
TEXT_LOGGERS: dict[str, tuple[str, ...]] = {
    "recompiles": ("torch._dynamo.guards.__recompiles",),
    "graph_breaks": ("torch._dynamo.symbolic_convert.__graph_breaks",
                     "torch._dynamo.exc.__graph_breaks",
                     "torch._dynamo.convert_frame.__graph_breaks"),
    "guards": ("torch._dynamo.guards.__guards",),
}
# Artifacts heard only when the user's TORCH_LOGS turned them on: with ``guards`` on,
# Dynamo builds more guard code (get_compilation_metrics' guard_count grew from 73 to 102
# on the demo), so turning it on ourselves would change what is compiled.
HEARD_ONLY = frozenset({"guards"})
# "torch._dynamo hit config.recompile_limit (8)": a plain warning of this logger.
LIMIT_LOGGER = "torch._dynamo.convert_frame"

Record = Callable[[str, dict[str, Any], str], None]  # (record name, metadata, payload)
Text = Callable[[str, str, str], None]  # (artifact, message as TORCH_LOGS prints it, id)
Timing = Callable[[str, str, str, int], None]  # ("start"|"end", compile id, trigger, ns)


def version() -> str:
    return str(torch.__version__).split("+")[0]


def checked() -> bool:
    """Was this torch's major.minor checked (``CHECKED_VERSIONS``)?"""
    return ".".join(version().split(".")[:2]) in CHECKED_VERSIONS


_dynamo: Any = None


def dynamo() -> Any:
    """``torch._dynamo``, imported (the first ``torch.compile`` call imports it anyway);
    kept, since every compiled call the lane runs asks for it."""
    global _dynamo
    if _dynamo is None:
        import torch._dynamo

        _dynamo = torch._dynamo
    return _dynamo


# -- the structured trace -------------------------------------------------------------------
class _TraceHandler(logging.Handler):
    """Receives the records ``torch._logging.trace_structured`` makes: the metadata dict
    and the payload text come in the record's ``extra``."""

    def __init__(self, on_record: Record) -> None:
        super().__init__(logging.DEBUG)
        self.on_record = on_record

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        payload = getattr(record, "payload", None)
        for name in metadata:
            if name not in _CONTEXT_KEYS:
                self.on_record(name, metadata, payload if isinstance(payload, str) else "")
                return

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass  # a bug of ours must never reach the user's compile


# Keys trace_structured adds beside the record's own name.
_CONTEXT_KEYS = frozenset({"rank", "compiled_autograd_id", "frame_id", "frame_compile_id",
                           "attempt", "has_payload", "stack", "subgraph_name", "severity",
                           "timestamp", "pathname", "thread"})


class _TextHandler(logging.Handler):
    def __init__(self, artifact: str, on_text: Text) -> None:
        super().__init__(logging.DEBUG)
        self.artifact = artifact
        self.on_text = on_text

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - torch's own format error: not ours to raise
            return
        self.on_text(self.artifact, message, current_compile_id())

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802
        pass


class Listener:
    """Hears torch.compile. ``start()`` returns the source it uses: ``"structured"``,
    ``"text"`` (the TORCH_LOGS fallback) or ``""`` with ``missing`` saying why none."""

    def __init__(self, on_record: Record, on_text: Text, on_timing: Timing,
                 force_text: bool = False) -> None:
        self.on_record = on_record
        self.on_text = on_text
        self.on_timing = on_timing
        self.force_text = force_text
        self.source = ""
        self.missing = ""
        self._undo: list[Callable[[], None]] = []
        self._started: dict[str, int] = {}

    def start(self) -> str:
        try:
            d = dynamo()
        except Exception as exc:  # noqa: BLE001 - any import failure means: no compiler
            self.missing = f"torch._dynamo does not import ({type(exc).__name__})"
            return ""
        self._callbacks(d)
        self._limit_logger()
        if not self.force_text and self._structured():
            self.source = "structured"
        elif self._text_loggers():
            self.source = "text"
        else:
            self.missing = "neither the structured trace logger nor the TORCH_LOGS loggers"
        return self.source

    def stop(self) -> None:
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:  # noqa: BLE001,S110 - torch moved on: nothing left to undo
                pass
        self._undo = []

    def callbacks_lost(self) -> bool:
        """``torch._dynamo.reset()`` clears the compile callbacks: are ours gone?"""
        handler = getattr(dynamo(), "callback_handler", None)
        return handler is not None and self._on_start not in getattr(
            handler, "start_callbacks", [self._on_start])

    def renew_callbacks(self) -> None:
        self._callbacks(dynamo())

    # -- the parts -----------------------------------------------------------------------
    def _structured(self) -> bool:
        internal = getattr(getattr(torch, "_logging", None), "_internal", None)
        trace_log = getattr(internal, "trace_log", None)
        if not isinstance(trace_log, logging.Logger) or trace_log.name != TRACE_LOGGER:
            return False
        handler = _TraceHandler(self.on_record)
        trace_log.addHandler(handler)
        self._undo.append(lambda: trace_log.removeHandler(handler))
        return True

    def _text_loggers(self) -> bool:
        found = False
        self._enable_recompiles_text()
        manager = logging.Logger.manager.loggerDict
        for artifact, names in TEXT_LOGGERS.items():
            for name in names:
                if name not in manager:  # torch never made it: not a logger it uses
                    continue
                log = logging.getLogger(name)
                if artifact in HEARD_ONLY and not log.isEnabledFor(logging.DEBUG):
                    continue
                handler = _TextHandler(artifact, self.on_text)
                level, propagate = log.level, log.propagate
                if not log.isEnabledFor(logging.DEBUG):  # TORCH_LOGS did not turn it on:
                    log.propagate = False  # hear it without printing it
                    log.setLevel(logging.DEBUG)
                log.addHandler(handler)
                self._undo.append(_restore(log, handler, level, propagate))
                found = True
        return found

    def _enable_recompiles_text(self) -> None:
        """Dynamo writes the ``recompiles`` text only when ``TORCH_LOGS`` named it (it asks
        ``log_state``, not the logger): name it there too, for our handler alone."""
        internal = getattr(getattr(torch, "_logging", None), "_internal", None)
        state = getattr(internal, "log_state", None)
        names = getattr(state, "artifact_names", None)
        if isinstance(names, set) and "recompiles" not in names:
            names.add("recompiles")
            self._undo.append(lambda: names.discard("recompiles"))

    def _limit_logger(self) -> None:
        log = logging.getLogger(LIMIT_LOGGER)
        handler = _TextHandler("limit", self.on_text)
        handler.setLevel(logging.WARNING)
        log.addHandler(handler)
        self._undo.append(lambda: log.removeHandler(handler))

    def _callbacks(self, d: Any) -> None:
        handler = getattr(d, "callback_handler", None)
        if handler is None or not hasattr(handler, "register_start_callback"):
            return
        handler.register_start_callback(self._on_start)
        handler.register_end_callback(self._on_end)

        def undo() -> None:
            for name, cb in (("remove_start_callback", self._on_start),
                             ("remove_end_callback", self._on_end)):
                try:
                    getattr(handler, name)(cb)
                except ValueError:
                    pass  # cleared by torch._dynamo.reset()

        self._undo.append(undo)

    def _on_start(self, args: Any) -> None:
        compile_id, trigger = _callback_args(args)
        now = time.perf_counter_ns()
        self._started[compile_id] = now
        self.on_timing("start", compile_id, trigger, 0)

    def _on_end(self, args: Any) -> None:
        compile_id, trigger = _callback_args(args)
        t0 = self._started.pop(compile_id, None)
        took = time.perf_counter_ns() - t0 if t0 is not None else 0
        self.on_timing("end", compile_id, trigger, took)


def _restore(log: logging.Logger, handler: logging.Handler, level: int,
             propagate: bool) -> Callable[[], None]:
    def undo() -> None:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate

    return undo


def interned_strings() -> dict[int, str]:
    """The structured trace's table of file names (index -> name). A name is sent as a
    ``str`` record only the first time it is interned, whoever listened then: names
    interned before the lane listened (an earlier compile in the process) are read here."""
    structured = getattr(getattr(torch, "_logging", None), "structured", None)
    table = getattr(structured, "INTERN_TABLE", None)
    if not isinstance(table, dict):
        return {}
    return {index: name for name, index in table.items() if isinstance(index, int)}


def current_compile_id() -> str:
    """The id (``"0/1"``) of the compile under way, or ""."""
    guards = getattr(torch, "_guards", None)
    context = getattr(guards, "CompileContext", None)
    try:
        cid = context.current_compile_id() if context is not None else None
    except Exception:  # noqa: BLE001 - no compile context: not in a compile
        return ""
    if cid is None or getattr(cid, "frame_id", None) is None:
        return ""
    return f"{cid.frame_id}/{cid.frame_compile_id}"


def _callback_args(args: Any) -> tuple[str, str]:
    trigger = getattr(getattr(args, "callback_trigger", None), "name", "") or ""
    return str(getattr(args, "compile_id", "") or ""), trigger.lower()


# -- the stance (compiled code not made through the lane's torch.compile) --------------------
def stance() -> Any:
    """Dynamo's current stance object (``torch.compiler.set_stance`` sets it)."""
    return dynamo().eval_frame._stance


def set_stance(value: Any) -> None:
    """Put back a stance object ``stance`` gave (``set_stance`` itself refuses to run inside
    a compiled region; the lane swaps stances only outside one)."""
    dynamo().eval_frame._stance = value


def on_eager_entry(eager: Any, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` (once) when compiled code starts to run under the stance ``eager``:
    code compiled out of the lane's sight. Dynamo's compiled functions look their stance
    up through ``eval_frame._callback_from_stance`` on every call; returns the undo."""
    frame = dynamo().eval_frame
    original = getattr(frame, "_callback_from_stance", None)
    if original is None:
        return lambda: None

    def callback_from_stance(*args: Any, **kwargs: Any) -> Any:
        if frame._stance is eager and frame._callback_from_stance is callback_from_stance:
            frame._callback_from_stance = original  # (once is enough)
            callback()
        return original(*args, **kwargs)

    frame._callback_from_stance = callback_from_stance

    def undo() -> None:
        if frame._callback_from_stance is callback_from_stance:
            frame._callback_from_stance = original

    return undo


def eager_stance() -> Any:
    """A stance object that runs compiled code eagerly (``"force_eager"``)."""
    prior = stance()
    torch.compiler.set_stance("force_eager")
    eager = stance()
    set_stance(prior)
    return eager


# -- what compiled code looks like from outside ---------------------------------------------
def is_compiled_module(obj: Any) -> bool:
    """Is ``obj`` what ``torch.compile(module)`` returns (an ``OptimizedModule``, whose
    ``forward`` runs the compiled code)?"""
    optimized = getattr(getattr(dynamo(), "eval_frame", None), "OptimizedModule", None)
    return optimized is not None and isinstance(obj, optimized) and callable(
        vars(obj).get("forward"))
