"""``shmrma-run --backend mpi``: the same program under the MPI's ``mpiexec``.

The ranks run ``python -m mpi4py``, so an exception in one rank aborts the whole
job instead of leaving the others in a collective forever. This process never
initializes MPI itself.
"""
import functools
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time

from ..core import settings

TIMEOUT_STATUS = 124
KILL_GRACE = 3.0        # seconds between SIGTERM and SIGKILL of a timed-out job
SHM_DIR = "/dev/shm"
# what MPICH (ch4:shm) and Open MPI (btl/sm) name their segments in SHM_DIR
SEGMENT_PREFIXES = ("mpich_shm_", "sm_segment.")
FRESH = 0.1             # seconds: a segment younger than this may not be mapped yet
SWEEP_WAIT = 2.0        # seconds the sweep waits for exiting ranks to unmap
INSTALL_HINT = 'python -m pip install mpich mpi4py (or pip install "shmrma[mpi]")'


class Unavailable(Exception):
    """The mpi backend cannot run here; the message says what to install or set."""


def find_mpiexec():
    """SHMRMA_MPIEXEC, else the mpiexec beside this Python (the mpich wheel), else PATH."""
    chosen = os.environ.get("SHMRMA_MPIEXEC")
    if chosen:
        found = shutil.which(chosen)
        if found is None:
            raise Unavailable("SHMRMA_MPIEXEC=%r is not an executable" % chosen)
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    found = _mpiexec_on_path()
    if found is None:
        raise Unavailable("no mpiexec found beside %s or on PATH; install one with %s, "
                          "or set SHMRMA_MPIEXEC" % (sys.executable, INSTALL_HINT))
    return found


def _mpiexec_on_path():
    """The first mpiexec on PATH that is not shmrma-mpiexec under that name (which
    would start this launcher again)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        found = shutil.which("mpiexec", path=directory or os.curdir)
        if found is not None and not is_shmrma_mpiexec(found):
            return found
    return None


def is_shmrma_mpiexec(path):
    """Whether ``path`` (an mpiexec or mpirun) is a link to shmrma-mpiexec."""
    return os.path.basename(os.path.realpath(path)) == "shmrma-mpiexec"


def check_mpi4py():
    if importlib.util.find_spec("mpi4py") is None:
        raise Unavailable("mpi4py is not installed in %s; install it with %s"
                          % (sys.prefix, INSTALL_HINT))


@functools.lru_cache(maxsize=None)
def flavor(mpiexec):
    """"mpich", "openmpi", or None for an mpiexec this launcher does not know."""
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30)
    text = version.stdout + version.stderr
    if "HYDRA" in text:
        return "mpich"
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text:
        return "openmpi"
    return None


def tag_output_flag(mpiexec):
    """mpiexec's own option that prefixes output lines with the rank."""
    known = {"mpich": ["-prepend-rank"], "openmpi": ["--tag-output"]}
    try:
        return known[flavor(mpiexec)]
    except KeyError:
        raise Unavailable("--tag-output: %s is neither MPICH's nor Open MPI's mpiexec; "
                          "use its own option" % mpiexec) from None


def oversubscribe_flag(mpiexec, nranks):
    """Open MPI refuses more ranks than cores unless told; shmrma-run never does."""
    if nranks > (os.cpu_count() or 1) and flavor(mpiexec) == "openmpi":
        return ["--oversubscribe"]
    return []


def command(options, mpiexec):
    """The mpiexec command line for the parsed shmrma-run options."""
    argv = [mpiexec, "-n", str(options.nranks)]
    argv += oversubscribe_flag(mpiexec, options.nranks)
    if options.tag_output:
        argv += tag_output_flag(mpiexec)
    if options.mode == "exec":      # a program that is not Python (shmrma-mpiexec)
        return argv + [options.target] + list(options.args)
    argv += [sys.executable] + options.python_argv() + ["-m", "mpi4py"]
    if options.profile:     # the ranks time mpi4py's calls (observing.py)
        argv += ["-m", "shmrma.onmpi.observing"]
    if options.mode == "module":
        argv += ["-m", options.target]
    elif options.mode == "code":
        argv += ["-c", options.target]
    else:
        argv.append(options.target)
    return argv + list(options.args)


def run(options):
    """Run the job; returns the exit status shmrma-run should end with."""
    try:
        check_mpi4py()
        argv = command(options, find_mpiexec())
    except Unavailable as exc:
        sys.stderr.write("shmrma-run: --backend mpi: %s\n" % exc)
        return 1
    env = dict(os.environ)
    env[settings.BACKEND_VARIABLE] = "mpi"
    gathering = None
    if options.profile:     # where the ranks leave their sums
        from ..observe import session
        gathering = session.Gathering()
        env.update(gathering.environment())
    before = mpi_segments()
    job = subprocess.Popen(argv, env=env, start_new_session=True)
    forwarded = {sig: signal.signal(sig, lambda signum, frame: _signal_job(job, signum))
                 for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _supervise(job, options.timeout)
    finally:
        for sig, handler in forwarded.items():
            signal.signal(sig, handler)
        sweep(mpi_segments() - before)
        if gathering is not None:
            gathering.finish(options.nranks, {})


def _supervise(job, timeout):
    try:
        status = job.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.stderr.write("shmrma-run: the job timed out after %g s; the job was ended "
                         "(the mpi backend cannot show what each rank was doing)\n" % timeout)
        _end(job)
        return TIMEOUT_STATUS
    if status < 0:
        status = 128 - status
    if status:
        sys.stderr.write("shmrma-run: mpiexec exited with status %d; the job was ended\n"
                         % status)
    return status


def mpi_segments():
    """The MPI's shared-memory segments now in SHM_DIR, of every job."""
    try:
        return {name for name in os.listdir(SHM_DIR) if name.startswith(SEGMENT_PREFIXES)}
    except OSError:
        return set()


def sweep(names):
    """Unlink the MPI segments this job left (MPI_Abort and killed ranks leak them).

    A segment still mapped may belong to a rank that is still exiting after
    mpiexec returned, or to another job started meanwhile: wait a little for the
    first kind, never unlink one that stays mapped."""
    deadline = time.monotonic() + SWEEP_WAIT
    while names:
        mapped = _mapped(names)
        names = {name for name in names if not _unlink_if_unmapped(name, mapped)}
        if not names or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _mapped(names):
    mapped = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/maps" % pid) as maps:
                text = maps.read()
        except OSError:
            continue
        mapped.update(name for name in names if name in text)
    return mapped


def _unlink_if_unmapped(name, mapped):
    """True when ``name`` is gone (unlinked now, or already)."""
    path = os.path.join(SHM_DIR, name)
    try:
        if name in mapped or time.time() - os.stat(path).st_ctime < FRESH:
            return False    # in use, or just made by another job, which maps it at once
        os.unlink(path)
    except FileNotFoundError:
        pass
    return True


def _signal_job(job, signum):
    try:
        os.killpg(job.pid, signum)
    except ProcessLookupError:
        pass


def _end(job):
    _signal_job(job, signal.SIGTERM)
    try:
        job.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        _signal_job(job, signal.SIGKILL)
        job.wait()
