"""What torch.compile says, turned into compile events: pure text and dict handling.

``Assembler`` takes what ``torch_api.Listener`` hears (structured-trace records, or the
text ``TORCH_LOGS`` prints, and the compile callbacks' timings) and hands out ``Fact``
tuples, the fields of ``CompileEvent`` in order. It keeps what later records refer to (the
name and place of each compiled frame, the guards of each compiled entry). Nothing here
imports torch: the parsers are tested on text alone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple


class Fact(NamedTuple):
    """The fields of one ``CompileEvent`` after its seq and iteration."""

    what: str
    compile_id: str = ""
    frame: str = ""
    file: str = ""
    line: int = 0
    reason: str = ""
    type: str = ""
    detail: str = ""
    stack: str = ""
    input: str = ""
    duration_ns: int = 0


Emit = Callable[[Fact], None]
MAX_GUARD_LINES = 400
MAX_TEXT = 8_000  # characters of one field: a guard set can be hundreds of kilobytes


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters)"


# -- graph breaks ------------------------------------------------------------------------------
_BREAK_AT = re.compile(r"Graph break (?:\(user stack suppressed[^)]*\) )?in user code at "
                       r"(?P<file>.+?):(?P<line>\d+)\s*$", re.MULTILINE)
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>.+)$')
_SKIPPED = re.compile(r"^(?P<fn>\S+) \((?P<file>.+?) line (?P<line>\d+)\)\s*$", re.MULTILINE)


class Break(NamedTuple):
    file: str
    line: int
    type: str
    reason: str
    hints: str
    stack: str


def parse_break(text: str) -> Break | None:
    """A graph-break message (the structured trace's ``dynamo_graph_break_reason``, or the
    ``graph_breaks`` log line) as its parts; None if it is not one.

    >>> b = parse_break('Graph break in user code at /a/t.py:10\\nGraph Break Reason: '
    ...                 'Encountered graph break when attempting to trace CALL:\\n\\n'
    ...                 'Unsupported Tensor.item() call\\n  Explanation: no item\\n'
    ...                 '  Hint: set capture_scalar_outputs\\n')
    >>> (b.file, b.line, b.type, b.reason, b.hints)
    ('/a/t.py', 10, 'Unsupported Tensor.item() call', 'no item', 'set capture_scalar_outputs')
    """
    m = _BREAK_AT.search(text)
    if m is None:
        return None
    body = text[m.end():]
    reason_at = body.find("Graph Break Reason:")
    body = body[reason_at + len("Graph Break Reason:"):] if reason_at >= 0 else body
    body, _, user = body.partition("User code traceback:")
    user = user.split("Traceback (most recent call last)")[0]
    gb_type, explanation, hints = _unsupported_parts(body)
    return Break(m.group("file"), int(m.group("line")), gb_type, explanation,
                 "\n".join(hints), stack_of(user))


def _unsupported_parts(body: str) -> tuple[str, str, list[str]]:
    """(type, explanation, hints) of the text of Dynamo's ``Unsupported`` error: the type
    on its own line, then indented ``Explanation:``, ``Hint:`` lines. Older messages have
    no such parts: the first line is then both type and reason."""
    lines = [line.rstrip() for line in body.strip().splitlines()]
    # "Encountered graph break when attempting to trace CALL: ...:" introduces the rest.
    if lines and lines[0].startswith("Encountered graph break"):
        lines = lines[1:]
    lines = [line for line in lines if line.strip()]
    gb_type = lines[0].strip() if lines else ""
    explanation = ""
    hints: list[str] = []
    for line in lines[1:]:
        s = line.strip()
        if s.startswith("Explanation:"):
            explanation = s.removeprefix("Explanation:").strip()
        elif s.startswith("Hint:"):
            hints.append(s.removeprefix("Hint:").strip())
        elif s.startswith("For more details about this graph break"):
            hints.append(s)
    return gb_type, explanation or gb_type, hints


def stack_of(traceback_text: str) -> str:
    """``File "a.py", line 3, in f`` lines as ``a.py:3 in f`` lines, outermost first."""
    out = []
    for line in traceback_text.splitlines():
        m = _FRAME_LINE.match(line)
        if m:
            out.append(f"{m.group('file')}:{m.group('line')} in {m.group('fn')}")
    return "\n".join(out)


def stack_entries(stack: str) -> list[tuple[str, int, str]]:
    """The (file, line, function) of each line of a ``stack`` field."""
    out = []
    for entry in stack.splitlines():
        where, _, fn = entry.partition(" in ")
        file, _, line = where.rpartition(":")
        if file and line.isdigit():
            out.append((file, int(line), fn))
    return out


# -- recompiles --------------------------------------------------------------------------------
_ENTRY = re.compile(r"^\s*-?\s*(?P<id>\d+/\d+):\s*(?P<guard>.*)$")
_INPUT_PATTERNS = (re.compile(r"tensor '([^']+)'"), re.compile(r"\bL\['([^']+)'\]"),
                   re.compile(r"\bG\['([^']+)'\]"), re.compile(r"^\s*([A-Za-z_]\w*)\b"))
_GUARD_ORIGIN = re.compile(r"#\s*(?P<code>.*?)\s+#\s+(?P<file>\S+?):(?P<line>\d+) in (?P<fn>\S+)")


def failed_guards(reasons: Iterable[str]) -> list[tuple[str, str]]:
    """(entry id, guard text) of each failure of a recompile, the newest entry first as
    torch lists them; a guard's trailing user stack is dropped (see ``guard_origin``).

    >>> failed_guards(["0/1: tensor 'x' size mismatch at index 1. expected 7, actual 9"])
    [('0/1', "tensor 'x' size mismatch at index 1. expected 7, actual 9")]
    """
    out = []
    for reason in reasons:
        first, _, _ = reason.partition("\nUser stack trace:")
        for line in first.splitlines():
            m = _ENTRY.match(line)
            if m:
                out.append((m.group("id"), m.group("guard").strip()))
    return out


def reasons_payload(payload: str) -> list[str]:
    """The reasons of a ``recompile_reasons`` artifact: a JSON list, or one reason as is."""
    text = payload.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, list):
            return [str(v) for v in value]
    return [text] if text else []


def guard_input(guard: str) -> str:
    """The input a failed guard names: ``x`` for ``tensor 'x' size mismatch ...`` or
    ``L['x'].shape[0] == 3``; a global's name for ``G['w']``; else the guard's first word.

    >>> guard_input("tensor 'x' size mismatch at index 1. expected 5, actual 7")
    'x'
    >>> guard_input("___stack0 == 0.5  # if y.item() > 0:")
    '___stack0'
    """
    for pattern in _INPUT_PATTERNS:
        m = pattern.search(guard)
        if m:
            return m.group(1)
    return ""


def guard_origin(guard: str, guards: str = "", name: str = "") -> tuple[str, int, str]:
    """Where the user's code made the guard that failed: (file, line, function), or
    ("", 0, "") when unknown. From the guard's own ``# code  # file:line in fn`` comment,
    or else from the entry's guard list (``guards``): the first guard on input ``name``."""
    m = _GUARD_ORIGIN.search(guard)
    if m is None and guards and name:
        needle = re.compile(rf"\bL\['{re.escape(name)}'\]")
        for line in guards.splitlines():
            if needle.search(line):
                m = _GUARD_ORIGIN.search(line)
                if m:
                    break
    if m is None:
        return "", 0, ""
    return m.group("file"), int(m.group("line")), m.group("fn")


