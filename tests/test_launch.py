"""``shmrma.launch(fn, nprocs, args=(), kwargs=None, timeout=None)`` from Python.

Rules: launch returns per-rank results or raises naming the rank with its
traceback (docs/api.md); waits notice an aborted job; no job leaves a segment in
/dev/shm, however it ends (Open MPI's leaked after Ctrl-C).
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest

import shmrma
from shmrma import MPI
from shmrma.core import job
from mpitest import HANG_S


def job_segments(job):
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith("shmrma.%s." % job))


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _rank_size_args(a, b=None, *, c=0):
    comm = MPI.COMM_WORLD
    return (comm.Get_rank(), comm.Get_size(), a, b, c)


@pytest.mark.timeout(60)
def test_results_in_rank_order_with_args_and_kwargs():
    """launch returns fn(*args, **kwargs) of every rank, in rank order."""
    results = shmrma.launch(_rank_size_args, 3, args=(10, "b"), kwargs={"c": [1, 2]})
    assert results == [(r, 3, 10, "b", [1, 2]) for r in range(3)]
    assert shmrma.launch(_rank_size_args, 2, args=(5,)) == [(0, 2, 5, None, 0),
                                                              (1, 2, 5, None, 0)]


@pytest.mark.timeout(60)
def test_ranks_communicate_and_closures_run():
    """fn may be any callable (it is not pickled); ranks really share a world."""
    offset = 100

    def ring():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        got = comm.sendrecv(rank + offset, dest=(rank + 1) % size, source=(rank - 1) % size)
        return got, comm.allreduce(rank)
    assert shmrma.launch(ring, 3) == [(102, 3), (100, 3), (101, 3)]


@pytest.mark.timeout(60)
def test_none_and_large_results():
    """None and results larger than a pipe buffer come back intact."""
    assert shmrma.launch(lambda: None, 2) == [None, None]
    big = shmrma.launch(lambda: bytes([MPI.COMM_WORLD.Get_rank()]) * (1 << 20), 3)
    assert [len(b) for b in big] == [1 << 20] * 3
    assert [b[12345] for b in big] == [0, 1, 2]


@pytest.mark.timeout(120)
def test_failing_rank_raises_launch_error(tmp_path):
    """A raising rank gives LaunchError with .rank, .status and its
    traceback in .details; ranks blocked in Barrier or recv are ended (the launch
    does not wait for its timeout) and no rank process or segment of the job is left."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        (tmp_path / ("pid.%d" % rank)).write_text(str(os.getpid()))
        if rank == 0:
            comm.Send(bytearray(1 << 20), dest=1, tag=99)  # never received
            (tmp_path / "job").write_text(job.current().job_id)
        comm.Barrier()
        if rank == 2:
            time.sleep(0.2)
            raise ValueError("launch-boom on rank two")
        if rank == 0:
            comm.Barrier()
        else:
            comm.recv(source=0, tag=5)

    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(body, 3, timeout=HANG_S)    # its expiry: rank None, status 124
    error = info.value
    assert error.rank == 2 and error.status == 1
    assert "Traceback (most recent call last)" in error.details
    assert "ValueError: launch-boom on rank two" in error.details
    assert "in body" in error.details
    assert "rank 2" in str(error) and "launch-boom on rank two" in str(error)
    pids = [int((tmp_path / ("pid.%d" % r)).read_text()) for r in range(3)]
    assert not [pid for pid in pids if pid_alive(pid)]
    assert job_segments((tmp_path / "job").read_text()) == []


@pytest.mark.timeout(120)
def test_failing_rank_ends_rank_outside_any_wait():
    """A rank busy outside shmrma (sleeping far past the launch's timeout)
    is ended after a failure: the launch raises for the failing rank, not for its
    timeout."""
    def body():
        if MPI.COMM_WORLD.Get_rank() == 1:
            time.sleep(0.2)
            raise KeyError("rank one")
        time.sleep(10 * HANG_S)

    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(body, 2, timeout=HANG_S)
    assert info.value.rank == 1 and info.value.status == 1
    assert "KeyError: 'rank one'" in info.value.details


