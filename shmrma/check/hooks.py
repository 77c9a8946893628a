"""The race checker's wrappers around the MPI calls (installed once, when checking).

Each wrapper runs the real call first where the call may fail (a call that raised
made no access and no synchronization), and releases before the real call where
another rank may act on it at once (a Post, a Complete, a counter's signal, a
message), so the matching acquire always finds the clock it needs.

Point-to-point messages take the Python path while checking (the C fast paths do
not report the message they matched); the RMA calls keep theirs.
"""
import collections
import contextlib
import functools
import inspect
import operator
import zlib

from ..core import constants
from ..rma import dynamic, calls as rma
from ..p2p import transport as mailbox
from ..types import memory
from ..types import buffers
from ..rma.epoch import HELD_EXCLUSIVE
from ..rma.window import WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_DYNAMIC, share_segment
from . import accesses, loads, origin, report, stores
from .accesses import (ACCUMULATE, COMPARE_AND_SWAP, FETCH_AND_OP, GET, GET_ACCUMULATE,
                       PUT, Access)
from .origin import READ, WRITTEN
from .clock import clock, key_of
from ..core.lazy import numpy

FENCE, BARRIER, POST, COMPLETE, MESSAGE, COLLECTIVE, COUNTER = range(1, 8)
CAS_CODE = -2
DECLINED = object()     # what WindowCheck.quick_access returns when it did nothing
# a target as WindowCheck.quick_access sees it: its log's cells, its memory and shadow
# addresses (None when its stores are not checked), its displacement unit and size
QuickTarget = collections.namedtuple(
    "QuickTarget", "records count_cell lock_cell memory shadow unit size")


def _code(name):
    return zlib.crc32(name.encode()) & 0x3fffffff


# --- windows -----------------------------------------------------------------------

