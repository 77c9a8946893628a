"""The race checker's wrappers around the RMA communication calls: each records the
access it makes (the target bytes, its kind, op and basic type) in the window's log
and holds its origin buffers until the call completes locally.
"""
import array
import contextlib
import functools
import operator

from ..core import constants
from ..core.lazy import numpy
from ..rma import calls as rma
from ..types import buffers
from . import accesses
from .accesses import (ACCUMULATE, COMPARE_AND_SWAP, FETCH_AND_OP, GET, GET_ACCUMULATE,
                       PUT)
from .clock import clock
from .completion import on_completion
from .accesses import READ, WRITTEN
from .windowcheck import (BARRIER, CAS_CODE, DECLINED, basic_code, basic_codes, check_of,
                          code_of)


def _runs(state, rank, target, defaults):
    """((lows, highs) of the target bytes a call touches, or None for none; the code
    of the basic type). A contiguous numpy origin at an int displacement, the common
    case, skips the buffer parser."""
    if (type(defaults) is numpy.ndarray and defaults.flags.c_contiguous
            and (target is None or type(target) is int)):
        basic = basic_codes.get(defaults.dtype)
        if basic is not None:
            if not defaults.nbytes:
                return None, basic
            low = (target or 0) * state.units[rank]
            return (numpy.array([low]), numpy.array([low + defaults.nbytes])), basic
    message = buffers.message(defaults, writable=False, sparse=True)
    disp, count, datatype = rma._target_spec(target, message.count, message.datatype)
    basic = basic_code(datatype.basic)
    if type(defaults) is numpy.ndarray and message.datatype is datatype:
        basic_codes[defaults.dtype] = basic
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


def _note(win, kind, target_rank, target, defaults, op=None, perform=None, held=(),
          update=None):
    """Run ``perform`` (the real call), record the access it made and hold its
    buffers (``held``: (spec, READ or WRITTEN)) until it completes locally. An
    atomic releases its word's clock before the call and acquires it after
    (WindowLog). ``update``: _update_of's function for an accumulate, or None."""
    check = check_of(win)
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
        return _noted(check, kind, target_rank, runs, basic, defaults, op, perform, held,
                      update)


def _put_or_get(win, kind, origin, target_rank, target, role, call):
    """A Put or Get: the quick path (WindowCheck.quick_access) where it takes it, else
    _note."""
    def perform():
        return call(win, origin, target_rank, target)
    check = check_of(win)
    if check is not None and target_rank != constants.PROC_NULL:
        done = check.quick_access(kind, target_rank, target, origin, perform, role)
        if done is not DECLINED:
            return done
    return _note(win, kind, target_rank, target, origin, perform=perform,
                 held=((origin, role),))


def _noted(check, kind, target_rank, runs, basic, defaults, op, perform, held, update=None):
    c = clock()
    if check.entered is not None and target_rank not in check.entered[1]:
        # RMA between Ibarrier and its Wait waits for the target's entry (R169, A3):
        # it comes after what the target did before its Ibarrier
        seq, known = check.entered
        c.acquire_waiting(check.world[target_rank], check.key(BARRIER, seq),
                          "the race checker's record of rank %d's Ibarrier" % target_rank)
        known.add(target_rank)
    op_code = (CAS_CODE if kind == COMPARE_AND_SWAP else 0 if op is None
               else accesses.NO_OP_CODE if op == rma.ops.NO_OP else code_of(repr(op)))
    synchronizes = check.log.synchronizes(runs[0], runs[1], kind)
    # (bytes outside the target's memory: the real call raises ERR_RMA_RANGE)
    shadowed = check.stores is not None and check.stores.covers(target_rank, *runs)
    if synchronizes or shadowed:
        result = _performed_locked(check, c, target_rank, runs, (kind, op_code, basic),
                                   perform, synchronizes, shadowed,
                                   _written_bytes(kind, runs, defaults), update)
    else:
        result = perform()
        check.access(target_rank, runs[0], runs[1], kind, op_code, basic)
    check.last_held = check.buffers.hold(target_rank, kind, check.last_site, held)
    if check.buffers.clashes:
        check.report_clashes()
    return result


def _written_bytes(kind, runs, origin):
    """The bytes a Put writes, in the order of its runs, when they are simply its
    contiguous numpy origin (the common case); else None."""
    if (kind == PUT and type(origin) is numpy.ndarray and origin.flags.c_contiguous
            and len(runs[0]) == 1 and origin.nbytes == runs[1][0] - runs[0][0]):
        return origin
    return None


