"""The origin's side of the race checker: its buffers until the call completes locally.

A Put's or Accumulate's origin buffer must not change, and a Get's result buffer must
not be written, until the call completes at the origin (R35): on a cluster the transfer
may still be reading or filling them. shmrma moves the bytes at the call, so a program
that breaks the rule gets the right answer here and the wrong one there. The checker
keeps a copy of those bytes from the call (a result buffer's as the call left it) and
compares at the call's local completion (Flush_local, Flush, Unlock, Complete, Fence,
the window barrier, a counter's signal, its request's Wait: R109, R116, R158); a
difference is a store between the two. Plain loads cannot be seen this way: reading a
Get's result buffer early goes unreported.
"""
from ..types import buffers
from ..rma import calls as rma
from ..core.lazy import numpy
from .accesses import GET, PUT

HELD = 4096         # buffers a window keeps watching (then the oldest are let go)
READ, WRITTEN = 0, 1            # the role of a buffer: read by the call, or filled by it


def mode_bit(kind):
    """The counter mode bit (Sync_ops_init) whose signal completes a call of ``kind``:
    1 for Put, 2 for Get, 4 for the accumulate family."""
    return 1 if kind == PUT else 2 if kind == GET else 4


class Held:
    """One buffer of one call, with its bytes as the call saw or left them."""

    __slots__ = ("target", "kind", "role", "site", "array", "where", "unit", "copy")

    def __init__(self, target, kind, role, site, array, where, unit):
        self.target, self.kind, self.role, self.site = target, kind, role, site
        self.array, self.where, self.unit = array, where, unit
        self.copy = self.now()

    def now(self):
        """The bytes the call covers, as they are now."""
        if self.where is None:
            return self.array.tobytes()
        return self.array[self.where].tobytes()

    def changed(self):
        """(first, last) byte offsets in the buffer of the elements that changed, or
        None."""
        now = self.now()
        if now == self.copy:
            return None
        differ = numpy.flatnonzero(numpy.frombuffer(now, numpy.uint8)
                                   != numpy.frombuffer(self.copy, numpy.uint8))
        if self.where is None:
            offsets = differ
        elif isinstance(self.where, slice):
            offsets = differ + self.where.start
        else:
            offsets = self.where[differ]
        unit = self.unit
        return int(offsets.min()) // unit * unit, (int(offsets.max()) // unit + 1) * unit - 1


def watched(spec):
    """(array, where, unit) of the bytes a call's buffer ``spec`` covers: a byte
    array, the slice or index of them in it (None: all of a contiguous numpy array)
    and the size of its elements; None when the buffer cannot be parsed (the real
    call has raised) or holds nothing."""
    if type(spec) is numpy.ndarray and spec.flags.c_contiguous:
        return (spec, None, spec.itemsize) if spec.nbytes else None
    if type(spec) is bytes:
        return None         # immutable
    try:
        message = buffers.message(spec, writable=False, sparse=True)
    except Exception:       # noqa: BLE001 - the real call raised the user's error
        return None
    data = numpy.frombuffer(message.data, numpy.uint8) if len(message.data) else None
    if data is None:
        return None
    datatype = message.datatype
    if datatype.is_predefined:
        return data, slice(0, len(data)), max(datatype.Get_size(), 1)
    basic = datatype.basic
    unit = max(basic.Get_size(), 1) if basic is not None else 1
    side = rma.Side(datatype, message.count)
    if not side.nbytes:
        return None
    first = message.first + side.low
    if side.dense:
        return data, slice(first, first + side.nbytes), unit
    return data, message.first + numpy.asarray(side.index, dtype=numpy.int64), unit


class Buffers:
    """The buffers of one rank's calls on one window not yet complete at the origin."""

    def __init__(self, warn):
        self.held = []
        self.warn = warn

    def hold(self, target, kind, site, specs):
        """Watch the buffers of a call that has just been made: ``specs`` holds
        (buffer spec, READ or WRITTEN). Returns what it holds, for a request."""
        new = []
        for spec, role in specs:
            found = watched(spec)
            if found is not None:
                new.append(Held(target, kind, role, site, *found))
        return self._add(new)

    def hold_array(self, target, kind, site, array, role):
        """hold() of one C-contiguous numpy array, not empty (the quick path's)."""
        return self._add([Held(target, kind, role, site, array, None, array.itemsize)])

    def _add(self, new):
        if new:
            if len(self.held) + len(new) > HELD:
                self.warn("a window holds more than %d RMA calls not complete at the origin; "
                          "the older ones' buffers are no longer checked" % HELD)
                del self.held[:len(new)]
            self.held += new
        return new

    def complete(self, targets=None, modes=7, only=None):
        """The held buffers now complete (at ``targets``, None for all, of the kinds
        in the counter ``modes``; or just ``only``): those that changed, as
        (Held, (first, last)); they are no longer held."""
        if not self.held:
            return []
        done, kept = [], []
        for held in self.held:
            due = (held in only if only is not None else
                   (targets is None or held.target in targets) and modes & mode_bit(held.kind))
            (done if due else kept).append(held)
        self.held = kept
        found = []
        for held in done:
            changed = held.changed()
            if changed is not None:
                found.append((held, changed))
        return found
