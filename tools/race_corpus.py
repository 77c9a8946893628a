"""Precision and recall of ``shmrma-run --check`` on a generated corpus of RMA races.

Every case is a pair of accesses to one window word of rank 0: the first by
rank A (1), the second by rank B (2 at 3 ranks, 0 at 2), one of seven kinds each
(Put, Get, Accumulate SUM, Accumulate MAX, Get_accumulate SUM, Fetch_and_op SUM,
Compare_and_swap), ordered or not by one of ten synchronization forms:

  fence, winbarrier     A's access, then (or not) a Fence / window Barrier, then B's
  ibarrier              A's access, an Ibarrier, B's after its Wait (or before it)
  lock                  exclusive locks around each (ordered by exclusion), or shared
  lockall_barrier       Lock_all; A flushes (or not) before a comm.Barrier
  lockall_message       Lock_all; A flushes (or only after) before sending B a message
  requests              A's request-based calls and Wait, then (or not) a Flush; an
                        Rget's or Rget_accumulate's Wait completes it at the target
  pscw                  two access epochs of rank 0 (or one for both; 3 ranks only)
  counters              A signals rank 0's counter after (or before) its accesses;
                        rank 0 is B and waits on the counter first
  flag                  the MPI-3 notification: data, Flush, Fetch_and_op on a flag,
                        Flush; B polls the flag (racy: no Flush before the flag)

and a second family, the target's own stores: rank 0 stores into a word of its
window memory (a numpy write) before or after rank 1 accesses it with one of the
seven kinds, ordered or not by six forms (every such pair conflicts):

  fence, winbarrier     the store and the access in one epoch, or two
  lock                  both under exclusive locks on rank 0 (its own, for the
                        store), or both under shared ones
  lockall_message       under Lock_all, a message from the first to the second
                        after the first's access (racy: before it)
  pscw                  rank 0's stores before its Post or after its Wait, rank 1's
                        accesses in its access epoch (racy: the stores between)
  counters              rank 1 signals rank 0's counter after its accesses, rank 0
                        stores after waiting on it (racy: before; access first only)

and again with each store writing the value its word holds already (a store the
checker's compare of the memory with its shadow cannot see), each word on a page
of its own;

and a third, the target's own loads, the same six forms: rank 0 reads a word of
its window memory before or after rank 1's access (a race when that access
writes: Get does not), each word on a page of its own (a load is seen when it is
the first access to its page since the rank's last synchronization call), over
Allocate's memory and again over a numpy array given to Create;

and a fourth, a shared window's memory (Allocate_shared): rank A (1) and rank B
(2 at 3 ranks, 0 at 2) each load or store a word of rank 0's memory directly (a
race unless both load), ordered or not by three forms, each pair on a page of its
own:

  barrier               a comm.Barrier between the two (racy: none)
  message               A sends B a message after its access (racy: before it)
  lock                  exclusive locks on rank 0 around each (racy: shared ones)

and a sixth, the threads of a rank (ThreadProgram): a worker thread's accesses
ordered (or not) before the rank's Barrier by a join, an Event, a Queue or a Lock
hand-over, and a worker thread's loads ordered (or not) after its rank's Barrier
by an Event or by being started after it;

and a fifth, the origin's buffers (R35): rank 1 makes a call of each kind, then
changes its buffer (the origin buffer of Put and Accumulate, the result buffer of
the others) after the call completed at the origin, or before (racy), the
completion being one of eight: Fence, the window barrier, Flush_local, Flush,
Unlock, Complete, a request's Wait (the kinds with an R-form), a counter's signal.

A case is a race when the form leaves the pair unordered and the pair conflicts:
one writes, and they are not both atomic with the same op (or among
Get_accumulate, Fetch_and_op and Compare_and_swap), MPI-3.1 §11.7 (R126-R141).
Each (form, variant, ranks) is one program holding all 49 ordered pairs at
separate words; the checker's reports (line pairs) are matched to the cases.

    python tools/race_corpus.py [--ranks 2,3] [--keep DIR]

prints the confusion counts per form and overall precision and recall, and the
cases it got wrong.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

KINDS = {
    "put": "win.Put(buf, 0, %d)",
    "get": "win.Get(np.zeros(1, 'i8'), 0, %d)",
    "acc": "win.Accumulate(buf, 0, %d, MPI.SUM)",
    "accmax": "win.Accumulate(buf, 0, %d, MPI.MAX)",
    "gacc": "win.Get_accumulate(buf, np.zeros(1, 'i8'), 0, %d, MPI.SUM)",
    "fop": "win.Fetch_and_op(buf, np.zeros(1, 'i8'), 0, %d, MPI.SUM)",
    "cas": "win.Compare_and_swap(buf, cmp, np.zeros(1, 'i8'), 0, %d)",
}
REQUEST_FORM = {"put": "win.Rput(buf, 0, %d).Wait()",
                "get": "win.Rget(np.zeros(1, 'i8'), 0, %d).Wait()",
                "acc": "win.Raccumulate(buf, 0, %d, MPI.SUM).Wait()",
                "accmax": "win.Raccumulate(buf, 0, %d, MPI.MAX).Wait()",
                "gacc": "win.Rget_accumulate(buf, np.zeros(1, 'i8'), 0, %d, MPI.SUM).Wait()"}
COMPLETE_AT_WAIT = {"get", "gacc"}          # an Rget's Wait completes it at the target
OPS = {"acc": "SUM", "accmax": "MAX", "gacc": "SUM", "fop": "SUM", "cas": "CAS"}
FETCHING = {"gacc", "fop", "cas"}
FORMS = ("fence", "winbarrier", "ibarrier", "lock", "lockall_barrier", "lockall_message",
         "requests", "pscw", "counters", "flag")
PAIRS = [(x, y) for x in KINDS for y in KINDS]
FLAG = len(PAIRS) + 8
REPORT = re.compile(r"^  \w+ by rank \d+(?:'s thread .+?)? at .+:(\d+), ", re.M)


def conflict(x, y):
    if x == "get" and y == "get":
        return False
    if x in OPS and y in OPS and (OPS[x] == OPS[y] or (x in FETCHING and y in FETCHING)):
        return False
    return True


def racy(form, variant, x, y):
    if variant == "ordered" or not conflict(x, y):
        return False
    if form == "requests":
        return x not in COMPLETE_AT_WAIT
    return True


class Program:
    """The source of one (form, variant) program, and the line of each case's access."""

    def __init__(self, form, variant):
        self.form, self.variant, self.lines = form, variant, []
        self.first_line, self.second_line = {}, {}
        racy_form = variant == "racy"
        self.add("import numpy as np", "from shmrma import MPI",
                 "comm = MPI.COMM_WORLD", "rank, size = comm.rank, comm.size",
                 "A, B = 1, (2 if size > 2 and %r != 'counters' else 0)" % form,
                 "win = MPI.Win.Allocate(%d * 8 if rank == 0 else 0, 8, comm=comm)"
                 % (FLAG + 1),
                 "buf, cmp = np.ones(1, 'i8'), np.zeros(1, 'i8')   # results: a fresh array each",
                 "group = comm.Get_group()")
        getattr(self, form)(racy_form)

    def add(self, *lines, indent=0):
        self.lines += [" " * indent + line for line in lines]

    def accesses(self, which, indent, template=None):
        table = self.first_line if which == 0 else self.second_line
        for number, pair in enumerate(PAIRS):
            kind = pair[which]
            code = (template or KINDS).get(kind, KINDS[kind]) % number
            self.add(code, indent=indent)
            table[pair] = len(self.lines)

    def fence(self, racy_form, sync="win.Fence()"):
        self.add(sync, "if rank == A:")
        self.accesses(0, 4)
        if not racy_form:
            self.add(sync)
        self.add("if rank == B:")
        self.accesses(1, 4)
        self.add(sync, "win.Free()")

    def winbarrier(self, racy_form):
        self.fence(racy_form, "win.Barrier()")

    def ibarrier(self, racy_form):
        self.add("win.Barrier()", "if rank == A:")
        self.accesses(0, 4)
        self.add("request = win.Ibarrier()")
        if not racy_form:
            self.add("request.Wait()")
        self.add("if rank == B:")
        self.accesses(1, 4)
        if racy_form:   # between the Ibarrier and its Wait: after rank 0 entered (R169)
            self.add("request.Wait()")
        self.add("win.Barrier()", "win.Free()")

    def lock(self, racy_form):
        lock = "MPI.LOCK_SHARED" if racy_form else "MPI.LOCK_EXCLUSIVE"
        for which, who in ((0, "A"), (1, "B")):
            self.add("if rank == %s:" % who, "    win.Lock(0, %s)" % lock)
            self.accesses(which, 4)
            self.add("    win.Unlock(0)")
        self.add("comm.Barrier()", "win.Free()")

    def lockall_barrier(self, racy_form):
        self.add("win.Lock_all()", "if rank == A:")
        self.accesses(0, 4)
        self.add(*(["comm.Barrier()", "win.Flush(0)"] if racy_form else
                   ["    win.Flush(0)", "comm.Barrier()"]))
        self.add("if rank == B:")
        self.accesses(1, 4)
        self.add("    win.Flush(0)", "win.Unlock_all()", "win.Free()")

    def lockall_message(self, racy_form):
        self.add("win.Lock_all()", "if rank == A:")
        self.accesses(0, 4)
        self.add(*(["    comm.send(None, B, 5)", "    win.Flush(0)"] if racy_form else
                   ["    win.Flush(0)", "    comm.send(None, B, 5)"]))
        self.add("if rank == B:", "    comm.recv(source=A, tag=5)")
        self.accesses(1, 4)
        self.add("    win.Flush(0)", "win.Unlock_all()", "win.Free()")

    def requests(self, racy_form):
        self.add("win.Lock_all()", "if rank == A:")
        self.accesses(0, 4, REQUEST_FORM)
        if not racy_form:
            self.add("    win.Flush(0)")
        self.add("comm.Barrier()", "if rank == B:")
        self.accesses(1, 4)
        self.add("win.Flush_all()", "win.Unlock_all()", "win.Free()")

    def pscw(self, racy_form):
        self.add("origins, target = group.Excl([0]), group.Incl([0])",
                 "if rank == 0:", "    win.Post(origins)", "    win.Wait()",
                 "    win.Post(origins)", "    win.Wait()",
                 "else:", "    win.Start(target)", "    if rank == A:")
        self.accesses(0, 8)
        if not racy_form:
            self.add("    win.Complete()", "    win.Start(target)")
        self.add("    if rank == B:")
        self.accesses(1, 8)
        self.add("    win.Complete()")
        if racy_form:
            self.add("    win.Start(target)", "    win.Complete()")
        self.add("win.Free()")

    def counters(self, racy_form):
        self.add("syncs = win.Alloc_sync_objects(1) if rank == 0 else None",
                 "handle = comm.bcast(syncs[0] if rank == 0 else None, root=0)",
                 "if rank == 0:", "    waiting = win.Sync_object_init(handle, 1)",
                 "    waiting.Start()", "comm.Barrier()", "if rank == A:",
                 "    signal = win.Sync_ops_init(0, 7, handle)", "    win.Lock_all()",
                 "    signal.Start()")
        if racy_form:
            self.add("    signal.Wait()")
        self.accesses(0, 4)
        if not racy_form:
            self.add("    signal.Wait()")
        self.add("    win.Flush(0)", "    win.Unlock_all()", "    signal.Free()",
                 "if rank == 0:", "    waiting.Wait()", "    win.Lock_all()")
        self.accesses(1, 4)
        self.add("    win.Unlock_all()", "    waiting.Free()",
                 "    win.Free_sync_objects(syncs)", "win.Free()")

    def flag(self, racy_form):
        self.add("win.Lock_all()", "one, res = np.ones(1, 'i8'), np.zeros(1, 'i8')",
                 "if rank == A:")
        self.accesses(0, 4)
        if not racy_form:
            self.add("    win.Flush(0)")
        self.add("    win.Fetch_and_op(one, res, 0, %d, MPI.SUM)" % FLAG, "    win.Flush(0)",
                 "if rank == B:", "    res[0] = 0", "    while res[0] == 0:",
                 "        win.Fetch_and_op(one, res, 0, %d, MPI.NO_OP)" % FLAG,
                 "        win.Flush(0)")
        self.accesses(1, 4)
        self.add("    win.Flush(0)", "win.Unlock_all()", "win.Free()")

    def source(self):
        return "\n".join(self.lines) + "\n"


