"""MPI.Status as mpi4py 4.1.2 has it on MPICH: constructor forms, the byte count and
Set_elements, the cancelled flag, tomemory (the five C ints of MPICH's MPI_Status,
written through), comparison and pickling; a receive fills it, in C (the fast path)
as in Python."""
import pickle

import numpy as np
import pytest

import shmrma
from mpitest import raises_mpi
from shmrma import MPI
from shmrma.rma import fastpath


def test_constructor_takes_only_a_status():
    """Status() is empty; Status(status) copies every field; anything else is
    TypeError, as mpi4py's typed argument."""
    empty = MPI.Status()
    assert (empty.source, empty.tag, empty.error, empty.count, empty.cancelled) == (
        MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.SUCCESS, 0, False)
    assert MPI.Status(None) == empty
    for wrong in (123, "abc", [1, 2]):
        with pytest.raises(TypeError):
            MPI.Status(wrong)
    status = MPI.Status()
    status.source, status.tag, status.error = 1, 2, MPI.ERR_ARG
    status.Set_elements(MPI.INT, 7)
    status.Set_cancelled(True)
    copy = MPI.Status(status)
    assert copy == status and copy is not status
    assert (copy.source, copy.tag, copy.error, copy.Get_count(MPI.INT), copy.Is_cancelled()) \
        == (1, 2, MPI.ERR_ARG, 7, True)
    copy.tag = 3
    assert status.tag == 2 and copy != status


def test_set_elements_and_the_count():
    """Set_elements(datatype, n) sets n elements of datatype (the count in bytes);
    counts past 2**31 keep every bit (MPICH's count_hi field); the count survives
    Set_cancelled and the flag survives the count; a negative count is ERR_COUNT."""
    status = MPI.Status()
    status.Set_elements(MPI.DOUBLE, 3)
    assert (status.count, status.Get_count(MPI.DOUBLE), status.Get_elements(MPI.DOUBLE),
            status.Get_count(MPI.INT), status.Get_count(MPI.BYTE)) == (24, 3, 3, 6, 24)
    status.count = 5
    assert status.Get_count(MPI.INT) == MPI.UNDEFINED
    status.Set_cancelled(True)
    status.count = 3 << 33 | 5
    assert (status.count, status.cancelled) == (3 << 33 | 5, True)
    status.Set_cancelled(False)
    assert status.count == 3 << 33 | 5
    with raises_mpi(MPI.ERR_COUNT):
        status.count = -1
    assert status.count == 3 << 33 | 5
    with pytest.raises(TypeError):
        status.Set_source("one")


def test_get_elements_counts_basic_elements_of_derived_types():
    """Get_elements counts basic elements (MPI-3.1 §4.1.11), as MPICH does: 5 doubles
    received into a 5-double column are 1 item and 5 elements, 3 of them are no
    whole item (UNDEFINED) and 3 elements; a struct's elements have their own sizes
    (a part of an item counts those it holds, UNDEFINED inside one); Set_elements
    sets elements, not items; a negative count is ERR_COUNT, the status unchanged."""
    column = MPI.DOUBLE.Create_vector(5, 1, 5).Commit()
    pair = MPI.Datatype.Create_struct([1, 2], [0, 8], [MPI.INT, MPI.DOUBLE]).Commit()
    status = MPI.Status()
    status.count = 5 * 8
    assert (status.Get_count(column), status.Get_elements(column)) == (1, 5)
    status.count = 3 * 8
    assert (status.Get_count(column), status.Get_elements(column),
            status.Get_elements(MPI.DOUBLE)) == (MPI.UNDEFINED, 3, 3)
    status.count = 2 * 20 + 4 + 8          # two items, then the int and one double
    assert (status.Get_count(pair), status.Get_elements(pair)) == (MPI.UNDEFINED, 8)
    status.count = 4 + 3
    assert status.Get_elements(pair) == MPI.UNDEFINED
    status.Set_elements(column, 7)
    assert (status.count, status.Get_count(column), status.Get_elements(column),
            status.Get_elements(MPI.DOUBLE)) == (56, MPI.UNDEFINED, 7, 7)
    status.Set_elements(pair, 4)           # one item, then the int
    assert (status.count, status.Get_elements(pair)) == (24, 4)
    with raises_mpi(MPI.ERR_COUNT):
        status.Set_elements(pair, -1)
    assert status.count == 24
    column.Free()
    pair.Free()


def test_elements_of_a_received_column():
    """A receive into a column type: Get_elements says how many doubles arrived."""
    def body():
        comm = MPI.COMM_WORLD
        column = MPI.DOUBLE.Create_vector(5, 1, 5).Commit()
        got, status = np.zeros(25), MPI.Status()
        comm.Sendrecv(np.arange(3.0), comm.rank, 0, [got, 1, column], comm.rank, 0, status)
        return status.Get_count(column), status.Get_elements(column), got[::5].tolist()
    assert shmrma.launch(body, 1, timeout=30) == [(MPI.UNDEFINED, 3, [0, 1, 2, 0, 0])]


def test_tomemory_is_the_status_itself():
    """tomemory() gives the status's C ints (MPICH's layout: count_lo,
    count_hi_and_cancelled, source, tag, error); writing them changes the status."""
    status = MPI.Status()
    status.source, status.tag, status.error = 11, 22, 33
    status.count = 44
    memory = status.tomemory()
    assert (memory.format, memory.itemsize, list(memory)) == ("i", 4, [44, 0, 11, 22, 33])
    memory[2], memory[3], memory[4] = 111, 222, 333
    memory[1] = 1
    assert (status.source, status.tag, status.error, status.cancelled) == (111, 222, 333, True)


def test_pickle_keeps_every_field():
    status = MPI.Status()
    status.source, status.tag, status.error = 1, 2, MPI.ERR_ARG
    status.count = 1 << 40
    status.cancelled = True
    again = pickle.loads(pickle.dumps(status))
    assert again == status and again is not status
    assert (again.source, again.tag, again.error, again.count, again.cancelled) == (
        1, 2, MPI.ERR_ARG, 1 << 40, True)


@pytest.mark.timeout(60)
def test_a_receive_fills_the_status_on_both_paths():
    """Recv with a status fills source, tag and byte count and clears a cancelled flag
    left from before, the same with the C fast path as with the Python path; a
    status that is not a Status is TypeError, with the message left unreceived."""
    def body():
        comm = MPI.COMM_WORLD
        out = []
        for fast in (True, False):
            fastpath.enable(fast)
            try:
                status = MPI.Status()
                status.Set_cancelled(True)
                status.error = MPI.ERR_OTHER
                comm.Send(np.arange(3, dtype="i4"), 0, tag=7)
                comm.Recv(np.empty(3, "i4"), 0, 7, status)
                comm.send("object", 0, tag=8)
                object_status = MPI.Status()
                comm.recv(None, 0, 8, object_status)
                out.append((status.source, status.tag, status.count, status.error,
                            status.cancelled, object_status.tag, object_status.count > 0))
                comm.Send(b"x", 0, tag=9)
                box = bytearray(1)
                with pytest.raises(TypeError):
                    comm.Recv(box, 0, 9, "not a status")
                with pytest.raises(TypeError):
                    comm.recv(None, 0, 9, "not a status")
                comm.Recv(box, 0, 9)    # the message is still there
            finally:
                fastpath.enable(True)
        return out

    fast, slow = shmrma.launch(body, 1, timeout=50)[0]
    assert fast == slow == (0, 7, 12, MPI.SUCCESS, False, 8, True)
