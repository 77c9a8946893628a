"""Ports, name publishing, Accept/Connect and Join between the ranks of one job
(shmrma/comm/connect.py, MPI-3.1 §10.4; issue 30), and their errors."""
import socket
import struct
import threading

import pytest

import shmrma
from shmrma import MPI
from mpitest import HANG_S, raises_mpi


def _servers_and_clients(world):
    """Rank 0 alone, and the others in one communicator (COMM_NULL at rank 0)."""
    group = world.Get_group().Excl([0])
    comm = world.Create(group)
    return comm


@pytest.mark.timeout(HANG_S + 30)
@pytest.mark.parametrize("nranks", [2, 4])
def test_accept_and_connect_make_an_intercommunicator_under_repetition(nranks):
    """Rank 0 Accepts on a port it opened and published; the others Lookup the name
    and Connect: both get an intercommunicator that works; then the roles swap
    (the group opens, rank 0 connects). Twenty rounds, each on a new port."""
    def body():
        world = MPI.COMM_WORLD
        others = _servers_and_clients(world)
        seen = []
        for round_ in range(20):
            service = "svc-%d" % round_
            if world.rank == 0:
                port = MPI.Open_port()
                MPI.Publish_name(service, port)
            world.Barrier()
            if world.rank == 0:
                inter = MPI.COMM_SELF.Accept(port)
                MPI.Unpublish_name(service, port)
                MPI.Close_port(port)
            else:
                inter = others.Connect(MPI.Lookup_name(service) if others.rank == 0
                                       else None)
            seen.append((inter.size, inter.remote_size,
                         inter.allreduce(world.rank, MPI.SUM)))
            inter.Free()
            # the other way round: the group accepts, rank 0 connects
            if world.rank == 0:
                inter = MPI.COMM_SELF.Connect(world.recv(source=1, tag=round_))
            else:
                port = MPI.Open_port() if others.rank == 0 else None
                if others.rank == 0:
                    world.send(port, dest=0, tag=round_)
                inter = others.Accept(port)
                if others.rank == 0:
                    MPI.Close_port(port)
            seen.append(inter.bcast(("hello", round_), MPI.ROOT if world.rank == 0 else 0))
            inter.Free()
        if others:
            others.Free()
        return seen

    results = shmrma.launch(body, nranks, timeout=HANG_S)
    total = sum(range(nranks))
    for rank, seen in enumerate(results):
        for round_ in range(20):
            size, remote, value = seen[2 * round_]
            assert (size, remote) == ((1, nranks - 1) if rank == 0 else (nranks - 1, 1))
            assert value == (total if rank == 0 else 0)
            assert seen[2 * round_ + 1] == (None if rank == 0 else ("hello", round_))


@pytest.mark.timeout(HANG_S + 30)
def test_join_over_a_socket_between_two_ranks():
    """Comm.Join: the two processes at the ends of a connected socket get an
    intercommunicator of the two of them."""
    def body():
        world = MPI.COMM_WORLD
        if world.rank == 0:
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            world.send(server.getsockname(), dest=1)
            peer = server.accept()[0]
            server.close()
        else:
            peer = socket.create_connection(world.recv(source=0))
        inter = MPI.Comm.Join(peer.fileno())
        peer.close()
        out = (inter.size, inter.remote_size, inter.sendrecv(world.rank, 0, source=0))
        inter.Free()
        return out

    assert shmrma.launch(body, 2, timeout=HANG_S) == [(1, 1, 1), (1, 1, 0)]


@pytest.mark.timeout(HANG_S + 30)
def test_port_and_name_errors():
    """A port name that is not one (or of another job) is ERR_PORT, so are Accept on
    a port this process did not open and a second Close_port; a name published
    twice is ERR_NAME, an unknown one is ERR_NAME at Lookup_name and ERR_SERVICE at
    Unpublish_name; Join with a socket whose other end is not a rank of this job is
    ERR_PORT. Nothing is left waiting."""
    def body():
        world = MPI.COMM_WORLD
        port = MPI.Open_port()
        for call in (lambda: MPI.COMM_SELF.Accept("not a port"),
                     lambda: MPI.COMM_SELF.Connect("shmrma-port:otherjob:0:1"),
                     lambda: MPI.COMM_SELF.Accept(port.rsplit(":", 1)[0] + ":999")):
            with raises_mpi(MPI.ERR_PORT):
                call()
        MPI.Close_port(port)
        with raises_mpi(MPI.ERR_PORT, match="not a port open"):
            MPI.Close_port(port)
        name = "dup-%d" % world.rank
        MPI.Publish_name(name, "p")
        with raises_mpi(MPI.ERR_NAME, match="already published"):
            MPI.Publish_name(name, "q")
        world.Barrier()
        found = MPI.Lookup_name("dup-%d" % ((world.rank + 1) % world.size))
        world.Barrier()
        MPI.Unpublish_name(name, "p")
        with raises_mpi(MPI.ERR_NAME, match="no service"):
            MPI.Lookup_name(name)
        with raises_mpi(MPI.ERR_SERVICE):
            MPI.Unpublish_name(name, "p")
        with raises_mpi(MPI.ERR_ARG):
            MPI.Publish_name("", "p")
        mine, theirs = socket.socketpair()
        liar = threading.Thread(target=lambda: theirs.sendall(struct.pack("<q32s", 0,
                                                                          b"another job")))
        liar.start()
        with raises_mpi(MPI.ERR_PORT, match="not another rank of this job"):
            MPI.Comm.Join(mine.fileno())
        liar.join()
        mine.close()
        theirs.close()
        return found

    assert shmrma.launch(body, 2, timeout=HANG_S) == ["p", "p"]
