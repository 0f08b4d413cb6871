"""A restricted pickle machine: reads the pickle inside a PyTorch checkpoint and builds
only plain values and what the caller's allow-list builds. Python's ``pickle`` is never used.

A pickle is a program for a small stack machine (the opcodes ``pickletools`` documents).
This machine implements the opcodes of protocols 0 to 5 that describe values (numbers,
strings, bytes, None, booleans, lists, tuples, dicts, sets, the memo), and four ways to
make anything else, each limited to what the caller allows:

- ``GLOBAL``/``STACK_GLOBAL``/``INST``/``OBJ`` name a global; ``resolve(module, name)``
  answers with a value (a dtype, say), a :class:`Builder`, or refuses by raising.
- ``REDUCE``/``NEWOBJ``/``NEWOBJ_EX``/``INST``/``OBJ`` call a :class:`Builder` and nothing
  else: a value that came from the stream is never called.
- ``BUILD`` (set an object's state) is allowed on an ``OrderedDict`` only, with a dict of
  attribute names that do not hide its methods: that is how ``state_dict()`` keeps its
  ``_metadata``. Anything else is refused.
- ``PERSID``/``BINPERSID`` hand the id to ``persistent(pid)`` (PyTorch's storages).

``SETITEM(S)``, ``APPEND(S)`` and ``ADDITEMS`` fill dicts, lists and sets only (a generic
pickle would call ``__setitem__``/``append`` on whatever is there). Extension codes and
out-of-band buffers are refused. Every fault of the stream (an unknown opcode, a bad memo
index, a stack underflow, a truncation) raises :class:`DamagedPickle` with one line saying
where; the loop is iterative and every opcode consumes input, so no stream can recurse or
hang it. Builders are charged for the sizes of their arguments against a budget
proportional to the stream's length, so re-using one big memoized list many times cannot
turn a small file into hours of work.
"""

from __future__ import annotations

import ast
import struct
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["Builder", "DamagedPickle", "read_pickle"]

_HIGHEST_PROTOCOL = 5
_LONGEST_LINE = 100_000  # protocol 0's text arguments (names, numbers, strings)
_WORK_PER_BYTE = 16  # builder work allowed per byte of stream (legit files use about 1)


class DamagedPickle(Exception):
    """The stream is not a pickle this machine can read; the message is one line."""


class Builder:
    """A function (or class) the allow-list lets ``REDUCE`` and its kin call.

    ``name`` is how the pickle spelt it (for messages). A class is also instantiated by
    ``NEWOBJ`` through its ``__new__``, as pickle does; a plain function is not.
    """

    __slots__ = ("function", "name")

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name = name
        self.function = function

    def __repr__(self) -> str:
        return f"Builder({self.name})"


_Handler = Callable[["_Machine"], None]
_OPCODES: dict[int, tuple[str, _Handler]] = {}
_MARK = object()  # what MARK leaves on the stack (pickle's own design: a sentinel)


def _opcode(code: bytes, name: str) -> Callable[[_Handler], _Handler]:
    def register(handler: _Handler) -> _Handler:
        _OPCODES[code[0]] = (name, handler)
        return handler

    return register


def read_pickle(data: bytes, resolve: Callable[[str, str], Any],
                persistent: Callable[[Any], Any]) -> Any:
    """Run the pickle ``data`` and return the value it leaves at ``STOP``.

    Raises :class:`DamagedPickle` on any fault of the stream; whatever ``resolve``,
    ``persistent`` or a builder raise on purpose (not ``TypeError`` and its kin, which
    mean the stream gave them bad arguments) passes through unchanged.
    """
    return _Machine(data, resolve, persistent).run()


