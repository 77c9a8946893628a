"""THREAD_MULTIPLE: MPI calls from several threads of a rank at once behave as if made
one after the other, and a blocking call blocks only its own thread (MPI-3.1 §12.4).

The rank's MPI lock (csrc/native.h) is what makes it so; the programs of
tests/programs/threaded_calls.py check every byte of every message that 2 to 8
threads per rank exchange at once, 1 B to 8 MiB, by every point-to-point call,
collectives on a communicator per thread and RMA on one window. A race shows up
one run in many, so each kind runs several jobs.
"""
import os
import threading

import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs",
                       "threaded_calls.py")
POINT_TO_POINT = ["send", "isend", "sendrecv", "issend", "probe", "mprobe", "improbe",
                  "obj", "iobj", "anysource", "anytag", "selfpair"]


def run_threaded(run_shmrma, kind, ranks, threads, iterations, sizes=None, env=None):
    args = ["-n", ranks, "--timeout", 100, PROGRAM, kind, threads, iterations]
    result = run_shmrma(args + ([sizes] if sizes else []), timeout=150, env=env)
    assert result.returncode == 0 and result.stdout.strip() == "PASS", (
        "status %d\n%s" % (result.returncode, result.stderr[-3000:]))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", POINT_TO_POINT + ["collectives", "rma"])
def test_every_call_from_four_threads_of_two_ranks(run_shmrma, kind):
    """Messages of 1 B to 8 MiB (through the ring, the staging ring, a rank's own
    delivery), three jobs of 16 exchanges per thread and peer."""
    for _ in range(3):
        run_threaded(run_shmrma, kind, 2, 4, 16)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["isend", "mprobe", "anysource", "anytag", "iobj",
                                  "collectives", "rma"])
def test_eight_threads_of_three_ranks(run_shmrma, kind):
    run_threaded(run_shmrma, kind, 3, 8, 8)


@pytest.mark.timeout(300)
def test_mpi4py_demo_sendrecv_pattern_repeated(run_shmrma):
    """mpi4py's demo/threads/sendrecv.py: one thread sends 4 MB to its own rank while
    another receives it (it hung: the receiver slept through the delivery)."""
    for _ in range(10):
        run_threaded(run_shmrma, "selfpair", 1, 2, 3, "4000000")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["send", "isend", "mprobe", "iobj", "selfpair",
                                  "collectives"])
def test_every_call_from_threads_on_the_fallback_engine(run_shmrma, kind):
    """The pure-Python engine (SHMRMA_NATIVE=0) holds the same lock."""
    run_threaded(run_shmrma, kind, 1 if kind == "selfpair" else 2, 4, 8,
                 "1,64,16392,262144", env={"SHMRMA_NATIVE": "0"})


# --- the lock itself --------------------------------------------------------------

@pytest.fixture(params=atomic.available_backends())
def backend(request):
    previous = atomic.use_backend(request.param)
    yield request.param
    atomic.use_backend(previous)


def test_the_lock_is_recursive_and_a_wait_gives_it_up(backend):
    """A thread that holds the lock (twice) and waits lets another thread take it
    meanwhile, and holds it again, as deep, once the wait ends."""
    assert shmrma.launch(_a_wait_gives_the_lock_up, 1, args=(backend,))[0] == [
        "the other thread took it", "woken", "held again", "given back"]


def _a_wait_gives_the_lock_up(backend):
    import numpy as np
    atomic.use_backend(backend)
    cell = np.zeros(2, dtype=np.int64)      # a wait cell: value, sleepers
    address = cell.ctypes.data
    said = []

    def other():
        with atomic.mpi_lock:
            said.append("the other thread took it")
        atomic.cell_add(address, 1)

    def intruder():
        with atomic.mpi_lock:
            said.append("given back")

    with atomic.mpi_lock:
        with atomic.mpi_lock:
            thread = threading.Thread(target=other)
            thread.start()
            while atomic.cell_wait(address, 0, 5.0) == 0:
                pass
            said.append("woken")
            thread.join()
            late = threading.Thread(target=intruder)
            late.start()
            late.join(0.2)      # the lock is this thread's again: the intruder waits
            said.append("held again" if late.is_alive() else "taken while held")
    late.join(5.0)
    return said


