"""The origin's side of the race checker: its buffers until the call completes locally.

A Put's or Accumulate's origin buffer must not change, and a Get's result buffer must
not be written, until the call completes at the origin (R35): on a cluster the transfer
may still be reading or filling them. shmrma moves the bytes at the call, so a program
that breaks the rule gets the right answer here and the wrong one there. The checker
keeps a copy of those bytes from the call (a result buffer's as the call left it) and
compares at the call's local completion (Flush_local, Flush, Unlock, Complete, Fence,
the window barrier, a counter's signal, its request's Wait: R109, R116, R158); a
difference is a store between the two.

A comparison sees no load, and no store of the value already there, so the processor
watches a result buffer's first words too (csrc/check/pagewatch.c's word watch: at
most four words of the process's pending calls, each a breakpoint on an aligned word
of up to 8 bytes): the program's first load or store of them from the call to its
completion at the origin is noted with its line (MPI-3.1 section 11.7: the result
buffer must not be accessed until the call completes; wordwatch.py tells the
implementation's own accesses apart). Only the thread that made the first watch is
watched, and where perf events are refused (perf_event_paranoid above 2, a seccomp
filter) the watch is off. A buffer of PAGED bytes or more has the pages wholly inside
it taken away as well (wordwatch.page_watch, the page watch of loads.py): the first
load or store of each is noted with its exact address, whatever name it goes through.
Another call given a buffer that a pending call fills, or
filling one a pending call reads, is found when it is made, from the addresses
(Buffers.clashes).

The processor also notes instructions that only come near the word: a memset or
memcpy of a neighbouring object with a masked 64-byte vector store (glibc's AVX-512
routines) matches the watch although it leaves the word alone. So an access counts
only where the program's code at that moment names the buffer: the line of one of
its frames mentions the expression the call was given as the buffer (``value`` in
``win.Get(value, 1, 0)``, ``self.out`` in ``win.Get([self.out, MPI.INT], ...)``). A
call written across several lines, or an access through another name, goes
unreported: the watch misses rather than cry wolf.
"""
import ast
import functools
import linecache
import re

from ..types import buffers
from ..rma import calls as rma
from ..core.lazy import numpy
from . import report
from .accesses import COMPARE_AND_SWAP, FETCH_AND_OP, GET, GET_ACCUMULATE, PUT, WRITTEN
from .wordwatch import hw_unwatch, hw_watch, page_unwatch, page_watch

HELD = 4096         # buffers a window keeps watching (then the oldest are let go)
PAGED = 2 * 4096    # a result buffer this big has a whole page past its watched words


def mode_bit(kind):
    """The counter mode bit (Sync_ops_init) whose signal completes a call of ``kind``:
    1 for Put, 2 for Get, 4 for the accumulate family."""
    return 1 if kind == PUT else 2 if kind == GET else 4


