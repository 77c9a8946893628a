"""The job: this process's rank, the world control segment, liveness and abort.

The world segment is created by whoever starts the job (the launcher, `launch`,
or a singleton program) and inherited by every rank through fork, so it is
unlinked before any rank runs and can never leak. It holds a header with the
abort flag, one cache-line-padded block per rank (pid, state, doorbell, what
the rank waits for), the per-communicator barrier slots and the point-to-point
channels (laid out here, interpreted by the mailbox).
"""
import os
import struct
import sys

from . import atomic, errors, segments, settings

MAX_RANKS = 256
# The process slots of a job the launcher starts without --universe-size: room for
# a few Spawned children, as MPICH starts them on demand (mpi4py's demos spawn up
# to 5). Up to 16 slots the rings and staging rings keep the sizes of a 2-rank
# job (channel_ring_bytes, p2p/transport.staging_bytes), and the slots no process
# took cost nothing: their channels are reserved in /dev/shm only when a Spawn
# takes them (Layout), and the transport drains the channels of taken slots only.
DEFAULT_SLOTS = 16
MAX_COMM_SLOTS = 4096

HEADER_BYTES = 4096
OFF_MAGIC = 0
OFF_NRANKS = 8
OFF_ABORT = 64          # wait cell: 0 running, 1 aborted
OFF_ABORT_RANK = 72     # rank whose failure aborted the job, -1 for the launcher
OFF_NEXT_CONTEXT = 128  # 64-bit counter of communicator context ids
OFF_SECRET = 192        # 16 random bytes: the job's segments that ranks find by name
SECRET_BYTES = 16
OFF_NEXT_RANK = 256     # 64-bit count of the process slots taken (started or spawned)
OFF_SPAWN_LOCK = 264    # held while a Spawn's request goes down the launcher's pipe
OFF_AREA_POOL = 1024    # collective areas kept for new communicators (coll/area.py)

RANK_BLOCK = 256
OFF_PID = 0
OFF_STATE = 4
OFF_DOORBELL = 64       # wait cell, bumped by anything that may complete this rank's wait
OFF_WAITING = 128       # NUL-terminated text: what a long wait is waiting for
WAITING_BYTES = 128

SLOT_BYTES = 128
OFF_SLOT_REFS = 0
OFF_SLOT_COUNT = 64
OFF_SLOT_GENERATION = 72  # wait cell
OFF_SLOT_CHANNEL = 80   # 1 once a member made the communicator's nonblocking channel
OFF_SLOT_AREA = 88      # wait cell: rank 0 named the small collective area (coll/area.py)

CHANNEL_HEADER = 192
MAGIC = 0x5348524D41574F52  # "SHRMAWOR"

# rank states
STARTING, RUNNING, EXITED, FAILED = 0, 1, 2, 3
STATE_NAMES = {STARTING: "starting", RUNNING: "running", EXITED: "exited", FAILED: "failed"}

# how long one sleep inside a wait lasts before the abort flag and peers are checked again
WAIT_SLICE = 0.05


def channel_ring_bytes(nranks):
    """Ring size per ordered pair: 64 KiB for small jobs, shrinking so N*N rings stay modest."""
    ring = 64 * 1024
    while ring > 4096 and nranks * nranks * ring > 32 * 1024 * 1024:
        ring //= 2
    return ring


def channel_index(src, dst):
    """The place of channel src -> dst among the world segment's channels, in shells:
    the channels among slots 0..k-1 come first (k * k of them), then slot k's with
    those and itself, so the first k slots' channels are a prefix of the region
    whatever the job's size, which a Spawn reserves as it takes slots. The C
    transport's twin is channel() in csrc/p2p/rings.c."""
    shell = max(src, dst)
    return shell * shell + (dst if src == shell else shell + 1 + src)