class WindowCheck:
    """The checker's view of one window on this rank."""

    def __init__(self, win, site):
        from ..core import job
        state = win._s
        self.state, self.world = state, state.world_ranks
        n = len(self.world)
        self.segment = share_segment(state.comm, accesses.segment_bytes(n, job.world_size()),
                                     "race checking")
        self.id = key_of(zlib.crc32(self.segment.name.encode()))
        self.me = state.rank
        self.others = tuple(rank for rank in self.world if rank != clock().me)
        self.log = accesses.WindowLog(
            self.segment, self.world, job.world_size(), lambda: clock().warn_once(
                "a window's access log is full; older accesses are forgotten"))
        self.site, self.win = site, win
        self.fences = self.barriers = 0
        self.barrier_epoch = False      # the last of Fence and window barrier was a barrier
        self.entered = None     # (seq, targets known entered) while an Ibarrier is pending
        self.posts, self.starts = [0] * n, [0] * n
        self.completes, self.waits = [0] * n, [0] * n
        self.start_group, self.post_group = [], []
        self.locks = {}             # target -> passive.HELD_* (or NOCHECK)
        self.pending = set()        # targets where this rank may have pending accesses
        self.lock_all = None
        self.buffers = origin.Buffers(lambda text: clock().warn_once(text))
        self.last_site = 0          # of the latest access
        self.last_held = []         # the buffers the latest call holds (for its request)
        shadow = stores.Shadow.of(state)
        regions = stores.RegionShadows.of(state) if shadow is None else None
        self.stores = (stores.Stores(self, shadow) if shadow is not None else
                       stores.DynamicStores(self, regions) if regions is not None else None)
        self.loads = loads.Loads.of(self)
        # the load watch's pages hold all the memory whose stores are checked (an
        # ALLOCATE window's: whole pages; a CREATE window's edge pages are not watched)
        self.pages_hold_memory = state.flavor == WIN_FLAVOR_ALLOCATE
        self.quick = self._quick_targets()     # quick_access's view of the targets
        self.synced = False     # a Win.Sync since the last look: its loads may be polls
        self.looking = False    # look_local runs before this rank's releases
        self.dynamic = state.flavor == WIN_FLAVOR_DYNAMIC   # offsets are addresses
        if self.loads is not None or self.stores is not None and state.sizes[self.me]:
            self.look_from_now()

    def look_from_now(self):
        """Look at this rank's own loads and stores before each of its releases."""
        if not self.looking:
            clock().look_before_releases(self.look_local)
            self.looking = True

    def close(self):
        """Stop checking the window (before it is freed or changes its group)."""
        self.win._race_check = None
        clock().unwatch(self.observe_local)
        clock().look_before_releases(self.look_local, on=False)
        if self.loads is not None:
            self.loads.close()
        if self.stores is not None:
            self.stores.close()
        self.segment.close()

    def look_local(self):
        """Record this rank's own loads and stores of the window's memory since it
        last looked: before its releases, and before an acquire no release precedes.
        A look that would find nothing returns at once."""
        loads = self.loads
        if self._nothing_new():
            self.synced = False
            return
        noted = loads.take() if loads is not None else None
        if self.stores is not None:
            self.stores.look()
        if noted:       # polling with loads and Sync is valid (R128, R131)
            loads.record(noted, polls=self.synced)
        self.synced = False
        if loads is not None:
            loads.arm()

    def _nothing_new(self):
        """Whether no load or store of this rank reached its memory since it last
        looked, and its look would change nothing."""
        loads, stores = self.loads, self.stores
        if loads is not None and loads.armed:
            # (memory taken away is not compared: that would fault) every page away
            # since and none faulted: no access at all, where the pages hold it all
            return loads.untouched() and (stores is None or self.pages_hold_memory)
        if loads is not None and not loads.paused():
            return False        # the look takes the pages away
        return stores is None or stores.unchanged()

    def local_epoch_kind(self, target=None):
        """The epoch of this rank's own loads and stores of ``target``'s memory (its
        own by default): its lock on it, its exposure epoch, the fence or barrier
        epoch it is in, else none."""
        target = self.me if target is None else target
        if self.locks.get(target) is not None or self.lock_all is not None:
            return self.epoch_kind(target)
        if self.post_group and target == self.me:
            return accesses.EXPOSURE
        if self.barrier_epoch:
            return accesses.BARRIER
        return accesses.FENCE if self.fences else accesses.NO_EPOCH

    def name(self):
        given = self.win.Get_name() if self.win else ""
        return ('window "%s"' % given) if given else "the window created at %s" % self.site

    def epoch_kind(self, target):
        held = self.locks.get(target)
        if held is not None:
            return accesses.LOCK_EXCLUSIVE if held == HELD_EXCLUSIVE else accesses.LOCK_SHARED
        if self.lock_all is not None:
            return accesses.LOCK_ALL
        if target in self.start_group:
            return accesses.PSCW
        table = self.state.epoch.table
        if table.counter_kinds(target):
            return accesses.COUNTER
        return accesses.BARRIER if self.barrier_epoch else accesses.FENCE

    # --- accesses ---
    def access(self, target, lows, highs, kind, op, basic, locked=False):
        """Check and record an access (``locked``: the target's lock is held)."""
        c = clock()
        if not locked:
            c.observe_local()
        access = self._new_access(c, target, lows, highs, kind, op, basic)
        races = self.log.record(target, c.me, access, c.vc, c.vc_address, self._prune,
                                locked)
        self._checked(c, target, access, races)
        return access

    def _new_access(self, c, target, lows, highs, kind, op, basic):
        access = Access(lows, highs, kind, op, basic, c.site_here(),
                        self.epoch_kind(target))
        self.pending.add(target)
        self.last_site = access.site
        return access

    def _checked(self, c, target, access, races):
        c.accesses += 1
        for row in _distinct(races):
            self._report(c, target, row, access)

    def shadowed_access(self, target, lows, highs, what, perform, source=None):
        """Perform, check and record an access to memory whose stores are checked in
        C, under the target's lock (stores.py); None when C declines (nothing done)."""
        kind, op, basic = what
        c = clock()
        addresses = self.stores.addresses(target)
        if addresses is None:
            return None
        access = self._new_access(c, target, lows, highs, kind, op, basic)
        done = self.log.shadowed(target, c.me, access, c.vc_address, addresses,
                                 target != self.me, accesses.writes(kind, op), perform,
                                 source)
        if done is None:
            return None
        result, races, unseen = done
        if races is None:       # the log was full: the Python path prunes
            races = self.log.record(target, c.me, access, c.vc, c.vc_address, self._prune)
        self._checked(c, target, access, races)
        if unseen is not None:
            self.stores.report_unseen(target, unseen, access)
        return (result,)

    def quick_access(self, kind, target, disp, array, perform, role):
        """A Put or Get of a numpy array at an int displacement, the common case, made
        and recorded in one C call (racecheck.c's quick: what shadowed_access or access
        does for it) and few Python steps. DECLINED, having done nothing, for any other
        case (the general path then does it)."""
        quick = self.quick
        if (quick is None or type(target) is not int or type(array) is not numpy.ndarray
                or not 0 <= target < len(quick) or self.entered is not None
                or not (disp is None or type(disp) is int)):
            return DECLINED
        where, basic = quick[target], _basic_codes.get(array.dtype)
        if where is None or basic is None:
            return DECLINED
        c = clock()
        c.observe_local()
        site = c.site_here(2)       # past _put_or_get and the call's wrapper
        epoch = self.epoch_kind(target)
        done = accesses._native.quick(where, kind, disp or 0, array, basic, site, epoch, c.me,
                                      c.vc_address, accesses.CAPACITY, kind == PUT,
                                      target != self.me, perform, c.counter_address)
        if done is False:
            return DECLINED
        self.pending.add(target)
        self.last_site = site
        if done is not None:        # a race, an unseen store, or not recorded yet
            low = (disp or 0) * where.unit
            self._quick_report(c, target, Access(numpy.array([low]),
                                                 numpy.array([low + array.nbytes]), kind, 0,
                                                 basic, site, epoch), *done)
        self.last_held = self.buffers.hold_array(target, kind, site, array, role)
        return None

    def _quick_report(self, c, target, access, found, unseen):
        """A quick access that races (``found``: the racing records' indices, None
        when it is not recorded yet, the log full or its lock busy: the Python path
        records it, waiting and pruning), or met a store its target had not looked at
        (``unseen``)."""
        races = (self.log.record(target, c.me, access, c.vc, c.vc_address, self._prune)
                 if found is None else self.log.records[target][found])
        self._checked(c, target, access, races)
        if unseen is not None:
            self.stores.report_unseen(target, unseen, access)

    def _quick_targets(self):
        """Per target, what quick_access needs (a QuickTarget), or None where it
        declines: memory not mapped here under checked stores, or this rank's loads
        watched on it (an RMA's own copies are not loads); None for all without C."""
        if accesses._native is None:
            return None
        if self.stores is not None and type(self.stores) is not stores.Stores:
            return None     # a dynamic window's: its offsets are addresses
        found = []
        for target in range(len(self.world)):
            addresses = (None, None) if self.stores is None else self.stores.addresses(target)
            own = self.loads is not None and (target == self.me or self.loads.shared)
            found.append(None if addresses is None or own else QuickTarget(
                *self.log.cells[target], *addresses, self.state.units[target],
                self.state.sizes[target]))
        return found

    def _report(self, c, target, row, access):
        row_site = c.site_text(int(row["origin"]), int(row["site"]))
        here = c.site_text(c.me, access.site)
        pair = sorted([(row_site, int(row["kind"])), (here, access.kind)])
        c.report_once(key_of(*(zlib.crc32(("%s|%d" % p).encode()) for p in pair)),
                      lambda: report.race(self.name(), target, row, row_site, c.me, access,
                                          here, self.dynamic))

    def _prune(self, target, rows):
        """Forget the records every rank of the window is ordered after."""
        session = clock().session
        seen = numpy.min([session.block(w)[0] for w in self.world], axis=0)
        return self.log.keep(target, rows, seen[rows["origin"]] < rows["stamp"])

    def complete(self, targets, modes=7, only=None):
        """Stamp this rank's pending accesses at ``targets`` (of the kinds in ``modes``,
        or just one request's: ``only``); only targets it has accessed are looked at."""
        if not modes and only is None:
            return              # no kind of RMA (a counter's pure notification)
        c = clock()
        for target in self.pending.intersection(targets):
            self.log.complete(target, c.me, c.epoch, modes, only)
            if modes == 7 and only is None:
                self.pending.discard(target)

    def signal(self, target, mode, key):
        """A counter's signal: the RMA of the kinds in ``mode`` to ``target`` complete
        there (A15), then this rank's clock published under the counter's ``key``; in
        one C call (racecheck.c's signal) where it can, else complete() and
        Clock.publish()."""
        c = clock()
        c.prepare_release()
        pending = target in self.pending
        cell = c.own_cell(key)
        if cell is None or accesses._native is None or not accesses._native.signal(
                *self.log.cells[target], mode if pending else 0, cell, c.width, key,
                c.vc_address, c.me):
            self.complete((target,), mode)
            c.publish(key)
        elif pending and mode == 7:
            self.pending.discard(target)

    def complete_locally(self, targets=None, modes=7, only=None):
        """The origin's buffers of the calls now complete locally (R35): report those
        the program changed since (at ``targets``, None for all; see origin.Buffers)."""
        if not modes and only is None:
            return
        changed = self.buffers.complete(targets, modes, only)
        if not changed:
            return
        c = clock()
        here = report.call_site()
        for held, (first, last) in changed:
            made = c.site_text(c.me, held.site)
            c.report_once(key_of(zlib.crc32(("%s|%s|%d" % (made, here, held.role)).encode())),
                          lambda: report.buffer_race(self.name(), held, first, last, c.me,
                                                     made, here))

    def observe_local(self):
        c = clock()
        self.log.acquire_words(self.me, c.vc, c.me)

    def everyone(self):
        return range(len(self.world))

    # --- synchronization ---
    def key(self, *numbers):
        return key_of(self.id, *numbers)

    def release_all(self, kind, seq):
        clock().release(self.key(kind, seq))

    def acquire_all(self, kind, seq):
        clock().acquire_each(self.world, self.key(kind, seq))