class Held:
    """One buffer of one call, with its bytes as the call saw or left them, and the
    word watch on its first words (``slots``)."""

    __slots__ = ("target", "kind", "role", "site", "array", "where", "unit", "copy",
                 "slots", "pages", "low", "high", "clashed")

    def __init__(self, target, kind, role, site, array, where, unit, watch=True):
        self.target, self.kind, self.role, self.site = target, kind, role, site
        self.array, self.where, self.unit = array, where, unit
        self.copy = self.now()
        self.slots = self._watch() if watch and role == WRITTEN else ()
        self.pages = (self._watch_pages() if watch and role == WRITTEN
                      and self.nbytes() >= PAGED else None)
        self.clashed = False            # another call's use of it was reported
        self.low = self.high = None     # bounds(), made when a clash is possible

    def bounds(self):
        """(address of its first byte, past its last): found at the first need, since
        only a buffer a call fills can clash, and most calls fill none."""
        if self.low is None:
            base, where = self.array.ctypes.data, self.where
            self.low, self.high = (
                (base, base + self.array.nbytes) if where is None else
                (base + where.start, base + where.stop) if isinstance(where, slice) else
                (base + int(where.min()), base + int(where.max()) + 1))
        return self.low, self.high

    def addresses(self):
        """The address of every byte the call covers (a sorted array)."""
        if self.where is None or isinstance(self.where, slice):
            return numpy.arange(*self.bounds())
        return numpy.unique(self.where) + self.array.ctypes.data

    def overlap(self, other):
        """(first, last) bytes of this buffer that ``other`` covers too, or None."""
        (low, high), (other_low, other_high) = self.bounds(), other.bounds()
        if other_high <= low or high <= other_low:
            return None
        both = numpy.intersect1d(self.addresses(), other.addresses(), assume_unique=True)
        if not len(both):
            return None
        unit = self.unit
        return ((int(both[0]) - self.low) // unit * unit,
                ((int(both[-1]) - self.low) // unit + 1) * unit - 1)

    def _watch(self):
        """Watch a result buffer's first words (an origin buffer's stores are found
        by the comparison; the word watch's four slots go where loads race)."""
        if not (self.where is None or isinstance(self.where, slice)):
            return ()
        start = 0 if self.where is None else self.where.start
        stop = self.array.nbytes if self.where is None else self.where.stop
        return hw_watch(self.array.ctypes.data + start, stop - start)

    def _watch_pages(self):
        """Take away the pages wholly inside the buffer (past the words the processor
        watches): a load or store of them faults, noted with its address and line."""
        if not (self.where is None or isinstance(self.where, slice)):
            return None
        start = 0 if self.where is None else self.where.start
        return page_watch(self.array.ctypes.data + start, self.nbytes())

    def nbytes(self):
        if self.where is None:
            return self.array.nbytes
        if isinstance(self.where, slice):
            return self.where.stop - self.where.start
        return len(self.where)

    def watching(self):
        return bool(self.slots) or self.pages is not None

    def accesses(self):
        """Stop watching: the program's accesses the watch saw, as (first, last) bytes
        of the buffer, the frames (innermost first), and whether the bytes are exact
        (a page fault's address) rather than a word the processor matched."""
        base = self.array.ctypes.data + (0 if self.where is None else self.where.start)
        found = []
        if self.pages is not None:
            pages, self.pages = self.pages, None
            unit = self.unit
            for address, frames in page_unwatch(pages):
                first = (address - base) // unit * unit
                found.append((first, first + unit - 1, frames, True))
        if self.slots:
            slots, self.slots = self.slots, ()
            found += [(address - base, address - base + length - 1, frames, False)
                      for address, length, frames in hw_unwatch(slots)]
        return found

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

    def __init__(self, warn, watch_words=True):
        self.held = []
        self.warn = warn
        self.watch_words = watch_words      # off with the loads' watch (--check=no-loads)
        # (held, new, (first, last)): a call given bytes an earlier call still fills,
        # or fills bytes an earlier call still reads (MPI-3.1 section 11.7), found by
        # hold(); the caller reports them (take_clashes)
        self.clashes = []

    def hold(self, target, kind, site, specs):
        """Watch the buffers of a call that has just been made: ``specs`` holds
        (buffer spec, READ or WRITTEN). Returns what it holds, for a request."""
        new = []
        for spec, role in specs:
            found = watched(spec)
            if found is not None:
                new.append(Held(target, kind, role, site, *found, watch=self.watch_words))
        return self._add(new)

    def hold_array(self, target, kind, site, array, role):
        """hold() of one C-contiguous numpy array, not empty (the quick path's)."""
        return self._add([Held(target, kind, role, site, array, None, array.itemsize,
                               watch=self.watch_words)])

    def let_go(self):
        """Stop watching every buffer held (the window goes)."""
        for held in self.held:
            held.accesses()
        self.held = []

    def take_clashes(self):
        clashes, self.clashes = self.clashes, []
        return clashes

    def _add(self, new):
        for fresh in new:
            for held in self.held:
                if held.role != WRITTEN and fresh.role != WRITTEN:
                    continue        # two calls may read one buffer
                both = held.overlap(fresh)
                if both is not None:
                    held.clashed = True     # its change is that call's: said once
                    self.clashes.append((held, fresh, both))
        if new:
            if len(self.held) + len(new) > HELD:
                self.warn("a window holds more than %d RMA calls not complete at the origin; "
                          "the older ones' buffers are no longer checked" % HELD)
                for dropped in self.held[:len(new)]:
                    dropped.accesses()
                del self.held[:len(new)]
            self.held += new
        return new

    def complete(self, targets=None, modes=7, only=None):
        """The held buffers now complete (at ``targets``, None for all, of the kinds
        in the counter ``modes``; or just ``only``): those that changed or whose
        words the watch saw accessed, as (Held, (first, last) changed or None, the
        accesses seen (Held.accesses)); they are no longer held."""
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
            accesses = held.accesses() if held.watching() else ()
            changed = None if held.clashed else held.changed()
            if accesses or changed is not None:
                found.append((held, changed, accesses))
        return found


# where each call that fills a result buffer takes it: (method names, position, keyword)
RESULT_ARGUMENT = {GET: (("Get", "Rget"), 0, "origin"),
                   GET_ACCUMULATE: (("Get_accumulate", "Rget_accumulate"), 1, "result"),
                   FETCH_AND_OP: (("Fetch_and_op",), 1, "result"),
                   COMPARE_AND_SWAP: (("Compare_and_swap",), 2, "result")}


def names_the_buffer(call_site, kind, frames):
    """Does a line of the program's ``frames`` (innermost first) name the result
    buffer the call of ``kind`` at ``call_site`` ('file:line') was given? False
    when that call's line does not say."""
    path, _, line = call_site.rpartition(":")
    expression = _buffer_expression(path, int(line), kind) if line.isdigit() else None
    if expression is None:
        return False
    pattern = re.compile(r"(?<![\w.])%s(?!\w)" % re.escape(expression))
    return any(pattern.search(linecache.getline(file, number))
               for file, number in report.program_frames(frames))


@functools.lru_cache(maxsize=256)
def _buffer_expression(path, line, kind):
    """The text of the result buffer's expression in the call on that line (its root:
    ``buf`` of ``[buf, MPI.INT]`` or of ``buf[2:]``), or None."""
    try:
        tree = ast.parse(linecache.getline(path, line).strip())
    except SyntaxError:
        return None
    methods, position, keyword = RESULT_ARGUMENT.get(kind, ((), 0, ""))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in methods):
            continue
        given = [k.value for k in node.keywords if k.arg == keyword]
        expression = given[0] if given else (
            node.args[position] if len(node.args) > position else None)
        while isinstance(expression, (ast.List, ast.Tuple, ast.Subscript)):
            expression = (expression.value if isinstance(expression, ast.Subscript)
                          else expression.elts[0] if expression.elts else None)
        if isinstance(expression, (ast.Name, ast.Attribute)):
            return ast.unparse(expression)
    return None