class Layout:
    """Byte offsets inside the world segment for a job of ``nranks`` process slots."""

    def __init__(self, nranks):
        self.nranks = nranks
        self.ranks_offset = HEADER_BYTES
        self.slots_offset = self.ranks_offset + nranks * RANK_BLOCK
        self.channels_offset = self.slots_offset + MAX_COMM_SLOTS * SLOT_BYTES
        self.ring_bytes = channel_ring_bytes(nranks)
        self.channel_bytes = CHANNEL_HEADER + self.ring_bytes
        self.total = self.reserved(nranks)

    def reserved(self, taken):
        """The bytes from the segment's start that ``taken`` slots use: the header,
        the rank blocks and slots, and the channels among them."""
        return self.channels_offset + taken * taken * self.channel_bytes


class World:
    """The world control segment as seen from one process.

    ``size`` is the job's process slots (its universe: the ranks it started, then
    room for those Spawn starts); every world rank, started or spawned, is one of
    them, with its channels to every other. ``group`` is this process's
    COMM_WORLD: the ranks started with it (the first ones, or one Spawn's
    children), whose communicator has ``world_context`` and ``world_slot``;
    ``parent`` the plan of a spawned process's parent intercommunicator."""

    def __init__(self, job_id, nranks, segment, rank=None, capacity=None, universe=None):
        self.job_id = job_id
        self.size = capacity or nranks
        self.universe = universe or nranks  # MPI.UNIVERSE_SIZE: the one asked, else -n
        self.group = tuple(range(nranks))
        self.world_context, self.world_slot = WORLD_CONTEXT, WORLD_SLOT
        self.parent = None
        self.spawn_fd = None    # the launcher's request pipe (launcher.Job), and what
        self.spawn_program = None   # checks a request's program there (run/cli.py)
        self.oversubscribed = False     # more ranks than CPUs (become_rank decides)
        self.rank = rank
        self.segment = segment
        self.layout = Layout(self.size)
        self.base = segment.address
        self.mem = segment.buffer
        self.abort_cell = self.base + OFF_ABORT

    @classmethod
    def create(cls, job_id, nranks, capacity=None, universe=None):
        capacity = max(capacity or nranks, nranks)
        if not 1 <= nranks <= capacity <= MAX_RANKS:
            errors.fail(errors.ERR_ARG, "a job has 1 to %d ranks (its universe included), "
                        "not %d" % (MAX_RANKS, capacity))
        layout = Layout(capacity)
        segment = segments.Segment.create(job_id, layout.total, layout.reserved(nranks),
                                          keep_fd=capacity > nranks)
        # Every rank inherits the mapping through fork: the name is not needed any more.
        segment.unlink()
        world = cls(job_id, nranks, segment, capacity=capacity, universe=universe)
        struct.pack_into("<Qi", world.mem, OFF_MAGIC, MAGIC, nranks)
        world.mem[OFF_SECRET:OFF_SECRET + SECRET_BYTES] = os.urandom(SECRET_BYTES)
        atomic.store64(world.base + OFF_NEXT_CONTEXT, FIRST_FREE_CONTEXT)
        atomic.store64(world.base + OFF_NEXT_RANK, nranks)
        atomic.store32(world.base + OFF_ABORT_RANK, -1)
        atomic.store32(world.slot_address(WORLD_SLOT) + OFF_SLOT_REFS, nranks)
        return world

    def processes(self):
        """How many process slots are taken: the ranks started and spawned so far."""
        return atomic.load64(self.base + OFF_NEXT_RANK)

    def claim_ranks(self, count):
        """The first of ``count`` free process slots, taken for a Spawn; None when the
        universe has not that many left (slots are never given back). Their channels
        are reserved first: ERR_NO_MEM, nothing taken, when /dev/shm has no room."""
        while True:
            taken = self.processes()
            if taken + count > self.size:
                return None
            self.segment.reserve(self.layout.reserved(taken + count))
            if atomic.cas64(self.base + OFF_NEXT_RANK, taken, taken + count) == taken:
                return taken

    # --- addresses ---------------------------------------------------------
    def rank_block(self, rank):
        return self.base + self.layout.ranks_offset + rank * RANK_BLOCK

    def doorbell(self, rank):
        return self.rank_block(rank) + OFF_DOORBELL

    def slot_address(self, slot):
        return self.base + self.layout.slots_offset + slot * SLOT_BYTES

    def shared_name(self, tag):
        """The segment name every rank of the job derives from ``tag``, which nobody
        outside the job can guess: it is keyed with the job's secret, which only its
        ranks read (the world segment is inherited, never named)."""
        import hashlib
        key = bytes(self.mem[OFF_SECRET:OFF_SECRET + SECRET_BYTES])
        digest = hashlib.blake2b(tag.encode(), key=key, digest_size=8).hexdigest()
        return "/%s%s" % (segments.job_prefix(self.job_id), digest)

    def channel_offset(self, src, dst):
        return self.layout.channels_offset + channel_index(src, dst) * self.layout.channel_bytes

    # --- rank states -------------------------------------------------------
    def set_state(self, rank, state):
        atomic.store32(self.rank_block(rank) + OFF_STATE, state)
        atomic.cell_wake(self.doorbell(rank))

    def state(self, rank):
        return atomic.load32(self.rank_block(rank) + OFF_STATE)

    def set_pid(self, rank, pid):
        atomic.store32(self.rank_block(rank) + OFF_PID, pid)

    def pid(self, rank):
        return atomic.load32(self.rank_block(rank) + OFF_PID)

    # --- abort -------------------------------------------------------------
    def aborted(self):
        return atomic.load32(self.abort_cell) != 0

    def abort_rank(self):
        return atomic.load32(self.base + OFF_ABORT_RANK)

    def fail(self, rank):
        """Rank ``rank`` failed: abort the job, then publish the state.

        In this order a waiter that sees the failed state also sees the abort and
        its culprit, so it stops as a follower instead of claiming the failure."""
        self.abort(rank)
        self.set_state(rank, FAILED)

    def abort(self, culprit):
        """Mark the job aborted because of ``culprit`` (a rank, or -1); first caller wins."""
        if atomic.cas32(self.base + OFF_ABORT_RANK, -1, culprit) == -1 or culprit == -1:
            atomic.cell_store(self.abort_cell, 1)
        for rank in range(self.size):
            atomic.cell_wake(self.doorbell(rank))

    # --- what a rank waits for (read by the launcher on --timeout) ----------
    def note_waiting(self, text):
        data = text.encode("utf-8", "replace")[:WAITING_BYTES - 1] + b"\0"
        offset = self.rank_block(self.rank) - self.base + OFF_WAITING
        self.mem[offset:offset + len(data)] = data
        for hook in _waiting_hooks:
            hook(text)

    def clear_waiting(self):
        self.mem[self.rank_block(self.rank) - self.base + OFF_WAITING] = 0

    def waiting_text(self, rank):
        offset = self.rank_block(rank) - self.base + OFF_WAITING
        raw = bytes(self.mem[offset:offset + WAITING_BYTES])
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    # --- context ids ---------------------------------------------------------
    def new_contexts(self, count):
        return atomic.fetch_add64(self.base + OFF_NEXT_CONTEXT, count)