def _distinct(rows):
    seen = set()
    for row in rows:
        mark = (int(row["origin"]), int(row["site"]), int(row["kind"]))
        if mark not in seen:
            seen.add(mark)
            yield row


def _check_of(win):
    return getattr(win, "_race_check", None)


def _runs(state, rank, target, defaults):
    """((lows, highs) of the target bytes a call touches, or None for none; the code
    of the basic type). A contiguous numpy origin at an int displacement, the common
    case, skips the buffer parser."""
    if (type(defaults) is numpy.ndarray and defaults.flags.c_contiguous
            and (target is None or type(target) is int)):
        basic = _basic_codes.get(defaults.dtype)
        if basic is not None:
            if not defaults.nbytes:
                return None, basic
            low = (target or 0) * state.units[rank]
            return (numpy.array([low]), numpy.array([low + defaults.nbytes])), basic
    message = buffers.message(defaults, writable=False, sparse=True)
    disp, count, datatype = rma._target_spec(target, message.count, message.datatype)
    basic = datatype.basic
    basic = _code(basic.Get_name()) if basic is not None else 0
    if type(defaults) is numpy.ndarray and message.datatype is datatype:
        _basic_codes[defaults.dtype] = basic
    side = rma.Side(datatype, count)
    if not side.nbytes:
        return None, basic
    offset = disp * state.units[rank]
    if side.dense:
        low = offset + side.low
        return (numpy.array([low]), numpy.array([low + side.nbytes])), basic
    where = numpy.unique(side.index) + offset
    breaks = numpy.flatnonzero(numpy.diff(where) != 1) + 1
    lows = where[numpy.concatenate(([0], breaks))]
    highs = where[numpy.concatenate((breaks - 1, [len(where) - 1]))] + 1
    return (lows, highs), basic


_basic_codes = {}       # numpy dtype -> the code of the basic type its arrays travel as


