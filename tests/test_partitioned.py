"""Partitioned point-to-point communication (MPI-4.0 §4.2): Psend_init/Precv_init,
Pready/Pready_range/Pready_list, Parrived; errors are MPI.Exception (A39)."""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import raises_mpi


@pytest.mark.timeout(60)
def test_partitions_arrive_once_all_are_ready_in_every_round():
    """§4.2.2: a round is Start, Pready of every partition (any order, single, range
    or list), completion; the receiver's Parrived is false while any partition is
    not ready and true once it arrived; an explicit count is per partition; a
    column type (with gaps) travels through its type map."""
    def body():
        comm = MPI.COMM_WORLD
        column = MPI.DOUBLE.Create_vector(3, 1, 3).Commit()
        rounds = []
        if comm.rank == 0:
            data = np.zeros(12)
            matrix = np.zeros((3, 3))
            send = comm.Psend_init([data, 3, MPI.DOUBLE], 4, 1, tag=7)
            send_column = comm.Psend_init([matrix, 1, column], 1, 1, tag=8)
            for step in range(3):
                data[:] = np.arange(12) + step
                matrix[:, 0] = [step, step + 1, step + 2]
                send.Start()
                send_column.Start()
                send.Pready(2)
                comm.Barrier()          # the receiver looks: partition 2 only is ready
                comm.Barrier()
                if step % 2:
                    send.Pready_range(0, 1)
                else:
                    send.Pready_list([1, 0])
                send.Pready(3)
                send_column.Pready(0)
                MPI.Request.Waitall([send, send_column])
            send.Free()
            send_column.Free()
        else:
            data, matrix = np.zeros(12), np.full((3, 3), -1.0)
            receive = comm.Precv_init(data, 4, 0, tag=7)
            receive_column = comm.Precv_init([matrix, 1, column], 1, 0, tag=8)
            for step in range(3):
                MPI.Prequest.Startall([receive, receive_column])
                comm.Barrier()
                early = [receive.Parrived(p) for p in range(4)]
                comm.Barrier()
                while not receive.Parrived(3):
                    pass
                MPI.Request.Waitall([receive, receive_column])
                rounds.append((early, data.tolist(), matrix[:, 0].tolist(),
                               matrix[:, 1:].tolist()))
            receive.Free()
            receive_column.Free()
        column.Free()
        return rounds

    rounds = shmrma.launch(body, 2, timeout=50)[1]
    for step, (early, data, first, rest) in enumerate(rounds):
        assert early == [False] * 4
        assert data == list(np.arange(12.0) + step)
        assert first == [step, step + 1, step + 2] and rest == [[-1.0, -1.0]] * 3


def test_partitioned_errors_change_nothing():
    """ERR_REQUEST for Pready before Start and for the call of the other side
    (Pready on a receive, Parrived on a send); ERR_ARG for a partition outside the
    request's, one marked twice, and fewer than one partition; the send still
    completes once every partition is ready."""
    comm = MPI.COMM_SELF
    data, into = np.arange(4.0), np.zeros(4)
    send = comm.Psend_init(data, 2, 0)
    receive = comm.Precv_init(into, 2, 0)
    with raises_mpi(MPI.ERR_REQUEST, match="Start it first"):
        send.Pready(0)
    receive.Start()
    send.Start()
    with raises_mpi(MPI.ERR_REQUEST, match="not a partitioned send"):
        receive.Pready(0)
    with raises_mpi(MPI.ERR_REQUEST, match="not a partitioned receive"):
        send.Parrived(0)
    with raises_mpi(MPI.ERR_ARG, match="outside 0..1"):
        send.Pready_list([0, 2])
    send.Pready(0)
    with raises_mpi(MPI.ERR_ARG, match="ready already"):
        send.Pready(0)
    with raises_mpi(MPI.ERR_ARG, match="1 partition or more"):
        comm.Psend_init(data, 0, 0)
    assert not receive.Parrived(1)
    send.Pready(1)
    MPI.Request.Waitall([send, receive])
    assert into.tolist() == data.tolist()
    send.Free()
    receive.Free()