STORE_FORMS = ("fence", "winbarrier", "lock", "lockall_message", "pscw", "counters")
STORE_KINDS = list(KINDS)
STORE = "    mine[%d] = 7"
LOAD = "    seen += mine[%d]"
PAUSE = "    time.sleep(0.01)"
PAGE_WORDS = 512


class StoreProgram(Program):
    """The source of one (form, variant) program of the store family. Its cases are
    (order, kind): the store first (words 0-6) or the access first (words 7-13); a
    case is known by its access's line (the store is reported at rank 0's next
    synchronization call, shared by several cases, or without a line)."""
    FAMILY, WINDOW_WORDS, LOCAL = "store", 16, STORE
    WINDOW = ("win = MPI.Win.Allocate(%(words)d * 8 if rank == 0 else 0, 8, comm=comm)",)

    def __init__(self, form, variant):
        self.form, self.variant, self.lines = form, self.FAMILY + "-" + variant, []
        self.access_line = {}
        self.add("import time", "import numpy as np", "from shmrma import MPI",
                 "comm = MPI.COMM_WORLD", "rank, size = comm.rank, comm.size",
                 *[line % {"words": self.WINDOW_WORDS} for line in self.WINDOW],
                 "mine = np.frombuffer(win.tomemory(), 'i8') if rank == 0 else None",
                 "buf, cmp, seen = np.ones(1, 'i8'), np.zeros(1, 'i8'), 0",
                 "group = comm.Get_group()")
        getattr(self, "store_" + form)(variant == "racy")

    def cases(self):
        orders = ("access_first",) if self.form == "counters" else ("store_first",
                                                                   "access_first")
        return [(order, kind) for order in orders for kind in STORE_KINDS]

    def racy_case(self, case):
        return self.variant.endswith("racy")

    def word(self, order, kind):
        return STORE_KINDS.index(kind) + (7 if order == "access_first" else 0)

    # The second of a pair waits a little: a store that lands within the microsecond
    # an RMA write takes to the same bytes is overwritten unseen, a matter of timing
    # that the corpus leaves out (README, "Finding data races").
    def stores(self, order):
        if order == "access_first":
            self.add(PAUSE)
        self.add(*[self.LOCAL % self.word(order, kind) for kind in STORE_KINDS])

    def remote(self, order, template=None, indent=4):
        if order == "store_first":
            self.add(PAUSE.strip(), indent=indent)
        for kind in STORE_KINDS:
            self.add((template or KINDS)[kind] % self.word(order, kind), indent=indent)
            self.access_line[(order, kind)] = len(self.lines)

    def store_fence(self, racy_form, sync="win.Fence()"):
        self.add(sync, "if rank == 0:")
        self.stores("store_first")
        self.add("if rank == 1:")
        self.remote("access_first")
        if not racy_form:
            self.add(sync)
        self.add("if rank == 1:")
        self.remote("store_first")
        self.add("if rank == 0:")
        self.stores("access_first")
        self.add(sync, "win.Free()")

    def store_winbarrier(self, racy_form):
        self.store_fence(racy_form, "win.Barrier()")

    def store_lock(self, racy_form):
        lock = "MPI.LOCK_SHARED" if racy_form else "MPI.LOCK_EXCLUSIVE"
        self.add("if rank == 0:", "    win.Lock(0, %s)" % lock)
        self.stores("store_first")
        self.stores("access_first")
        self.add("    win.Unlock(0)", "if rank == 1:", "    win.Lock(0, %s)" % lock)
        self.remote("store_first")
        self.remote("access_first")
        self.add("    win.Unlock(0)", "comm.Barrier()", "win.Free()")

    def store_lockall_message(self, racy_form):
        self.add("win.Lock_all()", "if rank == 0:")
        if racy_form:       # the messages carry nothing: sent before the accesses
            self.add("    comm.send(None, 1, 5)", "    comm.recv(source=1, tag=6)")
            self.stores("store_first")
            self.stores("access_first")
            self.add("if rank == 1:", "    comm.recv(source=0, tag=5)",
                     "    comm.send(None, 0, 6)")
            self.remote("store_first")
            self.remote("access_first")
            self.add("    win.Flush(0)")
        else:
            self.stores("store_first")
            self.add("    comm.send(None, 1, 5)", "    comm.recv(source=1, tag=6)")
            self.stores("access_first")
            self.add("if rank == 1:", "    comm.recv(source=0, tag=5)")
            self.remote("store_first")
            self.remote("access_first")
            self.add("    win.Flush(0)", "    comm.send(None, 0, 6)")
        self.add("win.Unlock_all()", "win.Free()")

    def store_pscw(self, racy_form):
        self.add("origins, target = group.Excl([0]), group.Incl([0])", "if rank == 0:")
        if not racy_form:
            self.stores("store_first")
        self.add("    win.Post(origins)")
        if racy_form:
            self.stores("store_first")
            self.stores("access_first")
        self.add("    win.Wait()")
        if not racy_form:
            self.stores("access_first")
        self.add("else:", "    win.Start(target)", "    if rank == 1:")
        self.remote("store_first", indent=8)
        self.remote("access_first", indent=8)
        self.add("    win.Complete()", "win.Free()")

    def store_counters(self, racy_form):
        self.add("syncs = win.Alloc_sync_objects(1) if rank == 0 else None",
                 "handle = comm.bcast(syncs[0] if rank == 0 else None, root=0)",
                 "if rank == 0:", "    waiting = win.Sync_object_init(handle, 1)",
                 "    waiting.Start()", "comm.Barrier()", "if rank == 1:",
                 "    signal = win.Sync_ops_init(0, 7, handle)", "    win.Lock_all()",
                 "    signal.Start()")
        self.remote("access_first")
        self.add("    signal.Wait()", "    win.Flush(0)", "    win.Unlock_all()",
                 "    signal.Free()", "if rank == 0:")
        if racy_form:
            self.stores("access_first")
        self.add("    waiting.Wait()")
        if not racy_form:
            self.stores("access_first")
        self.add("    waiting.Free()", "    win.Free_sync_objects(syncs)", "win.Free()")