def _note(win, kind, target_rank, target, defaults, op=None, perform=None, held=()):
    """Run ``perform`` (the real call), record the access it made and hold its
    buffers (``held``: (spec, READ or WRITTEN)) until it completes locally. An
    atomic releases its word's clock before the call and acquires it after
    (WindowLog)."""
    check = _check_of(win)
    if check is None or target_rank == constants.PROC_NULL:
        return perform()
    try:
        target_rank = operator.index(target_rank)       # numpy ints, as mpi4py takes
        runs, basic = _runs(check.state, target_rank, target, defaults)
    except Exception:       # noqa: BLE001 - the real call raises the right error
        runs = None
    if runs is None:
        return perform()
    # the call's own copies into this process's mapping are not the program's loads
    own = check.loads is not None and (target_rank == check.me or check.loads.shared)
    with check.loads.quiet() if own else contextlib.nullcontext():
        return _noted(check, kind, target_rank, runs, basic, defaults, op, perform, held)


def _put_or_get(win, kind, origin, target_rank, target, role, call):
    """A Put or Get: the quick path (WindowCheck.quick_access) where it takes it, else
    _note."""
    def perform():
        return call(win, origin, target_rank, target)
    check = _check_of(win)
    if check is not None and target_rank != constants.PROC_NULL:
        done = check.quick_access(kind, target_rank, target, origin, perform, role)
        if done is not DECLINED:
            return done
    return _note(win, kind, target_rank, target, origin, perform=perform,
                 held=((origin, role),))


def _noted(check, kind, target_rank, runs, basic, defaults, op, perform, held):
    c = clock()
    if check.entered is not None and target_rank not in check.entered[1]:
        # RMA between Ibarrier and its Wait waits for the target's entry (R169, A3):
        # it comes after what the target did before its Ibarrier
        seq, known = check.entered
        c.acquire_waiting(check.world[target_rank], check.key(BARRIER, seq),
                          "the race checker's record of rank %d's Ibarrier" % target_rank)
        known.add(target_rank)
    op_code = (CAS_CODE if kind == COMPARE_AND_SWAP else 0 if op is None
               else accesses.NO_OP_CODE if op == rma.ops.NO_OP else _code(repr(op)))
    synchronizes = check.log.synchronizes(runs[0], runs[1], kind)
    # (bytes outside the target's memory: the real call raises ERR_RMA_RANGE)
    shadowed = check.stores is not None and check.stores.covers(target_rank, *runs)
    if synchronizes or shadowed:
        result = _performed_locked(check, c, target_rank, runs, (kind, op_code, basic),
                                   perform, synchronizes, shadowed,
                                   _written_bytes(kind, runs, defaults))
    else:
        result = perform()
        check.access(target_rank, runs[0], runs[1], kind, op_code, basic)
    check.last_held = check.buffers.hold(target_rank, kind, check.last_site, held)
    return result


def _written_bytes(kind, runs, origin):
    """The bytes a Put writes, in the order of its runs, when they are simply its
    contiguous numpy origin (the common case); else None."""
    if (kind == PUT and type(origin) is numpy.ndarray and origin.flags.c_contiguous
            and len(runs[0]) == 1 and origin.nbytes == runs[1][0] - runs[0][0]):
        return origin
    return None


def _performed_locked(check, c, target, runs, what, perform, synchronizes, shadowed,
                      source=None):
    """Perform and record an access under the target's checking lock. An atomic on
    one word (``synchronizes``): its release, its value and its record appear to the
    others at once, so whoever sees the value (an atomic, or a load after Win.Sync)
    finds the record too; it gets an epoch of its own, the one its release
    publishes. An access to memory whose stores are checked (``shadowed``): it meets
    the stores its target made since it last looked, and its writes (``source``: the
    bytes a Put wrote, when known) reach the shadow before the target looks again
    (stores.py)."""
    kind, op_code, basic = what
    lows, highs = runs
    if synchronizes:
        c.prepare_release()     # takes this rank's own locks: not inside the target's
        c.end_epoch()
    else:
        # an RMA to this rank's own memory comes after its own stores in program
        # order: it neither looks for them nor meets them as unseen
        c.observe_local()
        done = check.shadowed_access(target, lows, highs, what, perform, source)
        if done is not None:
            return done[0]
    unseen = None
    with check.log.locked(target):
        if synchronizes:
            check.log.release_word(target, lows, highs, kind, c.vc)
        if shadowed and target != check.me:
            unseen = check.stores.unseen(target, lows, highs)
        result = perform()
        if shadowed and accesses.writes(kind, op_code):
            check.stores.written(target, lows, highs, source)
        if synchronizes:
            c.end_epoch()
        access = check.access(target, lows, highs, kind, op_code, basic, locked=True)
    if unseen is not None:
        check.stores.report_unseen(target, unseen, access)
    return result



def _no_origin(origin):
    return isinstance(origin, (list, tuple)) and len(origin) and origin[0] is None


