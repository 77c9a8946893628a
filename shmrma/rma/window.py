"""Windows (MPI-3.1 §11.2): creation, memory, attributes, info and freeing.

Every window has a control segment (one cache-line-padded block per rank:
lock words, the accumulate lock) and, for the ALLOCATE and SHARED flavors,
one data segment holding every rank's memory; a CREATE window over memory
from ``Alloc_mem`` maps each rank's segment. Segments are created by rank 0,
mapped by all, and unlinked once everyone has mapped them. Creation is
collective and agrees on errors first, so a bad argument or a full /dev/shm
raises the same error class on every rank instead of hanging the others.
"""
import errno
import mmap
import operator
import os

from ..core import constants, errhandler, errors, job, segments
from . import dynamic, fastpath, winchange
from ..types import memory
from .control import CONTROL_HEADER, HOLD_CELL, POST_CELL, RANK_CONTROL
from .active import ActiveTarget
from ..core.attributes import (WIN_BASE, WIN_CREATE_FLAVOR, WIN_DISP_UNIT, WIN_MODEL,
                               WIN_SIZE, Attributes)
from ..coll.blocking import own_allgather, own_bcast
from ..comm.group import Group, GroupMembers
from ..core.handle import IntHandle, constant
from ..core.info import Info, to_dict
from ..comm.intracomm import COMM_SELF
from .passive import PassiveTarget
from .calls import Communication
from .winbarrier import WindowBarrier
from .counters import CounterCalls, Counters
from .winmemory import MappedMemory, ProcessMemory, probe_access

WIN_FLAVOR_CREATE = 1
WIN_FLAVOR_ALLOCATE = 2
WIN_FLAVOR_DYNAMIC = 3
WIN_FLAVOR_SHARED = 4
WIN_SEPARATE = 1
WIN_UNIFIED = 2

BASE_ALIGNMENT = 64

HINT_DEFAULTS = {
    "no_locks": "false",
    "accumulate_ordering": "rar,raw,war,waw",
    "accumulate_ops": "same_op_no_op",
    "same_size": "false",
    "same_disp_unit": "false",
}


