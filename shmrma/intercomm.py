"""``MPI.Intercomm``. shmrma creates no intercommunicators yet (no
Intercomm_create, Spawn or Connect), so the class only gives null handles,
as ``MPI.Intercomm()`` does in mpi4py; code that names it (mpi4py.util.pkl5
subclasses it) still imports, and any call on such a handle raises ERR_COMM."""
from .comm import Comm


class Intercomm(Comm):
    """``MPI.Intercomm``."""

    def Is_inter(self):
        self._s     # every handle is null: ERR_COMM
        return True

    def Is_intra(self):
        self._s
        return False

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)