def _install_rma(Win):
    real = {name: getattr(Win, name) for name in (
        "Put", "Get", "Accumulate", "Get_accumulate", "Fetch_and_op", "Compare_and_swap",
        "Rput", "Rget", "Raccumulate", "Rget_accumulate")}

    def Put(self, origin, target_rank, target=None):
        _put_or_get(self, PUT, origin, target_rank, target, READ, real["Put"])

    def Get(self, origin, target_rank, target=None):
        _put_or_get(self, GET, origin, target_rank, target, WRITTEN, real["Get"])

    def Accumulate(self, origin, target_rank, target=None, op=rma.ops.SUM):
        _note(self, ACCUMULATE, target_rank, target, origin, op,
              lambda: real["Accumulate"](self, origin, target_rank, target, op),
              ((origin, READ),))

    def Get_accumulate(self, origin, result, target_rank, target=None, op=rma.ops.SUM):
        none = _no_origin(origin)
        _note(self, GET_ACCUMULATE, target_rank, target, result if none else origin, op,
              lambda: real["Get_accumulate"](self, origin, result, target_rank, target, op),
              ((result, WRITTEN),) if none else ((origin, READ), (result, WRITTEN)))

    def Fetch_and_op(self, origin, result, target_rank, target_disp=0, op=rma.ops.SUM):
        _note(self, FETCH_AND_OP, target_rank, (target_disp, 1), result, op,
              lambda: real["Fetch_and_op"](self, origin, result, target_rank, target_disp,
                                           op),
              ((origin, READ), (result, WRITTEN)))

    def Compare_and_swap(self, origin, compare, result, target_rank, target_disp=0):
        _note(self, COMPARE_AND_SWAP, target_rank, (target_disp, 1), result, None,
              lambda: real["Compare_and_swap"](self, origin, compare, result, target_rank,
                                               target_disp),
              ((origin, READ), (compare, READ), (result, WRITTEN)))

    def requested(name, win, target_rank, target, defaults, *args):
        """An R-call: its request's completion completes it locally (R116) and, for
        a read (``defaults`` given), at the target too."""
        check = _check_of(win)
        if check is not None:
            check.last_held = []
        request = real[name](win, *args)
        if check is None or target_rank == constants.PROC_NULL:
            return request
        if defaults is not None:
            _completing_read(check, request, target_rank, target, *defaults)
        held = check.last_held
        if held:
            _on_completion(request, lambda: check.complete_locally(only=held))
        return request

    def Rput(self, origin, target_rank, target=None):
        return requested("Rput", self, target_rank, target, None, origin, target_rank, target)

    def Rget(self, origin, target_rank, target=None):
        return requested("Rget", self, target_rank, target, (origin, GET), origin,
                         target_rank, target)

    def Raccumulate(self, origin, target_rank, target=None, op=rma.ops.SUM):
        return requested("Raccumulate", self, target_rank, target, None, origin,
                         target_rank, target, op)

    def Rget_accumulate(self, origin, result, target_rank, target=None, op=rma.ops.SUM):
        return requested("Rget_accumulate", self, target_rank, target,
                         (result if _no_origin(origin) else origin, GET_ACCUMULATE),
                         origin, result, target_rank, target, op)

    for function in (Put, Get, Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap,
                     Rput, Rget, Raccumulate, Rget_accumulate):
        setattr(Win, function.__name__, functools.wraps(real[function.__name__])(function))


def _completing_read(check, request, target_rank, target, defaults, kind):
    """An Rget's Wait completes its access at the target (an Rput's only locally)."""
    target_rank = operator.index(target_rank)
    runs, _ = _runs(check.state, target_rank, target, defaults)
    if runs is not None:
        only = (int(runs[0][0]), int(runs[1][-1]), kind)
        _on_completion(request, lambda: check.complete([target_rank], only=only))


# --- requests ------------------------------------------------------------------------

def _on_completion(request, action):
    """Run ``action`` when the request completes (after any action set before)."""
    earlier = getattr(request, "__dict__", {}).get("_race_done")
    request._race_done = action if earlier is None else lambda: (earlier(), action())


def _completed(*requests):
    for request in requests:
        action = getattr(request, "__dict__", {}).pop("_race_done", None)
        if action is not None:
            action()


def _install_waitall(Request):
    """A Waitall looks at the rank's own loads and stores once, not at each of its
    requests' releases: the program runs nothing between them."""
    waitall = Request.Waitall.__func__

    def Waitall(cls, requests, statuses=None):
        c = clock()
        before = c.one_look()
        try:
            return waitall(cls, requests, statuses)
        finally:
            c.end_one_look(before)
    Request.Waitall = classmethod(functools.wraps(waitall)(Waitall))


def _install_requests(classes):
    for cls in classes:
        wait, test = getattr(cls, "Wait"), getattr(cls, "Test")

        def Wait(self, status=None, _wait=wait):
            inner = getattr(self, "_inner", None)   # a persistent request's operation
            result = _wait(self, status)
            _completed(self, inner)
            return result

        def Test(self, status=None, _test=test):
            inner = getattr(self, "_inner", None)
            done = _test(self, status)
            if done:
                _completed(self, inner)
            return done

        cls.Wait, cls.Test = Wait, Test


# --- window synchronization ----------------------------------------------------------

