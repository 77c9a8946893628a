"""A rank's part of a trace: the files its recorder writes and the launcher reads.

Each rank writes three files in the job's parts directory: ``<pid>.events``,
``<pid>.names`` and ``<pid>.links``. The events file is mapped shared, so what
a rank wrote is in the kernel's page cache the moment it wrote it: a rank that
crashes or is killed leaves every event it recorded. It is a header, then
fixed-size records in the order written; an all-zero record ends them (a
call's start time is never 0). The names file holds what records refer to by
number (call names, call sites, communicators and windows, groups, counters),
one JSON line each, appended with one write(2) each so that they too survive
the rank. The links file holds the counters' links (LINK), written a batch at a
time.
"""
import bisect
import json
import mmap
import os
import struct

from ..rma.counters import SYNC_OBJECT, SYNC_OPS

MAGIC = b"SHMRMA1\0"
# magic, the rank's slot in the job (its world rank; spawned ranks after the
# first world's), started, ended (ns on CLOCK_MONOTONIC, every rank's clock),
# events dropped past the limit
HEADER = struct.Struct("<8sqqqq")
ENDED_AT, DROPPED_AT = 24, 32       # the fields written after the start (the C recorder
FIELD = struct.Struct("<q")         # writes DROPPED_AT itself)
# start, duration, first wait's start, time waiting (ns), bytes (-1: not said),
# call name, call site, peer (-1: none), tag (-1: none), thread, object (names'
# numbers), for a call that receives and sends (Sendrecv) where it sends and
# with what tag (-1: none; its peer and tag are then what it receives), and for
# a posted receive the number of the event that completed its request (-1: none
# yet), written when that call returns
EVENT = struct.Struct("<qqqqqiiiiiiiiq")
COMPLETED_BY_AT = EVENT.size - 8
NONE = -1

# kinds of line in the names file: a string (numbered in order), a thread's name,
# a communicator or window (recorder.target_number), the world ranks of the
# group an event's call named (recorder.group_named: a Post's, a Start's), a
# counter of the proposal (its number and what names it in every rank), what a
# thread's wait was waiting for once it outlasted a slice (the thread's number,
# the time, the text --timeout prints: recorder.wait_noted)
STRING, THREAD, OBJECT, GROUP, COUNTER, WAIT_NOTE = "s", "t", "o", "g", "k", "w"
# The links file, ``<pid>.links``: the counters' links, a LINK each: the request's
# kind (SIGNAL, a Sync_ops signal that took the counter to 0; ROUND, a round of a
# Sync_object request that waited for one), the counter's number, the event
LINK = struct.Struct("<qqq")
SIGNAL, ROUND = SYNC_OPS, SYNC_OBJECT
# the attributes that give a posted receive's request its event's number, and a
# counter's request its counter's
REQUEST_EVENT, REQUEST_COUNTER = "_shmrma_event", "_shmrma_counter"


class Object:
    """A communicator or window as a rank's part names it."""

    def __init__(self, name, kind, key, ranks):
        self.name, self.kind, self.key, self.ranks = name, kind, key, ranks


class Writer:
    """Where one rank writes its events: ``capacity`` records, then only counts."""

    def __init__(self, directory, rank, capacity, started):
        base = os.path.join(directory, str(os.getpid()))
        self.capacity = capacity
        fd = os.open(base + ".events", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, HEADER.size + capacity * EVENT.size)   # sparse
            self.map = mmap.mmap(fd, HEADER.size + capacity * EVENT.size)
        finally:
            os.close(fd)
        self.names = os.open(base + ".names", os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                             | os.O_APPEND, 0o600)
        self.links_file = os.open(base + ".links", os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                                  | os.O_APPEND, 0o600)
        HEADER.pack_into(self.map, 0, MAGIC, rank, started, 0, 0)

    def line(self, *fields):
        os.write(self.names, (json.dumps(fields) + "\n").encode())

    def links(self, data):
        """Append LINK records (bytes)."""
        os.write(self.links_file, data)

    def event(self, index, fields):
        """Store event number ``index`` (taken from one counter by every thread)."""
        if index < self.capacity:
            EVENT.pack_into(self.map, HEADER.size + index * EVENT.size, *fields)
        else:
            FIELD.pack_into(self.map, DROPPED_AT, index + 1 - self.capacity)

    def completed(self, posted, by):
        """Posted receive ``posted``'s request was completed by event ``by``."""
        if 0 <= posted < self.capacity:
            offset = HEADER.size + posted * EVENT.size + COMPLETED_BY_AT
            if FIELD.unpack_from(self.map, offset)[0] < 0:
                FIELD.pack_into(self.map, offset, by)

    def end(self, ended):
        FIELD.pack_into(self.map, ENDED_AT, ended)


