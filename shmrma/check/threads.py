"""The threads of a rank under the race checker: a clock each, and the threading
module's synchronization as its edges.

A rank's threads are unordered with each other unless the program orders them:
an RMA call of one thread and another thread's load, store or call on the same
bytes race when nothing orders them (MPI-3.1 section 12.4: MPI calls of several
threads execute in some serial order, which orders none of their other
accesses). So each thread that takes part has a clock of its own (clock.py's
slots), and the synchronization a program orders its threads with carries a
clock from one to the other, as ThreadSanitizer does for pthreads:

- ``Thread.start``: the new thread starts with its parent's clock; ``join``: the
  joiner takes the ended thread's;
- a lock's release publishes the releaser's clock on the lock, an acquire joins it:
  ``threading.Lock`` and ``RLock``, and through them ``Condition``, ``Event``,
  ``Semaphore``, ``Barrier``, ``queue.Queue`` and ``queue.SimpleQueue``
  (its Python version), made once the checker started (a lock made before, or
  by ``_thread`` directly, carries nothing).

A thread started through threading.Thread once the checker runs gets a slot (a
clock index of the job) when it starts; another (started before) at its first
MPI call or noted access, its clock living here only until then. The rank's main
thread keeps the rank's own slot. An ended thread's slot goes to a later thread
that comes after it (joined it), its epochs continuing; a report then names both
threads. Without a free slot a thread counts as the main thread (said once).
"""
import _thread
import copy
import threading

from ..core import job, settings
from ..core.lazy import numpy
from . import clock as clocks

try:
    from .. import _pagewatch
except ImportError:         # the C extension is not built: no page watch, no notes
    _pagewatch = None


class ThreadClock:
    """What the checker knows of one thread of this rank: its clock (``vc``, a
    numpy array of the job's clock width, or the Clock's once it has a slot)."""

    __slots__ = ("vc", "clock", "name", "native")

    def __init__(self, vc, name, native):
        self.vc, self.clock, self.name, self.native = vc, None, name, native


_states = {}        # thread ident -> ThreadClock, for the threads other than the main one
_natives = {}       # native thread id -> ThreadClock
_claiming = _thread.allocate_lock()     # a raw lock: the checked ones use this module
_main = []          # [the main thread's ident, its native id]
_claimed = [0]      # slots this rank's threads claimed
_live = [0]         # of them, the threads not ended: the page watch steps meanwhile
_ended = []         # (slot, its last epoch, native id) of ended threads: free to reuse
_slot_clocks = {}   # slot -> the Clock of the thread that has it (or had it last)


def _main_clock():
    return clocks.clock_of_main()


def _state():
    """This thread's ThreadClock, made from the main thread's clock as it is now
    when the thread was not started through threading.Thread (it knows as much)."""
    state = _states.get(threading.get_ident())
    if state is None:
        state = _new_state(_main_clock().vc.copy(), threading.current_thread().name)
    return state


def _new_state(vc, name):
    """The calling thread's ThreadClock, starting with the clock ``vc``; from the
    first, clock.clock() tells the threads apart (until then one check, no lookup)."""
    clocks.follow_threads(_main, thread_clock)
    native = threading.get_native_id()
    state = ThreadClock(vc, name, native)
    _states[threading.get_ident()] = state
    _natives[native] = state
    return state


def thread_clock():
    """The Clock of the calling thread (not the main one), with a slot."""
    return _with_slot(_state())


def _with_slot(state):
    if state.clock is None:
        with _claiming:
            if state.clock is None:
                main = _main_clock()
                slot, ended = _free_slot(state, main)
                if slot is None:
                    main.warn_once(
                        "more threads take part than the checker follows (%s=%d): the "
                        "others count as their rank's main thread, and races between "
                        "them go unseen" % (settings.CHECK_THREADS_VARIABLE,
                                            main.session.extra))
                    numpy.maximum(main.vc, state.vc, out=main.vc)
                    state.clock, state.vc = main, main.vc   # one clock, as one thread
                else:
                    global several
                    several = True
                    _claimed[0] += 1
                    _live[0] += 1
                    if _live[0] == 1 and _pagewatch is not None:
                        _pagewatch.set_stepping(True)   # every thread's first access
                    made = clocks.Clock(main.session, main.rank, slot, main)
                    numpy.maximum(made.vc, state.vc, out=made.vc)
                    made.vc[slot] = ended + 1   # after the epochs of its thread before
                    state.clock, state.vc = made, made.vc
                    _slot_clocks[slot] = made
    return state.clock


