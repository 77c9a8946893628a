"""The whole programs of ``shmrma-bench compare --suite programs``, run as their
users run them: ``shmrma-run -n N PROGRAM`` against ``mpiexec -n N python
PROGRAM`` (a program's ``from mpi4py import MPI`` is shmrma's under shmrma-run).

- mpi4py's own demo benchmarks, ``demo/osu_*.py`` of mpi4py's source
  distribution: OSU's loops written with ``[buf, size, MPI.BYTE]`` messages and,
  in osu_alltoallv.py, ``array('i')`` counts and displacements;
- a pencil transpose (transpose.py): ``Create_cart``, ``Sub`` and ``Alltoallw`` of
  subarray types, as a parallel FFT moves its data.

The source distribution is fetched once with pip into ~/.cache/shmrma (mpi4py's
test suite, tools/mpi4py_suite.py, comes from the same folder).
"""
import os
import subprocess
import sys
import tarfile

MPI4PY_VERSION = "4.1.2"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "shmrma")


class SourcesMissing(Exception):
    """mpi4py's source distribution could not be fetched (offline, no pip)."""


def mpi4py_sources(cache=CACHE):
    """The folder of mpi4py's source distribution, downloaded and unpacked once."""
    folder = os.path.join(cache, "mpi4py-%s" % MPI4PY_VERSION)
    if os.path.isdir(os.path.join(folder, "test")) and os.path.isdir(os.path.join(folder, "demo")):
        return folder
    os.makedirs(cache, exist_ok=True)
    got = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary",
                          ":all:", "--no-deps", "mpi4py==%s" % MPI4PY_VERSION, "-d", cache],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if got.returncode:
        raise SourcesMissing("pip could not download mpi4py %s's source distribution into "
                             "%s:\n%s" % (MPI4PY_VERSION, cache, got.stdout.strip()[-1500:]))
    with tarfile.open(os.path.join(cache, "mpi4py-%s.tar.gz" % MPI4PY_VERSION)) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(cache, filter="data")
        else:
            archive.extractall(cache)
    return folder


def demo(name):
    """The path of mpi4py's demo program ``name`` (fetching the sources first)."""
    return os.path.join(mpi4py_sources(), "demo", name)