def _install_window_sync(Win):
    from ..rma.passive import HELD_SHARED, LOCK_EXCLUSIVE
    real = {name: getattr(Win, name) for name in (
        "Fence", "Barrier", "Ibarrier", "Start", "Complete", "Post", "Wait", "Test", "Lock",
        "Unlock", "Lock_all", "Unlock_all", "Flush", "Flush_all", "Flush_local",
        "Flush_local_all", "Sync")}

    def Fence(self, assertion=0):
        check = _check_of(self)
        if check is None:
            return real["Fence"](self, assertion)
        check.complete_locally()
        check.complete(check.everyone())       # a Fence completes every RMA of the epoch
        check.barrier_epoch = False
        seq, check.fences = check.fences, check.fences + 1
        check.release_all(FENCE, seq)
        real["Fence"](self, assertion)
        check.acquire_all(FENCE, seq)

    def Barrier(self, assertion=0):
        check = _check_of(self)
        if check is None:
            return real["Barrier"](self, assertion)
        seq, check.barriers = check.barriers, check.barriers + 1
        check.complete_locally()
        check.complete(check.everyone())       # earlier RMA are complete at their targets
        check.barrier_epoch = True
        check.release_all(BARRIER, seq)
        real["Barrier"](self, assertion)
        check.acquire_all(BARRIER, seq)

    def Ibarrier(self, assertion=0):
        check = _check_of(self)
        if check is None:
            return real["Ibarrier"](self, assertion)
        seq = check.barriers
        check.complete_locally()               # at the call (F45)
        check.complete(check.everyone())       # at the request's completion, R168
        check.release_all(BARRIER, seq)        # before the window is posted
        request = real["Ibarrier"](self, assertion)
        check.barriers += 1
        check.barrier_epoch = True
        check.entered = (seq, set())

        def completed():
            check.entered = None
            clock().look_at_stores()
            check.acquire_all(BARRIER, seq)
        _on_completion(request, completed)
        return request

    def Post(self, group, assertion=0):
        check = _check_of(self)
        if check is None:
            return real["Post"](self, group, assertion)
        origins = check.state.window_ranks(group, "Post")
        c = clock()
        for origin in origins:
            c.release(check.key(POST, check.me, origin, check.posts[origin]))
        real["Post"](self, group, assertion)
        for origin in origins:
            check.posts[origin] += 1
        check.post_group = list(origins)

    def Start(self, group, assertion=0):
        real["Start"](self, group, assertion)
        check = _check_of(self)
        if check is None:
            return
        check.start_group = list(check.state.window_ranks(group, "Start"))
        c = clock()
        c.look_at_stores()
        for target in check.start_group:
            c.acquire_waiting(check.world[target],
                              check.key(POST, target, check.me, check.starts[target]),
                              "the race checker's record of rank %d's Post" % target)
            check.starts[target] += 1

    def Complete(self):
        check = _check_of(self)
        if check is None:
            return real["Complete"](self)
        targets = check.start_group
        check.complete_locally(targets)
        check.complete(targets)
        c = clock()
        for target in targets:
            c.release(check.key(COMPLETE, check.me, target, check.completes[target]))
        real["Complete"](self)
        for target in targets:
            check.completes[target] += 1
        check.start_group = []

    def end_exposure(check):
        c = clock()
        c.look_at_stores()
        for origin in check.post_group:
            c.acquire(check.world[origin],
                      check.key(COMPLETE, origin, check.me, check.waits[origin]))
            check.waits[origin] += 1
        check.post_group = []

    def Wait(self):
        real["Wait"](self)
        check = _check_of(self)
        if check is not None:
            end_exposure(check)

    def Test(self):
        done = real["Test"](self)
        check = _check_of(self)
        if done and check is not None:
            end_exposure(check)
        return done

    def look_at_own_memory(check, rank=None):
        """Loads and stores made before a lock epoch on this rank's own memory (on any
        rank's, of a shared window), or in it, are recorded as such (stores.py,
        loads.py)."""
        if check is not None and (rank in (None, check.me) or check.loads is not None
                                  and check.loads.shared):
            check.look_local()

    def Lock(self, rank, lock_type=LOCK_EXCLUSIVE, assertion=0):
        look_at_own_memory(_check_of(self), rank)
        real["Lock"](self, rank, lock_type, assertion)
        check = _check_of(self)
        if check is None or rank == constants.PROC_NULL:
            return
        rank = operator.index(rank)
        from ..rma.assertions import MODE_NOCHECK
        # exclusive epochs are compared by exclusion, not by the order the lock
        # happened to give them (accesses.py): no clock moves here
        check.locks[rank] = (HELD_SHARED if assertion & MODE_NOCHECK
                             else HELD_EXCLUSIVE if lock_type == LOCK_EXCLUSIVE
                             else HELD_SHARED)

    def Unlock(self, rank):
        check = _check_of(self)
        if check is None or rank == constants.PROC_NULL or rank not in check.locks:
            return real["Unlock"](self, rank)
        rank = operator.index(rank)
        look_at_own_memory(check, rank)
        check.complete_locally([rank])
        check.complete([rank])
        real["Unlock"](self, rank)
        del check.locks[rank]

    def Lock_all(self, assertion=0):
        look_at_own_memory(_check_of(self))
        real["Lock_all"](self, assertion)
        check = _check_of(self)
        if check is None:
            return
        check.lock_all = HELD_SHARED

    def Unlock_all(self):
        check = _check_of(self)
        if check is None:
            return real["Unlock_all"](self)
        look_at_own_memory(check)
        check.complete_locally()
        check.complete(check.everyone())
        real["Unlock_all"](self)
        check.lock_all = None

    def flush(name, at_target):
        """A Flush call: it completes the caller's RMA locally, and at the target too
        unless it is a Flush_local (R109)."""
        def flush_call(self, *rank):
            real[name](self, *rank)
            check = _check_of(self)
            if check is None or rank and rank[0] == constants.PROC_NULL:
                return
            targets = [operator.index(rank[0])] if rank else None
            check.complete_locally(targets)
            if at_target:
                check.complete(targets or check.everyone())
        flush_call.__name__ = name
        return flush_call

    Flush, Flush_all = flush("Flush", True), flush("Flush_all", True)
    Flush_local, Flush_local_all = flush("Flush_local", False), flush("Flush_local_all", False)

    def Sync(self):
        real["Sync"](self)
        check = _check_of(self)
        if check is not None:   # from now on its loads may see any atomic on its words
            clock().watch(check.observe_local)
            check.synced = True

    for function in (Fence, Barrier, Ibarrier, Post, Start, Complete, Wait, Test, Lock, Unlock,
                     Lock_all, Unlock_all, Flush, Flush_all, Flush_local, Flush_local_all,
                     Sync):
        setattr(Win, function.__name__, functools.wraps(real[function.__name__])(function))