WORLD_CONTEXT = 0
SELF_CONTEXT = 1
SESSION_CONTEXT = 2     # Create_from_group's handshakes (intracomm.py)
FIRST_FREE_CONTEXT = 3
WORLD_SLOT = 0

_current = None


def current():
    """The world of this process; a program started without the launcher is a world of one."""
    if _current is None:
        _start_singleton()
    return _current


def world_rank():
    return current().rank


def world_size():
    return current().size


def is_started():
    return _current is not None


def become_rank(world, rank):
    """Called in a freshly forked rank: from now on this process is ``rank`` of ``world``."""
    global _current
    world.rank = rank
    _current = world
    world.set_pid(rank, os.getpid())
    world.set_state(rank, RUNNING)
    world.oversubscribed = _oversubscribed(world.processes())
    _spin_less_when_oversubscribed(world)
    _bind_to_cpu(world)
    _reset_hooks_run()


OVERSUBSCRIBED_SPIN = 0


def _oversubscribed(nranks):
    return hasattr(os, "sched_getaffinity") and nranks > len(os.sched_getaffinity(0))


def _spin_less_when_oversubscribed(world):
    """With more ranks than CPUs, the rank a wait is for is often not running: spinning
    only delays it (mpi4py's CI on an oversubscribing MPI went from minutes to over an
    hour). Yield and sleep at once; SHMRMA_SPIN, when set, is
    kept. Measured on 2 cores: a PSCW ring round at 4 ranks 46 -> 17 us, at 8 ranks
    98 -> 40 us; no change at 2 ranks."""
    if not settings.spin_set() and world.oversubscribed:
        atomic.set_wait_params(OVERSUBSCRIBED_SPIN, atomic.get_wait_params()[1])