@pytest.mark.timeout(60)
def test_exit_status_and_signal_of_a_rank():
    """sys.exit(4) or death by SIGKILL on one rank raise LaunchError with
    that rank and status (128+signal for a signal)."""
    import signal

    def exits():
        if MPI.COMM_WORLD.Get_rank() == 1:
            sys.exit(4)
        MPI.COMM_WORLD.Barrier()

    def killed():
        if MPI.COMM_WORLD.Get_rank() == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        MPI.COMM_WORLD.recv(source=0)

    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(exits, 2)
    assert (info.value.rank, info.value.status) == (1, 4)
    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(killed, 2)
    assert (info.value.rank, info.value.status) == (0, 137)
    assert "SIGKILL" in str(info.value)


@pytest.mark.timeout(60)
def test_timeout_raises_with_stacks():
    """timeout raises LaunchError with status 124; .details holds every rank's
    Python stack and what it waits for; the blocked ranks are ended."""
    def stuck_in_recv():
        MPI.COMM_WORLD.recv(source=1, tag=77)

    def stuck_in_barrier():
        MPI.COMM_WORLD.Barrier()

    def body():
        if MPI.COMM_WORLD.Get_rank() == 0:
            stuck_in_recv()
        else:
            stuck_in_barrier()

    start = time.monotonic()
    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(body, 2, timeout=1.0)
    assert time.monotonic() - start >= 1.0      # not before its timeout
    error = info.value
    assert error.status == 124
    assert "waiting for a message from rank 1 with tag 77" in error.details
    assert "waiting for Barrier" in error.details
    assert "in stuck_in_recv" in error.details and "in stuck_in_barrier" in error.details
    assert "--- rank 0" in error.details and "--- rank 1" in error.details
    # the job is really gone: the next launch works at once
    assert shmrma.launch(lambda: MPI.COMM_WORLD.Get_size(), 2) == [2, 2]


@pytest.mark.timeout(60)
def test_unpicklable_result_is_a_clear_error():
    """A result that cannot be pickled names the rank and says so."""
    def body():
        if MPI.COMM_WORLD.Get_rank() == 1:
            return lambda: 1
        return MPI.COMM_WORLD.Get_rank()

    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(body, 2)
    assert info.value.rank == 1
    assert "cannot be pickled" in info.value.details
    assert "rank 1" in str(info.value)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("nprocs", [0, -1, "2", 2.0, None])
def test_nprocs_validation(nprocs):
    """nprocs must be a positive int: ValueError, nothing started."""
    with pytest.raises(ValueError):
        shmrma.launch(_rank_size_args, nprocs, args=(1,))


@pytest.mark.timeout(60)
def test_launch_twice_in_a_row():
    """Consecutive launches in one process each get a fresh world."""
    def size_and_job():
        return MPI.COMM_WORLD.Get_size(), job.current().job_id
    first = shmrma.launch(size_and_job, 2)
    second = shmrma.launch(size_and_job, 3)
    assert [s for s, _ in first] == [2, 2] and [s for s, _ in second] == [3, 3, 3]
    assert len({j for _, j in first}) == 1 and len({j for _, j in second}) == 1
    assert first[0][1] != second[0][1]


@pytest.mark.timeout(60)
def test_launch_from_a_singleton(tmp_path):
    """A process that already used COMM_WORLD as a world of one can
    launch; the children see the new world, the parent keeps its own; nothing is left."""
    path = tmp_path / "singleton_launch.py"
    path.write_text(textwrap.dedent('''
        import os, shmrma
        from shmrma import MPI
        from shmrma.core import job
        comm = MPI.COMM_WORLD
        assert (comm.Get_rank(), comm.Get_size()) == (0, 1)
        assert comm.allreduce(5) == 5
        parent_job = job.current().job_id

        def body():
            c = MPI.COMM_WORLD
            return c.Get_rank(), c.Get_size(), c.allreduce(1), job.current().job_id

        results = shmrma.launch(body, 3)
        assert [r[:3] for r in results] == [(0, 3, 3), (1, 3, 3), (2, 3, 3)], results
        assert results[0][3] != parent_job
        assert (comm.Get_rank(), comm.Get_size(), comm.allreduce(7)) == (0, 1, 7)
        comm.Barrier()
        print("jobs", parent_job, results[0][3])
    '''))
    env = dict(os.environ)
    env.pop("SHMRMA_JOB", None)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=30, env=env)
    assert result.returncode == 0, result.stderr
    _, parent_job, child_job = result.stdout.split()
    assert job_segments(parent_job) == [] and job_segments(child_job) == []
