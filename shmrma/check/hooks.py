"""Installing the race checker's wrappers around the MPI calls (once, when checking):
rmacalls.py wraps the RMA communication calls, synccalls.py the window
synchronization and the counters, messages.py the messages and collectives,
completion.py the requests' completions. The RMA calls keep their C fast paths;
point-to-point messages take the Python path while checking (the C fast paths do
not report the message they matched).
"""
import functools

from . import loads
from .completion import install_requests, install_waitall
from .messages import install_collectives, install_messages
from .rmacalls import install_rma
from .synccalls import install_counters, install_creation, install_window_sync


_installed = []


def install():
    """Put the checker on every class it watches (once per process)."""
    if _installed:
        return
    _installed.append(True)
    from ..coll import blocking as collective, neighbor, nonblocking
    from ..comm import comm
    from ..p2p import request, transfers
    from ..rma import winbarrier, window
    from . import threads
    threads.install()
    Win = window.Win
    install_rma(Win)
    install_window_sync(Win)
    install_creation(Win)
    install_counters(Win)
    install_messages(comm.Comm)
    install_collectives([collective.Collectives, nonblocking.NonblockingCollectives,
                          neighbor.NeighborCollectives, comm.Comm])
    # a receive has a Wait of its own (transfers.Receive)
    classes = [request.Request, transfers.Receive, winbarrier.BarrierRequest]
    fast = getattr(nonblocking, "_FastCollective", None)
    classes += [fast] if fast is not None else []
    install_requests(classes)
    install_waitall(request.Request)
    _install_file_io()
    from ..rma import winmemory
    from ..core.settings import loads_watched
    if loads_watched():
        winmemory.reach_taken_pages()     # the private window memory a rank watches


def _install_file_io():
    """File reads and writes reach the buffer with system calls, which fail on a
    page the load watch took away: they run with every page given back."""
    from ..io import file
    transfer = file.FileState.transfer

    @functools.wraps(transfer)
    def unwatched_transfer(self, position, msg, payload):
        with loads.unwatched():
            return transfer(self, position, msg, payload)
    file.FileState.transfer = unwatched_transfer

