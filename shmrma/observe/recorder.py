"""One rank's recorder: what each MPI call cost, where the program made it.

``calls`` hands it every outermost MPI call a thread makes (start and end on
CLOCK_MONOTONIC, which every rank shares, so the ranks' timelines line up) with
the call's peer, tag and bytes. For --profile it sums them per call site and
per thread (each thread its own table: nothing shared to lose a count to), and
writes the sums as JSON when the rank ends; for --trace it writes each call as
a record (records.py). The time a call spent waiting comes from the wait
policy, which counts it while a recorder runs (atomic.observe_waits).
"""
import itertools
import json
import os
import threading
import time

from ..core import atomic, settings
from ..types import buffers
from . import records

# (count, total ns, min ns, max ns, bytes, ns waiting) per call site
COUNT, TOTAL, LOW, HIGH, BYTES, WAITED = range(6)
NONE = records.NONE

# the recorder of this process's rank, when one records (the calls' wrappers read it)
active = [None]


def _native():
    """The C extension, which records the calls itself (csrc/observe/observed.c),
    or None: on the fallback backend, Recorder.call records them."""
    if atomic.BACKEND != "c":
        return None
    from .. import _native as native
    return native if hasattr(native, "Observed") else None


NATIVE = _native()
# calls the launcher makes in a rank (the mpi4py error policy it sets) are not the program's
_LAUNCHER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "run",
                         "")
SITE, NAME = 6, 7       # after the sums in a call site's entry: its string numbers


def current():
    return active[0]


def forget_in_child():
    """A process the program forks is no rank: it records nothing (run after a
    fork, os.register_at_fork)."""
    log, active[0] = active[0], None
    if log is not None:
        log.stop()


