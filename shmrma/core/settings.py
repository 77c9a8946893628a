"""The environment variables that choose how shmrma runs, read in one place.

Each is described, with every other setting, in docs/settings.md.

- ``SHMRMA_BACKEND``: which runtime ``from shmrma import MPI`` hands out: ``shm``
  (the default), shmrma's shared-memory runtime, or ``mpi``, mpi4py on the
  installed MPI (MPICH or Open MPI) for programs that outgrew one machine. The
  launcher sets it for its ranks (``shmrma-run --backend mpi``); programs started
  by ``mpiexec`` directly set it themselves.
- ``SHMRMA_CHECK``: run under the race checker (``shmrma-run --check`` sets it);
  ``no-stores``, ``no-loads`` and ``no-local`` leave out the ranks' own stores,
  loads, or both.
- ``SHMRMA_CHECK_THREADS``: how many threads beside the ranks' main ones the race
  checker gives a clock of their own (8 by default).
- ``SHMRMA_TRACE`` and ``SHMRMA_PROFILE``: record every MPI call (observe/):
  a timeline written to the file TRACE names, a per-call-site report at the end
  (PROFILE: ``1`` on stderr, a path: on stderr and as JSON there); shmrma-run's
  ``--trace`` and ``--profile`` set them. ``SHMRMA_TRACE_EVENTS`` bounds the
  events a rank keeps.
- ``SHMRMA_MPI4PY``: ``0`` leaves ``import mpi4py`` to the installed mpi4py in a
  job's ranks (``shmrma-run --no-mpi4py-alias``); by default it is shmrma's MPI.
- ``SHMRMA_SPIN`` and ``SHMRMA_YIELDS``: the wait policy's spin (microseconds) and
  yield count, for both atomic layers (the C extension's and the fallback's).
"""
import os

from . import constants

BACKEND_VARIABLE = "SHMRMA_BACKEND"
BACKENDS = ("shm", "mpi")

CHECK_VARIABLE = "SHMRMA_CHECK"
# SHMRMA_CHECK's values (--check=...) that leave out the ranks' stores, loads, or both
NO_STORES, NO_LOADS, NO_LOCAL = "no-stores", "no-loads", "no-local"
CHECK_MODES = (NO_STORES, NO_LOADS, NO_LOCAL)

CHECK_THREADS_VARIABLE = "SHMRMA_CHECK_THREADS"
DEFAULT_CHECK_THREADS = 8   # a clock's entries beside the ranks': 8 threads, 1 KiB rings

MPI4PY_VARIABLE = "SHMRMA_MPI4PY"

TRACE_VARIABLE, PROFILE_VARIABLE = "SHMRMA_TRACE", "SHMRMA_PROFILE"
TRACE_EVENTS_VARIABLE = "SHMRMA_TRACE_EVENTS"
DEFAULT_TRACE_EVENTS = 1 << 20      # per rank: 80 MiB of records, some 150 MiB of JSON
# Set by whoever gathers the ranks' records (the launcher): the directory the
# ranks leave them in. Unset, a process gathers its own at exit (a singleton).
OBSERVE_PARTS_VARIABLE = "SHMRMA_OBSERVE_PARTS"

# The one wait policy (core/atomic.py; docs/settings.md, "How ranks wait"): a wait
# spins DEFAULT_SPIN microseconds re-reading its word, yields the CPU DEFAULT_YIELDS
# times, then sleeps on the futex. Measured on a 2-vCPU VM, 8-byte Send/Recv round
# trip at 2 ranks: a 1.5 us spin gives 7.4 us (the receiver is asleep when the reply
# comes, and a futex wake-up across vCPUs costs tens of us), 25 us and more 0.8 us.
# Both atomic layers take these values at import (use_backend hands them over).
SPIN_VARIABLE, YIELDS_VARIABLE = "SHMRMA_SPIN", "SHMRMA_YIELDS"
DEFAULT_SPIN = 50
DEFAULT_YIELDS = 16


def checked_backend(name, where):
    """``name`` if it names a backend; ValueError saying what ``where`` accepts."""
    if name not in BACKENDS:
        raise ValueError("%s must be 'shm' (shared memory on one machine, the default) or "
                         "'mpi' (mpi4py on the installed MPI), not %r" % (where, name))
    return name


