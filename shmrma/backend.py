"""Which runtime ``from shmrma import MPI`` hands out.

``shm`` (the default) is shmrma's shared-memory runtime; ``mpi`` is mpi4py on the
installed MPI (MPICH or Open MPI), for programs that outgrew one machine. The
launcher sets ``SHMRMA_BACKEND`` for its ranks (``shmrma-run --backend mpi``);
programs started by ``mpiexec`` directly set it themselves.
"""
import os

NAMES = ("shm", "mpi")
VARIABLE = "SHMRMA_BACKEND"


def checked(name, where):
    """``name`` if it names a backend; ValueError saying what ``where`` accepts."""
    if name not in NAMES:
        raise ValueError("%s must be 'shm' (shared memory on one machine, the default) or "
                         "'mpi' (mpi4py on the installed MPI), not %r" % (where, name))
    return name


def selected():
    """The backend SHMRMA_BACKEND names (``shm`` when unset)."""
    return checked(os.environ.get(VARIABLE, "").strip().lower() or "shm", VARIABLE)