def test_a_second_thread_makes_the_lock_shared():
    def body():
        before = atomic.mpi_lock_shared()
        with atomic.mpi_lock:
            pass
        alone = atomic.mpi_lock_shared()

        def other():
            with atomic.mpi_lock:
                pass
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        return before, alone, atomic.mpi_lock_shared()
    assert shmrma.launch(body, 1) == [(False, False, True)]


def test_a_forked_child_is_not_stuck_behind_another_threads_lock():
    """A thread holds the lock while the main thread forks (os.fork, a Spawn): the
    child, which has no such thread, can take it."""
    def body():
        held, release = threading.Event(), threading.Event()

        def holder():
            with atomic.mpi_lock:
                held.set()
                release.wait(10)
        thread = threading.Thread(target=holder)
        thread.start()
        held.wait(10)
        pid = os.fork()
        if pid == 0:
            with atomic.mpi_lock:
                os._exit(7)
        _, status = os.waitpid(pid, 0)
        release.set()
        thread.join()
        return os.waitstatus_to_exitcode(status)
    assert shmrma.launch(body, 1, timeout=30) == [7]


def test_thread_level_and_main_thread():
    """THREAD_MULTIPLE is provided; Is_thread_main says which thread is main."""
    def body():
        seen = []
        thread = threading.Thread(target=lambda: seen.append(MPI.Is_thread_main()))
        thread.start()
        thread.join()
        return MPI.Query_thread(), MPI.Is_thread_main(), seen
    assert shmrma.launch(body, 1) == [(MPI.THREAD_MULTIPLE, True, [False])]


def test_the_object_collectives_take_mpi4pys_communicator_lock():
    """As mpi4py's (its test_p2p_obj testCommLock): the lock table holds a
    threading.Lock for each object collective once it ran."""
    def body():
        comm = MPI.COMM_WORLD.Dup()
        table = MPI._comm_lock_table(comm)
        before = sorted(table)
        comm.bcast(None, root=0)
        comm.allgather(1)
        comm.gather(1)
        comm.scatter([1] * comm.size)
        comm.alltoall([1] * comm.size)
        after = sorted(table)
        kinds = {type(lock) for lock in table.values()}
        comm.Free()
        return before, after, kinds == {type(threading.Lock())}
    assert shmrma.launch(body, 2) == [
        ([], ["allgather", "alltoall", "bcast", "gather", "scatter"], True)] * 2


def test_a_program_waits_for_its_threads_before_it_ends(run_shmrma, tmp_path):
    """A thread that is no daemon outlives the main code, as in Python (dask-mpi's
    client thread relies on it): the rank waits for it before it exits."""
    prog = tmp_path / "late.py"
    prog.write_text(
        "import threading, time\n"
        "from mpi4py import MPI\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('late thread of rank %d done' % MPI.COMM_WORLD.rank, flush=True)\n"
        "threading.Thread(target=late).start()\n")
    result = run_shmrma(["-n", 2, prog], timeout=60)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["late thread of rank 0 done",
                                                  "late thread of rank 1 done"]


def test_a_program_ending_with_an_idle_thread_pool_ends(run_shmrma, tmp_path):
    """An idle concurrent.futures pool's workers are no daemons: Python's exit tells them
    to stop before it joins them (distributed's Client leaves one), and so does a rank's,
    whether the main code returns or calls sys.exit(0)."""
    prog = tmp_path / "pool.py"
    prog.write_text(
        "import sys, threading\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from mpi4py import MPI\n"
        "pool = ThreadPoolExecutor(2)\n"
        "assert pool.submit(lambda: 41).result() == 41\n"
        "def late():\n"
        "    print('rank %d done' % MPI.COMM_WORLD.rank, flush=True)\n"
        "threading.Timer(0.2, late).start()\n"
        "if MPI.COMM_WORLD.rank == 1:\n"
        "    sys.exit(0)\n")
    result = run_shmrma(["-n", 2, "--timeout", 60, prog], timeout=90)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["rank 0 done", "rank 1 done"]
