"""What a debugging session leaves behind: the script's output on the terminal, and the
``dyngraph-out/`` folder every file the debugger writes goes to.

After ``q`` the terminal shows what the script printed and its traceback, as if it had
run without the debugger (pdb's habit). A very long output is cut to its tail, with a line
saying where the whole of it was written.

>>> out_dir("train.py")                          # doctest: +SKIP
PosixPath('dyngraph-out')
>>> print_output(model.output, model.exception)  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

OUT_DIR = "dyngraph-out"
TAIL_LINES = 200  # past TOO_LONG lines of output, only the last TAIL_LINES are printed
TOO_LONG = 1000


def out_dir(near: str | os.PathLike[str] | None) -> Path:
    """``dyngraph-out/`` beside ``near`` (a script or a trace), or in the working folder;
    made if needed."""
    base = Path(near).resolve().parent if near else Path.cwd()
    path = base / OUT_DIR
    try:
        path.mkdir(exist_ok=True)
    except OSError:  # a folder we may not write to (a system script): the working one
        path = Path.cwd() / OUT_DIR
        path.mkdir(exist_ok=True)
    return path


def shown_path(path: Path) -> str:
    """``path`` as a notice names it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def print_output(chunks: Sequence[tuple[str, str]], exception: Any = None,
                 near: str | None = None, stdout: TextIO | None = None,
                 stderr: TextIO | None = None) -> Path | None:
    """Write the script's ``(stream, text)`` output back to the terminal, then its
    traceback if the output did not hold it. Past ``TOO_LONG`` lines the tail is written,
    after a line naming the file (in ``dyngraph-out/`` beside ``near``) with all of it;
    that file's path is returned (None when everything was printed)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    chunks = list(chunks)
    text = "".join(t for _, t in chunks)
    tb = getattr(exception, "traceback", "") or ""
    if tb and tb.strip() not in text:
        chunks.append(("stderr", tb if tb.endswith("\n") else tb + "\n"))
    lines = sum(t.count("\n") for _, t in chunks)
    saved = None
    if lines > TOO_LONG:
        saved = out_dir(near) / f"output-{os.getpid()}.txt"
        saved.write_text("".join(t for _, t in chunks), encoding="utf-8", errors="replace")
        chunks = _tail(chunks, TAIL_LINES)
        stderr.write(f"dyngraph: the script printed {lines:,} lines; the last {TAIL_LINES} "
                     f"follow, all of them are in {shown_path(saved)}\n")
    for stream, piece in chunks:
        (stderr if stream == "stderr" else stdout).write(piece)
    stdout.flush()
    stderr.flush()
    return saved


def _tail(chunks: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """The chunks holding the last ``n`` lines (the first of them cut to its line)."""
    out: list[tuple[str, str]] = []
    left = n
    for stream, text in reversed(chunks):
        count = text.count("\n")
        if count >= left:
            lines = text.split("\n")
            keep = "\n".join(lines[-(left + 1):])
            out.append((stream, keep))
            break
        out.append((stream, text))
        left -= count
    return list(reversed(out))