class _Machine:
    def __init__(self, data: bytes, resolve: Callable[[str, str], Any],
                 persistent: Callable[[Any], Any]) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.at = 0  # where the opcode being run starts, for messages
        self.resolve = resolve
        self.persistent = persistent
        self.stack: list[Any] = []
        self.memo: dict[int, Any] = {}
        self.protocol = 0
        self.budget = _WORK_PER_BYTE * len(data) + 100_000
        self.result: Any = _MARK

    def run(self) -> Any:
        data, size, table = self.data, len(self.data), _OPCODES
        while self.result is _MARK:
            self.at = at = self.pos
            if at >= size:
                raise DamagedPickle(f"truncated at byte {at}")
            self.pos = at + 1
            entry = table.get(data[at])
            if entry is None:
                self.fail(f"unknown opcode 0x{data[at]:02x}")
            entry[1](self)
        return self.result

    # -- reading the stream -----------------------------------------------------------
    def fail(self, reason: str) -> NoReturn:
        name = _OPCODES.get(self.data[self.at], ("",))[0] if self.at < len(self.data) else ""
        where = f"{name} at byte {self.at}" if name else f"byte {self.at}"
        raise DamagedPickle(f"{reason}, {where}")

    def read(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise DamagedPickle(f"truncated at byte {self.pos}" if n >= 0 else
                                f"negative length at byte {self.at}")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def read_line(self) -> bytes:
        end = self.data.find(b"\n", self.pos, self.pos + _LONGEST_LINE)
        if end < 0:
            raise DamagedPickle(f"truncated (a line without its end) at byte {self.pos}")
        return self.read(end + 1 - self.pos)[:-1]

    def read_uint(self, size: int) -> int:
        return int.from_bytes(self.read(size), "little", signed=False)

    def read_int4(self) -> int:
        return int.from_bytes(self.read(4), "little", signed=True)

    def text(self, raw: bytes, encoding: str = "utf-8") -> str:
        try:
            return raw.decode(encoding, "surrogatepass" if encoding == "utf-8" else "strict")
        except UnicodeDecodeError:
            self.fail("a string that is not valid text")

    # -- the stack --------------------------------------------------------------------
    def push(self, value: Any) -> None:
        self.stack.append(value)

    def pop(self) -> Any:
        if not self.stack or self.stack[-1] is _MARK:
            self.fail("stack underflow")
        return self.stack.pop()

    def top(self) -> Any:
        if not self.stack or self.stack[-1] is _MARK:
            self.fail("stack underflow")
        return self.stack[-1]

    def pop_mark(self) -> list[Any]:
        """Everything above the topmost MARK, which is removed too."""
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] is _MARK:
                items = self.stack[i + 1:]
                del self.stack[i:]
                return items
        self.fail("no MARK to pop to")

    def memo_get(self, index: int) -> None:
        if index not in self.memo:
            self.fail(f"memo index {index} was never stored")
        self.push(self.memo[index])

    def memo_put(self, index: int) -> None:
        if index < 0:
            self.fail("a negative memo index")
        self.memo[index] = self.top()

    # -- calling the allow-list -------------------------------------------------------
    def global_(self, module: str, name: str) -> Any:
        if self.protocol < 3 and module == "__builtin__":  # Python 2's name for builtins
            module = "builtins"
        return self.resolve(module, name)

    def call(self, builder: Any, args: Any, kwargs: Any = None, new: bool = False) -> Any:
        if not isinstance(builder, Builder):
            self.fail(f"a call of {type(builder).__name__}, which is not an allowed builder")
        if not isinstance(args, tuple) or not isinstance(kwargs, (dict, type(None))):
            self.fail(f"{builder.name} called with arguments that are not a tuple")
        kwargs = kwargs or {}
        if not all(isinstance(k, str) for k in kwargs):
            self.fail(f"{builder.name} called with keywords that are not strings")
        self.budget -= 1 + sum(len(a) for a in (*args, *kwargs.values())
                               if isinstance(a, (tuple, list, dict, set, frozenset, str, bytes)))
        if self.budget < 0:
            self.fail("far more work than a file of this size describes")
        function = builder.function
        if new and not isinstance(function, type):
            self.fail(f"NEWOBJ of {builder.name}, which is not a class")
        try:
            if isinstance(function, type) and new:  # pickle's NEWOBJ: cls.__new__(cls, ...)
                return function.__new__(function, *args, **kwargs)
            return function(*args, **kwargs)
        except (TypeError, ValueError, OverflowError, IndexError, KeyError, AttributeError,
                MemoryError) as e:
            self.fail(f"{builder.name} refused its arguments: {type(e).__name__}: {e}")

    def build(self, state: Any) -> None:
        """BUILD: only ``state_dict()``'s ``_metadata`` (an OrderedDict's attributes)."""
        target = self.top()
        if type(target) is not OrderedDict:
            self.fail(f"setting the state of a {type(target).__name__} is not allowed")
        if not isinstance(state, dict) or not all(
                isinstance(k, str) and not hasattr(OrderedDict, k) for k in state):
            self.fail("an OrderedDict state that is not a dict of attribute names")
        target.__dict__.update(state)

    def hashable(self, value: Any) -> Any:
        try:
            hash(value)
        except TypeError:
            self.fail(f"an unhashable {type(value).__name__} as a key or set member")
        return value