def _round_up(value, alignment):
    return -(-value // alignment) * alignment


class Layout:
    """Where each rank's memory lies in the data segment: in rank order, each base
    rounded up to ``alignment``. The default shared layout is contiguous with
    64-byte aligned bases, so rank i starts right after rank i-1 when sizes are
    multiples of 64 (the issue's alignment rule over A35's no-padding reading);
    noncontig and ALLOCATE windows page-align every rank."""

    def __init__(self, sizes, alignment):
        self.offsets = []
        end = 0
        for size in sizes:
            self.offsets.append(end)
            end = _round_up(end + size, alignment)
        self.total = end


def _as_int(value):
    try:
        return operator.index(value)
    except TypeError:
        return None


def _creation_problem(size, disp_unit):
    if _as_int(size) is None or size < 0:
        return errors.ERR_SIZE, "size must be an int >= 0, not %r" % (size,)
    if _as_int(disp_unit) is None or disp_unit <= 0:
        return errors.ERR_DISP, "disp_unit must be a positive int, not %r" % (disp_unit,)
    return None


def _segment_problem(exc, nbytes):
    """(error class, message) of what creating or mapping a window's segment raised."""
    if isinstance(exc, errors.Exception):
        return exc.Get_error_class(), exc.message
    if isinstance(exc, (OverflowError, ValueError)):
        return errors.ERR_SIZE, ("the window's memory, %d bytes over all ranks, is more "
                                 "than one segment can hold (%s)" % (nbytes, exc))
    if isinstance(exc, MemoryError) or getattr(exc, "errno", None) in (errno.ENOMEM,
                                                                         errno.ENOSPC):
        return errors.ERR_NO_MEM, ("no room for the window's %d bytes in /dev/shm (%s)"
                                   % (nbytes, exc))
    if isinstance(exc, OSError):
        return errors.ERR_OTHER, "its segment could not be made or mapped: %s" % exc
    raise exc


def _agree(comm, local, purpose="window creation"):
    """Allgather each rank's (problem, data); raise the first problem on every rank.
    A window's group is one intracommunicator's (R4: an intercommunicator is
    ERR_COMM, at every rank, before anything is exchanged)."""
    if comm.Is_inter():
        errors.fail(errors.ERR_COMM, "%s takes an intracommunicator, not an "
                    "intercommunicator; Merge it first" % purpose)
    entries = own_allgather(comm, local)
    for rank, (problem, _) in enumerate(entries):
        if problem is not None:
            error_class, message = problem
            who = "this rank" if rank == comm.Get_rank() else "rank %d" % rank
            errors.fail(error_class, "%s failed on %s: %s" % (purpose, who, message))
    return [data for _, data in entries]


def share_segment(comm, nbytes, purpose="window creation"):
    """Rank 0 creates a segment, everyone maps it, then it is unlinked (collective over
    ``comm``). A rank that cannot create or map it makes every rank raise its error,
    at once. Windows keep their control blocks in one, files their shared pointer."""
    if nbytes == 0:
        return None
    plan = segment = problem = None
    if comm.Get_rank() == 0:
        try:
            segment = segments.Segment.create(job.current().job_id, nbytes)
            plan = (None, segment.name)
        except Exception as exc:  # noqa: BLE001 - every rank must hear of it
            plan = (_segment_problem(exc, nbytes), None)
    problem, name = own_bcast(comm, plan, 0)
    if problem is not None:
        errors.fail(problem[0], "%s failed on rank 0: %s" % (purpose, problem[1]))
    if segment is None:
        try:
            segment = segments.Segment.attach(name, nbytes)
        except Exception as exc:  # noqa: BLE001
            problem = _segment_problem(exc, nbytes)
    try:
        _agree(comm, (problem, None), purpose)     # every rank mapped it, or all raise
    finally:
        if segment is not None:
            segment.unlink()
    return segment


def _buffer_exporter():
    """The base class that gives Win the buffer protocol (memoryview(win))."""
    try:
        from .._native import BufferExporter
        return BufferExporter
    except ImportError:     # no C extension: Python 3.12's __buffer__ does it
        class BufferExporter:
            def __buffer__(self, flags):
                return memoryview(self.tomemory())
        return BufferExporter


class Win(_buffer_exporter(), IntHandle, Communication, ActiveTarget, PassiveTarget,
          WindowBarrier, CounterCalls, Attributes, GroupMembers, errhandler.ErrorHandling):
    """``MPI.Win``: a window for remote memory access; ``Win()`` is WIN_NULL.

    (The C base first: Win.__new__ reaches its __new__, see handle.HandleBase.)"""

    _errhandler_kind = "Win"

    _state = None
    _sync = None
    _referent_attr = "_state"   # for integer handles (handle.IntHandle)

    def __new__(cls, win=None):
        # Win(other) is a new handle to the same window, made here as mpi4py's
        # __cinit__ makes it, so a subclass's __new__ may pass it on (test_subclass)
        if win is not None and not isinstance(win, Win):
            raise TypeError("Win() takes a Win, not %s" % type(win).__name__)
        handle = super().__new__(cls)
        if win is not None and win._state is not None:
            handle._bind(win._state)
        return handle

    def __init__(self, win=None):
        """The handle is made in __new__."""

    def _bind(self, state):
        self._state = state
        self._sync = state.epoch.table   # what the synchronization calls' fast path takes
        errhandler.switch_class(self, state.errhandler)

    @classmethod
    def _of_referent(cls, state):
        win = cls()
        if state is not None:
            win._bind(state)
        return win

    def __bool__(self):
        return self._state is not None

    def __eq__(self, other):
        if not isinstance(other, Win):
            return NotImplemented
        return self._state is other._state

    __hash__ = None     # unhashable, as in mpi4py (Free changes what it refers to)

    def __repr__(self):
        return "<MPI.Win %s>" % ("WIN_NULL" if self._state is None else repr(self._state.name))

    def __reduce__(self):
        # as mpi4py: WIN_NULL pickles by name, a window (memory of one job) does not
        if self._state is None:
            return "WIN_NULL" if self is WIN_NULL else (type(self), ())
        raise ValueError("cannot pickle MPI.Win %r: a window exists only in its job; "
                         "send what it holds instead" % self._state.name)

    @property
    def _s(self):
        state = self._state
        if state is None:
            errors.fail(errors.ERR_WIN, "the window is WIN_NULL (never created, or freed)")
        return state

    # --- creation -------------------------------------------------------------------
    @classmethod
    def Allocate(cls, size, disp_unit=1, info=None, comm=COMM_SELF):
        """Create a window of newly allocated memory; collective over ``comm``."""
        return cls._allocate(WIN_FLAVOR_ALLOCATE, size, disp_unit, info, comm)

    @classmethod
    def Allocate_shared(cls, size, disp_unit=1, info=None, comm=COMM_SELF):
        """Create a window of newly allocated memory that every member can load and store."""
        return cls._allocate(WIN_FLAVOR_SHARED, size, disp_unit, info, comm)

    @classmethod
    def _allocate(cls, flavor, size, disp_unit, info, comm):
        hints = to_dict(info)
        noncontig = hints.get("alloc_shared_noncontig", "false") == "true"
        problem = _creation_problem(size, disp_unit)
        agreed = (int(size), int(disp_unit)) if problem is None else None
        sizes, units = zip(*_agree(comm, (problem, agreed)))
        contiguous = flavor == WIN_FLAVOR_SHARED and not noncontig
        layout = Layout(sizes, BASE_ALIGNMENT if contiguous else mmap.PAGESIZE)
        state = WindowState(comm, flavor, sizes, units, hints)
        try:
            data = state.share_segment(layout.total)
        except BaseException:
            state.release()
            raise
        state.data_segments = [data] if data is not None else []
        base = data.address if data is not None else 0
        state.targets = [MappedMemory(data.buffer[offset:offset + size] if data is not None
                                      else memoryview(bytearray(0)), base + offset)
                         for offset, size in zip(layout.offsets, sizes)]
        if flavor == WIN_FLAVOR_SHARED:
            state.hints["alloc_shared_noncontig"] = "true" if noncontig else "false"
        return cls._from_state(state)

    @classmethod
    def Create(cls, memory_object, disp_unit=1, info=None, comm=COMM_SELF):
        """Create a window over existing memory; collective over ``comm``."""
        hints = to_dict(info)
        place, view, problem = _describe_memory(memory_object)
        problem = problem or _creation_problem(place[2], disp_unit)
        described = _agree(comm, (problem, (place, _as_int(disp_unit))))
        places = [p for p, _ in described]
        units = [unit for _, unit in described]
        _agree(comm, (_probe_private(places, comm.Get_rank()), None))
        state = WindowState(comm, WIN_FLAVOR_CREATE, [p[2] for p in places], units, hints)
        state.places = places   # for processes that join later (Change_comm)
        try:
            state.reach_created_memory(places, view)
        except BaseException:
            state.release()
            raise
        return cls._from_state(state)

    @classmethod
    def Create_dynamic(cls, info=None, comm=COMM_SELF):
        """Create a window to which memory is attached later; collective over ``comm``."""
        hints = to_dict(info)
        size = comm.Get_size()
        _agree(comm, (None, None))
        state = WindowState(comm, WIN_FLAVOR_DYNAMIC, [0] * size, [1] * size, hints)
        state.targets = state.dynamic_targets()
        return cls._from_state(state)

    def Attach(self, memory_object):
        """Attach a local memory region to a dynamic window."""
        state = self._dynamic_state("Attach")
        address, size, name = dynamic.describe(memory_object)
        if size:
            state.region_table(state.rank).attach(address, size, name)

    def Detach(self, memory_object):
        """Detach a local memory region from a dynamic window."""
        state = self._dynamic_state("Detach")
        state.region_table(state.rank).detach(memory.get_address(memory_object))

    def _dynamic_state(self, call):
        state = self._s
        if state.flavor != WIN_FLAVOR_DYNAMIC:
            errors.fail(errors.ERR_RMA_FLAVOR, "%s works only on windows made by "
                        "Win.Create_dynamic" % call)
        return state

    @classmethod
    def _from_state(cls, state):
        win = cls()
        win._bind(state)
        return win

    # --- memory ------------------------------------------------------------------
    def Shared_query(self, rank):
        """Query the local memory of a member's window segment: (buffer, disp_unit)."""
        state = self._s
        if state.flavor == WIN_FLAVOR_DYNAMIC:
            errors.fail(errors.ERR_RMA_FLAVOR, "Shared_query is not defined on a dynamic "
                        "window; it has no memory of its own")
        if rank == constants.PROC_NULL:
            rank = next((r for r, size in enumerate(state.sizes) if size > 0), 0)
        else:
            rank = state.check_rank(rank, "Shared_query rank", allow_null=False)
        view = state.targets[rank].view
        if view is None:
            errors.fail(errors.ERR_RMA_SHARED, "rank %d's window memory is private to its "
                        "process and cannot be mapped here; create the window over "
                        "MPI.Alloc_mem memory, or use Win.Allocate_shared" % rank)
        return _buffer_over(view), state.units[rank]

    def tomemory(self):
        """Return window memory buffer."""
        state = self._s
        return _buffer_over(state.targets[state.rank].view)

    # --- attributes (attributes.py) -----------------------------------------------------
    _attribute_kind = "Win"

    def _attributes(self):
        return self._s.attributes

    def _predefined_attribute(self, keyval):
        state = self._s
        if state.dynamic:
            return {WIN_BASE: 0, WIN_SIZE: 0, WIN_DISP_UNIT: 1,
                    WIN_CREATE_FLAVOR: WIN_FLAVOR_DYNAMIC, WIN_MODEL: WIN_UNIFIED}.get(keyval)
        values = {
            WIN_BASE: state.targets[state.rank].address if state.sizes[state.rank] else 0,
            WIN_SIZE: state.sizes[state.rank],
            WIN_DISP_UNIT: state.units[state.rank],
            WIN_CREATE_FLAVOR: state.flavor,
            WIN_MODEL: WIN_UNIFIED,
        }
        return values.get(keyval)

    @property
    def attrs(self):
        """Attributes: (base, size, disp_unit)."""
        return (self.Get_attr(WIN_BASE), self.Get_attr(WIN_SIZE), self.Get_attr(WIN_DISP_UNIT))

    @property
    def flavor(self):
        """Create flavor."""
        return self._s.flavor

    @property
    def model(self):
        """Memory model: always WIN_UNIFIED."""
        return WIN_UNIFIED

    def Get_info(self):
        """Return the current hints for a window, as a new Info."""
        return Info.Create(self._s.hints)

    def Set_info(self, info):
        """Set new values for the hints associated with a window."""
        self._s.update_hints(to_dict(info))

    info = property(Get_info, Set_info)

    def Get_name(self):
        """Get the print name for this window."""
        if self._state is None:
            return "MPI_WIN_NULL"       # as mpi4py names the null handle
        return self._state.name

    def Set_name(self, name):
        """Set the print name for this window."""
        self._s.name = str(name)

    name = property(Get_name, Set_name)

    # --- changing the group (the 2008 proposal, §1.2.6) ----------------------------------
    def Change_comm(self, new_comm, peer_rank):
        """Change the window's communicator to ``new_comm``; return the window handle.

        Collective over ``new_comm`` and the window's communicator (winchange.py):
        the window back over ``new_comm``, a new window for a process that called it on
        WIN_NULL, WIN_NULL for a member that passed COMM_NULL and leaves."""
        change = winchange.Change(self._state, new_comm, peer_rank)
        change.agree()
        state = self._state
        if state is None:
            return Win._from_state(WindowState.joining(change))
        if not change.member:
            self._drop()
            return Win()
        state.regroup(change)
        self._fast = None
        self._sync = state.epoch.table
        return self

    # --- freeing ---------------------------------------------------------------------
    def _drop(self):
        """Drop this rank's part of the window without the collective barrier of Free."""
        self._state.release()
        self._state = None
        errhandler.switch_class(self, errhandler.ERRORS_RETURN)

    def Free(self):
        """Free a window; collective (no epoch may be open)."""
        state = self._s
        state.epoch.check_free()
        self._drop_attributes()
        state.comm.Barrier()
        self._drop()


class WindowState:
    """Everything one rank knows about a window."""

    def __init__(self, comm, flavor, sizes, units, hints):
        self.flavor = flavor
        self.dynamic = flavor == WIN_FLAVOR_DYNAMIC
        # ALLOCATE and SHARED: every rank's memory lies in one data segment
        self.one_segment = flavor in (WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_SHARED)
        self.hints = dict(HINT_DEFAULTS)
        self.attributes = {}    # attributes.Attributes of every handle to it
        self.update_hints(hints)
        self.name = ""
        self.errhandler = errhandler.for_new(errhandler.ERRORS_ARE_FATAL)  # MPI-3.1 §8.3.2
        self.data_segments = []
        self.targets = []
        self.places = None      # CREATE: where each rank's memory is (_describe_memory)
        self.join_group(comm, sizes, units)

    def join_group(self, comm, sizes, units):
        """Bind to the group of ``comm`` (collective): a communicator of its own, the
        control segment, the epoch table and the counters. Creation does it once;
        Change_comm again for the new group, after leave_group."""
        from .epoch import Epoch
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.world_ranks = tuple(self.comm._s.ranks)
        self.sizes = list(sizes)
        self.units = list(units)
        self.epoch = Epoch(self)
        self.regions = dynamic.RegionCache()
        # after the per-rank blocks: the post matrix, the hold matrix, then the
        # dynamic region tables
        self.posts_offset = CONTROL_HEADER + len(sizes) * RANK_CONTROL
        self.holds_offset = _round_up(self.posts_offset + len(sizes) ** 2 * POST_CELL, 64)
        # a row per holder, on cache lines of its own: only the holder writes it
        self.hold_row = -(-len(sizes) * HOLD_CELL // 64) * 64
        self.tables_offset = self.holds_offset + len(sizes) * self.hold_row
        extra = dynamic.table_bytes(len(sizes)) if self.dynamic else 0
        self.control = self.share_segment(self.tables_offset + extra)
        self.control_view = self.control.buffer
        self.control_base = self.control.address + CONTROL_HEADER
        fastpath.bind_sync(self)
        self.counters = Counters(self)

    @classmethod
    def joining(cls, change):
        """The state of a process that joins the window in ``change`` (Change_comm)."""
        leader = change.leader_entry()
        data = change.map_data(leader["segment"], leader["segment_size"])
        sizes, units = change.sizes_and_units()
        state = cls(change.new_comm, leader["flavor"], sizes, units, leader["hints"])
        if state.dynamic:
            state.targets = state.dynamic_targets()
        else:
            change.newcomer_targets(state, data)
        if state.flavor == WIN_FLAVOR_CREATE:
            state.places = change.places()
        state.comm.Barrier()        # the members' region tables are in place (regroup)
        return state

    def regroup(self, change):
        """Move a member that stays to the new group of ``change`` (Change_comm)."""
        leader = change.leader_entry()
        change.map_data(leader["segment"], leader["segment_size"])
        table = bytes(self.control_view[self._table_span(self.rank)]) if self.dynamic else None
        old_targets, old_to_new = self.targets, change.old_to_new
        self.leave_group()
        sizes, units = change.sizes_and_units()
        self.join_group(change.new_comm, sizes, units)
        self.targets = [MappedMemory(memoryview(bytearray(0)), 0) for _ in sizes]
        for old, target in enumerate(old_targets):
            if old in old_to_new:
                self.targets[old_to_new[old]] = target
            else:
                target.release()    # a member that left
        if self.dynamic:
            self.control_view[self._table_span(self.rank)] = table
            self.targets = self.dynamic_targets()
        if self.flavor == WIN_FLAVOR_CREATE:
            self.places = change.places()
        self.comm.Barrier()         # every region table is in place before anyone reads it

    def dynamic_targets(self):
        return [dynamic.DynamicMemory(self, rank, self.region_table(rank))
                for rank in range(len(self.sizes))]

    def update_hints(self, hints):
        """Record the honoured hints, normalised; a value shmrma cannot read is ignored."""
        for key, value in hints.items():
            value = _normalised_hint(key, value)
            if value is not None:
                self.hints[key] = value

    def share_segment(self, nbytes):
        return share_segment(self.comm, nbytes)

    def reach_created_memory(self, places, own_view):
        """CREATE flavor: map Alloc_mem segments; reach private memory across processes."""
        for rank, (name, offset, size, address, pid) in enumerate(places):
            if size == 0:
                self.targets.append(MappedMemory(memoryview(bytearray(0)), 0))
            elif rank == self.rank:
                self.targets.append(MappedMemory(own_view.cast("B"), address))
            elif name:
                segment = segments.Segment.attach(name, offset + size)
                self.data_segments.append(segment)
                self.targets.append(MappedMemory(segment.buffer[offset:offset + size],
                                                 segment.address + offset))
            else:
                self.targets.append(ProcessMemory(pid, address, rank))

    def _table_span(self, rank):
        start = self.tables_offset + rank * dynamic.TABLE_BYTES
        return slice(start, start + dynamic.TABLE_BYTES)

    def region_table(self, rank):
        return dynamic.RegionTable(self.control_view,
                                   self.tables_offset + rank * dynamic.TABLE_BYTES,
                                   self.control.address)

    def region_memory(self, rank, address, size, name):
        return self.regions.memory_for(rank, self.rank, address, size, name)

    # --- per-rank control words ---
    def control_of(self, rank):
        return self.control_base + rank * RANK_CONTROL

    def post_cell(self, origin, target):
        """The count of Posts from ``target`` that include ``origin`` (per
        pair, so a post meant for another origin or epoch never satisfies a Start)."""
        return (self.control.address + self.posts_offset
                + (origin * len(self.sizes) + target) * POST_CELL)

    def hold_cell(self, holder, target):
        """What lock ``holder`` holds on ``target``'s window (HELD_*; 0: none)."""
        return (self.control.address + self.holds_offset + holder * self.hold_row
                + target * HOLD_CELL)

    def window_ranks(self, group, call):
        """The window ranks of ``group``'s members, in group order; ERR_GROUP for a
        member outside the window's group (R93)."""
        if not isinstance(group, Group):
            raise TypeError("%s: group must be an MPI.Group, not %s"
                            % (call, type(group).__name__))
        handle = group._live()      # ERR_GROUP for GROUP_NULL and freed groups
        cache = self.epoch.table.groups   # the C fast path of Start and Post reads it too
        ranks = cache.get(handle)
        if ranks is None:
            members = handle.world_ranks
            index = {world: rank for rank, world in enumerate(self.world_ranks)}
            outside = [world for world in members if world not in index]
            if outside:
                errors.fail(errors.ERR_GROUP, "%s: the group holds processes outside the "
                            "window's group (world ranks %s)" % (call, outside))
            ranks = tuple(index[world] for world in members)
            if len(cache) > 64:
                cache.clear()
            cache[handle] = ranks
        return ranks

    def check_rank(self, rank, role, allow_null=True):
        """The rank as an int; ERR_RANK unless it is in the window's group (or PROC_NULL)."""
        size = len(self.sizes)
        if allow_null and rank == constants.PROC_NULL:
            return constants.PROC_NULL
        if _as_int(rank) is None or not 0 <= rank < size:
            errors.fail(errors.ERR_RANK, "%s %r is not a rank of the window's group of size "
                        "%d; use 0..%d%s" % (role, rank, size, size - 1,
                                            " or PROC_NULL" if allow_null else ""))
        return operator.index(rank)

    def release(self):
        """Drop every mapping; memory still viewed by the program stays until its views go."""
        self.leave_group()
        for target in self.targets:
            target.release()
        self.targets = []
        for segment in self.data_segments:
            _close_unless_viewed(segment)
        self.data_segments = []

    def leave_group(self):
        """Drop what belongs to the group: epoch table, counters, region cache, control
        segment and communicator (what join_group made)."""
        self.epoch.table.close()    # the RMA fast path must not reach the memory any more
        self.counters.close()
        self.counters = None        # a request of this window then fails with ERR_WIN
        self.regions.release()
        self.control_view.release()
        _close_unless_viewed(self.control)
        self.comm.Free()


def _close_unless_viewed(segment):
    if segment is not None:
        try:
            segment.close()
        except BufferError:
            pass  # a buffer from Shared_query/tomemory still points here


ORDERINGS = ("rar", "raw", "war", "waw")


def _normalised_hint(key, value):
    """The value as shmrma reports it, or None when the key is unknown or the value invalid
    (hints never change semantics, so a bad one is ignored: R29)."""
    value = value.strip().lower()
    if key == "accumulate_ordering":
        tokens = {token.strip() for token in value.split(",")}
        if tokens == {"none"}:
            return "none"
        if tokens <= set(ORDERINGS) and tokens:
            return ",".join(o for o in ORDERINGS if o in tokens)
        return None
    if key == "accumulate_ops":
        return value if value in ("same_op", "same_op_no_op") else None
    if key in HINT_DEFAULTS:
        return value if value in ("true", "false") else None
    return None


def _describe_memory(memory_object):
    """((segment name, offset, size, address, pid), view, problem) of Win.Create's memory.

    Memory from Alloc_mem is named by its segment, so other ranks map it; other
    memory is private and reached by process id and address.
    """
    nothing = ("", 0, 0, 0, 0)
    if memory_object is None or memory_object is constants.BOTTOM:
        return nothing, None, None
    try:
        view = memoryview(memory_object)
    except TypeError:
        return nothing, None, (errors.ERR_BASE, "Win.Create needs a buffer, not %s"
                               % type(memory_object).__name__)
    if view.nbytes == 0:
        return nothing, None, None
    if view.readonly or not view.c_contiguous:
        return nothing, None, (errors.ERR_BASE, "Win.Create needs writable, C-contiguous "
                               "memory")
    address = memory.get_address(view)
    segment = memory.segment_of(address, view.nbytes)
    if segment is None:
        return ("", 0, view.nbytes, address, os.getpid()), view, None
    return (segment.name, address - segment.address, view.nbytes, address, 0), view, None


def _probe_private(places, me):
    """A problem if some rank's private memory cannot be reached from here."""
    for rank, (name, _, size, address, pid) in enumerate(places):
        if size and not name and rank != me:
            problem = probe_access(pid, address)
            if problem:
                return errors.ERR_RMA_SHARED, problem
    return None


def _buffer_over(view):
    """An MPI.buffer over ``view``; an empty one for None (no memory)."""
    buffer = memory.buffer_class()
    return buffer() if view is None else buffer(view)


WIN_NULL = constant(Win())