def backend():
    """The backend SHMRMA_BACKEND names (``shm`` when unset)."""
    return checked_backend(os.environ.get(BACKEND_VARIABLE, "").strip().lower() or "shm",
                           BACKEND_VARIABLE)


def checking():
    """Whether this process runs under the race checker; a value of SHMRMA_CHECK it
    does not know is an error (a typo would otherwise check what it meant to leave
    out)."""
    value = os.environ.get(CHECK_VARIABLE, "")
    if value not in ("", "0", "1") + CHECK_MODES:
        raise ValueError("%s=%r: expected 1 (check), 0 (do not), or one of %s" % (
            CHECK_VARIABLE, value, ", ".join(CHECK_MODES)))
    return value not in ("", "0")


def check_threads():
    """SHMRMA_CHECK_THREADS: the threads beside the ranks' main ones that the race
    checker follows with a clock each, per job (check/threads.py)."""
    text = os.environ.get(CHECK_THREADS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_CHECK_THREADS
    value = int(text, 10) if text.isdigit() else -1
    if not 0 <= value <= 1024:
        raise ValueError("%s must be a number of threads from 0 to 1024, not %r"
                         % (CHECK_THREADS_VARIABLE, text))
    return value


def stores_watched():
    """Whether the checker watches the ranks' own stores to their window memory too."""
    return os.environ.get(CHECK_VARIABLE, "") not in (NO_STORES, NO_LOCAL)


def loads_watched():
    """Whether the checker watches the ranks' own loads of their window memory too."""
    return os.environ.get(CHECK_VARIABLE, "") not in (NO_LOADS, NO_LOCAL)


def trace_file():
    """The file SHMRMA_TRACE names for the timeline, or None."""
    return os.environ.get(TRACE_VARIABLE, "").strip() or None


def profile_target():
    """None (SHMRMA_PROFILE unset, empty or 0), "" (1: the report on stderr), or
    the path of the JSON report (the text report on stderr as well)."""
    value = os.environ.get(PROFILE_VARIABLE, "").strip()
    if value in ("", "0"):
        return None
    return "" if value == "1" else value


def observing():
    """Whether the MPI calls are recorded (--trace or --profile)."""
    return trace_file() is not None or profile_target() is not None


def trace_events():
    """How many events a rank keeps in the timeline (SHMRMA_TRACE_EVENTS); the
    rest are counted and said dropped."""
    return _count(TRACE_EVENTS_VARIABLE, DEFAULT_TRACE_EVENTS) or DEFAULT_TRACE_EVENTS


def observe_parts():
    """The directory the launcher gathers the ranks' records from, or None."""
    return os.environ.get(OBSERVE_PARTS_VARIABLE) or None


def mpi4py_alias():
    """Whether a job's ranks answer ``mpi4py.MPI`` with shmrma's (SHMRMA_MPI4PY, 1)."""
    value = os.environ.get(MPI4PY_VARIABLE, "1").strip().lower()
    if value not in ("0", "1"):
        raise ValueError("%s must be 1 (import mpi4py gives shmrma's MPI in a job, the "
                         "default) or 0 (the installed mpi4py), not %r"
                         % (MPI4PY_VARIABLE, os.environ[MPI4PY_VARIABLE]))
    return value == "1"


def supported_thread_level():
    """The highest thread level every call honours (MPI-3.1 §12.4.3): any thread may
    call at any time (the rank's MPI lock, csrc/native.h, makes calls made at once
    behave as if made one after the other, and every wait gives it up); under the
    race checker, whose records follow one thread at a time, SERIALIZED."""
    return constants.THREAD_SERIALIZED if checking() else constants.THREAD_MULTIPLE


def _count(name, default):
    """The non-negative integer variable ``name`` holds, or ``default`` when it is
    unset, empty, not a number or negative."""
    text = os.environ.get(name, "").strip()
    try:
        value = int(text, 10)
    except ValueError:
        return default
    return value if value >= 0 else default


def wait_policy():
    """(spin microseconds, yields) of the wait policy: SHMRMA_SPIN and SHMRMA_YIELDS,
    or the defaults."""
    return _count(SPIN_VARIABLE, DEFAULT_SPIN), _count(YIELDS_VARIABLE, DEFAULT_YIELDS)


def spin_set():
    """Whether SHMRMA_SPIN is set (a job keeps it even with more ranks than CPUs)."""
    return SPIN_VARIABLE in os.environ
