"""dyngraph's own pickle machine (``serialization/pickle_reader.py``), without PyTorch:
plain values pickled with every protocol read back as ``pickle`` itself reads them, every
fault of a stream is one damaged-checkpoint line, and nothing but the allow-list's builders
is ever called. (The tests pickle with Python's ``pickle`` to make inputs; dyngraph never
imports it.)"""

from __future__ import annotations

import io
import math
import pickle
import zipfile
from collections import OrderedDict

import pytest

import dyngraph as dg
from dyngraph.serialization import SerializationError

DAMAGED = "load: the file object is a damaged PyTorch checkpoint ("


def _zip(pickled: bytes) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        archive.writestr("archive/byteorder", "little")
    buffer.seek(0)
    return buffer


def _load(pickled: bytes):
    return dg.load(_zip(pickled))


def _plain():
    shared = [1, 2]
    ordered = OrderedDict([("z", 1), ("a", [2.5])])
    return {"ints": [0, 1, -1, 255, 256, 65535, 65536, -(2**31), 2**31 - 1, 2**31, 2**64,
                     -(2**200)],
            "floats": [0.0, -0.0, 0.1, 1e-310, 1e300, math.inf, -math.inf],
            "none": None, "true": True, "false": False,
            "strings": ["", "a", "é ü ☃ 𝄞", "quote ' and \" and \\", "a\nb", "x" * 300],
            "bytes": [b"", b"\x00\xff\n", bytes(range(256)), b"y" * 300],
            "nested": {"a": [1, (2, [3, {"b": ()}])], 4: {5: None}, (1, "k"): [[], {}]},
            "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
            "set": {1, "two", (3,)}, "frozen": frozenset({4, 5}), "empty_set": set(),
            "ordered": ordered, "shared": shared, "shared_again": shared,
            "long_list": list(range(1500)), "big_dict": {str(i): i for i in range(1500)}}


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_values_pickled_with_every_protocol_read_back_as_pickle_reads_them(protocol):
    pickled = pickle.dumps(_plain(), protocol=protocol)
    ours, reference = _load(pickled), pickle.loads(pickled)
    assert ours == reference
    assert repr(ours) == repr(reference)  # the same types and orders, all the way down
    assert type(ours["ordered"]) is OrderedDict and type(ours["frozen"]) is frozenset
    assert ours["shared"] is ours["shared_again"]


def test_a_list_that_holds_itself_loads_without_recursing():
    cycle: list = [1]
    cycle.append(cycle)
    loaded = _load(pickle.dumps({"cycle": cycle}, protocol=2))["cycle"]
    assert loaded[0] == 1 and loaded[1] is loaded


def test_a_state_dicts_metadata_is_kept_on_its_ordered_dict():
    state = OrderedDict([("weight", 1.0)])
    state._metadata = OrderedDict([("", {"version": 2})])  # what state_dict() attaches
    loaded = _load(pickle.dumps(state, protocol=2))
    assert loaded == state and loaded._metadata == {"": {"version": 2}}


@pytest.mark.parametrize(("stream", "reason"), [
    (b"\x80\x02\xff.", "unknown opcode 0xff, byte 2"),
    (b"\x80\x02h\x05.", "memo index 5 was never stored, BINGET at byte 2"),
    (b"\x80\x02.", "stack underflow, STOP at byte 2"),
    (b"\x80\x02K\x01\x86.", "stack underflow, TUPLE2 at byte 4"),
    (b"\x80\x02(\x85.", "stack underflow, TUPLE1 at byte 3"),
    (b"\x80\x02X\x10\x00\x00\x00ab.", "truncated at byte 7"),
    (b"\x80\x02K\x01", "truncated at byte 4"),
    (b"", "truncated at byte 0"),
    (b"\x80\x02}K\x01K\x02u.", "no MARK to pop to, SETITEMS at byte 7"),
    (b"\x80\x02}(K\x01u.", "a key without its value, SETITEMS at byte 6"),
    (b"\x80\x02}]K\x01s.", "an unhashable list as a key or set member, SETITEM at byte 6"),
    (b"\x80\x09.", "pickle protocol 9 is unknown, PROTO at byte 0"),
    (b"\x80\x02\x82\x01.", "an extension code"),
    (b"\x80\x05\x97.", "an out-of-band buffer"),
    (b"\x80\x02X\x02\x00\x00\x00\xff\xfe.", "a string that is not valid text"),
    (b"I12x\n.", "int b'12x' does not parse, INT at byte 0"),
    (b"\x80\x02r\xff\xff\xff\xff.", "a negative memo index"),
])
def test_each_fault_of_the_stream_is_one_damaged_line(stream, reason):
    with pytest.raises(SerializationError) as info:
        _load(stream)
    message = str(info.value)
    assert message.startswith(DAMAGED) and reason in message and "\n" not in message


@pytest.mark.parametrize(("stream", "reason"), [
    (b"\x80\x02ctorch\nfloat16\n)R.", "a call of dtype, which is not an allowed builder"),
    (b"\x80\x02X\x03\x00\x00\x00abc)R.", "a call of str, which is not an allowed builder"),
    (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n)\x81.", "NEWOBJ of torch._utils."),
    (b"\x80\x02ccollections\nOrderedDict\nX\x01\x00\x00\x00a\x85R.",
     "collections.OrderedDict refused its arguments"),
    (b"\x80\x02]}b.", "setting the state of a list is not allowed"),
    (b"\x80\x02}}b.", "setting the state of a dict is not allowed"),
    (b"\x80\x02ccollections\nOrderedDict\n)R}X\x05\x00\x00\x00itemsK\x01sb.",
     "an OrderedDict state that is not a dict of attribute names"),
    (b"\x80\x02}K\x01a.", "adding items to a dict, APPEND at byte 5"),
    (b"\x80\x02](K\x01K\x02u.", "adding items to a list, SETITEMS at byte 8"),
    (b"\x80\x02c__builtin__\nset\n}\x85R.", "builtins.set refused its arguments"),
])
def test_nothing_but_an_allowed_builder_is_ever_called(stream, reason):
    with pytest.raises(SerializationError) as info:
        _load(stream)
    message = str(info.value)
    assert message.startswith(DAMAGED) and reason in message and "\n" not in message


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_refused_global_names_itself_in_every_protocol_and_runs_nothing(protocol, tmp_path):
    marker = tmp_path / "pwned"
    stream = pickle.dumps({"weight": _Exploit(str(marker))}, protocol=protocol)
    with pytest.raises(SerializationError, match=r"holds a io\.open object, which dyngraph "
                                                 r"will not run"):
        _load(stream)
    assert not marker.exists()


def test_small_stream_that_reuses_a_big_list_many_times_is_stopped_early():
    """A memoized list of 20000 items turned into a set 20000 times: 400 million steps of
    work from 140 kB. The reader's work budget stops it as damaged instead of hanging."""
    items = b"(" + b"K\x01" * 20_000 + b"l" + b"q\x00"
    calls = b"c__builtin__\nset\nq\x01" + b"h\x01h\x00\x85R0" * 20_000
    with pytest.raises(SerializationError, match="far more work than a file of this size"):
        _load(b"\x80\x02" + items + calls + b"N.")
