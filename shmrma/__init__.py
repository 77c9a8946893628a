"""shmrma: MPI one-sided communication on one machine, with mpi4py's API.

``from shmrma import MPI`` gives the mpi4py-shaped namespace;
``shmrma.launch(fn, nprocs)`` runs a function on N ranks from Python.
"""

__version__ = "0.1.0"


def native_backend():
    """Which atomic layer is active: "c" (the C extension) or "atomics" (the fallback)."""
    from .core import atomic
    return atomic.BACKEND


def launch(fn, nprocs, args=(), kwargs=None, timeout=None):
    """Run ``fn(*args, **kwargs)`` on ``nprocs`` ranks; returns their results in rank order.

    Raises ``shmrma.LaunchError`` naming the failed rank, with its traceback.
    """
    from .run.launcher import launch as run
    return run(fn, nprocs, args, kwargs, timeout)


def __getattr__(name):
    if name == "LaunchError":
        from .run.launcher import LaunchError
        return LaunchError
    raise AttributeError("module 'shmrma' has no attribute %r" % name)