class LoadProgram(StoreProgram):
    """The load family: StoreProgram's forms with loads for stores, each word on a
    page of its own (PAGE_WORDS apart); a load races only with an access that writes."""
    FAMILY, WINDOW_WORDS, LOCAL = "load", 14 * PAGE_WORDS, LOAD

    def word(self, order, kind):
        return StoreProgram.word(self, order, kind) * PAGE_WORDS

    def racy_case(self, case):
        return self.variant.endswith("racy") and case[1] != "get"


class PrivateLoadProgram(LoadProgram):
    """The load family on a window created over a numpy array (page-aligned: the
    watch takes the pages wholly inside it), which the other ranks reach through
    the kernel, not a mapping."""
    FAMILY = "load-private"
    WINDOW = ("raw = np.zeros(%(words)d + 512, 'i8')",
              "start = -raw.ctypes.data %% 4096 // 8",
              "win = MPI.Win.Create(raw[start:start + %(words)d] if rank == 0 else None, 8, "
              "comm=comm)")


class SameValueStoreProgram(LoadProgram):
    """The store family again, each store writing the value its word holds already
    (0 before any access; after the access, what the access left there: 0 after a
    Get, 1 after the others), each word on a page of its own: a store found by
    comparing the memory with its shadow would go unseen, the page watch sees it."""
    FAMILY = "store-same-value"
    LEFT = {kind: 0 if kind == "get" else 1 for kind in STORE_KINDS}

    def stores(self, order):
        if order == "access_first":
            self.add(PAUSE)
        self.add(*["    mine[%d] = %d" % (self.word(order, kind),
                                          self.LEFT[kind] if order == "access_first" else 0)
                   for kind in STORE_KINDS])

    def racy_case(self, case):
        return self.variant.endswith("racy")


