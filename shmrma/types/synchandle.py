"""``MPI.Sync`` handles of synchronization counters and their wire form.

A handle names one counter: the window (its control segment's name), the owning
rank, the counter segment and slot, and the slot's generation, which tells
successive allocations of one slot apart (A25). Handles travel by
pickling (``comm.send``) or in buffer messages typed ``MPI.HANDLE_SYNC``
(``comm.Send([syncs, MPI.HANDLE_SYNC], dest)``), where each takes
``HANDLE_BYTES``: a magic word, three integers and the two names. The receiver
checks the magic word, so a message of other data received as handles is
ERR_TYPE rather than garbage; whether the counter still exists is checked where
the handle is used (counters.Counters.address).
"""
import struct

from ..core import errors
from .datatype import HANDLE_BYTES

_MAGIC = b"SYNC"
_HEAD = struct.Struct("<4siii")      # magic, owner, slot, generation
_NAME_BYTES = (HANDLE_BYTES - _HEAD.size) // 2
_WIRE = struct.Struct("<4siii%ds%ds" % (_NAME_BYTES, _NAME_BYTES))
assert _WIRE.size == HANDLE_BYTES


class Sync:
    """``MPI.Sync``: a handle of one counter of a window; ``Sync()`` is SYNC_NULL."""

    def __init__(self, window=None, owner=None, segment=None, slot=None, generation=None):
        self.window, self.owner, self.segment, self.slot = window, owner, segment, slot
        self.generation = generation

    def _key(self):
        return (self.window, self.owner, self.segment, self.slot, self.generation)

    def __bool__(self):
        return self.window is not None

    def __eq__(self, other):
        if not isinstance(other, Sync):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if not self:
            return "MPI.SYNC_NULL"
        return "<MPI.Sync counter %d of rank %d's window %s>" % (self.slot, self.owner,
                                                                 self.window)

    def __reduce__(self):
        if not self:
            return "SYNC_NULL"
        return (Sync, self._key())


SYNC_NULL = Sync()


def _name_field(name):
    field = name.encode()
    if len(field) > _NAME_BYTES:
        errors.fail(errors.ERR_OTHER, "a Sync handle names segment %r, longer than the %d "
                    "bytes HANDLE_SYNC carries; use a shorter SHMRMA_JOB id" % (name, _NAME_BYTES))
    return field


def pack(handles):
    """The wire form of a sequence of Sync handles (SYNC_NULL is all zero but the magic)."""
    wire = bytearray(HANDLE_BYTES * len(handles))
    for index, handle in enumerate(handles):
        if not isinstance(handle, Sync):
            raise TypeError("a HANDLE_SYNC message holds MPI.Sync handles (MPI.SYNC_NULL "
                            "for none), not %s at item %d" % (type(handle).__name__, index))
        if handle:
            _WIRE.pack_into(wire, index * HANDLE_BYTES, _MAGIC, handle.owner, handle.slot,
                            handle.generation, _name_field(handle.window),
                            _name_field(handle.segment))
        else:
            _HEAD.pack_into(wire, index * HANDLE_BYTES, _MAGIC, -1, -1, 0)
    return wire


def unpack(wire):
    """The Sync handles of a wire form; ERR_TYPE if it was not sent as HANDLE_SYNC."""
    if len(wire) % HANDLE_BYTES:
        errors.fail(errors.ERR_TYPE, "%d bytes received as HANDLE_SYNC are not whole handles "
                    "of %d bytes; send Sync handles with [syncs, MPI.HANDLE_SYNC]"
                    % (len(wire), HANDLE_BYTES))
    handles = []
    for offset in range(0, len(wire), HANDLE_BYTES):
        magic, owner, slot, generation, window, segment = _WIRE.unpack_from(wire, offset)
        if magic != _MAGIC:
            errors.fail(errors.ERR_TYPE, "the data received as HANDLE_SYNC was not sent as "
                        "HANDLE_SYNC; send Sync handles with [syncs, MPI.HANDLE_SYNC]")
        handles.append(Sync(window.rstrip(b"\0").decode(), owner, segment.rstrip(b"\0").decode(),
                            slot, generation) if owner >= 0 else SYNC_NULL)
    return handles
