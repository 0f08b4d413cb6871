"""Which Python frames are the user's: the call stack a paused script shows.

A pause happens deep inside dyngraph (the agent, the tracer, ``apply``) or inside a library
that made the op (PyTorch's ``TorchFunctionMode`` callback, ``nn.Module.__call__``). The
user wants the frames of their own code: the innermost one is where the op was written.
A frame is the user's when its file is outside the dyngraph package (the bundled demos
count as user code, as for source lines) and outside the installed libraries and the
standard library. The decision is cached per file name.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from types import FrameType, TracebackType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep
MAX_FRAMES = 200  # deeper stacks (recursion) show their innermost frames


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except AttributeError:  # pragma: no cover - some embedded interpreters lack them
        pass
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


_LIBRARIES = _library_dirs()
_user_files: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """True for the script's own files: not dyngraph, not a library, not frozen code."""
    known = _user_files.get(filename)
    if known is not None:
        return known
    if filename.startswith("<"):
        user = not filename.startswith("<frozen")
    else:
        path = os.path.abspath(filename)
        if path.startswith(_PACKAGE_DIR):
            user = path.startswith(_DEMOS_DIR)
        else:
            real = os.path.realpath(path)
            user = not real.startswith(_LIBRARIES) or real.startswith(_DEMOS_DIR)
    _user_files[filename] = user
    return user


def user_frames(frame: FrameType | None) -> list[FrameType]:
    """The user's frames on the stack ending at ``frame``, innermost first."""
    found: list[FrameType] = []
    while frame is not None and len(found) < MAX_FRAMES:
        if is_user_file(frame.f_code.co_filename):
            found.append(frame)
        frame = frame.f_back
    return found


def traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """The user's frames of a traceback with the line each was at, innermost first.

    A post-mortem pause shows where the exception went through, not the handler's stack;
    ``tb_lineno`` is the line that raised (a frame's ``f_lineno`` may have moved on).
    """
    found: list[tuple[FrameType, int]] = []
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            found.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    found.reverse()
    return found[:MAX_FRAMES]


def paused_stack(main_ident: int) -> list[tuple[FrameType, int]]:
    """The user's frames where this thread is paused, innermost first, with their lines.

    A pause on a thread that runs no user code (a PyTorch autograd worker) shows the main
    thread's stack instead: that is where the user's ``loss.backward()`` waits.
    """
    frames = user_frames(sys._getframe(1))
    if not frames:
        main = sys._current_frames().get(main_ident)
        frames = user_frames(main) if main is not None else []
    return [(f, f.f_lineno) for f in frames]
