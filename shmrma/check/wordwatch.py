"""The word watch's Python side (csrc/check/pagewatch.c): hardware watchpoints on
the first words of pending calls' result buffers (origin.py), and whose accesses they
saw: the program's, or the implementation's own (the RMA calls filling or reading
the buffer, the synchronization calls completing them, the checker looking at it),
told apart by where the access was made.
"""
import os

from . import report

try:
    from .. import _pagewatch
except ImportError:         # the C extension is not built: no word watch
    _pagewatch = None

# code whose accesses to a result buffer are the implementation's: the RMA and
# synchronization calls and the checker itself (a message call or a collective that
# reads the buffer is the program passing it on, and counts)
IMPLEMENTATION = tuple(os.path.join(report.PACKAGE_DIR, part) + os.sep
                       for part in ("check", "rma"))


def page_watch(address, nbytes):
    """Take away the pages wholly inside [address, address + nbytes) (a result buffer
    past its first words: the processor watches four words, the pages hold only the
    buffer's bytes): the watch's slot, or None (no whole page, no free slot)."""
    if _pagewatch is None:
        return None
    slot = _pagewatch.watch(address, nbytes)
    if slot < 0:
        return None
    _pagewatch.arm(slot)
    _paged.add(slot)
    return slot


def page_unwatch(slot):
    """Give the pages back: the program's accesses noted, as (address, frames)."""
    _paged.discard(slot)
    noted, _, _ = _pagewatch.take(slot)
    _pagewatch.unwatch(slot)
    return [(address, frames) for address, frames, _, _ in noted
            if by_the_program(frames)]


def paged():
    """The slots of the result buffers' pages taken away now (loads.unwatched gives
    them back around a system call)."""
    return list(_paged)


_paged = set()


def hw_watch(address, nbytes):
    """Watch the first words of [address, address + nbytes): the slots (maybe none)."""
    return _pagewatch.hw_watch(address, nbytes) if _pagewatch is not None else ()


def hw_unwatch(slots):
    """The program's accesses the slots saw, as (address, length, frames innermost
    first); the slots are free again."""
    if not slots:
        return []
    return [(address, length, frames) for address, length, frames
            in _pagewatch.hw_unwatch(slots) if by_the_program(frames)]


def by_the_program(frames):
    """Was the access whose frames these are the program's: its innermost frame
    outside numpy not in the implementation's code?"""
    for path, _ in frames:
        if report.NUMPY_MARK not in path:
            return not path.startswith(IMPLEMENTATION)
    return True