class Recorder:
    """``waits``: whether the time calls wait is known (the wait policy's, not
    on the mpi backend, whose MPI waits inside its own calls)."""

    def __init__(self, rank, parts, trace, profile, waits=True):
        self.rank, self.parts, self.measures_waits = rank, parts, waits
        self.started = time.monotonic_ns()
        self.strings = {}       # text -> number, in the names file's order
        self.adding = threading.Lock()      # a new string: its line, then its number
        self.threads = []       # each thread's call-site table, by its number
        self.local = threading.local()      # .known: (number, table) of this thread
        self.thread_numbers = itertools.count()
        self.waits = {}         # (peer, where) -> ns waiting on it
        self.targets = {}       # id -> (communicator or window, its object's number)
        self.objects = []       # (name, kind, key, world ranks) of each, by number
        self.native_sums = {}   # the C recorder's table, once it stopped
        self.counters = {}      # what names a counter in every rank -> its number
        self.numbers = itertools.count()    # events' numbers, one taker at a time (GIL)
        self.writer = None
        self.profile = profile
        if trace:
            self.writer = records.Writer(parts, rank, settings.trace_events(),
                                         self.started)
        atomic.waited()             # nothing before this recorder counts
        if NATIVE is not None:
            writer = self.writer
            NATIVE.observe_begin(self, bool(profile), None if writer is None else writer.map,
                                 0 if writer is None else writer.capacity,
                                 records.HEADER.size, records.EVENT.size,
                                 records.DROPPED_AT, records.REQUEST_EVENT,
                                 records.REQUEST_COUNTER, records.LINK.size)
        else:
            atomic.observe_waits(True)

    # --- what the C recorder asks (csrc/observe/observed.c) ---------------------------
    def site_numbers(self, code, line, call):
        """(site, name) string numbers of a new call site; None for the launcher's."""
        if code.co_filename.startswith(_LAUNCHER):
            return None
        return self._site_string(code, line), self.string(call.label)

    def thread_number(self):
        return self._thread()[0]

    def target_number(self, target):
        """A number for the communicator or window ``target``, whose facts the
        names file gets: its name, its kind, the key every member of its group
        gives it, and their world ranks (records.OBJECT)."""
        facts = _object_of(target)
        with self.adding:
            number = len(self.objects)
            if self.writer is not None:
                self.writer.line(records.OBJECT, number, *facts)
            self.objects.append(facts)
        return number

    def message_bytes(self, data):
        return buffers.message_bytes(data)

    def group_named(self, number, group):
        """Event ``number``'s call named ``group``: the names file gets its members'
        world ranks (records.GROUP), for the arrows from a Post to its Start."""
        try:
            ranks = list(group._live().world_ranks)
        except Exception:       # not a live group: the call itself said so
            return
        self.writer.line(records.GROUP, number, ranks)

    def counter_made(self, request, handle):
        """A counter's request was made: it carries its counter's number, which the
        names file ties to what names the counter in every rank (its segment, slot
        and generation)."""
        try:
            name = "%s:%d:%d" % (handle.segment, handle.slot, handle.generation)
        except (AttributeError, TypeError):
            return      # not a live handle: the call itself said so
        with self.adding:
            number = self.counters.get(name)
            if number is None:
                number = self.counters[name] = len(self.counters)
                if self.writer is not None:
                    self.writer.line(records.COUNTER, number, name)
        try:
            setattr(request, records.REQUEST_COUNTER, number)
        except (AttributeError, TypeError):
            pass

    def wait_noted(self, text):
        """This thread's call has waited a slice, for ``text`` (what --timeout
        would print): the timeline's wait slice says it."""
        if self.writer is not None:
            self.writer.line(records.WAIT_NOTE, self._thread()[0], time.monotonic_ns(), text)

    def counter_links(self, links):
        """Links of counters the completion calls found (records.LINK records, as
        bytes), written to the links file (the C recorder hands them a batch at a
        time: a rank killed loses the last batch's arrows)."""
        if links and self.writer is not None:
            self.writer.links(links)

    def completed(self, number, call, given, result):
        """Event ``number`` (``call``, given ``given``, which returned ``result``)
        completed requests: the posted receives among them get its number, for
        the arrows of their messages (the fallback's side of csrc/observe)."""
        try:
            done = _completed(call.completes, given, result)
        except (TypeError, IndexError, KeyError):
            return      # a form this does not follow: no arrow
        for request in done:
            posted = getattr(request, records.REQUEST_EVENT, None)
            if posted is not None:
                self.writer.completed(posted, number)
                delattr(request, records.REQUEST_EVENT)
            counter = getattr(request, records.REQUEST_COUNTER, None)
            flag = {records.SIGNAL: "_zeroed", records.ROUND: "_waited_round"}.get(
                getattr(request, "_kind", None))
            if counter is not None and flag and getattr(request, flag, False):
                setattr(request, flag, False)
                self.counter_links(records.LINK.pack(request._kind, counter, number))

    def string(self, text):
        """The number of ``text`` in the names file (numbered in the file's order,
        so one thread at a time adds one)."""
        number = self.strings.get(text)
        if number is None:
            with self.adding:
                number = self.strings.get(text)
                if number is None:
                    if self.writer is not None:
                        self.writer.line(records.STRING, text)
                    number = self.strings[text] = len(self.strings)
        return number

    def _thread(self):
        """(number, call-site table) of this thread, numbered on its first call (an
        ident is not enough: a thread that started after another ended may have its)."""
        known = getattr(self.local, "known", None)
        if known is None:
            known = self.local.known = (next(self.thread_numbers), {})
            self.threads.append(known[1])
            if self.writer is not None:
                self.writer.line(records.THREAD, known[0], threading.current_thread().name)
        return known

    def _site(self, frame, call):
        """A new call site's entry: its sums, then its site's and name's string
        numbers; False for the launcher's own calls, which are not recorded."""
        if frame.f_code.co_filename.startswith(_LAUNCHER):
            return False
        site = self._site_string(frame.f_code, frame.f_lineno)
        return [0, 0, 1 << 62, 0, 0, 0, site, self.string(call.label)]

    def _site_string(self, code, line):
        return self.string("%s:%d %s" % (_shown_path(code.co_filename), line, code.co_name))

    def call(self, call, frame, start, end, args, kwargs, result):
        """Record one call (calls.Call) this thread made from ``frame``; ``result``
        is what it returned."""
        waited = atomic.waited()
        index, table = self._thread()
        key = (frame.f_code.co_filename, frame.f_lineno, call)
        entry = table.get(key)
        if entry is None:
            entry = table[key] = self._site(frame, call)
        if entry is False:
            return
        spent = end - start
        nbytes = call.nbytes(args, kwargs)
        if self.profile:
            entry[COUNT] += 1
            entry[TOTAL] += spent
            if spent < entry[LOW]:
                entry[LOW] = spent
            if spent > entry[HIGH]:
                entry[HIGH] = spent
            if nbytes > 0:
                entry[BYTES] += nbytes
            if waited:
                self._waited(entry, waited[1], call, args, kwargs)
        if self.writer is not None:
            began, total = waited or (0, 0)
            peer, tag = call.peer_and_tag(args, kwargs)
            to, to_tag = call.destination(args, kwargs)
            number = next(self.numbers)
            self.writer.event(number, (
                start, spent, began, total, nbytes, entry[NAME], entry[SITE], peer, tag,
                index, self.target(call, args), to, to_tag, NONE))
            if call.posts and result is not None:
                _number(result, number)
            elif call.completes:
                self.completed(number, call, call.completing(args, kwargs), result)
            elif call.group is not None:
                self.group_named(number, call.group_of(args, kwargs))
            elif call.makes_counter and result is not None:
                self.counter_made(result, call.handle_of(args, kwargs))

    def _waited(self, entry, spent, call, args, kwargs):
        entry[WAITED] += spent
        peer = call.peer_and_tag(args, kwargs)[0]
        whom = (peer, self.target(call, args)) if peer >= 0 else (NONE, entry[NAME])
        self.waits[whom] = self.waits.get(whom, 0) + spent

    def target(self, call, args):
        """The number of the communicator or window the call was made on (looked
        up once: Set_name asks again)."""
        target = call.target(args)
        if target is None:
            return NONE
        known = self.targets.get(id(target))
        if known is None or call.renames:
            known = self.targets[id(target)] = (target, self.target_number(target))
        return known[1]

    def end(self):
        """The rank ends: its events' file gets its end time, its sums are written."""
        ended = time.monotonic_ns()
        self.stop()
        if self.writer is not None:
            self.writer.end(ended)
        if self.profile:
            self._write_profile(ended)

    def stop(self):
        """Record nothing more; the C recorder's sums join the Python tables."""
        if NATIVE is None:
            atomic.observe_waits(False)
            return
        sites, waits, _, links = NATIVE.observe_end()
        self.counter_links(links)
        for site, name, *sums in sites:     # a line's several calls are one site
            old = self.native_sums.get((site, name))
            self.native_sums[(site, name)] = (sums if old is None else
                                              _merged(old, sums)) + [site, name]
        for peer, where, ns in waits:
            whom = (peer, where) if peer >= 0 else (NONE, where)
            self.waits[whom] = self.waits.get(whom, 0) + ns

    def _write_profile(self, ended):
        names = {number: text for text, number in self.strings.items()}
        sums = {}
        for table in self.threads + [self.native_sums]:
            for entry in table.values():
                if not entry or not entry[COUNT]:
                    continue
                key = (names[entry[SITE]], names[entry[NAME]])
                old = sums.get(key)
                sums[key] = entry[:SITE] if old is None else _merged(old, entry)
        profile = {
            "rank": self.rank, "wall_ns": ended - self.started,
            "sites": [[site, name] + entry for (site, name), entry in sums.items()],
            # on whom: [rank, in communicator or window] or [-1, in call]; None:
            # not measured
            "waits": [[peer, self.objects[where][0] if peer >= 0 else names[where], ns]
                      for (peer, where), ns in self.waits.items()]
            if self.measures_waits else None,
        }
        path = os.path.join(self.parts, "%d.profile" % os.getpid())
        with open(path + ".tmp", "w") as f:
            json.dump(profile, f)
        os.replace(path + ".tmp", path)