def _checked_window(win, site):
    """The window's check (collective), or None on every rank when /dev/shm has no
    room for its record: the window then goes unchecked, the program runs on."""
    from ..core import errors
    try:
        return WindowCheck(win, site)
    except errors.Exception as exc:
        if exc.Get_error_class() != errors.ERR_NO_MEM:
            raise
        clock().warn_once("the window created at %s is not checked: no room for the race "
                          "checker's record of it (%s)" % (site, exc))
        return None


def _install_attach(Win):
    """A dynamic window's loads are watched in the regions its rank attached, from
    the Attach to the Detach (loads.py)."""
    attach, detach = Win.Attach, Win.Detach

    def Attach(self, memory_object):
        attach(self, memory_object)
        check = _check_of(self)
        if check is not None:
            address, nbytes, _ = dynamic.describe(memory_object)
            if check.stores is not None:
                check.stores.attached(address, nbytes)
            check.loads = loads.Loads.attached(check, address, nbytes)
            if check.loads is not None or check.stores is not None:
                check.look_from_now()

    def Detach(self, memory_object):
        check = _check_of(self)
        if check is not None and (check.loads is not None or check.stores is not None):
            check.look_local()          # the loads and stores of the region so far
            address = memory.get_address(memory_object)
            for watch in (check.loads, check.stores):
                if watch is not None:
                    watch.detached(address)
        detach(self, memory_object)
    Win.Attach = functools.wraps(attach)(Attach)
    Win.Detach = functools.wraps(detach)(Detach)


def _install_creation(Win):
    for name in ("Allocate", "Allocate_shared", "Create", "Create_dynamic"):
        made = getattr(Win, name).__func__

        def create(cls, *args, _made=made, **kwargs):
            win = _made(cls, *args, **kwargs)
            win._race_check = _checked_window(win, report.call_site())
            return win
        setattr(Win, name, classmethod(functools.wraps(made)(create)))
    _install_attach(Win)
    free = Win.Free

    def Free(self):
        check = _check_of(self)
        if check is not None:
            check.look_local()      # the loads and stores since the rank's last call
            check.close()
        free(self)
    Win.Free = functools.wraps(free)(Free)
    change = Win.Change_comm

    def Change_comm(self, new_comm, peer_rank):
        """The window's check starts over in the new group (its log is laid out for
        the old one): collective over it, as the change is. Change_comm needs every
        epoch closed (R164), so what came before is ordered before what comes after."""
        check, site = _check_of(self), report.call_site()
        result = change(self, new_comm, peer_rank)
        if check is not None:
            check.close()
        if getattr(result, "_state", None) is not None:
            result._race_check = _checked_window(result, site)
        return result
    Win.Change_comm = functools.wraps(change)(Change_comm)


# --- synchronization counters -------------------------------------------------------

def _counter_key(sync):
    return key_of(COUNTER, zlib.crc32(sync.segment.encode()), sync.slot, sync.generation)


def _install_counters(Win):
    from ..rma import counters
    ops_init, object_init = Win.Sync_ops_init, Win.Sync_object_init

    def Sync_ops_init(self, target_rank, sync_mode, sync_counter, info=None):
        request = ops_init(self, target_rank, sync_mode, sync_counter, info)
        check = _check_of(self)
        if check is not None:
            request._race_signal = (check, target_rank, request._mode,
                                    _counter_key(sync_counter))
        return request

    def Sync_object_init(self, sync_counter, count, info=None):
        request = object_init(self, sync_counter, count, info)
        check = _check_of(self)
        if check is not None:
            request._race_counter = (check, _counter_key(sync_counter))
        return request

    Win.Sync_ops_init = functools.wraps(ops_init)(Sync_ops_init)
    Win.Sync_object_init = functools.wraps(object_init)(Sync_object_init)

    def signalling(request):
        signal = getattr(request, "_race_signal", None)
        if signal is not None and request._active:
            check, target, mode, key = signal
            if mode:    # a pure notification completes no RMA
                check.complete_locally((target,), mode)
            check.signal(target, mode, key)

    def signalled(request):
        waited = getattr(request, "_race_counter", None)
        if waited is not None:
            check, key = waited
            c = clock()
            c.look_at_stores()
            c.join_cells(check.others, key)

    cls = counters.SyncOpsRequest
    wait, test = cls.Wait, cls.Test

    def Wait(self, status=None):
        signalling(self)
        return wait(self, status)

    def Test(self, status=None):
        signalling(self)
        return test(self, status)
    cls.Wait, cls.Test = Wait, Test

    cls = counters.SyncObjectRequest
    object_wait, object_test = cls.Wait, cls.Test

    def ObjectWait(self, status=None):
        result = object_wait(self, status)
        signalled(self)
        return result

    def ObjectTest(self, status=None):
        done = object_test(self, status)
        if done:
            signalled(self)
        return done
    cls.Wait, cls.Test = ObjectWait, ObjectTest


# --- messages and collectives ---------------------------------------------------------

