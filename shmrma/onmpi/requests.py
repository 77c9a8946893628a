"""Requests that Python completes on the mpi backend (synchronization counters,
HANDLE_SYNC receives, window barriers), and the multi-request calls that mix them
with the MPI's own requests.

The MPI cannot wait on a request it does not know, so ``MPI.Request.Waitall`` and
the other multi-request calls of this namespace poll every request: the MPI's with
``Get_status``/``Test`` (which also make progress), shmrma's with their ``_ready``,
backing off from spinning to short sleeps so a waiting rank leaves the CPU to the
ranks it waits for.
"""
import time

from mpi4py import MPI as _mpi

from .extends import Extends

SPIN_POLLS = 64          # polls before the first pause
YIELD_TIME = 2e-3        # seconds of polls separated by sched_yield, then sleeps
FIRST_SLEEP = 20e-6      # seconds; doubles up to MAX_SLEEP
MAX_SLEEP = 1e-3


_progress_comm = []     # a private communicator nobody sends on, made on first use


def make_progress():
    """Enter the MPI's progress engine once, for operations that target this rank.

    Open MPI's shared-memory windows (osc/sm) read and write memory without
    entering it, so a rank that polls a counter in such a window would starve a
    peer's Flush on a window of another component (osc/rdma serves Win.Create):
    the job hangs. An Iprobe on a communicator nobody sends on does enter it and
    takes no message."""
    if not _progress_comm:
        _progress_comm.append(_mpi.COMM_SELF.Dup())
    _progress_comm[0].Iprobe(_mpi.ANY_SOURCE, _mpi.ANY_TAG)


def poll_until(ready):
    """Call ``ready()`` until it returns true, backing off as the wait grows. The
    yielding phase is timed, not counted: a poll that reads memory is much cheaper
    than one that makes MPI calls, and either should yield for as long."""
    polls, pause, yield_until = 0, FIRST_SLEEP, None
    while not ready():
        polls += 1
        if polls < SPIN_POLLS:
            continue
        if yield_until is None:
            yield_until = time.perf_counter() + YIELD_TIME
        if time.perf_counter() < yield_until:
            time.sleep(0)
        else:
            time.sleep(pause)
            pause = min(2 * pause, MAX_SLEEP)


class PyRequest(_mpi.Prequest):
    """A request whose completion is Python code. Subclasses give ``_ready()``:
    whether it can complete without blocking (it also makes progress), and
    ``_complete(status)``: what completing it does, filling ``status`` (None or an
    MPI.Status). Inactive and freed requests complete at once, empty."""

    _active = False
    _freed = False

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)     # mpi4py's __cinit__ takes only a request

    def __bool__(self):
        return not self._freed

    def Test(self, status=None):
        if not self._active:
            empty(status)
            return True
        if not self._ready():
            return False
        self._complete(status)
        return True

    def Wait(self, status=None):
        if self._active:
            poll_until(self._ready)
            self._complete(status)
        else:
            empty(status)
        return True

    def Get_status(self, status=None):
        empty(status)
        return not self._active or self._ready()


def empty(status):
    if status is not None:
        status.source, status.tag, status.error = _mpi.ANY_SOURCE, _mpi.ANY_TAG, _mpi.SUCCESS


def _ours(requests):
    return any(isinstance(request, PyRequest) for request in requests)


def _idle(request):
    """Null or (for shmrma's requests) inactive: multi-request calls skip it."""
    if isinstance(request, PyRequest):
        return not request._active
    return request == _mpi.REQUEST_NULL


def _statuses(statuses, count):
    if statuses is None:
        return [None] * count
    while len(statuses) < count:
        statuses.append(_mpi.Status())
    return statuses


def _ready(request):
    return request.Get_status()


class Request(_mpi.Request, metaclass=Extends):
    """``MPI.Request``: mpi4py's, whose multi-request calls also take shmrma's requests."""

    _widens = _mpi.Request

    @classmethod
    def Waitall(cls, requests, statuses=None):
        if not _ours(requests):
            return _mpi.Request.Waitall(requests, statuses)
        statuses = _statuses(statuses, len(requests))
        pending = list(range(len(requests)))

        def progress():
            pending[:] = [i for i in pending if not requests[i].Test(statuses[i])]
            return not pending
        poll_until(progress)
        return True

    @classmethod
    def Testall(cls, requests, statuses=None):
        if not _ours(requests):
            return _mpi.Request.Testall(requests, statuses)
        # MPI_Testall completes none of them unless it can complete them all
        if not all(_idle(request) or _ready(request) for request in requests):
            return False
        return cls.Waitall(requests, statuses)

    @classmethod
    def Waitany(cls, requests, status=None):
        if not _ours(requests):
            return _mpi.Request.Waitany(requests, status)
        found = []
        poll_until(lambda: cls._test_any(requests, status, found))
        return found[0]

    @classmethod
    def Testany(cls, requests, status=None):
        if not _ours(requests):
            return _mpi.Request.Testany(requests, status)
        found = []
        flag = cls._test_any(requests, status, found)
        return (found[0] if found else _mpi.UNDEFINED), flag

    @staticmethod
    def _test_any(requests, status, found):
        live = [index for index, request in enumerate(requests) if not _idle(request)]
        if not live:
            found.append(_mpi.UNDEFINED)
            return True
        for index in live:
            if requests[index].Test(status):
                found.append(index)
                return True
        return False

    @classmethod
    def Waitsome(cls, requests, statuses=None):
        if not _ours(requests):
            return _mpi.Request.Waitsome(requests, statuses)
        found = []
        poll_until(lambda: cls._test_some(requests, statuses, found))
        return found[0]

    @classmethod
    def Testsome(cls, requests, statuses=None):
        if not _ours(requests):
            return _mpi.Request.Testsome(requests, statuses)
        found = []
        cls._test_some(requests, statuses, found)
        return found[0]

    @staticmethod
    def _test_some(requests, statuses, found):
        live = [index for index, request in enumerate(requests) if not _idle(request)]
        if not live:
            found[:] = [None]
            return True
        statuses = _statuses(statuses, len(requests))
        done = [index for index in live if requests[index].Test(statuses[index])]
        found[:] = [done]
        return bool(done)


class Prequest(_mpi.Prequest, metaclass=Extends):
    """``MPI.Prequest``: mpi4py's, whose ``Startall`` also starts shmrma's requests."""

    _widens = _mpi.Prequest

    @classmethod
    def Startall(cls, requests):
        theirs = [request for request in requests if not isinstance(request, PyRequest)]
        for request in requests:
            if isinstance(request, PyRequest):
                request.Start()
        if theirs:
            _mpi.Prequest.Startall(theirs)