def _number(request, number):
    """Mark a posted receive's request with its event's number."""
    try:
        setattr(request, records.REQUEST_EVENT, number)
    except (AttributeError, TypeError):
        pass


def _completed(kind, given, result):
    """The requests a completion call of ``kind`` completed."""
    if kind == "wait":
        return [given]
    if kind == "test":
        return [given] if (result[0] if isinstance(result, tuple) else result) else []
    if kind == "waitall":
        return list(given)
    if kind == "testall":
        return list(given) if (result[0] if isinstance(result, tuple) else result) else []
    if kind == "waitany":
        index = result[0] if isinstance(result, tuple) else result
        return [given[index]] if isinstance(index, int) and index >= 0 else []
    if kind == "waitsome":
        return [given[index] for index in result or ()]
    return []


def _merged(one, other):
    return [one[COUNT] + other[COUNT], one[TOTAL] + other[TOTAL],
            min(one[LOW], other[LOW]), max(one[HIGH], other[HIGH]),
            one[BYTES] + other[BYTES], one[WAITED] + other[WAITED]]


def _shown_path(filename):
    """A call site's file as the user knows it: relative to the working directory
    when under it."""
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


def _object_of(target):
    """(name, kind, key, world ranks) of a communicator or window: the key and the
    ranks are what the timeline links the members' calls by (the context id of
    the communicator, or of the window's own); kind "other" has neither."""
    from ..comm.comm import Comm
    from ..comm.intercomm import Intercomm
    from ..rma.window import Win
    name = _name_of(target)
    try:
        if isinstance(target, Win):
            state = target._s
            return name, "win", state.comm._s.context, list(state.world_ranks)
        if isinstance(target, Comm) and not isinstance(target, Intercomm):
            state = target._s
            return name, "comm", state.context, list(state.ranks)
    except Exception:       # freed, or null: the call itself says so
        pass
    return name, "other", NONE, []


def _name_of(target):
    """The communicator's or window's name (Get_name), or its class's name."""
    if target is None:
        return ""
    try:
        return target.Get_name() or type(target).__name__
    except Exception:
        return type(target).__name__
