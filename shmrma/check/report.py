"""What the race checker prints: one block per race, once per pair of code sites."""
import os
import sys

from . import accesses
from .accesses import (BARRIER, COUNTER, EXPOSURE, FENCE, LOCK_ALL, LOCK_EXCLUSIVE,
                       LOCK_SHARED, NO_EPOCH, PSCW)

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMPY_MARK = os.sep + "numpy" + os.sep      # a frame inside numpy is not the program's

EPOCH_TEXT = {NO_EPOCH: "outside any epoch", FENCE: "in a fence epoch",
              PSCW: "in a Start/Complete access epoch",
              LOCK_EXCLUSIVE: "under an exclusive lock", LOCK_SHARED: "under a shared lock",
              LOCK_ALL: "under Lock_all", COUNTER: "in a counter epoch",
              BARRIER: "between window barriers", EXPOSURE: "in a Post/Wait exposure epoch"}


def call_site():
    """'file:line' of the user's code that made the current call."""
    frame = user_frame(1)
    if frame is None:
        return "<unknown>"
    return shown_site(frame.f_code.co_filename, frame.f_lineno)


def user_frame(skip=0):
    """The innermost frame of the user's code, looking from ``skip`` frames above the
    caller's."""
    try:
        frame = sys._getframe(skip + 2)
    except ValueError:      # a shallower stack than ``skip`` supposes: from the caller
        frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        frame = frame.f_back
    return frame


def shown_site(path, line):
    """'file:line' as reports show it."""
    shown = _shown_paths.get(path)
    if shown is None:
        relative = os.path.relpath(path) if not path.startswith("<") else path
        shown = _shown_paths[path] = path if relative.startswith("..") else relative
    return "%s:%d" % (shown, line)


_shown_paths = {}       # a file's path as reports show it (relative below the cwd)


_slot_names = []        # [the checking session's Session.who and .owner] (clock.py)


def name_slots(who, owner):
    """How reports name a clock's slot: its rank, and its thread beside the main one
    (clock.Session.who), and whose rank it is (Session.owner)."""
    _slot_names[:] = [who, owner]


def who(slot, epoch=None):
    """"rank 1", or "rank 1's thread Worker" for a slot of one of its other threads
    (the one that had it at ``epoch``, or now)."""
    return _slot_names[0](slot, epoch) if _slot_names else "rank %d" % slot


def _owner(slot):
    return _slot_names[1](slot) if _slot_names else slot


def _describe(kind, slot, site, epoch, target, at=None):
    """One access of a report: ``kind`` by the thread of ``slot`` (at its epoch ``at``,
    or now) at ``site`` to ``target``'s memory."""
    epoch = EPOCH_TEXT.get(epoch, "in an epoch")
    whose = "its own" if _owner(slot) == target else "rank %d's" % target
    by = who(slot, at)
    if kind == accesses.LOAD:
        return "Load by %s at %s, of %s window memory, %s" % (by, site, whose, epoch)
    if kind == accesses.LOCAL_STORE:
        return "Store by %s at %s, to %s window memory, %s" % (by, site, whose, epoch)
    if kind == accesses.STORE:
        return ("Store by %s at %s, to its own window memory: a store found at that "
                "call, made after the rank's synchronization call before it, %s"
                % (by, site, epoch))
    return "%s by %s at %s, %s" % (accesses.CALL_NAMES[kind], by, site, epoch)


def _remedy(first_call, first, pending, second, epochs, at=None):
    """How to order the access of slot ``first`` (at its epoch ``at``) before that of
    slot ``second``."""
    if _owner(first) == _owner(second) and first != second:
        return ("two threads of rank %d, which nothing orders: %sorder %s's %s before the "
                "other access with a threading Lock, Event, Condition, Barrier, Queue or "
                "join" % (_owner(first), "complete the %s at the target (Flush, Unlock, "
                          "Complete or Fence), then " % first_call if pending else "",
                          who(first, at), first_call))
    if epochs == (FENCE, FENCE) and first != second:
        return "a Fence between the two calls orders them (every rank of the window calls it)"
    if first == second:
        return ("%s must complete its %s at the target (Flush, Unlock, Complete or "
                "Fence) before the second call" % (who(first), first_call))
    end = ("%s's %s is not complete at the target yet: complete it (Flush, Unlock, "
           "Complete or Fence), then " % (who(first), first_call) if pending else
           "%s's %s is complete, but nothing tells %s: "
           % (who(first, at), first_call, who(second)))
    return end + ("order it before %s's access with a Fence, Complete/Wait and "
                  "Post/Start, an exclusive lock hand-over, a Barrier, a message or a "
                  "synchronization counter" % who(second))


def _why_accumulates(row, access, same_origin):
    """Why two accumulate-class calls race, when they are that (else "")."""
    if int(row["kind"]) < accesses.ACCUMULATE or access.kind < accesses.ACCUMULATE:
        return ""
    if int(row["basic"]) != access.basic:
        if same_origin:
            return ("  one origin's accumulates are ordered per datatype only (MPI-3.1 "
                    "11.7.2), and these are of two basic types\n")
        return ("  accumulates of two basic types are not atomic together (MPI-3.1 "
                "11.7.1)\n")
    size = (access.basic >> accesses.SIZE_SHIFT) & accesses.MAX_SIZE
    if size > 1 and (int(access.lows[0]) - int(row["low"])) % size:
        return ("  accumulates are atomic element by element (MPI-3.1 11.7.1): these "
                "%d-byte elements overlap without coinciding (they start at bytes %d and "
                "%d); use one displacement grid\n" % (size, int(row["low"]),
                                                      int(access.lows[0])))
    return ""