SHARED_FORMS = ("barrier", "message", "lock")
SHARED_ACCESSES = {"load": "seen += X[%d]", "store": "X[%d] = 7"}
SHARED_PAIRS = [(x, y) for x in SHARED_ACCESSES for y in SHARED_ACCESSES]


class SharedProgram(Program):
    """The shared-window family: for each pair, A's access to word i, then B's,
    on page i of rank 0's memory. A case is found when a report names both lines."""

    def __init__(self, form, variant):
        self.form, self.variant, self.lines = form, "shared-" + variant, []
        self.first_line, self.second_line = {}, {}
        self.add("import time", "import numpy as np", "from shmrma import MPI",
                 "comm = MPI.COMM_WORLD", "rank, size = comm.rank, comm.size",
                 "A, B = 1, (2 if size > 2 else 0)",
                 "win = MPI.Win.Allocate_shared(%d * 8 if rank == 0 else 0, 8, comm=comm)"
                 % (len(SHARED_PAIRS) * PAGE_WORDS),
                 "X = np.frombuffer(win.Shared_query(0)[0], 'i8')", "seen = 0",
                 "comm.Barrier()")
        getattr(self, "shared_" + form)(variant == "racy")
        self.add("comm.Barrier()", "del X", "win.Free()")

    def side(self, which, indent=4):
        table = self.first_line if which == 0 else self.second_line
        if which == 1:
            self.add(PAUSE.strip(), indent=indent)
        for number, pair in enumerate(SHARED_PAIRS):
            self.add(SHARED_ACCESSES[pair[which]] % (number * PAGE_WORDS), indent=indent)
            table[pair] = len(self.lines)

    def shared_barrier(self, racy_form):
        self.add("if rank == A:")
        self.side(0)
        if not racy_form:
            self.add("comm.Barrier()")
        self.add("if rank == B:")
        self.side(1)

    def shared_message(self, racy_form):
        self.add("if rank == A:")
        if racy_form:
            self.add("    comm.send(None, B, 5)")
        self.side(0)
        if not racy_form:
            self.add("    comm.send(None, B, 5)")
        self.add("if rank == B:", "    comm.recv(source=A, tag=5)")
        self.side(1)

    def shared_lock(self, racy_form):
        lock = "MPI.LOCK_SHARED" if racy_form else "MPI.LOCK_EXCLUSIVE"
        for which, who in ((0, "A"), (1, "B")):
            self.add("if rank == %s:" % who, "    win.Lock(0, %s)" % lock)
            self.side(which)
            self.add("    win.Unlock(0)")

    def racy_case(self, case):
        return self.variant.endswith("racy") and "store" in case