def clean_guard(guard: str) -> str:
    """A guard without its ``# code  # file:line in fn`` comment."""
    return guard.split("  #", 1)[0].strip() if "  #" in guard else guard.strip()


# -- guard sets --------------------------------------------------------------------------------
_TREE = re.compile(r"^[|\s]*\+-\s*")
_IDS = re.compile(r"(___check_(?:obj|type)_id\([^,]+, )\d+\)")


def condense_guards(text: str) -> str:
    """The guards of a compiled entry, one per line, from the tree torch prints
    (``TREE_GUARD_MANAGER``): accessor lines (``GuardManager: source=...``) and object ids
    dropped, at most ``MAX_GUARD_LINES``."""
    out: list[str] = []
    for raw in text.splitlines():
        line = _TREE.sub("", raw).rstrip()
        if not line or line.startswith(("GuardManager", "RootGuardManager", "TREE_GUARD",
                                        "Guard latency", "Guard eval latency", "GUARDS:")):
            continue
        if raw.strip() and not _TREE.match(raw) and not out:
            continue  # a header line before the tree
        out.append(_IDS.sub(r"\1…)", line))
    if len(out) > MAX_GUARD_LINES:
        out = [*out[:MAX_GUARD_LINES], f"… {len(out) - MAX_GUARD_LINES} more guards"]
    return "\n".join(out)


