"""Python's cyclic collector paused while dyngraph builds big acyclic structures.

Decoding or encoding a trace frame, the debugger's outbox, the UI's loader and the
exporters each make thousands of lists and tuples that live on and hold no cycles; with
the collector running, its young collections walk them again and again while they are
built, for nothing. So they pause it, and it runs again, as usual, afterwards.

The collector is one per process and these pauses come from several threads at once. Each
used to remember ``gc.isenabled()`` for itself, so one that began while another thread's
pause was on took the collector for one the program had turned off: it skipped what it
does only for a program that collects (settling a kept frame's rows), and a pause that
outlived the first one's left it on again early. Here the pauses are counted: the
outermost reads the program's own setting, the last to end restores it, and
``program_collects`` answers for the program, not for whichever pause is on.
"""

from __future__ import annotations

import gc
import threading

# Re-entrant: a collection can run at an allocation inside ``pause`` and its finalizers
# may pause again on the same thread.
_lock = threading.RLock()
_depth = 0
_program_enabled = True  # the program's setting when the outermost pause began


def pause() -> None:
    """No automatic collection until the matching ``resume``."""
    global _depth, _program_enabled
    with _lock:
        if _depth == 0:
            _program_enabled = gc.isenabled()
            gc.disable()
        _depth += 1


def resume() -> None:
    """End one ``pause``; the last one ends gives the collector back as the program had it.
    (A program that turned it off during a pause gets it on again: while paused, its
    ``gc.disable()`` cannot be told from ours.)"""
    global _depth
    with _lock:
        if _depth == 0:
            raise RuntimeError("collector.resume() without a pause")
        _depth -= 1
        if _depth == 0 and _program_enabled:
            gc.enable()


class _Paused:
    """``with paused():``, allocating nothing: a ``with`` that made a generator could itself
    start the collection it is there to hold off (a finalizer that prints, run inside the
    debugger's outbox while it holds its numbering lock, waited on the script's thread)."""

    __slots__ = ()

    def __enter__(self) -> None:
        pause()

    def __exit__(self, *exc_info: object) -> None:
        resume()


_PAUSED = _Paused()


def paused() -> _Paused:
    """No automatic collection inside the ``with`` block."""
    return _PAUSED


def program_collects() -> bool:
    """Does the program let the collector run, whatever dyngraph's pauses do meanwhile?"""
    with _lock:
        return gc.isenabled() or (_depth > 0 and _program_enabled)