def _bind_to_cpu(world):
    """Rank r runs on the r-th CPU it may use, when there is one per rank (SHMRMA_BIND=0
    leaves the ranks to the scheduler). Unbound, Linux often keeps two ranks that
    wake each other on one CPU (it takes them for a producer and its consumer), and
    each then spins away the other's time: measured at 2 ranks on 2 vCPUs, a 64 KiB
    message one way 7 us bound, 60 us in about one run in three unbound."""
    if (os.environ.get("SHMRMA_BIND", "1").strip() == "0" or world.processes() < 2
            or world.oversubscribed or not hasattr(os, "sched_setaffinity")):
        return
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[world.rank]})


def forget():
    """Drop the world of this process (used by forked children before they become a rank)."""
    global _current
    _current = None


JOB_PREFIX_VARIABLE = "SHMRMA_JOB_PREFIX"


def new_job_id():
    """A random job id, after SHMRMA_JOB_PREFIX: the test suite sets it, so that it
    counts as its leaks only its own jobs' segments, not another run's."""
    return os.environ.get(JOB_PREFIX_VARIABLE, "") + os.urandom(5).hex()


# What MPI launchers tell each process they start: the number of processes
# (MPICH's and Intel MPI's Hydra, Slurm's PMI-2: PMI_SIZE; Open MPI:
# OMPI_COMM_WORLD_SIZE; MVAPICH2: MV2_COMM_WORLD_SIZE).
LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def launcher_variables(rank, size):
    """The rank and size variables MPICH's and Open MPI's launchers give each process
    (on one machine, local rank = rank): for programs that are not Python, which
    shmrma-mpiexec starts as those launchers do (run/launcher.exec_rank)."""
    rank, size = str(rank), str(size)
    return {"PMI_RANK": rank, "PMI_SIZE": size, "MPI_LOCALRANKID": rank,
            "MPI_LOCALNRANKS": size, "OMPI_COMM_WORLD_RANK": rank,
            "OMPI_COMM_WORLD_SIZE": size, "OMPI_COMM_WORLD_LOCAL_RANK": rank,
            "OMPI_COMM_WORLD_LOCAL_SIZE": size}


def _refuse_foreign_launcher():
    """A program that an MPI launcher started as one of N > 1 processes would be a
    world of one here, each copy computing alone: an error that says what to do,
    never a silent singleton."""
    for name in LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 1:
            errors.fail(errors.ERR_OTHER, (
                "this process was started by an MPI launcher as one of %s processes "
                "(%s=%s), but shmrma starts its ranks itself: each process would be a "
                "world of one. Run the program with `shmrma-run -n %s prog.py`, or set "
                "SHMRMA_BACKEND=mpi to run it on the MPI that launched it (mpi4py)")
                % (value, name, value, value))


def _start_singleton():
    _refuse_foreign_launcher()
    job_id = os.environ.get("SHMRMA_JOB") or new_job_id()
    world = World.create(job_id, 1)
    become_rank(world, 0)
    import atexit
    atexit.register(_singleton_exit, world)


def _singleton_exit(world):
    world.set_state(world.rank, EXITED)
    segments.sweep(world.job_id)
    if _abort_status[0]:
        sys.stdout.flush()
        sys.stderr.write(abort_line(world.rank, "MPI_COMM_WORLD", _abort_status[0]))
        sys.stderr.flush()
        os._exit(_abort_status[0] & 0xFF or 1)


# The status a rank ends the job with at exit, when not 0 (mpi4py.run's
# set_abort_status: COMM_WORLD.Abort(status) once Python exits).
_abort_status = [0]


def abort_at_exit(status):
    _abort_status[0] = status


def abort_status():
    return _abort_status[0]


def abort_line(rank, comm_name, status):
    """What a rank that aborts the job says (MPI_Abort, named as MPICH names it)."""
    return "shmrma: rank %d called MPI_Abort(%s, %d); ending the job\n" % (
        rank, comm_name or "comm", status)