def _free_slot(state, main):
    """(a slot for the thread of ``state``, the last epoch of the slot's thread before
    or 0): an ended thread's of this rank, when this thread comes after all that
    thread did (it joined it, maybe through others) and none of its accesses waits
    to be recorded; else a new one of the job (None when every one is taken)."""
    for at, (slot, epoch, native) in enumerate(_ended):
        if state.vc[slot] >= epoch and not (_pagewatch and _pagewatch.noted_for(native)):
            del _ended[at]
            main.session.name_slot(slot, state.name, epoch + 1)
            return slot, epoch
    return main.session.claim_slot(main.rank, state.name), 0


def _frozen(clock):
    """A copy of ``clock`` whose entries no longer change (its thread ended)."""
    frozen = copy.copy(clock)
    frozen.vc = clock.vc.copy()
    frozen.vc_address = frozen.vc.ctypes.data
    return frozen


def clock_of_native(native):
    """The Clock of the thread whose native id is ``native`` (a fault's), the main
    thread's for an unknown one."""
    if native in (None, 0) or _main and native == _main[1]:
        return _main_clock()
    state = _natives.get(native)
    return _main_clock() if state is None else _with_slot(state)


def siblings(me):
    """The Clocks of this rank's slots other than ``me`` (an ended thread's too, until
    a later thread takes its slot), its main thread's included."""
    main = _main_clock()
    return [clock for clock in [main] + list(_slot_clocks.values()) if clock.me != me]


several = False     # whether a thread of this rank other than the main one has a slot


def _current():
    """(the calling thread's Clock, None until it has a slot; its clock entries)."""
    if threading.get_ident() == _main[0]:
        main = _main_clock()
        return main, main.vc
    state = _state()
    return state.clock, state.vc


def _record_own_notes():
    """Record the calling thread's loads and stores that the page watch noted, with
    its clock as it is: before the clock changes (a release ends its epoch, an
    acquire joins another's), so that they keep the point of the thread they were
    made at. Other threads' notes are recorded too, with their clocks, unchanged
    since (each records its own before a change)."""
    if _pagewatch is not None and _pagewatch.noted_for(threading.get_native_id()):
        for look in list(_main_clock()._looks):
            look()


def _released(published):
    """A release by the calling thread: its clock joined into ``published`` (None,
    or what earlier releases left), which is returned; its epoch then ends. Before
    the rank's clock is made (or in the launcher), nothing."""
    if not clocks.started():
        return None
    _record_own_notes()
    owner, vc = _current()
    published = _joined(published, vc)
    if owner is not None:       # (no slot: no epoch of its own to end)
        owner.end_epoch()
    return published


def _joined(published, vc):
    """``vc`` joined into what a lock holds (a lock made before a fork may hold the
    clock of another job's rank, of another width: dropped)."""
    if published is None or published.shape != vc.shape:
        return vc.copy()
    return numpy.maximum(published, vc)


def _acquired(published):
    """An acquire by the calling thread of what a release left (a lock made before
    a fork may hold the clock of another job's rank: of another width, ignored)."""
    if published is not None and clocks.started():
        _record_own_notes()
        _, vc = _current()
        if vc.shape == published.shape:
            numpy.maximum(vc, published, out=vc)


class CheckedLock:
    """threading.Lock with a clock: what its releaser knew, its acquirer learns."""

    __slots__ = ("_lock", "_clock", "__weakref__")
    _make = staticmethod(_thread.allocate_lock)

    def __init__(self):
        self._lock = self._make()
        self._clock = None

    def acquire(self, blocking=True, timeout=-1):
        taken = self._lock.acquire(blocking, timeout)
        if taken:
            _acquired(self._clock)
        return taken

    def release(self):
        if not self._held():
            self._lock.release()        # raises as threading's lock does
        self._clock = _released(self._clock)
        self._lock.release()

    def _held(self):
        return self._lock.locked()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()

    def locked(self):
        return self._lock.locked()

    def _at_fork_reinit(self):
        self._lock._at_fork_reinit()
        self._clock = None

    acquire_lock, release_lock, locked_lock = acquire, release, locked

    def __repr__(self):
        return "<checked %r>" % (self._lock,)


