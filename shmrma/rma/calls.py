"""Communication calls (MPI-3.1 §11.3): Put, Get, the accumulate family and
their request-based forms, all parsed by one function with mpi4py's rules.

shmrma has no progress engine: the origin performs every operation itself,
so each call is complete when it returns. Accumulate-class calls on a target
all take that target's accumulate lock, one mechanism for every op and size,
which makes them element-wise atomic with respect to each other (R135, R136)
and applies them in program order (R141).

Each call first offers itself to the fast path (fastpath.py: the common case in
C, under the same accumulate lock); when that declines, having touched nothing,
the Python path below performs the call or raises its error.
"""
import operator

from .control import OFF_ACCUMULATE_LOCK
from ..core import atomic, constants, errors, job
from ..types import buffers
from . import fastpath, winbarrier
from ..types import datatype as datatypes
from .counters import MODE_WIN_ACCUMULATE, MODE_WIN_GET, MODE_WIN_PUT
from ..types import derived
from ..types import op as ops
from ..core.lazy import numpy
from ..p2p.request import Request


class Side(derived.Items):
    """The items of one side of an RMA call, and their copies to and from window memory."""

    __slots__ = ()

    def store(self, memory, offset, packed):
        """Write packed bytes into window memory whose item 0 is at ``offset``; no
        item, no access (a zero-count call is a no-op wherever it points)."""
        if not self.nbytes:
            return
        if self.dense:
            memory.write(offset + self.low, _bytes(packed))
        else:
            memory.scatter(offset, self.index, numpy.frombuffer(packed, dtype=numpy.uint8))

    def load(self, memory, offset):
        """The packed bytes of window memory whose item 0 is at ``offset`` (a new array)."""
        if self.dense or not self.nbytes:
            data = numpy.empty(self.nbytes, dtype=numpy.uint8)
            memory.read_into(offset + self.low, memoryview(data))
            return data
        return memory.gather(offset, self.index)


def _bytes(packed):
    """A flat byte view of packed data (a numpy array of any element type, or bytes)."""
    return memoryview(packed).cast("B")


class Transfer:
    """One parsed RMA call: the origin side, the target side, and the target offset."""

    __slots__ = ("data", "first", "origin", "target", "offset", "rank")

    def __init__(self, data, first, origin, target, offset, rank):
        self.data = data
        self.first = first
        self.origin = origin
        self.target = target
        self.offset = offset
        self.rank = rank

    @property
    def datatype(self):
        return self.origin.datatype

    @property
    def target_type(self):
        return self.target.datatype

    @property
    def nbytes(self):
        return self.target.nbytes

    def packed_origin(self):
        return self.origin.pack(self.data, self.first)


def _target_spec(target, count, datatype):
    """(disp, count, datatype) from mpi4py's target forms."""
    if target is None:
        return 0, count, datatype
    if buffers.is_integral(target):
        return operator.index(target), count, datatype
    if isinstance(target, (list, tuple)):
        if len(target) > 3:
            raise ValueError("target: expecting 3 items at most")
        disp = operator.index(target[0]) if len(target) >= 1 else 0
        if len(target) >= 2:
            count = operator.index(target[1])
        if len(target) >= 3:
            datatype = datatypes.lookup(target[2])
        return disp, count, datatype
    raise ValueError("target: expecting integral or list/tuple")


def _check_committed(datatype, role):
    if not datatype:
        errors.fail(errors.ERR_TYPE, "the %s datatype is DATATYPE_NULL" % role)
    if not datatype.committed:
        errors.fail(errors.ERR_TYPE, "the %s datatype %r is not committed; call Commit() "
                    "before using it in RMA" % (role, datatype))
    if datatype.type_class == datatypes.HANDLE:
        buffers.refuse_handles("RMA")