BUFFER_FORMS = ("fence", "winbarrier", "flush_local", "flush", "unlock", "pscw", "requests",
                "counters")
BUFFER_CALLS = {
    "put": "win.Put(b[%d], 0, %d)", "get": "win.Get(b[%d], 0, %d)",
    "acc": "win.Accumulate(b[%d], 0, %d, MPI.SUM)",
    "accmax": "win.Accumulate(b[%d], 0, %d, MPI.MAX)",
    "gacc": "win.Get_accumulate(buf, b[%d], 0, %d, MPI.SUM)",
    "fop": "win.Fetch_and_op(buf, b[%d], 0, %d, MPI.SUM)",
    "cas": "win.Compare_and_swap(buf, cmp, b[%d], 0, %d)"}
BUFFER_REQUESTS = {"put": "r.append(win.Rput(b[%d], 0, %d))",
                   "get": "r.append(win.Rget(b[%d], 0, %d))",
                   "acc": "r.append(win.Raccumulate(b[%d], 0, %d, MPI.SUM))",
                   "accmax": "r.append(win.Raccumulate(b[%d], 0, %d, MPI.MAX))",
                   "gacc": "r.append(win.Rget_accumulate(buf, b[%d], 0, %d, MPI.SUM))"}


class BufferProgram(StoreProgram):
    """The source of one (form, variant) program of the buffer family: rank 1's call
    of each kind on word i with buffer b[i], then b[i] changed before or after the
    completion. A case is known by its call's line."""

    def __init__(self, form, variant):
        self.form, self.variant, self.lines = form, "buffer-" + variant, []
        self.access_line = {}
        self.calls = BUFFER_REQUESTS if form == "requests" else BUFFER_CALLS
        self.add("import numpy as np", "from shmrma import MPI",
                 "comm = MPI.COMM_WORLD", "rank, size = comm.rank, comm.size",
                 "win = MPI.Win.Allocate(16 * 8 if rank == 0 else 0, 8, comm=comm)",
                 "buf, cmp = np.ones(1, 'i8'), np.zeros(1, 'i8')",
                 "b, r = [np.ones(1, 'i8') for _ in range(7)], []",
                 "group = comm.Get_group()")
        start, complete, end = self.completion(form)
        self.add(*start, "if rank == 1:")
        for word, kind in enumerate(self.calls):
            self.add(self.calls[kind] % (word, word), indent=4)
            self.access_line[("call", kind)] = len(self.lines)
        change = ["    b[%d][0] += 1" % word for word in range(len(self.calls))]
        self.add(*(change + complete if variant == "racy" else complete + change))
        self.add(*end, "win.Free()")

    def cases(self):
        return [("call", kind) for kind in self.calls]

    @staticmethod
    def completion(form):
        """(lines before rank 1's calls, its completing lines, lines after)."""
        lock_all = (["win.Lock_all()"], ["win.Unlock_all()"])
        return {
            "fence": (["win.Fence()"], ["    win.Fence()"], ["if rank != 1:",
                                                           "    win.Fence()"]),
            "winbarrier": (["win.Barrier()"], ["    win.Barrier()"],
                           ["if rank != 1:", "    win.Barrier()"]),
            "flush_local": (lock_all[0], ["    win.Flush_local(0)"], lock_all[1]),
            "flush": (lock_all[0], ["    win.Flush(0)"], lock_all[1]),
            "unlock": (["if rank == 1:", "    win.Lock(0, MPI.LOCK_SHARED)"],
                       ["    win.Unlock(0)"], []),
            "pscw": (["if rank == 0:", "    win.Post(group.Excl([0]))", "else:",
                      "    win.Start(group.Incl([0]))"], ["    win.Complete()"],
                     ["if rank == 0:", "    win.Wait()", "elif rank != 1:",
                      "    win.Complete()"]),
            "requests": (lock_all[0], ["    MPI.Request.Waitall(r)"], lock_all[1]),
            "counters": (["syncs = win.Alloc_sync_objects(1) if rank == 0 else None",
                          "handle = comm.bcast(syncs[0] if rank == 0 else None, root=0)",
                          "if rank == 0:", "    waiting = win.Sync_object_init(handle, 1)",
                          "    waiting.Start()", "comm.Barrier()", "if rank == 1:",
                          "    signal = win.Sync_ops_init(0, 7, handle)",
                          "    win.Lock_all()", "    signal.Start()"],
                         ["    signal.Wait()"],
                         ["if rank == 1:", "    win.Unlock_all()", "    signal.Free()",
                          "if rank == 0:", "    waiting.Wait()", "    waiting.Free()",
                          "    win.Free_sync_objects(syncs)"]),
        }[form]