def _performed_locked(check, c, target, runs, what, perform, synchronizes, shadowed,
                      source=None, update=None):
    """Perform and record an access under the target's checking lock. An atomic on
    one word (``synchronizes``): its release, its value and its record appear to the
    others at once, so whoever sees the value (an atomic, or a load after Win.Sync)
    finds the record too; it gets an epoch of its own, the one its release
    publishes. An access to memory whose stores are checked (``shadowed``): it meets
    the stores its target made since it last looked, and its writes (``source``: the
    bytes a Put wrote, when known; ``update``: how an accumulate changes the bytes
    that were there) reach the shadow before the target looks again (stores.py).
    Another rank's shadow holds what its memory held before the call (unseen()
    brought it up to date): the bytes an accumulate wrote come from it, not from
    the memory afterwards, where the target may already have stored over them
    having seen the value (a flag it polls and resets)."""
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
            check.stores.written(target, lows, highs, source,
                                 update if target != check.me else None)
        if synchronizes:
            c.end_epoch()
        access = check.access(target, lows, highs, kind, op_code, basic, locked=True)
    if unseen is not None:
        check.stores.report_unseen(target, unseen, access)
    return result



def _no_origin(origin):
    return isinstance(origin, (list, tuple)) and len(origin) and origin[0] is None


def _update_of(op, origin, target, compare=None):
    """For an accumulate (``op``; Compare_and_swap: ``compare``) of ``origin`` at
    ``target``: a function from the bytes that were at the target (a uint8 array) to
    those the call leaves there, or to None when that is not plain to tell (an
    origin that is not one contiguous array of a basic type, a target given a
    datatype). Nothing is worked out until the shadow asks (stores.written)."""
    return functools.partial(_accumulated, op, origin, target, compare)


def _accumulated(op, origin, target, compare, before):
    data = _plain_array(origin)
    if data is None or before.nbytes != data.nbytes or not (
            target is None or type(target) is int
            or (type(target) is tuple and len(target) == 2)):
        return None
    if compare is None:
        return op.apply(data, before.view(data.dtype).copy(), data.dtype.char).view(
            numpy.uint8)
    expected = _plain_array(compare)
    if expected is None or expected.dtype != data.dtype:
        return None
    return data.view(numpy.uint8) if (before.view(data.dtype) == expected).all() else before


def _plain_array(buf):
    """``buf`` as a 1-d numpy array when it is a contiguous numpy array or an
    array.array of one basic numeric type; else None."""
    try:
        if type(buf) is numpy.ndarray and buf.flags.c_contiguous:
            data = buf.reshape(-1)
        elif type(buf) is array.array:
            data = numpy.frombuffer(buf, dtype=buf.typecode)
        else:
            return None
    except (TypeError, ValueError):
        return None
    return data if data.dtype.kind in "iufcb" and data.dtype.names is None else None


def install_rma(Win):
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
              ((origin, READ),), _update_of(op, origin, target))

    def Get_accumulate(self, origin, result, target_rank, target=None, op=rma.ops.SUM):
        none = _no_origin(origin)
        _note(self, GET_ACCUMULATE, target_rank, target, result if none else origin, op,
              lambda: real["Get_accumulate"](self, origin, result, target_rank, target, op),
              ((result, WRITTEN),) if none else ((origin, READ), (result, WRITTEN)),
              None if none else _update_of(op, origin, target))

    def Fetch_and_op(self, origin, result, target_rank, target_disp=0, op=rma.ops.SUM):
        _note(self, FETCH_AND_OP, target_rank, (target_disp, 1), result, op,
              lambda: real["Fetch_and_op"](self, origin, result, target_rank, target_disp,
                                           op),
              ((origin, READ), (result, WRITTEN)), _update_of(op, origin, (target_disp, 1)))

    def Compare_and_swap(self, origin, compare, result, target_rank, target_disp=0):
        _note(self, COMPARE_AND_SWAP, target_rank, (target_disp, 1), result, None,
              lambda: real["Compare_and_swap"](self, origin, compare, result, target_rank,
                                               target_disp),
              ((origin, READ), (compare, READ), (result, WRITTEN)),
              _update_of(None, origin, (target_disp, 1), compare))

    def requested(name, win, target_rank, target, defaults, *args):
        """An R-call: its request's completion completes it locally (R116) and, for
        a read (``defaults`` given), at the target too."""
        check = check_of(win)
        if check is not None:
            check.last_held = []
        request = real[name](win, *args)
        if check is None or target_rank == constants.PROC_NULL:
            return request
        if defaults is not None:
            _completing_read(check, request, target_rank, target, *defaults)
        held = check.last_held
        if held:
            on_completion(request, lambda: check.complete_locally(only=held))
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
        on_completion(request, lambda: check.complete([target_rank], only=only))
