"""``MPI.Intercomm``. shmrma creates no intercommunicators yet (no
Intercomm_create, Spawn or Connect), so the class only gives null handles,
as ``MPI.Intercomm()`` does in mpi4py; code that names it (mpi4py.util.pkl5
subclasses it) still imports, and any call on such a handle raises ERR_COMM."""
from .comm import COMM_CLASSES, INTER, Comm


class Intercomm(Comm):
    """``MPI.Intercomm``: an intercommunicator (only null handles: none is created)."""

    _inter = True       # every handle is null, so Is_inter/Is_intra raise ERR_COMM


COMM_CLASSES[INTER] = Intercomm
