"""Persistent collective operations (MPI-4.0 §6.12, §7.8): ``Barrier_init``,
``Bcast_init`` ... ``Exscan_init`` and ``Neighbor_*_init``.

Each returns an inactive ``MPI.Prequest``; ``Start`` begins the nonblocking
collective of the same name (Ibarrier, Ibcast...) on the arguments given at init,
so each Start reads the send buffer anew, and Wait or Test completes it. MPI asks
every rank to start its persistent collectives in the same order, which is the
order the nonblocking collectives they run need. The ``info`` argument is taken
as an Info (no hint changes what they do) and checked like any other.
"""
from ..types import op as ops
from ..p2p.transfers import Persistent
from ..core.info import to_dict


class PersistentCollectives:
    """The ``*_init`` calls of an Intracomm (which gives the I* calls)."""

    def _persistent(self, start, info, *args):
        if self._s is not None:     # a live communicator, else ERR_COMM now
            to_dict(info)           # a bad info is an error at init, too
        return Persistent(lambda: start(*args))

    def Barrier_init(self, info=None):
        """Persistent barrier: an inactive Prequest whose Start runs Ibarrier."""
        return self._persistent(self.Ibarrier, info)

    def Bcast_init(self, buf, root=0, info=None):
        """Persistent broadcast: an inactive Prequest whose Start runs Ibcast."""
        return self._persistent(self.Ibcast, info, buf, root)

    def Gather_init(self, sendbuf, recvbuf, root=0, info=None):
        """Persistent gather: an inactive Prequest whose Start runs Igather."""
        return self._persistent(self.Igather, info, sendbuf, recvbuf, root)

    def Gatherv_init(self, sendbuf, recvbuf, root=0, info=None):
        """Persistent gather with varying counts (Igatherv at each Start)."""
        return self._persistent(self.Igatherv, info, sendbuf, recvbuf, root)

    def Scatter_init(self, sendbuf, recvbuf, root=0, info=None):
        """Persistent scatter: an inactive Prequest whose Start runs Iscatter."""
        return self._persistent(self.Iscatter, info, sendbuf, recvbuf, root)

    def Scatterv_init(self, sendbuf, recvbuf, root=0, info=None):
        """Persistent scatter with varying counts (Iscatterv at each Start)."""
        return self._persistent(self.Iscatterv, info, sendbuf, recvbuf, root)

    def Allgather_init(self, sendbuf, recvbuf, info=None):
        """Persistent gather to all: an inactive Prequest whose Start runs Iallgather."""
        return self._persistent(self.Iallgather, info, sendbuf, recvbuf)

    def Allgatherv_init(self, sendbuf, recvbuf, info=None):
        """Persistent gather to all with varying counts (Iallgatherv at each Start)."""
        return self._persistent(self.Iallgatherv, info, sendbuf, recvbuf)

    def Alltoall_init(self, sendbuf, recvbuf, info=None):
        """Persistent all to all: an inactive Prequest whose Start runs Ialltoall."""
        return self._persistent(self.Ialltoall, info, sendbuf, recvbuf)

    def Alltoallv_init(self, sendbuf, recvbuf, info=None):
        """Persistent all to all with varying counts (Ialltoallv at each Start)."""
        return self._persistent(self.Ialltoallv, info, sendbuf, recvbuf)

    def Alltoallw_init(self, sendbuf, recvbuf, info=None):
        """Persistent all to all with varying counts and datatypes (Ialltoallw)."""
        return self._persistent(self.Ialltoallw, info, sendbuf, recvbuf)

    def Reduce_init(self, sendbuf, recvbuf, op=ops.SUM, root=0, info=None):
        """Persistent reduce to the root: an inactive Prequest whose Start runs Ireduce."""
        return self._persistent(self.Ireduce, info, sendbuf, recvbuf, op, root)

    def Allreduce_init(self, sendbuf, recvbuf, op=ops.SUM, info=None):
        """Persistent reduce to all: an inactive Prequest whose Start runs Iallreduce."""
        return self._persistent(self.Iallreduce, info, sendbuf, recvbuf, op)

    def Reduce_scatter_block_init(self, sendbuf, recvbuf, op=ops.SUM, info=None):
        """Persistent reduce-scatter of equal blocks (Ireduce_scatter_block at each Start)."""
        return self._persistent(self.Ireduce_scatter_block, info, sendbuf, recvbuf, op)

    def Reduce_scatter_init(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM, info=None):
        """Persistent reduce-scatter (Ireduce_scatter at each Start)."""
        return self._persistent(self.Ireduce_scatter, info, sendbuf, recvbuf, recvcounts, op)

    def Scan_init(self, sendbuf, recvbuf, op=ops.SUM, info=None):
        """Persistent inclusive scan: an inactive Prequest whose Start runs Iscan."""
        return self._persistent(self.Iscan, info, sendbuf, recvbuf, op)

    def Exscan_init(self, sendbuf, recvbuf, op=ops.SUM, info=None):
        """Persistent exclusive scan: an inactive Prequest whose Start runs Iexscan."""
        return self._persistent(self.Iexscan, info, sendbuf, recvbuf, op)


class PersistentNeighborCollectives:
    """The ``Neighbor_*_init`` calls of a topology communicator (which gives the
    Ineighbor_* calls, neighbor.py)."""

    _persistent = PersistentCollectives._persistent

    def Neighbor_allgather_init(self, sendbuf, recvbuf, info=None):
        """Persistent neighbor gather (Ineighbor_allgather at each Start)."""
        return self._persistent(self.Ineighbor_allgather, info, sendbuf, recvbuf)

    def Neighbor_allgatherv_init(self, sendbuf, recvbuf, info=None):
        """Persistent neighbor gather with varying counts (Ineighbor_allgatherv)."""
        return self._persistent(self.Ineighbor_allgatherv, info, sendbuf, recvbuf)

    def Neighbor_alltoall_init(self, sendbuf, recvbuf, info=None):
        """Persistent neighbor all to all (Ineighbor_alltoall at each Start)."""
        return self._persistent(self.Ineighbor_alltoall, info, sendbuf, recvbuf)

    def Neighbor_alltoallv_init(self, sendbuf, recvbuf, info=None):
        """Persistent neighbor all to all with varying counts (Ineighbor_alltoallv)."""
        return self._persistent(self.Ineighbor_alltoallv, info, sendbuf, recvbuf)

    def Neighbor_alltoallw_init(self, sendbuf, recvbuf, info=None):
        """Persistent neighbor all to all with varying datatypes (Ineighbor_alltoallw)."""
        return self._persistent(self.Ineighbor_alltoallw, info, sendbuf, recvbuf)