def parse(state, call, origin, rank, target, writable_origin, origin_moves=True,
          ignored_origin=None):
    """Parse and check one call against the target's window; raises before any byte moves.

    ``origin_moves`` is False for NO_OP, whose origin is ignored (R47): then
    ``ignored_origin`` (the result buffer's message) stands in for it, so an origin
    of [None, 0, DATATYPE_NULL] is accepted, as MPICH and mpi4py accept it. The caller
    counts the call as RMA of the fence epoch (``epoch.issued``) once its bytes
    moved: a call that raised is no RMA a Fence must complete.
    """
    if ignored_origin is not None and not origin_moves:
        message = ignored_origin
    else:
        message = buffers.message(origin, writable=writable_origin, sparse=True)
    disp, count, datatype = _target_spec(target, message.count, message.datatype)
    _check_committed(message.datatype, "origin")
    _check_committed(datatype, "target")
    if count < 0:
        errors.fail(errors.ERR_COUNT, "%s: the target count %d is negative" % (call, count))
    origin_side = Side(message.datatype, message.count)
    target_side = Side(datatype, count)
    if origin_moves and target_side.nbytes != origin_side.nbytes:
        errors.fail(errors.ERR_TRUNCATE if origin_side.nbytes > target_side.nbytes
                    else errors.ERR_TYPE,
                    "%s: the origin holds %d bytes (%d x %s) but the target side describes "
                    "%d bytes (%d x %s); the two must match"
                    % (call, origin_side.nbytes, message.count, message.datatype.Get_name(),
                       target_side.nbytes, count, datatype.Get_name()))
    offset = disp * state.units[rank]
    if state.dynamic:
        # absolute addresses, checked against the attached regions on access (R14, R18)
        return Transfer(message.data, message.first, origin_side, target_side, offset, rank)
    if disp < 0:
        errors.fail(errors.ERR_DISP, "%s: target displacement %d is negative" % (call, disp))
    size = state.sizes[rank]
    if target_side.high > target_side.low and (
            offset + target_side.low < 0 or offset + target_side.high > size):
        errors.fail(errors.ERR_RMA_RANGE,
                    "%s of bytes %d..%d at displacement %d (disp_unit %d) of rank %d goes "
                    "outside its window of %d bytes"
                    % (call, offset + target_side.low, offset + target_side.high, disp,
                       state.units[rank], rank, size))
    return Transfer(message.data, message.first, origin_side, target_side, offset, rank)


def _check_accumulate_types(call, op, kind, nbytes, *datatypes_used):
    """The one basic type every datatype of an accumulate is built from (R45), and
    ``op`` defined on it unless the call moves no byte (MPICH accepts a zero-count
    call whatever the op, and mpi4py's suite relies on it).

    One type, not one representation: LONG and INT64_T are both 8-byte signed
    integers on LP64, yet their signatures differ and MPICH 5 rejects the pair
    (numpy's int64 arrays are LONG, so type the origin too when the target is INT64_T).
    """
    basics = [datatype.basic for datatype in datatypes_used]
    if None in basics:
        errors.fail(errors.ERR_TYPE, "%s: the datatype mixes basic types (a struct of "
                    "several types); accumulate needs one basic type" % call)
    first = basics[0]
    for other in basics[1:]:
        if other is not first:
            errors.fail(errors.ERR_TYPE, "%s: every datatype must be built from one basic "
                        "type, got %s and %s" % (call, first.Get_name(),
                                                       other.Get_name()))
    op.check(first, kind, empty=not nbytes)
    return first


class AccumulateLock:
    """The per-target lock every accumulate-class call takes."""

    def __init__(self, state, rank):
        self.cell = state.control_of(rank) + OFF_ACCUMULATE_LOCK
        self.rank = rank
        self.peers = state.world_ranks     # a holder that died never releases it

    def __enter__(self):
        cell = self.cell
        while atomic.cas32(cell, 0, 1) != 0:
            job.wait_cell(cell, 1, "the accumulate lock of rank %d" % self.rank, self.peers)

    def __exit__(self, *exc):
        atomic.cell_store(self.cell, 0)


class RmaRequest(Request):
    """The request of Rput/Rget/Raccumulate/Rget_accumulate: complete at creation."""

    def __init__(self):
        self._null = False

    def Free(self):
        errors.fail(errors.ERR_REQUEST, "an RMA request cannot be freed; complete it with "
                    "Wait or Test")

    def Cancel(self):
        errors.fail(errors.ERR_REQUEST, "an RMA request cannot be cancelled")


_fast_put, _fast_get = fastpath.put, fastpath.get
_fast_accumulate, _fast_get_accumulate = fastpath.accumulate, fastpath.get_accumulate
_fast_fetch_and_op, _fast_compare_and_swap = fastpath.fetch_and_op, fastpath.compare_and_swap


