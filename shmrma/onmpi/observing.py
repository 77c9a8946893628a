"""``shmrma-run --backend mpi --profile``: mpi4py's calls timed in each rank.

Each rank runs ``python -m mpi4py -m shmrma.onmpi.observing PROGRAM ARGS``,
which starts the program as mpi4py does (mpi4py.run.run_command_line) after
arranging that, when the program imports ``mpi4py.MPI`` (itself, or through
shmrma's MPI), the public methods of mpi4py's classes, and of the classes this
backend derives from them, are wrapped by observe.calls, and a recorder
(observe.recorder) sums them per call site as on the shm backend. Waiting for
the import, rather than importing mpi4py.MPI first, keeps the ``mpi4py.rc``
settings a program makes before its import. mpi4py's classes are a C
extension's, read-only to Python: the C extension sets their wrappers
(``_native.set_class_attribute``), so a request or communicator mpi4py makes
anywhere is recorded.

What a call waited for is not known here: the MPI waits inside its own calls,
whose whole time the report gives.
"""
import atexit
import importlib.abc
import os
import sys

from ..core import settings
from ..observe import calls, recorder

# the modules whose classes are wrapped when they are imported
WATCHED = ("mpi4py.MPI", "shmrma.onmpi.namespace")
# where the MPIs' launchers give a process its rank in the world before MPI_Init
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def main():
    sys.meta_path.insert(0, _Watch())
    from mpi4py import run
    run.run_command_line(sys.argv[1:])


class _Watch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands a watched module's loader a last step."""

    def find_spec(self, name, path, target=None):
        if name not in WATCHED:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(name, path, target)
            if spec is not None:
                spec.loader = _ThenObserve(spec.loader)
                return spec
        return None


class _ThenObserve(importlib.abc.Loader):
    """The module's own loader, which then wraps its classes' calls; anything
    else asked of it (get_filename, ...) is the own loader's answer."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        observe()


def observe():
    """Wrap the calls of mpi4py's classes and this backend's that are not yet;
    the first time, start the rank's recorder."""
    from mpi4py import MPI
    from .. import _native
    calls.install((MPI.Comm, MPI.Win, MPI.File, MPI.Message, MPI.Request),
                  assign=_native.set_class_attribute)
    if recorder.current() is None:
        log = recorder.Recorder(_rank(MPI), settings.observe_parts(), trace=False,
                                profile=True, waits=False)
        recorder.active[0] = log
        os.register_at_fork(after_in_child=recorder.forget_in_child)
        # before mpi4py's own exit handler (registered earlier) finalizes MPI
        atexit.register(_end, log)


def _rank(mpi):
    """This process's rank in the world, from its launcher or MPI; None while
    neither says (a program that initializes MPI itself, later)."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    if mpi.Is_initialized() and not mpi.Is_finalized():
        return mpi.COMM_WORLD.Get_rank()
    return None


def _end(log):
    if recorder.current() is log:
        if log.rank is None:
            from mpi4py import MPI
            log.rank = _rank(MPI)
        if log.rank is None:    # MPI never ran: nothing was recorded
            log.stop()
            recorder.active[0] = None
            return
        log.end()
        recorder.active[0] = None


if __name__ == "__main__":
    main()
