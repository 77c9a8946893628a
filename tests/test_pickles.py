"""The pickles of objects in messages (shmrma/csrc/types/msgpickle.c) against pickle's.

Objects travel as pickles (mpi4py's contract), and the C extension writes and
reads the pickles of the small kinds itself. It must write exactly the bytes
pickle.dumps(obj, PICKLE_PROTOCOL) writes, so that a message pickled on one
path is read on the other (the fallback engine uses pickle alone), and read
back the same object of the same type; anything else goes to pickle, and a
malformed pickle raises what pickle.loads raises. No numbered rule covers
pickles; the behaviour is mpi4py's (object messages are pickles).
"""
import enum
import pickle

import pytest

from shmrma.core import atomic
from shmrma.p2p import transport as mailbox

pytestmark = pytest.mark.skipif(atomic.BACKEND != "c", reason="the C extension's codec")

if atomic.BACKEND == "c":
    from shmrma import _native


class Colour(enum.IntEnum):
    RED = 1


class Text(str):
    pass


OBJECTS = (
    0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**63, -2**70,
    0.0, -0.0, 1.5, -2.75e-300, 1e308, float("inf"), float("-inf"), float("nan"),
    True, False, None,
    "", "a", "é", "a" * 255, "a" * 256, "é" * 127, "é" * 128, "\U0001F600", "\ud800",
    b"", b"\x00", b"x" * 255, b"x" * 256, bytearray(b"ab"),
    Colour.RED, Text("sub"), (1, 2), [1], {"a": 1}, 1j,
)


def same(a, b):
    return type(a) is type(b) and (a == b or a != a and b != b)


@pytest.mark.parametrize("obj", OBJECTS, ids=repr)
def test_writes_what_pickle_writes(obj):
    assert _native.dumps(obj) == pickle.dumps(obj, mailbox.PICKLE_PROTOCOL)


@pytest.mark.parametrize("obj", OBJECTS, ids=repr)
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_reads_what_pickle_reads(obj, protocol):
    data = pickle.dumps(obj, protocol)
    assert same(_native.loads(data), pickle.loads(data))


def test_takes_any_bytes_like_object_as_pickle_does():
    data = pickle.dumps(7, mailbox.PICKLE_PROTOCOL)
    assert _native.loads(bytearray(data)) == 7
    assert _native.loads(memoryview(data)) == 7


def test_malformed_pickles_raise_what_pickle_raises():
    good = pickle.dumps("é", mailbox.PICKLE_PROTOCOL)
    for bad in (b"", b"\x80", b"\x80\x05", good[:-1], good[:-2] + b".",
                b"\x80\x05\x8c\x01\xff\x94.", b"\x80\x05K.", b"\x80\x05K\x01\x01.",
                b"\x80\x05\x95\x09\x00\x00\x00\x00\x00\x00\x00K\x01."):
        try:
            pickle.loads(bad)
        except Exception as exc:  # noqa: BLE001 - whatever pickle raises, we must too
            expected = type(exc)
        else:
            expected = None
        if expected is None:
            assert same(_native.loads(bad), pickle.loads(bad))
        else:
            with pytest.raises(expected):
                _native.loads(bad)


def test_objects_that_do_not_pickle_raise_what_pickle_raises():
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)) as ours:
        _native.dumps(lambda: 0)
    with pytest.raises(type(ours.value)):
        pickle.dumps(lambda: 0, mailbox.PICKLE_PROTOCOL)