# -- protocol 0 and 1: text and binary values ---------------------------------------------
@_opcode(b"(", "MARK")
def _mark(m: _Machine) -> None:
    m.push(_MARK)


@_opcode(b".", "STOP")
def _stop(m: _Machine) -> None:
    m.result = m.pop()


@_opcode(b"0", "POP")
def _pop(m: _Machine) -> None:
    if m.stack and m.stack[-1] is _MARK:
        m.stack.pop()  # POP of a MARK discards it, as pickle does
    else:
        m.pop()


@_opcode(b"1", "POP_MARK")
def _pop_mark(m: _Machine) -> None:
    m.pop_mark()


@_opcode(b"2", "DUP")
def _dup(m: _Machine) -> None:
    m.push(m.top())


@_opcode(b"N", "NONE")
def _none(m: _Machine) -> None:
    m.push(None)


@_opcode(b"I", "INT")
def _int(m: _Machine) -> None:
    line = m.read_line()
    special = {b"00": False, b"01": True}
    if line in special:
        m.push(special[line])
        return
    m.push(_parse(m, int, line))


@_opcode(b"L", "LONG")
def _long(m: _Machine) -> None:
    line = m.read_line()
    m.push(_parse(m, int, line[:-1] if line.endswith(b"L") else line))


@_opcode(b"F", "FLOAT")
def _float(m: _Machine) -> None:
    m.push(_parse(m, float, m.read_line()))


def _parse(m: _Machine, kind: type, line: bytes) -> Any:
    try:
        return kind(line.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        m.fail(f"{kind.__name__} {line[:20]!r} does not parse")


@_opcode(b"J", "BININT")
def _binint(m: _Machine) -> None:
    m.push(m.read_int4())


@_opcode(b"K", "BININT1")
def _binint1(m: _Machine) -> None:
    m.push(m.read_uint(1))


@_opcode(b"M", "BININT2")
def _binint2(m: _Machine) -> None:
    m.push(m.read_uint(2))


@_opcode(b"G", "BINFLOAT")
def _binfloat(m: _Machine) -> None:
    m.push(struct.unpack(">d", m.read(8))[0])


@_opcode(b"S", "STRING")
def _string(m: _Machine) -> None:
    """A Python 2 str as its repr, quoted; read as a bytes literal, decoded as UTF-8."""
    line = m.read_line()
    if len(line) < 2 or line[0] != line[-1] or line[:1] not in (b"'", b'"'):
        m.fail("a STRING that is not quoted")
    try:
        raw = ast.literal_eval("b" + line.decode("ascii"))
    except (ValueError, SyntaxError, UnicodeDecodeError, RecursionError, MemoryError):
        m.fail("a STRING that is not a string literal")
    if not isinstance(raw, bytes):
        m.fail("a STRING that is not a string literal")
    m.push(m.text(raw))


@_opcode(b"T", "BINSTRING")
def _binstring(m: _Machine) -> None:
    m.push(m.text(m.read(m.read_int4())))


@_opcode(b"U", "SHORT_BINSTRING")
def _short_binstring(m: _Machine) -> None:
    m.push(m.text(m.read(m.read_uint(1))))


@_opcode(b"V", "UNICODE")
def _unicode(m: _Machine) -> None:
    m.push(m.text(m.read_line(), "raw-unicode-escape"))


@_opcode(b"X", "BINUNICODE")
def _binunicode(m: _Machine) -> None:
    m.push(m.text(m.read(m.read_uint(4))))


# -- containers ---------------------------------------------------------------------------
@_opcode(b")", "EMPTY_TUPLE")
def _empty_tuple(m: _Machine) -> None:
    m.push(())


@_opcode(b"t", "TUPLE")
def _tuple(m: _Machine) -> None:
    m.push(tuple(m.pop_mark()))


@_opcode(b"]", "EMPTY_LIST")
def _empty_list(m: _Machine) -> None:
    m.push([])


@_opcode(b"l", "LIST")
def _list(m: _Machine) -> None:
    m.push(m.pop_mark())


@_opcode(b"}", "EMPTY_DICT")
def _empty_dict(m: _Machine) -> None:
    m.push({})


@_opcode(b"d", "DICT")
def _dict(m: _Machine) -> None:
    items = m.pop_mark()
    if len(items) % 2:
        m.fail("a key without its value")
    m.push({m.hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)})