class Events:
    """A part's event records, unpacked as they are read (a long run has
    millions): ``len``, indexing and iteration give EVENT's fields."""

    def __init__(self, data):
        self.data = memoryview(data)[HEADER.size:]
        self.count = 0
        for fields in EVENT.iter_unpack(self.data[:len(self.data) // EVENT.size
                                                  * EVENT.size]):
            if fields[0] == 0:      # unwritten: the records end
                break
            self.count += 1

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if not 0 <= index < self.count:
            raise IndexError(index)
        return EVENT.unpack_from(self.data, index * EVENT.size)

    def __iter__(self):
        return EVENT.iter_unpack(self.data[:self.count * EVENT.size])


class Part:
    """A rank's part as read back: its header's fields, its events, its strings."""

    def __init__(self, path):
        with open(path, "rb") as f:     # mapped: only the pages read are loaded
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        magic, self.rank, self.started, self.ended, self.dropped = HEADER.unpack_from(data, 0)
        if magic != MAGIC:
            raise ValueError("%s is not a trace part" % path)
        self.events = Events(data)
        self.strings, self.threads, self.objects, self.groups = [], {}, {}, {}
        self.counters = {}
        self.wait_notes = {}    # thread -> [(ns, text)], in time order
        self.links = self._read_links(path[:-len(".events")] + ".links")
        # a posted receive's event -> the event that completed its request
        self.completed_by = {index: fields[-1] for index, fields in enumerate(self.events)
                             if fields[-1] >= 0}
        self._read_names(path[:-len(".events")] + ".names")

    def _read_names(self, path):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                kind, *fields = json.loads(line)
            except ValueError:      # the last line of a rank killed while writing it
                continue
            if kind == STRING:
                self.strings.append(fields[0])
            elif kind == THREAD:
                self.threads[fields[0]] = fields[1]
            elif kind == OBJECT:
                self.objects[fields[0]] = Object(*fields[1:])
            elif kind == GROUP:
                self.groups[fields[0]] = fields[1]
            elif kind == COUNTER:
                self.counters[fields[0]] = fields[1]
            elif kind == WAIT_NOTE:
                self.wait_notes.setdefault(fields[0], []).append((fields[1], fields[2]))

    def wait_note(self, thread, start, end):
        """What the wait of ``thread``'s call from ``start`` to ``end`` (ns) was
        waiting for, as --timeout says it (its first note), or None."""
        notes = self.wait_notes.get(thread)
        if not notes:
            return None
        at = bisect.bisect_left(notes, (start, ""))
        return notes[at][1] if at < len(notes) and notes[at][0] <= end else None


    @staticmethod
    def _read_links(path):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        whole = len(data) - len(data) % LINK.size   # a rank killed while writing one
        return [LINK.unpack_from(data, offset) for offset in range(0, whole, LINK.size)]

    def object(self, number):
        """Object ``number``, or None (none, or one a killed rank did not write)."""
        return self.objects.get(number)

    def string(self, number):
        """String ``number``: "" for none, "?" for one a killed rank did not write."""
        if number == NONE:
            return ""
        return self.strings[number] if 0 <= number < len(self.strings) else "?"


def parts(directory):
    """Every rank's part in ``directory``, by rank."""
    found = [Part(os.path.join(directory, name)) for name in sorted(os.listdir(directory))
             if name.endswith(".events")]
    return sorted(found, key=lambda part: part.rank)