# -- the recompile limit -----------------------------------------------------------------------
_LIMIT = re.compile(r"hit config\.(?P<which>\w+) \((?P<limit>\d+)\)\s*\n\s*function: "
                    r"'(?P<fn>[^']*)' \((?P<file>.+?):(?P<line>\d+)\)\s*\n\s*last reason: "
                    r"(?P<last>.*)")


class Limit(NamedTuple):
    which: str
    limit: int
    frame: str
    file: str
    line: int
    last: str


def parse_limit(text: str) -> Limit | None:
    """``torch._dynamo hit config.recompile_limit (8)`` and what it names."""
    m = _LIMIT.search(text)
    if m is None:
        return None
    return Limit(m.group("which"), int(m.group("limit")), m.group("fn"), m.group("file"),
                 int(m.group("line")), m.group("last").strip())


_RECOMPILING = re.compile(r"Recompiling function (?P<fn>\S+) in (?P<file>.+?):(?P<line>\d+)")


# -- the assembler -----------------------------------------------------------------------------
class Assembler:
    """Turns what the listener hears into ``Fact`` tuples, handed to ``emit``.

    Structured records arrive in this order per compile: ``recompile_reasons`` (a
    recompile), ``dynamo_start`` (the frame and the user's stack), breaks, the guards,
    ``compilation_metrics``. Text (the fallback) has no frame records: facts wait for
    ``flush`` (given the run's compilation metrics), which names their frames.
    """

    def __init__(self, emit: Emit, internal: Callable[[str], bool] = lambda file: False,
                 interned: Callable[[], dict[int, str]] = dict) -> None:
        self.emit = emit
        self.internal = internal  # is a file library code (left out of stacks)?
        # The file names interned before we listened (their ``str`` records went by).
        self.interned = interned
        self.strings: dict[int, str] = {}  # the structured trace's interned file names
        self.frames: dict[str, tuple[str, str, int]] = {}  # frame id -> (name, file, line)
        self.guards: dict[str, str] = {}  # compile id -> its condensed guards
        self.limits: set[str] = set()  # frame ids that hit the recompile limit
        self.timings: dict[str, int] = {}  # compile id -> ns, from the callbacks
        self._waiting: list[tuple[str, Fact]] = []  # text mode: (compile id, fact)
        self._done: list[tuple[str, int]] = []  # text mode: compiles ended, in order

    # -- structured records ----------------------------------------------------------------
    def record(self, name: str, metadata: dict[str, Any], payload: str) -> None:
        handler = _RECORDS.get(name)
        if handler is not None:
            handler(self, metadata, payload)

    def _ids(self, md: dict[str, Any]) -> tuple[str, str]:
        frame_id = md.get("frame_id")
        compile_id = md.get("frame_compile_id")
        if frame_id is None:
            return "", ""
        return str(frame_id), f"{frame_id}/{compile_id if compile_id is not None else 0}"

    def _str(self, md: dict[str, Any], payload: str) -> None:
        value = md.get("str")
        if isinstance(value, list | tuple) and len(value) == 2 and isinstance(value[1], int):
            self.strings[value[1]] = str(value[0])

    def _start(self, md: dict[str, Any], payload: str) -> None:
        frame_id, compile_id = self._ids(md)
        entries = []
        for e in (md.get("dynamo_start") or {}).get("stack") or []:
            if isinstance(e, dict):
                filename = e.get("filename")
                if isinstance(filename, int) and filename not in self.strings:
                    self.strings.update(self.interned())
                file = self.strings.get(filename, "") if isinstance(filename, int) else str(
                    filename or "")
                entries.append((file, int(e.get("line") or 0), str(e.get("name") or "")))
        file, line, name = entries[-1] if entries else ("", 0, "")
        if frame_id:
            self.frames[frame_id] = (name, file, line)
        stack = "\n".join(f"{f}:{n} in {fn}" for f, n, fn in entries if not self.internal(f))
        self.emit(Fact("start", compile_id, name, file, line, stack=stack))

    def _artifact(self, md: dict[str, Any], payload: str) -> None:
        name = (md.get("artifact") or {}).get("name")
        if name == "recompile_reasons":
            frame_id, compile_id = self._ids(md)
            self._recompile(frame_id, compile_id, reasons_payload(payload))
        elif name == "dynamo_graph_break_reason":
            self._break(self._ids(md)[1], payload)

    def _guards(self, md: dict[str, Any], payload: str) -> None:
        frame_id, compile_id = self._ids(md)
        self._guard_set(frame_id, compile_id, payload)

    def _metrics(self, md: dict[str, Any], payload: str) -> None:
        m = md.get("compilation_metrics") or {}
        compile_id = str(m.get("compile_id") or self._ids(md)[1])
        frame_id = compile_id.partition("/")[0]
        self._end(frame_id, compile_id, m, int(m.get("duration_us") or 0) * 1000)

    # -- what each kind of fact is made of ---------------------------------------------------
    def _frame(self, frame_id: str) -> tuple[str, str, int]:
        return self.frames.get(frame_id, ("", "", 0))

    def _resolve(self, file: str) -> str:
        """A guard's comment names its file by the last characters of its path
        (``mp/i25/train.py``): the full path of a file seen, when one ends so."""
        if not file or os.path.isabs(file):
            return file
        for known in (*(f for _, f, _ in self.frames.values()), *self.strings.values()):
            if known.endswith(file):
                return known
        return file

    def _recompile(self, frame_id: str, compile_id: str, reasons: list[str]) -> None:
        failures = failed_guards(reasons)
        if not failures:
            return
        entry, guard = failures[0]
        name = guard_input(guard)
        origin = guard_origin(guard, self.guards.get(entry, ""), name)
        fn, file, line = self._frame(frame_id)
        detail = "\n".join(f"{i}: {clean_guard(g)}" for i, g in failures)
        stack = f"{self._resolve(origin[0])}:{origin[1]} in {origin[2]}" if origin[0] else ""
        self.emit(Fact("recompile", compile_id, fn, file, line, clean_guard(guard),
                       detail=detail, stack=stack, input=name))

    def _break(self, compile_id: str, text: str) -> None:
        b = parse_break(text)
        if b is None:
            return
        fn = self._frame(compile_id.partition("/")[0])[0]
        stack = "\n".join(f"{f}:{n} in {name}" for f, n, name in stack_entries(b.stack)
                          if not self.internal(f))
        self.emit(Fact("break", compile_id, fn, b.file, b.line, b.reason, b.type,
                       _cut(b.hints), stack))

    def _guard_set(self, frame_id: str, compile_id: str, text: str) -> None:
        guards = condense_guards(text)
        if not guards:
            return
        self.guards[compile_id] = guards
        fn, file, line = self._frame(frame_id)
        count = guards.count("\n") + 1
        self.emit(Fact("guards", compile_id, fn, file, line, f"{count} guards",
                       detail=_cut(guards, 60_000)))

    def _end(self, frame_id: str, compile_id: str, m: dict[str, Any], ns: int) -> None:
        fn, file, line = self._frame(frame_id)
        fn = str(m.get("co_name") or fn)
        file = str(m.get("co_filename") or file)
        line = int(m.get("co_firstlineno") or line)
        ns = ns or self.timings.get(compile_id, 0)
        fail_type = str(m.get("fail_type") or "")
        fail_reason = str(m.get("fail_reason") or "")
        parts = [f"{k.replace('_', ' ')} {m[k]}" for k in ("graph_op_count", "guard_count")
                 if m.get(k) is not None]
        self.emit(Fact("end", compile_id, fn, file, line, fail_reason.split("\n")[0],
                       fail_type, ", ".join(parts), duration_ns=ns))
        if fail_type and not fail_reason.startswith("Dynamo recompile limit exceeded"):
            where = str(m.get("fail_user_frame_filename") or file)
            at = int(m.get("fail_user_frame_lineno") or line)
            self.emit(Fact("fallback", compile_id, fn, where, at, fail_reason.split("\n")[0],
                           fail_type, _cut(fail_reason)))
        elif fail_type and frame_id not in self.limits:
            self._limit_fact(frame_id, compile_id, fn, file, line, fail_reason)

    def _limit_fact(self, frame_id: str, compile_id: str, fn: str, file: str, line: int,
                    text: str, last: str = "") -> None:
        self.limits.add(frame_id)
        m = re.search(r"currently set to (\d+)", text)
        limit = f" ({m.group(1)})" if m else ""
        self.emit(Fact("limit", compile_id, fn, file, line,
                       f"recompile limit{limit} hit: {fn or 'the function'} runs eagerly from "
                       f"now on when no compiled entry fits", "recompile_limit", last))

    # -- text (the TORCH_LOGS fallback) --------------------------------------------------------
    def text(self, artifact: str, message: str, compile_id: str = "") -> None:
        """One message of a ``TORCH_LOGS`` artifact logger (or the limit warning)."""
        if artifact == "limit":
            limit = parse_limit(message)
            if limit is not None:
                frame_id = next((f for f, v in self.frames.items()
                                 if v[0] == limit.frame and v[1] == limit.file), compile_id
                                .partition("/")[0] or limit.frame)
                if frame_id not in self.limits:
                    self._limit_fact(frame_id, compile_id, limit.frame, limit.file,
                                     limit.line, f"currently set to {limit.limit}",
                                     limit.last)
            return
        collected: list[Fact] = []
        emit, self.emit = self.emit, collected.append
        frame_id = compile_id.partition("/")[0]
        try:
            if artifact == "graph_breaks":
                self._break(compile_id, message)
            elif artifact == "recompiles":
                m = _RECOMPILING.search(message)
                if m and frame_id:
                    self.frames.setdefault(frame_id, (m.group("fn"), m.group("file"),
                                                      int(m.group("line"))))
                body = message.partition("guard failure(s):")[2]
                self._recompile(frame_id, compile_id, [body])
            elif artifact == "guards" and "TREE_GUARD_MANAGER" in message:
                self._guard_set(frame_id, compile_id, message)
        finally:
            self.emit = emit
        self._waiting += [(compile_id, f) for f in collected]

    def timing(self, which: str, compile_id: str, trigger: str, ns: int) -> None:
        # Only Dynamo's frame compiles: a backend's lazy backward compile reuses the id.
        if which == "end" and trigger in ("dynamo", ""):
            self.timings[compile_id] = ns
            self._done.append((compile_id, ns))

    def flush(self, metrics: list[dict[str, Any]]) -> None:
        """Text mode: emit what waits, each compile as start, its facts, end; ``metrics``
        are the run's compilation metrics (dicts) that name the frames."""
        by_id = {str(m.get("compile_id")): m for m in metrics
                 if m.get("co_name")}  # (not a backward's entry: it has no frame)
        for compile_id, ns in self._done:
            m = by_id.get(compile_id, {})
            frame_id = compile_id.partition("/")[0]
            if m.get("co_name"):
                self.frames[frame_id] = (str(m["co_name"]), str(m.get("co_filename") or ""),
                                         int(m.get("co_firstlineno") or 0))
            fn, file, line = self._frame(frame_id)
            self.emit(Fact("start", compile_id, fn, file, line))
            for cid, fact in self._waiting:
                if cid == compile_id:
                    self.emit(fact._replace(frame=fact.frame or fn,
                                            file=fact.file or file, line=fact.line or line))
            self._end(frame_id, compile_id, m, ns)
        done = {cid for cid, _ in self._done}
        self._done = []
        waiting, self._waiting = self._waiting, []
        for cid, fact in waiting:
            if not cid:
                self.emit(fact)  # of no compile known: as it is
            elif cid not in done:
                self._waiting.append((cid, fact))  # its compile has not ended yet


_RECORDS: dict[str, Callable[[Assembler, dict[str, Any], str], None]] = {
    "str": Assembler._str,
    "dynamo_start": Assembler._start,
    "artifact": Assembler._artifact,
    "dynamo_cpp_guards_str": Assembler._guards,
    "compilation_metrics": Assembler._metrics,
}


def short(file: str, line: int) -> str:
    """``train.py:12``."""
    return f"{os.path.basename(file)}:{line}" if file else "?"