@_opcode(b"a", "APPEND")
def _append(m: _Machine) -> None:
    value = m.pop()
    _target(m, list).append(value)


@_opcode(b"e", "APPENDS")
def _appends(m: _Machine) -> None:
    values = m.pop_mark()
    _target(m, list).extend(values)


@_opcode(b"s", "SETITEM")
def _setitem(m: _Machine) -> None:
    value = m.pop()
    key = m.hashable(m.pop())
    _target(m, dict)[key] = value


@_opcode(b"u", "SETITEMS")
def _setitems(m: _Machine) -> None:
    items = m.pop_mark()
    if len(items) % 2:
        m.fail("a key without its value")
    target = _target(m, dict)
    for i in range(0, len(items), 2):
        target[m.hashable(items[i])] = items[i + 1]


def _target(m: _Machine, kind: type) -> Any:
    """The container under the items: only a real list, dict or set is filled (a generic
    pickle calls whatever ``append``/``__setitem__`` the object has)."""
    target = m.top()
    if type(target) is not kind and not (kind is dict and type(target) is OrderedDict):
        m.fail(f"adding items to a {type(target).__name__}")
    return target


# -- the memo -----------------------------------------------------------------------------
@_opcode(b"g", "GET")
def _get(m: _Machine) -> None:
    m.memo_get(_parse(m, int, m.read_line()))


@_opcode(b"h", "BINGET")
def _binget(m: _Machine) -> None:
    m.memo_get(m.read_uint(1))


@_opcode(b"j", "LONG_BINGET")
def _long_binget(m: _Machine) -> None:
    m.memo_get(m.read_uint(4))


@_opcode(b"p", "PUT")
def _put(m: _Machine) -> None:
    m.memo_put(_parse(m, int, m.read_line()))


@_opcode(b"q", "BINPUT")
def _binput(m: _Machine) -> None:
    m.memo_put(m.read_uint(1))


@_opcode(b"r", "LONG_BINPUT")
def _long_binput(m: _Machine) -> None:
    m.memo_put(m.read_int4())


# -- globals, calls, state, persistent ids ------------------------------------------------
@_opcode(b"c", "GLOBAL")
def _global(m: _Machine) -> None:
    module = m.text(m.read_line())
    name = m.text(m.read_line())
    m.push(m.global_(module, name))


@_opcode(b"R", "REDUCE")
def _reduce(m: _Machine) -> None:
    args = m.pop()
    m.push(m.call(m.pop(), args))


@_opcode(b"i", "INST")
def _inst(m: _Machine) -> None:
    module = m.text(m.read_line())
    name = m.text(m.read_line())
    builder = m.global_(module, name)
    m.push(m.call(builder, tuple(m.pop_mark())))


@_opcode(b"o", "OBJ")
def _obj(m: _Machine) -> None:
    items = m.pop_mark()
    if not items:
        m.fail("OBJ without a class")
    m.push(m.call(items[0], tuple(items[1:])))


@_opcode(b"b", "BUILD")
def _build(m: _Machine) -> None:
    m.build(m.pop())


@_opcode(b"P", "PERSID")
def _persid(m: _Machine) -> None:
    m.push(m.persistent(m.text(m.read_line(), "ascii")))


@_opcode(b"Q", "BINPERSID")
def _binpersid(m: _Machine) -> None:
    m.push(m.persistent(m.pop()))


# -- protocol 2 ---------------------------------------------------------------------------
@_opcode(b"\x80", "PROTO")
def _proto(m: _Machine) -> None:
    m.protocol = m.read_uint(1)
    if m.protocol > _HIGHEST_PROTOCOL:
        m.fail(f"pickle protocol {m.protocol} is unknown")


@_opcode(b"\x81", "NEWOBJ")
def _newobj(m: _Machine) -> None:
    args = m.pop()
    m.push(m.call(m.pop(), args, new=True))


