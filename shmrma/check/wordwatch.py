"""The word watch's Python side (csrc/check/pagewatch.c): hardware watchpoints on
the first words of pending calls' result buffers (origin.py), and who is accessing
them: the program, the checker's RMA call of some kind (as_call), or the checker
itself looking at memory (CHECKER), whose accesses are not noted.
"""
try:
    from .. import _pagewatch
except ImportError:         # the C extension is not built: no word watch
    _pagewatch = None

CHECKER = -2      # as_call's kind while the checker itself looks at memory


def as_call(run, kind):
    """``run()``, the checker's RMA call of ``kind`` (an accesses kind), or its own
    look at memory (CHECKER): what it loads or stores of a watched word is that
    call's access, not the program's."""
    return run() if _pagewatch is None else _pagewatch.hw_call(kind + 1, run)


def calling_as(function, kind):
    """``function`` made a call of ``kind`` as as_call says, for every call of it."""
    if _pagewatch is None:
        return function
    call, mark = _pagewatch.hw_call, kind + 1

    def run(*args, **kwargs):
        return call(mark, function, *args, **kwargs)
    return run


def hw_watch(address, nbytes):
    """Watch the first words of [address, address + nbytes): the slots (maybe none)."""
    return _pagewatch.hw_watch(address, nbytes) if _pagewatch is not None else ()


def hw_unwatch(slots):
    """The accesses the slots saw, as (address, length, frames, call + 1 or 0)."""
    return _pagewatch.hw_unwatch(slots) if slots else []