class _Counts(dict):
    def take(self, key):
        seq = self.get(key, 0)
        self[key] = seq + 1
        return seq


_sent, _received = _Counts(), _Counts()
_collective_seqs = {}       # context -> collectives called on it (the same on every rank)


def _install_messages(Comm):
    """A message is a release by its sender and an acquire by its receiver, keyed by
    (context, source, destination, tag, n): MPI's non-overtaking rule makes the n-th
    message of a source with a tag the n-th receive of that source and tag."""
    from ..comm import comm as comm_module
    comm_module._fast_send = comm_module._fast_recv = comm_module._fast_irecv = mailbox._miss
    comm_module._fast_sendobj = comm_module._fast_recvobj = mailbox._miss_object
    send = Comm._isend_bytes

    def _isend_bytes(self, data, dest, tag, pickled, kind=comm_module.P2P, *args, **kwargs):
        state = self._s
        try:
            peer = self._peer(dest, "destination")
        except Exception:       # noqa: BLE001 - the real call raises the right error
            peer = constants.PROC_NULL
        if peer == constants.PROC_NULL:
            return send(self, data, dest, tag, pickled, kind, *args, **kwargs)
        c = clock()
        route = (state.subcontext(kind), c.me, state.ranks[peer], tag)
        c.release(key_of(MESSAGE, *route, _sent.get(route, 0)))
        request = send(self, data, dest, tag, pickled, kind, *args, **kwargs)
        _sent.take(route)
        return request
    Comm._isend_bytes = functools.wraps(send)(_isend_bytes)

    complete = comm_module.Receive._complete

    def _complete(self):
        c = clock()
        c.look_at_stores()      # what the rank did before the receive is not ordered by it
        complete(self)
        core = self.core
        if core.error or core.source < 0:
            return
        route = (core.context, core.source, c.me, core.tag)
        c.acquire(core.source, key_of(MESSAGE, *route, _received.take(route)))
    comm_module.Receive._complete = _complete


ALL, FROM_ROOT, TO_ROOT, SCAN, EXSCAN, NEIGHBORS = range(6)
_FLOWS = {
    ALL: "Barrier barrier allgather alltoall allreduce Allgather Allgatherv Alltoall "
         "Alltoallv Alltoallw Allreduce Reduce_scatter_block Reduce_scatter Ibarrier "
         "Iallgather Iallgatherv Ialltoall Ialltoallv Ialltoallw Iallreduce "
         "Ireduce_scatter_block Ireduce_scatter",
    FROM_ROOT: "bcast scatter Bcast Scatter Scatterv Ibcast Iscatter Iscatterv",
    TO_ROOT: "gather reduce Gather Gatherv Reduce Igather Igatherv Ireduce",
    SCAN: "scan Scan Iscan", EXSCAN: "exscan Exscan Iexscan",
    NEIGHBORS: " ".join(prefix + name for prefix in ("Neighbor_", "Ineighbor_")
                        for name in ("allgather", "allgatherv", "alltoall", "alltoallv",
                                     "alltoallw")) + " neighbor_allgather neighbor_alltoall"}


def _sources(flow, state, root):
    """The ranks whose contributions reach this rank in a collective of this flow."""
    rank, size = state.rank, len(state.ranks)
    if flow == NEIGHBORS:
        inedges, _ = state.topology.edges(rank)
        return [source for source in inedges if source != constants.PROC_NULL]
    if flow == ALL:
        return range(size)
    if flow == FROM_ROOT:
        return (root,)
    if flow == TO_ROOT:
        return range(size) if rank == root else ()
    return range(rank + 1) if flow == SCAN else range(rank)


def _collective(function, flow):
    signature = inspect.signature(function)
    rooted = "root" in signature.parameters

    @functools.wraps(function)
    def checked(self, *args, **kwargs):
        state = self._s
        root = (signature.bind(self, *args, **kwargs).arguments.get("root", 0)
                if rooted else 0)
        seq = _collective_seqs.get(state.context, 0)
        c = clock()
        key = key_of(COLLECTIVE, state.context, seq)
        c.release(key)
        result = function(self, *args, **kwargs)
        _collective_seqs[state.context] = seq + 1
        sources = tuple(state.ranks[r] for r in _sources(flow, state, root))

        def acquire():
            c.acquire_each(sources, key)
        if function.__name__.startswith("I"):
            _on_completion(result, acquire)
        else:
            acquire()
        return result
    return checked


def _install_collectives(classes):
    for flow, names in _FLOWS.items():
        for name in names.split():
            for cls in classes:
                if name in vars(cls):
                    setattr(cls, name, _collective(vars(cls)[name], flow))


# --- installing ---------------------------------------------------------------------

_installed = []


def install():
    """Put the checker on every class it watches (once per process)."""
    if _installed:
        return
    _installed.append(True)
    from ..coll import blocking as collective, neighbor, nonblocking
    from ..comm import comm
    from ..p2p import request
    from ..rma import winbarrier, window
    Win = window.Win
    _install_rma(Win)
    _install_window_sync(Win)
    _install_creation(Win)
    _install_counters(Win)
    _install_messages(comm.Comm)
    _install_collectives([collective.Collectives, nonblocking.NonblockingCollectives,
                          neighbor.NeighborCollectives, comm.Comm])
    classes = [request.Request, winbarrier.BarrierRequest]
    fast = getattr(nonblocking, "_FastCollective", None)
    classes += [fast] if fast is not None else []
    _install_requests(classes)
    _install_waitall(request.Request)
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