# Modules above this layer keep per-process state (mailboxes, communicators);
# they register a reset hook so that a forked rank starts clean.
_reset_hooks = []


def on_new_rank(hook):
    _reset_hooks.append(hook)
    return hook


_waiting_hooks = []


def on_long_wait(hook):
    """``hook(text)`` runs when a wait of this process outlasts a slice, with what
    it waits for (the text the launcher's --timeout report gives)."""
    _waiting_hooks.append(hook)
    return hook


def _reset_hooks_run():
    for hook in _reset_hooks:
        hook()


# --- waiting -----------------------------------------------------------------

# Work that must go on while a rank waits for anything (nonblocking collectives
# whose deposits or reads other ranks need): each hook runs at every slice of a
# long wait and at every wake-up of a message wait, and must never block.
_idle_hooks = []


def on_idle(hook):
    _idle_hooks.append(hook)
    return hook


def run_idle_hooks():
    for hook in _idle_hooks:
        hook()


class Alternatives(tuple):
    """The peers of waits any one of which will do (Waitany, Waitsome), a tuple of
    them per wait: it is hopeless once every wait has a peer gone."""


def job_problem(peers=(), what=None):
    """The exception a wait should raise now (job aborted, a needed rank gone), or None."""
    if type(peers) is Alternatives:
        problems = [job_problem(group, what) for group in peers]
        return problems[0] if problems and all(problems) else None
    world = current()
    if world.aborted():
        culprit = world.abort_rank()
        reason = ("rank %d failed" % culprit) if culprit >= 0 else "the launcher ended it"
        return errors.JobAborted("the job was aborted (%s) while rank %d was waiting for %s"
                                 % (reason, world.rank, what or "another rank"))
    for peer in peers:
        state = world.state(peer)
        if state == FAILED:  # the job is going down; stop as a follower of that failure
            return errors.JobAborted("the job was aborted (rank %d failed) while rank %d "
                                     "was waiting for %s" % (peer, world.rank, what or "it"))
        if state == EXITED:
            return errors.Exception(
                errors.ERR_OTHER, "rank %d has %s while rank %d was waiting for %s; "
                "it can never arrive" % (peer, STATE_NAMES[state], world.rank, what or "it"))
    return None


def wake_threads():
    """Ring this rank's doorbell when a second thread has taken its MPI lock: what
    one thread completed, another may be waiting for on it (csrc/native.h)."""
    if atomic.mpi_lock_shared():
        world = current()
        atomic.cell_add(world.doorbell(world.rank), 1)


def wait_until(address, condition, what, peers=()):
    """Block until ``condition(value)`` holds for the 32-bit cell at ``address``.

    The value tested is the value waited on, so a change in between is never missed;
    ``what`` and ``peers`` as for wait_cell."""
    while True:
        value = atomic.load32(address)
        if condition(value):
            return
        wait_cell(address, value, what, peers)


def wait_cell(address, old, what, peers=(), until=None):
    """Block until the 32-bit cell at ``address`` no longer holds ``old``, or until
    ``until()`` holds at the end of a slice.

    ``what`` (a string or a zero-argument callable giving one) says what is
    awaited; it is published for the launcher's timeout report once the wait
    outlasts a slice. ``peers`` are world ranks whose exit makes the wait hopeless.
    ``until`` is the waiter's own condition, looked at again at every slice: what
    another thread of this rank completed ends the wait even if its ring was missed.
    """
    value = atomic.cell_wait(address, old, WAIT_SLICE)
    if value != old or (until is not None and until()):
        return value
    world = current()
    text = what() if callable(what) else what
    world.note_waiting(text)
    try:
        while True:
            # A peer publishes its exit after its last contribution, so reading the
            # problem first and the cell second never blames a peer that did arrive.
            problem = job_problem(peers, text)
            value = atomic.load32(address)
            if value != old:
                return value
            if problem is not None:
                raise problem
            run_idle_hooks()
            value = atomic.cell_wait(address, old, WAIT_SLICE)
            if value != old or (until is not None and until()):
                return value
    finally:
        world.clear_waiting()
