"""A communicator's state: its context id and the world ranks of its members, shared
by every handle and layer that serves it (the point-to-point fast paths through its
C base, the collectives' areas and channel, the topologies, the attributes...).

Its context id separates its traffic: user point-to-point, collectives and
Create_group handshakes each use their own sub-context, so a user's ANY_TAG
receive never takes a collective's message.
"""
import threading

from ..core import constants, errhandler, job
from . import transport as mailbox
from .transport import SUBCONTEXTS


class CommState(mailbox.CommCore):
    """What a communicator is, shared by its handle and its duplicates by reference;
    its base holds what the point-to-point fast paths need of it."""

    __slots__ = ("context", "ranks", "rank", "slot", "name", "world_to_rank", "info",
                 "topology", "area", "large_area", "area_tries", "nbc", "attributes", "locks",
                 "commctx", "errhandler")

    inter = False       # an intercommunicator's (comm/intercomm.py) is True

    def __init__(self, context, ranks, slot, name="", parent=None):
        self.context = context
        self.ranks = tuple(ranks)
        me = job.world_rank()
        self.rank = self.ranks.index(me) if me in self.ranks else constants.UNDEFINED
        self.slot = slot
        self.name = name
        self.world_to_rank = {w: i for i, w in enumerate(self.ranks)}
        self.freed = False
        self.area = self.large_area = None   # the collective areas (coll/area.py), at first use
        self.area_tries = 0     # failed tries to map the small one (coll/area.py _map_small)
        self.nbc = None         # the nonblocking collectives' channel (coll/channel.py), at first use
        self._bind(context, self.ranks, job.world_size(), me)
        self.info = {}
        self.topology = None    # a topology.Topology for a Cartcomm, Graphcomm...
        self.attributes = {}    # attributes.Attributes of every handle to it
        self.locks = {}         # mpi4py's per-communicator locks (lock, commlock.py)
        self.commctx = None     # commlock.py's private duplicate, at first use
        # mpi4py sets its policy's handler on every communicator it makes or starts
        # with; without one, a new communicator inherits its parent's (MPI-3.1 §8.3)
        self.errhandler = errhandler.for_new(
            errhandler.ERRORS_ARE_FATAL if parent is None else parent.errhandler)

    def subcontext(self, kind):
        return self.context * SUBCONTEXTS + kind

    def lock(self, key):
        """mpi4py's lock of this communicator for ``key`` ("bcast", ...), made at first
        use: its object collectives hold it, so that two threads calling one at once
        on one communicator take turns instead of mixing their messages."""
        lock = self.locks.get(key)
        if lock is None:    # setdefault is one step: two threads get one lock
            lock = self.locks.setdefault(key, threading.Lock())
        return lock