THREAD_FORMS = ("join", "event", "queue", "lock", "target_event", "target_start")
THREAD_WAITS = {"join": "worker.join()", "event": "done.wait()", "queue": "tokens.get()",
                "lock": "handed.acquire()"}


class ThreadProgram(Program):
    """The source of one (form, variant) program of the thread family: a word of
    rank 0 for each kind, on a page of its own; its case is known by the access's
    line (the load's pairs with it). Forms join, event, queue and lock: a worker
    thread of rank 1 makes the accesses (under Lock_all, then Unlock_all), and rank
    1's main thread waits for it that way before a comm.Barrier (racy: it does
    not), after which rank 0 loads each word. Forms target_event and target_start:
    rank 1's main thread makes the accesses before the Barrier, and a worker thread
    of rank 0 loads the words, told by an Event that rank 0's main thread sets
    after the Barrier, or started after it (racy: started before, not told)."""
    FAMILY = "thread"

    def __init__(self, form, variant):
        self.form, self.variant, self.lines = form, self.FAMILY + "-" + variant, []
        self.access_line = {}
        racy_form = variant == "racy"
        self.add("import queue", "import threading", "import time", "import numpy as np",
                 "from shmrma import MPI", "comm = MPI.COMM_WORLD", "rank = comm.rank",
                 "win = MPI.Win.Allocate(%d * 8 if rank == 0 else 0, 8, comm=comm)"
                 % (len(STORE_KINDS) * PAGE_WORDS),
                 "mine = np.frombuffer(win.tomemory(), 'i8') if rank == 0 else None",
                 "buf, cmp, seen = np.ones(1, 'i8'), np.zeros(1, 'i8'), 0",
                 "done, tokens, handed = threading.Event(), queue.Queue(), threading.Lock()",
                 "handed.acquire()")
        if form.startswith("target_"):
            self.target_side(form, racy_form)
        else:
            self.origin_side(form, racy_form)
        self.add("win.Free()")

    def cases(self):
        return [("access", kind) for kind in STORE_KINDS]

    def racy_case(self, case):
        return self.variant.endswith("racy") and case[1] != "get"

    def remote(self, indent):
        self.add("win.Lock_all()", indent=indent)
        for kind in STORE_KINDS:
            self.add(KINDS[kind] % (STORE_KINDS.index(kind) * PAGE_WORDS), indent=indent)
            self.access_line[("access", kind)] = len(self.lines)
        self.add("win.Unlock_all()", indent=indent)

    def loads(self, indent):
        self.add(*["seen += mine[%d]" % (STORE_KINDS.index(kind) * PAGE_WORDS)
                   for kind in STORE_KINDS], indent=indent)

    def origin_side(self, form, racy_form):
        self.add("def work():")
        self.remote(4)
        self.add("    done.set()", "    tokens.put(1)", "    handed.release()",
                 "if rank == 1:", "    worker = threading.Thread(target=work)",
                 "    worker.start()",
                 "    time.sleep(0.05)" if racy_form else "    " + THREAD_WAITS[form],
                 "    comm.Barrier()", "    worker.join()", "else:", "    comm.Barrier()",
                 "    if rank == 0:")
        self.loads(8)

    def target_side(self, form, racy_form):
        self.add("def look():", "    global seen",
                 "    %s" % ("time.sleep(0.05)" if racy_form or form == "target_start"
                             else "done.wait()"))
        self.loads(4)
        started_before = racy_form or form == "target_event"
        self.add("if rank == 1:")
        self.remote(4)
        self.add("    comm.Barrier()", "elif rank == 0:",
                 "    worker = threading.Thread(target=look)",
                 *(["    worker.start()"] if started_before else []), "    comm.Barrier()",
                 *([] if started_before else ["    worker.start()"]),
                 *([] if racy_form else ["    done.set()"]), "    worker.join()",
                 "else:", "    comm.Barrier()")