def _bytes_of(low, high, target, dynamic):
    """Where the racing bytes are: offsets into the target's memory, or (``dynamic``:
    its displacements are addresses) the addresses in the regions it attached."""
    if dynamic:
        return "addresses %#x..%#x of rank %d's attached memory" % (low, high - 1, target)
    return "bytes %d..%d of rank %d's memory" % (low, high - 1, target)


def race(window, target, row, row_site, me, access, site, dynamic=False):
    """The text of one race between a recorded access ``row`` and the new ``access``."""
    first = accesses.CALL_NAMES[int(row["kind"])]
    low = max(int(row["low"]), int(access.lows[0]))
    high = min(int(row["high"]), int(access.highs[-1]))
    origin, stamp = int(row["origin"]), int(row["stamp"])
    pending = stamp == accesses.PENDING
    at = None if pending else stamp     # the recorded access's thread: then, or now
    epochs = (int(row["epoch"]), access.epoch)
    return ("shmrma-check: data race on %s, %s\n"
            "  %s\n  %s\n%s  %s\n" % (
                window, _bytes_of(low, high, target, dynamic),
                _describe(int(row["kind"]), origin, row_site, epochs[0], target, at),
                _describe(access.kind, me, site, epochs[1], target),
                _why_accumulates(row, access, origin == me),
                _remedy(first, origin, pending, me, epochs, at)))


def buffer_race(window, held, first, last, me, made, here):
    """The text of a call's origin or result buffer changed before the call completed
    at the origin (origin.py): ``made`` is the call's site, ``here`` the completion's."""
    call = accesses.CALL_NAMES[held.kind]
    role, rule, does = (("origin", "leave the buffer unchanged", "reads")
                        if held.role == accesses.READ else
                        ("result", "do not write (nor read) the buffer", "fills"))
    return ("shmrma-check: data race on the %s buffer of %s (to rank %d on %s), bytes "
            "%d..%d of the buffer\n"
            "  %s by %s at %s, which %s that buffer until it completes at the origin\n"
            "  completed by %s at %s, which found those bytes changed since the %s "
            "(by a store, or by another call filling that buffer)\n"
            "  %s until the %s completes at the origin: Flush_local, Flush, Unlock, "
            "Complete, Fence, the window barrier or its request's Wait\n" % (
                role, call, held.target, window, first, last, call, who(me), made, does,
                who(me), here, call, rule, call))


def result_access_race(window, held, first, last, me, made, there, here):
    """The text of the program's load or store of a call's result buffer before the
    call completed at the origin, seen by the word watch (origin.py) at ``there``."""
    call = accesses.CALL_NAMES[held.kind]
    return ("shmrma-check: data race on the result buffer of %s (to rank %d on %s), bytes "
            "%d..%d of the buffer\n"
            "  %s by %s at %s, which fills that buffer until it completes at the origin\n"
            "  Access by %s at %s, a load or store of that buffer before the %s "
            "completed (at %s)\n"
            "  do not read nor write the buffer, nor give it to another call, until the %s "
            "completes at the origin: %s\n" % (
                call, held.target, window, first, last, call, who(me), made, who(me), there,
                call, here, call, COMPLETIONS))


def buffer_clash(window, held, fresh, first, last, me, made, there):
    """The text of a call given a buffer that an earlier call of the rank still fills
    (its result buffer) or reads (its origin buffer, which the new call fills)."""
    call, other = accesses.CALL_NAMES[held.kind], accesses.CALL_NAMES[fresh.kind]
    role, does = (("result", "fills") if held.role == accesses.WRITTEN else
                  ("origin", "reads"))
    return ("shmrma-check: data race on the %s buffer of %s (to rank %d on %s), bytes "
            "%d..%d of the buffer\n"
            "  %s by %s at %s, which %s that buffer until it completes at the origin\n"
            "  %s by %s at %s, which %s that buffer too before the %s completed\n"
            "  give the buffer to another call only after the %s completes at the origin: "
            "%s\n" % (
                role, call, held.target, window, first, last, call, who(me), made, does,
                other, who(me), there, "fills" if fresh.role == accesses.WRITTEN else "reads", call, call,
                COMPLETIONS))


COMPLETIONS = ("Flush_local, Flush, Unlock, Complete, Fence, the window barrier or its "
               "request's Wait")


def program_frames(frames):
    """The frames of the program's own code (not shmrma's nor numpy's) among
    [(file, line), ...], in their order."""
    return [(path, line) for path, line in frames
            if not path.startswith(PACKAGE_DIR) and NUMPY_MARK not in path]


def user_site(frames):
    """'file:line' of the innermost frame of the program's own code, from
    [(file, line), ...] innermost first."""
    own = program_frames(frames)
    return shown_site(*own[0]) if own else "<unknown>"


def unseen_store(window, target, run, me, access, site, dynamic=False):
    """The text of an RMA that met a store its target made since it last synchronized
    (stores.py): the store's line is not known yet."""
    low, high = run
    call = accesses.CALL_NAMES[access.kind]
    return ("shmrma-check: data race on %s, %s\n"
            "  Store by rank %d to its own window memory, made since its last "
            "synchronization call (its line is not known: it has made no MPI call since)\n"
            "  %s\n"
            "  rank %d stored into its window memory while %s's %s could reach it: "
            "order the store before the %s (a Fence, Post/Start, a Barrier, a message, an "
            "exclusive lock on its own window, ...)\n" % (
                window, _bytes_of(low, high, target, dynamic), target,
                _describe(access.kind, me, site, access.epoch, target), target, who(me),
                call, call))
