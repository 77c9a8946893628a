"""Dynamic windows (MPI-3.1 §11.2.4): Attach and Detach, and reaching attached memory.

Each rank publishes its attached regions in a table in the window's control
segment (address, size, and the name of the Alloc_mem segment holding it, if
any), guarded by a sequence counter so a reader never sees a half-written
entry. An origin looks the target address up in that table on every access:
memory nobody attached is ERR_RMA_RANGE (R18), and a region in a segment is
mapped here once and cached, while private memory is reached across processes.
"""
import ctypes
import struct

from ..core import atomic, errors, job, segments
from ..types import memory
from .winmemory import MappedMemory, ProcessMemory

MAX_REGIONS = 64
TABLE_HEADER = 64
ENTRY = struct.Struct("<QQ112s")  # address, size (0: free slot), segment name
TABLE_BYTES = TABLE_HEADER + MAX_REGIONS * ENTRY.size


def table_bytes(nranks):
    return nranks * TABLE_BYTES


class RegionTable:
    """One rank's table of attached regions, in shared memory."""

    def __init__(self, mem, offset, base_address):
        self.mem = mem
        self.offset = offset
        self.version = base_address + offset

    def entries(self):
        """[(address, size, name)] of the attached regions, read consistently."""
        while True:
            before = atomic.load32(self.version)
            if before & 1:
                continue
            found = []
            for slot in range(MAX_REGIONS):
                address, size, name = ENTRY.unpack_from(
                    self.mem, self.offset + TABLE_HEADER + slot * ENTRY.size)
                if size:
                    found.append((address, size, name.rstrip(b"\0").decode()))
            if atomic.load32(self.version) == before:
                return found

    def _write(self, slot, address, size, name):
        atomic.fetch_add32(self.version, 1)  # odd: readers retry
        ENTRY.pack_into(self.mem, self.offset + TABLE_HEADER + slot * ENTRY.size,
                        address, size, name.encode())
        atomic.fetch_add32(self.version, 1)

    def attach(self, address, size, name):
        slots = {}
        for slot in range(MAX_REGIONS):
            entry_address, entry_size, _ = ENTRY.unpack_from(
                self.mem, self.offset + TABLE_HEADER + slot * ENTRY.size)
            slots[slot] = (entry_address, entry_size)
        for entry_address, entry_size in slots.values():
            if entry_size and address < entry_address + entry_size and \
                    entry_address < address + size:
                errors.fail(errors.ERR_RMA_ATTACH, "Attach: [%#x, %#x) overlaps the region "
                            "[%#x, %#x) already attached to this window"
                            % (address, address + size, entry_address,
                               entry_address + entry_size))
        free = next((slot for slot, (_, entry_size) in slots.items() if not entry_size), None)
        if free is None:
            errors.fail(errors.ERR_RMA_ATTACH, "Attach: this rank already has %d regions "
                        "attached to the window, the most it can hold; Detach some first"
                        % MAX_REGIONS)
        self._write(free, address, size, name)

    def detach(self, address):
        for slot in range(MAX_REGIONS):
            entry_address, entry_size, _ = ENTRY.unpack_from(
                self.mem, self.offset + TABLE_HEADER + slot * ENTRY.size)
            if entry_size and entry_address == address:
                self._write(slot, 0, 0, "")
                return
        errors.fail(errors.ERR_BASE, "Detach: no region attached to this window starts at "
                    "%#x" % address)


class DynamicMemory:
    """A rank's attached memory, resolved per access through its region table."""

    view = None

    def __init__(self, state, rank, table):
        self.state = state
        self.rank = rank
        self.table = table

    def _region(self, low, high):
        """(memory object of the region, its address) holding [low, high)."""
        for address, size, name in self.table.entries():
            if address <= low and high <= address + size:
                return self.state.region_memory(self.rank, address, size, name), address
        errors.fail(errors.ERR_RMA_RANGE, "bytes [%#x, %#x) of rank %d are not in any "
                    "region it attached to the window" % (low, high, self.rank))

    def write(self, offset, data):
        region, start = self._region(offset, offset + len(data))
        region.write(offset - start, data)

    def read_into(self, offset, target):
        region, start = self._region(offset, offset + len(target))
        region.read_into(offset - start, target)

    def gather(self, offset, index):
        region, start = self._region(offset + int(index.min()), offset + int(index.max()) + 1)
        return region.gather(offset - start, index)

    def scatter(self, offset, index, values):
        region, start = self._region(offset + int(index.min()), offset + int(index.max()) + 1)
        region.scatter(offset - start, index, values)

    def release(self):
        pass


class RegionCache:
    """Memory objects for attached regions, made once per region."""

    def __init__(self):
        self.segments = {}
        self.regions = {}

    def memory_for(self, rank, own_rank, address, size, name):
        key = (rank, address, size, name)
        region = self.regions.get(key)
        if region is None:
            region = self.regions[key] = self._make(rank, own_rank, address, size, name)
        return region

    def _make(self, rank, own_rank, address, size, name):
        if rank == own_rank:
            raw = (ctypes.c_char * size).from_address(address)
            return MappedMemory(memoryview(raw).cast("B"), address)
        if name:
            segment_name, creator_base, segment_size = _parse_tag(name)
            segment = self.segments.get(segment_name)
            if segment is None:
                segment = self.segments[segment_name] = segments.Segment.attach(
                    segment_name, segment_size)
            offset = address - creator_base
            return MappedMemory(segment.buffer[offset:offset + size], segment.address + offset)
        return ProcessMemory(job.current().pid(rank), address, rank)

    def release(self):
        for region in self.regions.values():
            region.release()
        self.regions.clear()
        for segment in self.segments.values():
            try:
                segment.close()
            except BufferError:
                pass
        self.segments.clear()


def describe(memory_object):
    """(address, size, segment name and the creator's segment base) of memory to attach."""
    view = memoryview(memory_object)
    if view.readonly or not view.c_contiguous:
        errors.fail(errors.ERR_RMA_ATTACH, "Attach needs writable, C-contiguous memory")
    address = memory.get_address(view)
    segment = memory.segment_of(address, view.nbytes)
    name = "" if segment is None else "%s@%x:%x" % (segment.name, segment.address,
                                                     segment.size)
    return address, view.nbytes, name


def _parse_tag(tag):
    """(segment name, its address at the attaching rank, its size) from describe()."""
    name, _, place = tag.partition("@")
    base, _, size = place.partition(":")
    return name, int(base, 16), int(size, 16)