class Communication:
    """Mixin of Win: the communication calls.

    Each call first tries the fast path (fastpath.py) with the window's table
    ``_fast``; when that declines, the Python path below does the call or raises.
    """

    _fast = None    # the window's fastpath table, bound by the first Python-path call

    def _access(self, call, target_rank, kind=MODE_WIN_ACCUMULATE):
        """(window state, target rank as an int) when ``call`` may reach the target;
        (None, None) for PROC_NULL, which makes any call a no-op whatever its buffers
        (R38) but still needs an open epoch (A38)."""
        state = self._s
        if self._fast is None:
            self._fast = fastpath.bind(state)
        if target_rank == constants.PROC_NULL:
            state.epoch.check_some_epoch(call)
            return None, None
        target_rank = state.check_rank(target_rank, "target rank")
        state.epoch.check_access(target_rank, call, kind)
        if state.epoch.table.barrier_pending:
            winbarrier.await_entry(state, target_rank)
        return state, target_rank

    def Put(self, origin, target_rank, target=None):
        """Put data into a memory window on a remote process (complete when it returns)."""
        if _fast_put(self._fast, origin, target_rank, target):
            return
        state, target_rank = self._access("Put", target_rank, MODE_WIN_PUT)
        if state is None:
            return
        transfer = parse(state, "Put", origin, target_rank, target, False)
        transfer.target.store(state.targets[target_rank], transfer.offset,
                              transfer.packed_origin())
        state.epoch.issued()

    def Get(self, origin, target_rank, target=None):
        """Get data from a memory window on a remote process (complete when it returns)."""
        if _fast_get(self._fast, origin, target_rank, target):
            return
        state, target_rank = self._access("Get", target_rank, MODE_WIN_GET)
        if state is None:
            return
        transfer = parse(state, "Get", origin, target_rank, target, True)
        packed = transfer.target.load(state.targets[target_rank], transfer.offset)
        transfer.origin.unpack(packed, transfer.data, transfer.first)
        state.epoch.issued()

    def Accumulate(self, origin, target_rank, target=None, op=ops.SUM):
        """Accumulate data into the target process with ``op``."""
        if _fast_accumulate(self._fast, origin, target_rank, target, op):
            return
        state, target_rank = self._access("Accumulate", target_rank)
        if state is None:
            return
        transfer = parse(state, "Accumulate", origin, target_rank, target, False)
        basic = _check_accumulate_types("Accumulate", op, ops.ACCUMULATE, transfer.nbytes,
                                        transfer.datatype, transfer.target_type)
        incoming = numpy.frombuffer(transfer.packed_origin(), dtype=basic.dtype)
        memory = state.targets[target_rank]
        with AccumulateLock(state, target_rank):
            existing = numpy.frombuffer(transfer.target.load(memory, transfer.offset),
                                        dtype=basic.dtype)
            op.apply(incoming, existing, basic, out=existing)
            transfer.target.store(memory, transfer.offset, existing)
        state.epoch.issued()

    def Get_accumulate(self, origin, result, target_rank, target=None, op=ops.SUM):
        """Fetch-and-accumulate data into the target process: old data to ``result``."""
        if _fast_get_accumulate(self._fast, origin, result, target_rank, target, op):
            return
        state, target_rank = self._access("Get_accumulate", target_rank)
        if state is None:
            return
        self._get_accumulate(state, origin, result, target_rank, target, op)

    def _get_accumulate(self, state, origin, result, target_rank, target, op,
                        call="Get_accumulate", writable_origin=True):
        # mpi4py asks for a writable origin in Get_accumulate (not in Fetch_and_op)
        moves = op is not ops.NO_OP
        received = buffers.message(result, writable=True, sparse=True)
        result_side = Side(received.datatype, received.count)
        # mpi4py lets NO_OP's origin be [None, ...] (not a bare None), MPICH ignores it
        no_memory = isinstance(origin, (list, tuple)) and len(origin) and origin[0] is None
        transfer = parse(state, call, origin, target_rank, target, writable_origin,
                         origin_moves=moves, ignored_origin=received if no_memory else None)
        involved = [received.datatype, transfer.target_type]
        basic = _check_accumulate_types(call, op, ops.GET_ACCUMULATE, transfer.nbytes,
                                        *(involved + [transfer.datatype] if moves
                                          else involved))
        if result_side.nbytes != transfer.nbytes:
            errors.fail(errors.ERR_TRUNCATE, "%s: the result buffer holds %d bytes but the "
                        "target side describes %d%s" % (
                            call, result_side.nbytes, transfer.nbytes,
                            "" if moves else "; with NO_OP and no origin, give the target as "
                            "(disp, count, datatype)"))
        if moves and _overlap(transfer.data, received.data):
            errors.fail(errors.ERR_BUFFER, "%s: the origin and result buffers overlap; they "
                        "must be disjoint" % call)
        incoming = (numpy.frombuffer(transfer.packed_origin(), dtype=basic.dtype)
                    if moves else None)
        memory = state.targets[target_rank]
        with AccumulateLock(state, target_rank):
            packed = transfer.target.load(memory, transfer.offset)
            result_side.unpack(packed, received.data, received.first)
            if moves:
                existing = numpy.frombuffer(packed, dtype=basic.dtype)
                op.apply(incoming, existing, basic, out=existing)
                transfer.target.store(memory, transfer.offset, existing)
        state.epoch.issued()

    def Fetch_and_op(self, origin, result, target_rank, target_disp=0, op=ops.SUM):
        """Perform one-sided read-modify-write of one element."""
        if _fast_fetch_and_op(self._fast, origin, result, target_rank, target_disp, op):
            return
        state, target_rank = self._access("Fetch_and_op", target_rank)
        if state is None:
            return
        # mpi4py wants a one-element origin even with NO_OP (unlike Get_accumulate)
        incoming = _single(origin, "origin", writable=False)
        outgoing = _single(result, "result", writable=True)
        if incoming.datatype != outgoing.datatype:
            raise ValueError("mismatch in origin and result MPI datatypes")
        if not incoming.datatype.is_predefined:
            errors.fail(errors.ERR_TYPE, "Fetch_and_op takes a predefined datatype, not %r"
                        % incoming.datatype)
        self._get_accumulate(state, [incoming.data, 1, incoming.datatype],
                             [outgoing.data, 1, outgoing.datatype], target_rank,
                             (target_disp, 1, incoming.datatype), op, "Fetch_and_op", False)

    def Compare_and_swap(self, origin, compare, result, target_rank, target_disp=0):
        """Perform one-sided atomic compare-and-swap of one element."""
        if _fast_compare_and_swap(self._fast, origin, compare, result, target_rank,
                                  target_disp):
            return
        state, target_rank = self._access("Compare_and_swap", target_rank)
        if state is None:
            return
        incoming = _single(origin, "origin", writable=False)
        expected = _single(compare, "compare", writable=False)
        outgoing = _single(result, "result", writable=True)
        if incoming.datatype != expected.datatype:
            raise ValueError("mismatch in origin and compare MPI datatypes")
        if incoming.datatype != outgoing.datatype:
            raise ValueError("mismatch in origin and result MPI datatypes")
        basic = incoming.datatype.basic
        if (not incoming.datatype.is_predefined or basic.type_class not in (
                datatypes.INTEGER_CLASS, datatypes.LOGICAL_CLASS, datatypes.BYTE_CLASS)):
            errors.fail(errors.ERR_TYPE, "Compare_and_swap works on one predefined integer, "
                        "logical or byte element, not %r" % incoming.datatype)
        transfer = parse(state, "Compare_and_swap", [incoming.data, 1, incoming.datatype],
                         target_rank, target_disp, False)
        memory = state.targets[target_rank]
        with AccumulateLock(state, target_rank):
            old = transfer.target.load(memory, transfer.offset).tobytes()
            outgoing.data[:] = old
            if old == bytes(expected.data):
                transfer.target.store(memory, transfer.offset, incoming.data)
        state.epoch.issued()

    # --- request-based forms (MPI-3.1 §11.3.5) ---
    def Rput(self, origin, target_rank, target=None):
        """Put data into a memory window on a remote process; return a complete Request."""
        return self._requested("Rput", target_rank, self.Put, origin, target_rank, target)

    def Rget(self, origin, target_rank, target=None):
        """Get data from a memory window on a remote process; return a complete Request."""
        return self._requested("Rget", target_rank, self.Get, origin, target_rank, target)

    def Raccumulate(self, origin, target_rank, target=None, op=ops.SUM):
        """Accumulate data into the target process; return a complete Request."""
        return self._requested("Raccumulate", target_rank, self.Accumulate, origin,
                               target_rank, target, op)

    def Rget_accumulate(self, origin, result, target_rank, target=None, op=ops.SUM):
        """Fetch-and-accumulate data into the target process; return a complete Request."""
        return self._requested("Rget_accumulate", target_rank, self.Get_accumulate, origin,
                               result, target_rank, target, op)

    def _requested(self, call, target_rank, perform, *args):
        state = self._s
        if target_rank != constants.PROC_NULL:
            target_rank = state.check_rank(target_rank, "target rank")
            state.epoch.check_request_access(target_rank, call)
        perform(*args)
        return RmaRequest()


def _overlap(first, second):
    """True when two byte views share memory."""
    if not len(first) or not len(second):
        return False
    start_a, start_b = _address(first), _address(second)
    return start_a < start_b + len(second) and start_b < start_a + len(first)


def _address(view):
    from ..types.memory import get_address
    return get_address(view)


def _single(spec, role, writable):
    message = buffers.message(spec, writable=writable)
    if message.count != 1:
        raise ValueError("%s: expecting a single element, got %d" % (role, message.count))
    _check_committed(message.datatype, role)
    return message