@_opcode(b"\x85", "TUPLE1")
def _tuple1(m: _Machine) -> None:
    m.push((m.pop(),))


@_opcode(b"\x86", "TUPLE2")
def _tuple2(m: _Machine) -> None:
    second = m.pop()
    m.push((m.pop(), second))


@_opcode(b"\x87", "TUPLE3")
def _tuple3(m: _Machine) -> None:
    third = m.pop()
    second = m.pop()
    m.push((m.pop(), second, third))


@_opcode(b"\x88", "NEWTRUE")
def _newtrue(m: _Machine) -> None:
    m.push(True)


@_opcode(b"\x89", "NEWFALSE")
def _newfalse(m: _Machine) -> None:
    m.push(False)


@_opcode(b"\x8a", "LONG1")
def _long1(m: _Machine) -> None:
    m.push(int.from_bytes(m.read(m.read_uint(1)), "little", signed=True))


@_opcode(b"\x8b", "LONG4")
def _long4(m: _Machine) -> None:
    m.push(int.from_bytes(m.read(m.read_int4()), "little", signed=True))


def _refuse_extension(m: _Machine) -> None:
    m.fail("an extension code (copyreg's registry), which a checkpoint never uses")


for _code, _name in ((b"\x82", "EXT1"), (b"\x83", "EXT2"), (b"\x84", "EXT4")):
    _opcode(_code, _name)(_refuse_extension)


# -- protocols 3 to 5 ---------------------------------------------------------------------
@_opcode(b"B", "BINBYTES")
def _binbytes(m: _Machine) -> None:
    m.push(m.read(m.read_uint(4)))


@_opcode(b"C", "SHORT_BINBYTES")
def _short_binbytes(m: _Machine) -> None:
    m.push(m.read(m.read_uint(1)))


@_opcode(b"\x8e", "BINBYTES8")
def _binbytes8(m: _Machine) -> None:
    m.push(m.read(m.read_uint(8)))


@_opcode(b"\x96", "BYTEARRAY8")
def _bytearray8(m: _Machine) -> None:
    m.push(bytearray(m.read(m.read_uint(8))))


@_opcode(b"\x8c", "SHORT_BINUNICODE")
def _short_binunicode(m: _Machine) -> None:
    m.push(m.text(m.read(m.read_uint(1))))


@_opcode(b"\x8d", "BINUNICODE8")
def _binunicode8(m: _Machine) -> None:
    m.push(m.text(m.read(m.read_uint(8))))


@_opcode(b"\x8f", "EMPTY_SET")
def _empty_set(m: _Machine) -> None:
    m.push(set())


@_opcode(b"\x90", "ADDITEMS")
def _additems(m: _Machine) -> None:
    items = [m.hashable(v) for v in m.pop_mark()]
    _target(m, set).update(items)


@_opcode(b"\x91", "FROZENSET")
def _frozenset(m: _Machine) -> None:
    m.push(frozenset(m.hashable(v) for v in m.pop_mark()))


@_opcode(b"\x92", "NEWOBJ_EX")
def _newobj_ex(m: _Machine) -> None:
    kwargs = m.pop()
    args = m.pop()
    m.push(m.call(m.pop(), args, kwargs, new=True))


@_opcode(b"\x93", "STACK_GLOBAL")
def _stack_global(m: _Machine) -> None:
    name = m.pop()
    module = m.pop()
    if not isinstance(module, str) or not isinstance(name, str):
        m.fail("STACK_GLOBAL of names that are not strings")
    m.push(m.global_(module, name))


@_opcode(b"\x94", "MEMOIZE")
def _memoize(m: _Machine) -> None:
    m.memo_put(len(m.memo))


@_opcode(b"\x95", "FRAME")
def _frame(m: _Machine) -> None:
    """Framing only groups opcodes for buffered reading; the whole stream is in memory."""
    size = m.read_uint(8)
    if m.pos + size > len(m.data):
        m.fail("a frame longer than the stream (truncated)")


def _refuse_buffer(m: _Machine) -> None:
    m.fail("an out-of-band buffer, which a checkpoint file cannot carry")


for _code, _name in ((b"\x97", "NEXT_BUFFER"), (b"\x98", "READONLY_BUFFER")):
    _opcode(_code, _name)(_refuse_buffer)
