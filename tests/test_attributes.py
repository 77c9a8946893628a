"""Attribute caching on communicators, windows and datatypes (MPI-3.1 §6.7, §6.7.2
to §6.7.4; mpi4py's Create_keyval(copy_fn, delete_fn) semantics).

Rules: A39 (errors are MPI.Exception with a class and a message saying what to fix).
"""
import pytest

import shmrma
from shmrma import MPI
from mpitest import raises_mpi


def _objects():
    comm = MPI.COMM_SELF.Dup()
    win = MPI.Win.Allocate(8, comm=MPI.COMM_SELF)
    datatype = MPI.INT.Create_contiguous(2).Commit()
    return comm, win, datatype


@pytest.mark.parametrize("which", [0, 1, 2], ids=["Comm", "Win", "Datatype"])
def test_set_get_delete_and_the_delete_function(which):
    """§6.7.2-4: an attribute is any object; delete_fn runs when the value is replaced,
    deleted and when its object is freed; Free_keyval returns KEYVAL_INVALID and the
    attribute set before lives on until deleted."""
    obj = _objects()[which]
    cls = type(obj)
    deleted = []
    keyval = cls.Create_keyval(delete_fn=lambda o, k, v: deleted.append((k, v)))
    assert keyval != MPI.KEYVAL_INVALID and obj.Get_attr(keyval) is None
    value = [1, 2]
    obj.Set_attr(keyval, value)
    assert obj.Get_attr(keyval) is value
    obj.Set_attr(keyval, "second")
    assert deleted == [(keyval, value)]
    assert cls.Free_keyval(keyval) == MPI.KEYVAL_INVALID
    assert obj.Get_attr(keyval) == "second"
    obj.Delete_attr(keyval)
    assert deleted[-1] == (keyval, "second")
    again = cls.Create_keyval(delete_fn=lambda o, k, v: deleted.append(v))
    obj.Set_attr(again, "at free")
    obj.Free()
    assert deleted[-1] == "at free"


@pytest.mark.parametrize("which", [0, 2], ids=["Comm", "Datatype"])
def test_duplicates_copy_what_copy_fn_says(which):
    """§6.7.2: Dup runs copy_fn: True copies the value itself, None nothing, a
    function's result is the copy's value, NotImplemented from it means no copy."""
    obj = _objects()[which]
    cls = type(obj)
    keyvals = [cls.Create_keyval(True), cls.Create_keyval(None),
               cls.Create_keyval(lambda o, k, v: v + ["copied"]),
               cls.Create_keyval(lambda o, k, v: NotImplemented)]
    value = ["v"]
    for keyval in keyvals:
        obj.Set_attr(keyval, value)
    dup = obj.Dup()
    got = [dup.Get_attr(keyval) for keyval in keyvals]
    assert got[0] is value and got[1] is None and got[2] == ["v", "copied"]
    assert got[3] is None
    dup.Free()
    obj.Free()


@pytest.mark.parametrize("which", [0, 1, 2], ids=["Comm", "Win", "Datatype"])
def test_keyval_errors(which):
    """ERR_KEYVAL for KEYVAL_INVALID, a freed keyval, a keyval of another kind of
    object and a predefined (read-only) keyval; a copy or delete function that
    raises is ERR_OTHER (its traceback on stderr), and the attribute is gone."""
    objects = _objects()
    obj = objects[which]
    cls = type(obj)
    other = type(objects[(which + 1) % 3]).Create_keyval()
    freed = cls.Create_keyval()
    cls.Free_keyval(freed)
    for call, args, match in ((obj.Get_attr, (MPI.KEYVAL_INVALID,), "KEYVAL_INVALID"),
                              (obj.Set_attr, (freed, 1), "freed"),
                              (obj.Get_attr, (other,), "Create_keyval makes one"),
                              (obj.Set_attr, (MPI.TAG_UB, 1), "read only"),
                              (cls.Free_keyval, (freed,), "freed")):
        with raises_mpi(MPI.ERR_KEYVAL, match=match):
            call(*args)
    failing = cls.Create_keyval(lambda o, k, v: 1 / 0, lambda o, k, v: 1 / 0)
    obj.Set_attr(failing, "x")
    if which != 1:
        with raises_mpi(MPI.ERR_OTHER, match="copy function"):
            obj.Dup()
    with raises_mpi(MPI.ERR_OTHER, match="delete function"):
        obj.Delete_attr(failing)
    assert obj.Get_attr(failing) is None
    obj.Free()


def test_predefined_attributes_of_a_communicator():
    """§8.1.2: TAG_UB (at least 32767), IO, WTIME_IS_GLOBAL; MPI-2's UNIVERSE_SIZE and
    LASTUSEDCODE; APPNUM is not set. MPI.TAG_UB is the keyval, as in mpi4py."""
    def body():
        comm = MPI.COMM_WORLD
        dup = comm.Dup()
        values = [dup.Get_attr(k) for k in (MPI.TAG_UB, MPI.IO, MPI.WTIME_IS_GLOBAL,
                                              MPI.UNIVERSE_SIZE, MPI.LASTUSEDCODE,
                                              MPI.APPNUM)]
        comm.send("top tag", (comm.rank + 1) % comm.size, tag=comm.Get_attr(MPI.TAG_UB))
        values.append(comm.recv(tag=values[0]))
        dup.Free()
        return values

    for values in shmrma.launch(body, 2, timeout=30):
        assert values[0] >= 32767 and values[1] == MPI.ANY_SOURCE and values[2] in (0, 1)
        assert values[3] == 2 and values[4] >= MPI.ERR_LASTCODE and values[5] is None
        assert values[6] == "top tag"
