"""Assertion bits of the synchronization calls (MPI-3.1 §11.5.5)."""
import operator

from ..core import errors

MODE_NOCHECK = 1024
MODE_NOSTORE = 2048
MODE_NOPUT = 4096
MODE_NOPRECEDE = 8192
MODE_NOSUCCEED = 16384
ALL_MODES = MODE_NOCHECK | MODE_NOSTORE | MODE_NOPUT | MODE_NOPRECEDE | MODE_NOSUCCEED


def checked(assertion, call):
    """The assertion as an int; bits outside the five MODE_* constants are ERR_ASSERT (R113).

    Any integer with ``__index__`` (a numpy integer too) is accepted, as in mpi4py.
    """
    try:
        value = operator.index(assertion)
    except TypeError:
        value = None
    if value is None or value & ~ALL_MODES:
        errors.fail(errors.ERR_ASSERT, "%s: assertion %r has bits outside MODE_NOCHECK, "
                    "MODE_NOSTORE, MODE_NOPUT, MODE_NOPRECEDE and MODE_NOSUCCEED"
                    % (call, assertion))
    return value
