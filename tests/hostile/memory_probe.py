"""``python memory_probe.py GOOD TRACE...``: every reader over each TRACE, in this process;
one JSON line per file: how it ended, the events it holds, and how far the process's peak
resident memory grew over what it was before that file (after a warm-up on GOOD, a trace
that loads, so that imports and caches are not counted). Linux: the peak is reset before
each file (``/proc/self/clear_refs``), and the memory freed after one is given back.

A separate process, so that the peak is this run's alone. Its address space is capped
(``CAP_MB`` over what the warm-up used): a reader that would take gigabytes fails here
with MemoryError, reported, instead of taking the machine's memory.
"""

from __future__ import annotations

import ctypes
import gc
import json
import resource
import sys
import tempfile
from pathlib import Path

import tracefuzz as fz

import dyngraph as dg
from dyngraph.errors import TraceFileError

CAP_MB = 1500


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def _rss_mb() -> float:
    return _status_mb("VmRSS")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # (resets VmHWM, the peak resident size, to the current one)


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _trim() -> None:
    """Give the memory freed back to the system (glibc keeps it in its heap otherwise,
    and the next file's peak would start from there)."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def main(good: str, paths: list[str]) -> None:
    out = Path(tempfile.mkdtemp())
    fz.exercise(Path(good), out / "warm-up")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + CAP_MB * 2**20, hard))
    for i, path in enumerate(paths):
        _trim()
        _reset_peak()
        baseline = _rss_mb()
        try:
            outcome = fz.exercise(Path(path), out / f"out{i}", limit=120.0)
        except fz.Unexpected as exc:
            outcome = f"UNEXPECTED {exc}"
        except MemoryError:
            outcome = "UNEXPECTED MemoryError"
        peak = _status_mb("VmHWM")
        events = 0
        if outcome == "ok":
            try:
                events = len(dg.read_trace(path).events)
            except TraceFileError:
                pass
        print(json.dumps({"path": path, "outcome": outcome, "events": events,
                          "growth_mb": round(peak - baseline, 1)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
