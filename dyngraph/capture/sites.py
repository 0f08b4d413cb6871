"""Where an op happened: the first frame outside dyngraph and the backends' libraries.

The tracer's source lookup (``Tracer`` takes it from ``SourceSites``). Every op asks once,
so it is built to cost little per frame: each code object is looked up by its id (hashing
a code object hashes its whole body every time), library code is marked as such once per
code object, and a user frame's answer is remembered per call site (code object and
instruction offset), with the file named as events name it (``show_paths_relative``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Demos ship inside the package but are user code: their lines are the interesting ones.
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep
_NO_SITE = ("", 0, "")
_LIBRARY = ("library code",)  # (an entry of ``SourceSites.sites``)
_getframe = sys._getframe


class SourceSites:
    """The source lookup of ``Tracer``: ``source``, and what it remembers."""

    def __init__(self) -> None:
        # file name -> is it library code (dyngraph's own, or a backend's library)?
        self._internal_files: dict[str, bool] = {}
        # file name -> as events name it (relative to the script's folder), for a trace to
        # share; None: absolute, as the live debugger needs them (show_paths_relative).
        self.display: dict[str, str] | None = None
        self._path_base = ""
        self._internal_dirs: tuple[str, ...] = (_PACKAGE_DIR,)
        # id(code) -> (code, {instruction offset: line}): see ``line_of``
        self.lines: dict[int, tuple[Any, dict[int, int]]] = {}
        # id(code) -> (code, {instruction offset: (file as shown, line, function)}): the
        # answers of ``source`` per call site; ``_LIBRARY`` for library code (kept in
        # ``_library_codes`` while it is there)
        self.sites: dict[int, Any] = {}
        self._library_codes: list[Any] = []

    def add_library(self, directory: str) -> None:
        """Treat code under ``directory`` as library code: an op's source line is the first
        frame outside dyngraph and every such directory (a backend adds its library's)."""
        directory = os.path.join(os.path.abspath(directory), "")
        if directory not in self._internal_dirs:
            self._internal_dirs = (*self._internal_dirs, directory)
            self._internal_files = {}
            self.sites.clear()
            self._library_codes.clear()

    def source(self, depth: int = 2) -> tuple[str, int, str]:
        """The first frame outside dyngraph and the backends' libraries: (file, line,
        function).

        Each code object is looked up by its id (hashing a code object hashes its whole
        body every time), so the walk costs a dict lookup per frame; whether the code is
        library code is decided once per code object, and the answer once per call site
        (code object and instruction offset).
        """
        frame = _getframe(depth)
        get = self.sites.get
        while frame is not None:
            code = frame.f_code
            entry = get(id(code))
            if entry is _LIBRARY:
                frame = frame.f_back  # type: ignore[assignment]
                continue
            if entry is None or entry[0] is not code:
                entry = self._code_sites(code)
                if entry is _LIBRARY:
                    frame = frame.f_back  # type: ignore[assignment]
                    continue
            found = entry[1]
            site = found.get(frame.f_lasti)
            if site is None:
                site = found[frame.f_lasti] = self._site(frame)
            return site  # type: ignore[no-any-return]
        return _NO_SITE

    def _site(self, frame: Any) -> tuple[str, int, str]:
        code = frame.f_code
        name = code.co_filename
        if self.display is not None:
            name = self.shown_file(name)
        return name, self.line_of(frame), code.co_name

    def _code_sites(self, code: Any) -> Any:
        """The entry of ``sites`` for ``code``, new: (code, {instruction offset: source}),
        or ``_LIBRARY`` for library code, whose code object is then kept (its id is never
        another's). A user's entry holds its code object for the same reason."""
        if len(self.sites) > 10_000:
            self.sites.clear()
            self._library_codes.clear()
        if self.is_internal(code.co_filename):
            self._library_codes.append(code)
            entry: Any = _LIBRARY
        else:
            entry = (code, {})
        self.sites[id(code)] = entry
        return entry

    def show_paths_relative(self, base: str | None) -> None:
        """From now on name files as a shared trace does (``paths.display_path``, relative
        to ``base``, the script's folder); None: as they are (absolute)."""
        self.display = {} if base else None
        self._path_base = base or ""
        self.sites.clear()  # (they hold the names as shown)
        self._library_codes.clear()

    def shown_file(self, name: str) -> str:
        """``name`` as events carry it (see ``show_paths_relative``), remembered."""
        shown = self.display.get(name) if self.display is not None else name
        if shown is None:
            from .paths import display_path

            shown = self.display[name] = display_path(name, self._path_base)  # type: ignore[index]
        return shown

    def line_of(self, frame: Any) -> int:
        """``frame.f_lineno``, remembered per code object and instruction offset: Python
        finds a line by walking the code's line table up to the current instruction,
        thousands of machine instructions in a long function (a script's module level),
        for every op."""
        code = frame.f_code
        lines = self.lines.get(id(code))
        if lines is None or lines[0] is not code:
            lines = self.code_lines(code)
        line = lines[1].get(frame.f_lasti)
        if line is None:
            line = lines[1][frame.f_lasti] = frame.f_lineno
        return line  # type: ignore[no-any-return]

    def code_lines(self, code: Any) -> tuple[Any, dict[int, int]]:
        """The (code, {instruction offset: line}) entry of ``lines`` for ``code``, new.
        The entry holds the code object, so its id is not reused while it is there."""
        if len(self.lines) > 10_000:
            self.lines.clear()
        entry: tuple[Any, dict[int, int]] = (code, {})
        self.lines[id(code)] = entry
        return entry

    def is_internal(self, name: str) -> bool:
        """Is file ``name`` library code (remembered: see ``source``)?"""
        inside = self._internal_files.get(name)
        if inside is None:
            inside = self._internal_files[name] = self._is_internal(name)
        return inside

    def _is_internal(self, name: str) -> bool:
        return name.startswith(self._internal_dirs) and not name.startswith(_DEMOS_DIR)
