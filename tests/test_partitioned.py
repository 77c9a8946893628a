"""Partitioned point-to-point communication (MPI-4 §4.2) as mpi4py 4.1.2 exposes it:
Psend_init/Precv_init, Pready/Pready_range/Pready_list, Parrived. No numbered
rule covers it (those are about RMA); behaviours compared with MPICH 5.0."""
import numpy as np
import pytest

import shmrma
from mpitest import nothing_left_behind, raises_mpi
from shmrma import MPI


@pytest.mark.timeout(60)
def test_rounds_between_two_ranks_with_different_partition_counts():
    """Rank 0 sends 12 ints in 4 partitions, rank 1 receives them in 3, over three
    rounds with new data each round (the buffer is read at Pready). A receive
    partition has arrived once every send partition overlapping it has; the
    requests stay live and inactive between rounds; the receive's status tells
    source, tag and bytes; nothing is left behind."""
    def body():
        comm = MPI.COMM_WORLD
        data = np.zeros(12, "i4")
        out = []
        if comm.rank == 0:
            request = comm.Psend_init(data, 4, 1, 5)
        else:
            request = comm.Precv_init(data, 3, 0, 5)
        for round_ in range(3):
            comm.Barrier()
            request.Start()
            if comm.rank == 0:
                data[:] = np.arange(12) + 100 * round_
                comm.Barrier()
                request.Pready_list([0, 1])
                comm.Barrier()
                request.Pready_range(2, 3)
                request.Wait()
            else:
                before = [request.Parrived(i) for i in range(3)]
                comm.Barrier()
                while not request.Parrived(0):
                    pass
                middle = [request.Parrived(i) for i in range(3)]
                comm.Barrier()
                status = MPI.Status()
                request.Wait(status)
                out.append((before, middle, data.tolist(), status.source, status.tag,
                            status.count, bool(request), request.Parrived(2)))
        request.Free()
        nothing_left_behind(comm)
        return out

    for round_, got in enumerate(shmrma.launch(body, 2, timeout=50)[1]):
        before, middle, data, source, tag, count, live, inactive_arrived = got
        assert before == [False, False, False]
        assert middle == [True, False, False]     # send blocks 0-1 cover half: partition 0
        assert data == [i + 100 * round_ for i in range(12)]
        assert (source, tag, count, live, inactive_arrived) == (0, 5, 48, True, True)


@pytest.mark.timeout(60)
def test_bad_arguments_and_proc_null():
    """Wildcards are refused (a partitioned operation matches one peer and tag), so
    are partitions < 1, Pready of a partition out of range or marked ready already in
    the round, and Pready or Start at the wrong time; a PROC_NULL peer completes at
    once; a message larger than the receive buffer is ERR_TRUNCATE."""
    def body():
        comm = MPI.COMM_SELF
        buf = bytearray(8)
        with raises_mpi(MPI.ERR_RANK):
            comm.Precv_init(buf, 2)
        with raises_mpi(MPI.ERR_TAG):
            comm.Precv_init(buf, 2, 0, MPI.ANY_TAG)
        with raises_mpi(MPI.ERR_ARG):
            comm.Psend_init(buf, 0, 0)
        send = comm.Psend_init(buf, 2, 0, 1)
        with raises_mpi(MPI.ERR_REQUEST):
            send.Pready(0)
        send.Start()
        with raises_mpi(MPI.ERR_REQUEST):
            send.Start()
        with raises_mpi(MPI.ERR_ARG):
            send.Pready(2)
        send.Pready(0)
        with raises_mpi(MPI.ERR_ARG):
            send.Pready(0)
        send.Pready(1)
        send.Wait()
        small = comm.Precv_init(bytearray(4), 2, 0, 1)
        small.Start()
        with raises_mpi(MPI.ERR_TRUNCATE):
            small.Wait()
        null_send = comm.Psend_init(None, 3, MPI.PROC_NULL)
        null_receive = comm.Precv_init(None, 3, MPI.PROC_NULL, 0)
        MPI.Prequest.Startall([null_send, null_receive])
        null_send.Pready_range(0, 2)
        arrived = [null_receive.Parrived(i) for i in range(3)]
        MPI.Request.Waitall([null_send, null_receive])
        for request in (send, small, null_send, null_receive):
            request.Free()
        nothing_left_behind(comm)
        return arrived

    assert shmrma.launch(body, 1, timeout=50)[0] == [True, True, True]