def run(program, nranks, directory):
    """The reports of one program: a tuple of the lines each names (None for a store
    whose line is not known)."""
    path = os.path.join(directory, "%s_%s.py" % (program.form, program.variant))
    with open(path, "w") as out:
        out.write(program.source())
    result = subprocess.run([sys.executable, "-m", "shmrma.run", "--check", "-n",
                             str(nranks), "--timeout", "120", path],
                            capture_output=True, text=True)
    if result.returncode not in (0, 66):
        raise SystemExit("%s at %d ranks failed:\n%s" % (path, nranks, result.stderr[-3000:]))
    reports = []
    for block in result.stderr.split("shmrma-check: data race on ")[1:]:
        lines = [int(n) for n in REPORT.findall(block)]
        reports.append(frozenset(lines if len(lines) == 2 else [None] + lines))
    return set(reports)


def score(program, nranks, reported):
    """Confusion counts and the cases got wrong. A pair-family case is found when a
    report names both its lines; a store or buffer case when one names its access's
    line (the store's own line is a synchronization call shared by several cases,
    or not known)."""
    counts, wrong, matched = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}, [], set()
    for case, expected, hits in _cases(program, reported):
        matched |= hits
        found = bool(hits)
        counts[{(True, True): "tp", (False, True): "fp", (True, False): "fn",
                (False, False): "tn"}[(expected, found)]] += 1
        if expected != found:
            wrong.append("%s %s n=%d %s/%s: %s" % (program.form, program.variant, nranks,
                                                   case[0], case[1],
                                                   "missed" if expected else "false alarm"))
    stray = reported - matched
    counts["fp"] += len(stray)
    wrong += ["%s %s n=%d: report on lines %s that no case expects" % (
        program.form, program.variant, nranks, sorted(lines, key=str)) for lines in stray]
    return counts, wrong