class CheckedRLock(CheckedLock):
    """threading.RLock with a clock (each release publishes, as a nested one is a
    release too), and the methods a Condition over it uses."""

    __slots__ = ()
    _make = staticmethod(_thread.RLock)

    def _held(self):
        return self._lock._is_owned()

    _is_owned = _held

    def _release_save(self):
        self._clock = _released(self._clock)
        return self._lock._release_save()

    def _acquire_restore(self, state):
        self._lock._acquire_restore(state)
        _acquired(self._clock)


def _checked_rlock(*args, **kwargs):
    return CheckedRLock(*args, **kwargs)


_installed = []


def install():
    """Follow the threads of this process (once, when checking starts)."""
    if _installed:
        return
    _installed.append(True)
    main = threading.main_thread()
    _main[:] = [main.ident, main.native_id]
    # the threading module's own bookkeeping (its registry of threads, a Condition's
    # waiters, a thread's start hand-over) keeps raw locks: it orders the threads
    # in this run only, not in the program's logic, so it carries no clock
    threading.Lock, threading.RLock = CheckedLock, _checked_rlock
    import queue
    queue.SimpleQueue = queue._PySimpleQueue   # (over Semaphores: Condition and Lock)
    _follow_thread_lifetimes(threading.Thread)
    if threading.active_count() > 1:    # threads from before: tell them apart now
        clocks.follow_threads(_main, thread_clock)


def _follow_thread_lifetimes(Thread):
    start, bootstrap, join = Thread.start, Thread._bootstrap_inner, Thread.join

    def checked_start(self):
        self._shmrma_clock = _released(None)    # the child starts knowing this
        self._started._cond = threading.Condition(_thread.allocate_lock())  # (raw)
        return start(self)

    def checked_bootstrap(self):
        if not clocks.started():
            return bootstrap(self)
        inherited = getattr(self, "_shmrma_clock", None)
        state = _new_state(_main_clock().vc.copy() if inherited is None else inherited,
                           self.name)
        # a slot from the start: whoever joins this thread's clock later must find its
        # epochs in the entry of its slot
        _with_slot(state)
        try:
            bootstrap(self)
        finally:
            self._shmrma_ended = state.vc.copy()
            own = state.clock
            if own is not None and own.me >= own.session.nranks:
                # its accesses still to record keep its clock as it ended, though a
                # later thread takes its slot (and the slot's clock) meanwhile
                state.clock = _frozen(own)
                _ended.append((own.me, int(own.vc[own.me]), state.native))
                with _claiming:
                    _live[0] -= 1
                    if _live[0] == 0 and _pagewatch is not None:
                        _pagewatch.set_stepping(False)
            _states.pop(threading.get_ident(), None)    # (a later thread may get its id)

    def checked_join(self, timeout=None):
        join(self, timeout)
        ended = getattr(self, "_shmrma_ended", None)
        if ended is not None and not self.is_alive():
            _acquired(ended)

    Thread.start, Thread._bootstrap_inner, Thread.join = (
        checked_start, checked_bootstrap, checked_join)


@job.on_new_rank
def _forget():
    """A new rank (a fork): no thread of the parent is here, and the main thread has
    a new native id."""
    _states.clear()
    _natives.clear()
    global several
    several = False
    clocks.follow_threads(_main, None)      # one thread here, until it starts others
    _claimed[0] = _live[0] = 0
    del _ended[:]
    if _pagewatch is not None:
        _pagewatch.set_stepping(False)
    _slot_clocks.clear()
    if _main:       # (the forking thread goes on as the rank's main thread)
        _main[:] = [threading.get_ident(), threading.get_native_id()]
        threading._active_limbo_lock = _thread.RLock()  # remade at the fork: raw