def _cases(program, reported):
    """(case, racy or not, the reports that found it) for each case of a program."""
    if isinstance(program, (StoreProgram, ThreadProgram)):
        for case in program.cases():
            line = program.access_line[case]
            yield (case, program.racy_case(case),
                   {lines for lines in reported if line in lines})
        return
    if isinstance(program, SharedProgram):
        for pair in SHARED_PAIRS:
            lines = frozenset((program.first_line[pair], program.second_line[pair]))
            yield pair, program.racy_case(pair), {lines} & reported
        return
    for pair in PAIRS:
        lines = frozenset((program.first_line[pair], program.second_line[pair]))
        yield pair, racy(program.form, program.variant, *pair), {lines} & reported


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="2,3")
    ap.add_argument("--keep", metavar="DIR", help="write the programs here and keep them")
    opts = ap.parse_args(argv)
    directory = opts.keep or tempfile.mkdtemp(prefix="race_corpus.")
    os.makedirs(directory, exist_ok=True)
    total, mistakes = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}, []
    print("%-16s %-20s %5s %4s %4s %4s %4s" % ("form", "variant", "ranks", "tp", "fp",
                                              "fn", "tn"))
    programs = ([(Program, form) for form in FORMS]
                + [(StoreProgram, form) for form in STORE_FORMS]
                + [(SameValueStoreProgram, form) for form in STORE_FORMS]
                + [(LoadProgram, form) for form in STORE_FORMS]
                + [(PrivateLoadProgram, form) for form in STORE_FORMS]
                + [(SharedProgram, form) for form in SHARED_FORMS]
                + [(BufferProgram, form) for form in BUFFER_FORMS]
                + [(ThreadProgram, form) for form in THREAD_FORMS])
    for nranks in [int(n) for n in opts.ranks.split(",")]:
        for make, form in programs:
            if form == "pscw" and nranks < 3 and make is Program:
                continue
            for variant in ("ordered", "racy"):
                program = make(form, variant)
                counts, wrong = score(program, nranks, run(program, nranks, directory))
                print("%-16s %-20s %5d %4d %4d %4d %4d" % (form, program.variant, nranks, *[
                    counts[k] for k in ("tp", "fp", "fn", "tn")]), flush=True)
                for key in total:
                    total[key] += counts[key]
                mistakes += wrong
    tp, fp, fn = total["tp"], total["fp"], total["fn"]
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print("\n%d cases: %d races, %d race-free; precision %.3f, recall %.3f"
          % (sum(total.values()), tp + fn, total["tn"] + fp, precision, recall))
    for line in mistakes:
        print("  " + line)
    return 0 if not mistakes else 1


if __name__ == "__main__":
    sys.exit(main())
