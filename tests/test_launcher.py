"""The launcher through real subprocesses: ``shmrma-run`` / ``python -m shmrma.run``.

Rules: running ranks and the exit status as docs/api.md gives them; a wait notices
a rank that is gone; no leftover segments, however the job ends (Open MPI's leaked
after Ctrl-C); ranks may outnumber cores; the launcher forks before any thread.
"""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import shmrma
from mpitest import HANG_S

SHM_DIR = "/dev/shm"

# Programs start with this: each rank records its pid and the job id, rank 0
# leaves a 1 MiB message to rank 1 that is never received (a named segment
# created mid-job), and every rank can say "ready" through a file.
PROLOGUE = '''
import os, sys, time, signal, threading
from shmrma import MPI
from shmrma.core import job as shmrma_job
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
JOB = shmrma_job.current().job_id
HERE = os.path.dirname(os.path.abspath(__file__))

def note(name, text=""):
    path = os.path.join(HERE, name)
    temporary = os.path.join(HERE, ".note.%d" % os.getpid())
    with open(temporary, "w") as f:
        f.write(str(text))
    os.rename(temporary, path)

note("pid.%d" % rank, os.getpid())
note("job", JOB)

def leave_segment():
    """Rank 0 sends 1 MiB to rank 1, which never receives it: a named segment."""
    if rank == 0:
        comm.Send(bytearray(1 << 20), dest=1, tag=999)
    comm.Barrier()
    names = [n for n in os.listdir("/dev/shm")
             if n.startswith("shmrma.%s." % JOB)]
    note("segments.%d" % rank, len(names))

def ready():
    note("ready.%d" % rank)
'''


# Ranks share stdout: programs write each line with one sys.stdout.write call, since
# print() under PYTHONUNBUFFERED makes two writes that other ranks may split.

def program(tmp_path, body, name="prog.py"):
    path = tmp_path / name
    path.write_text(PROLOGUE + textwrap.dedent(body))
    return path


def job_id(tmp_path):
    return (tmp_path / "job").read_text()


def job_segments(job):
    return sorted(n for n in os.listdir(SHM_DIR) if n.startswith("shmrma.%s." % job))


def assert_swept(tmp_path, expect_segment=True, wait=0.0):
    """No name of the job is left in /dev/shm; the program did create one mid-job."""
    job = job_id(tmp_path)
    if expect_segment:
        counts = [int(p.read_text()) for p in tmp_path.glob("segments.*")]
        assert counts and max(counts) >= 1, "the program never had a named segment"
    deadline = time.monotonic() + wait
    while job_segments(job) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job_segments(job) == [], "segments of job %s left in /dev/shm" % job


def culprit_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("shmrma-run: ")]


def wait_for_files(tmp_path, pattern, count, timeout=HANG_S):
    deadline = time.monotonic() + timeout
    while len(list(tmp_path.glob(pattern))) < count:
        assert time.monotonic() < deadline, "ranks did not get ready"
        time.sleep(0.02)


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


class Popen:
    """A launcher in its own session, killed with its ranks if the test fails."""

    def __init__(self, args, cwd=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "shmrma.run", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True, cwd=cwd)

    def communicate(self, timeout=HANG_S):
        return self.proc.communicate(timeout=timeout)

    def close(self):
        try:  # the launcher's group: its ranks too, even if the launcher is gone
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.communicate()


@pytest.fixture
def popen():
    started = []

    def start(args, cwd=None):
        started.append(Popen(args, cwd=cwd))
        return started[-1]
    yield start
    for p in started:
        p.close()


# --- program modes and options --------------------------------------------------

@pytest.mark.timeout(60)
def test_script_mode_passes_args_and_every_rank_prints(run_shmrma, tmp_path):
    """`shmrma-run -n N script.py [args]`; options after the script are its own."""
    prog = program(tmp_path, '''
        sys.stdout.write("rank %d size %d argv %r name %s\\n"
                         % (rank, size, sys.argv[1:], __name__))
    ''')
    result = run_shmrma(["-n", "2", prog, "a", "b c", "--timeout", "-n"], timeout=30)
    assert result.returncode == 0, result.stderr
    for r in range(2):
        assert ("rank %d size 2 argv ['a', 'b c', '--timeout', '-n'] name __main__" % r
                in result.stdout)
    assert result.stderr == ""


@pytest.mark.timeout(60)
def test_module_mode_passes_args(run_shmrma, tmp_path):
    """`shmrma-run -n N -m module [args]` runs the module as __main__."""
    (tmp_path / "mymod_launch.py").write_text(textwrap.dedent('''
        import sys
        from shmrma import MPI
        c = MPI.COMM_WORLD
        sys.stdout.write("mod rank %d size %d argv %r name %s\\n"
                         % (c.Get_rank(), c.Get_size(), sys.argv[1:], __name__))
    '''))
    result = run_shmrma(["-n", "2", "-m", "mymod_launch", "x", "-l"], timeout=30, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for r in range(2):
        assert "mod rank %d size 2 argv ['x', '-l'] name __main__" % r in result.stdout


@pytest.mark.timeout(60)
def test_code_mode_passes_args(run_shmrma):
    """`shmrma-run -n N -c code [args]`; sys.argv is ['-c', args...] as in python."""
    code = ("import sys; from shmrma import MPI; c = MPI.COMM_WORLD; "
            "sys.stdout.write('code rank %d %d %r %s\\n'"
            " % (c.Get_rank(), c.Get_size(), sys.argv, __name__))")
    result = run_shmrma(["-n", "3", "-c", code, "p", "q"], timeout=30)
    assert result.returncode == 0, result.stderr
    for r in range(3):
        assert "code rank %d 3 ['-c', 'p', 'q'] __main__" % r in result.stdout


@pytest.mark.timeout(60)
def test_console_script_is_the_same_as_python_m(run_shmrma):
    """`python -m shmrma.run` is the same as `shmrma-run`."""
    script = os.path.join(os.path.dirname(sys.executable), "shmrma-run")
    if not os.path.exists(script):
        pytest.skip("shmrma-run is not installed next to this python")
    code = ("import sys; from shmrma import MPI; "
            "sys.stdout.write('hello %d\\n' % MPI.COMM_WORLD.Get_rank())")
    direct = subprocess.run([script, "-n", "2", "-c", code], capture_output=True,
                            text=True, timeout=30)
    via_m = run_shmrma(["-n", "2", "-c", code], timeout=30)
    assert direct.returncode == via_m.returncode == 0
    assert sorted(direct.stdout.splitlines()) == sorted(via_m.stdout.splitlines()) == [
        "hello 0", "hello 1"]


@pytest.mark.timeout(30)
def test_version(run_shmrma):
    """--version prints shmrma's version and exits 0."""
    result = run_shmrma(["--version"], timeout=20)
    assert result.returncode == 0
    assert shmrma.__version__ in result.stdout


@pytest.mark.timeout(30)
def test_help(run_shmrma):
    """--help documents every option and exits 0."""
    result = run_shmrma(["--help"], timeout=20)
    assert result.returncode == 0
    for word in ("usage:", "-n", "-m module", "-c code", "--timeout", "--tag-output",
                 "--version"):
        assert word in result.stdout
    assert run_shmrma(["-h"], timeout=20).stdout == result.stdout


@pytest.mark.timeout(60)
@pytest.mark.parametrize("args, message", [
    ([], "no program given"),
    (["-n", "2"], "no program given"),
    (["-n"], "-n needs a value"),
    (["-n", "0", "PROG"], "-n must be positive"),
    (["-n", "-3", "PROG"], "-n must be positive"),
    (["-n", "two", "PROG"], "-n expects a number"),
    (["-n", "300", "PROG"], "at most"),
    (["--timeout", "0", "PROG"], "--timeout must be positive"),
    (["--timeout", "soon", "PROG"], "--timeout expects a number"),
    (["--timeout"], "--timeout needs a value"),
    (["--bogus", "PROG"], "unknown option --bogus"),
    (["-m"], "-m needs a value"),
    (["-n", "4", "--universe-size", "2", "PROG"], "--universe-size must be from -n (4)"),
    (["--universe-size", "257", "PROG"], "to 256, not 257"),
    (["--universe-size", "many", "PROG"], "--universe-size expects a number"),
])
def test_usage_errors_exit_2(run_shmrma, tmp_path, args, message):
    """A bad command line exits 2 with a message and the usage; nothing runs."""
    prog = program(tmp_path, 'print("RAN", flush=True)\n')
    args = [prog if a == "PROG" else a for a in args]
    result = run_shmrma(args, timeout=20)
    assert result.returncode == 2
    assert "shmrma-run: " in result.stderr and message in result.stderr
    assert "usage: shmrma-run" in result.stderr
    assert "RAN" not in result.stdout and not (tmp_path / "job").exists()


@pytest.mark.timeout(30)
def test_missing_script(run_shmrma, tmp_path):
    """A script that does not exist is named in the error, exit 2."""
    missing = tmp_path / "nope.py"
    result = run_shmrma(["-n", "2", missing], timeout=20)
    assert result.returncode == 2
    assert "nope.py" in result.stderr and "Traceback" not in result.stderr


# --- failures -------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_rank_raises(run_shmrma, tmp_path):
    """A raising rank's traceback is shown once, one line names it,
    status 1; the others, blocked in Barrier and recv, are ended (the job does not
    hang); no segment is left."""
    prog = program(tmp_path, '''
        leave_segment()
        if rank == 1:
            time.sleep(0.2)
            raise ValueError("boom from rank one")
        elif rank == 0:
            comm.Barrier()
        else:
            comm.recv(source=0, tag=5)
    ''')
    result = run_shmrma(["-n", "3", prog], timeout=HANG_S)
    assert result.returncode == 1
    assert result.stderr.count("Traceback (most recent call last)") == 1
    assert result.stderr.count("ValueError: boom from rank one") == 1
    assert 'prog.py", line' in result.stderr
    assert culprit_lines(result.stderr) == [
        "shmrma-run: rank 1 exited with status 1; the job was ended"]
    assert_swept(tmp_path)


@pytest.mark.timeout(60)
def test_failing_rank_slow_to_abort_is_still_the_culprit(run_shmrma, tmp_path):
    """A rank that fails is named even when it is descheduled while it ends
    the job; the rank waiting on it stops with one line, without a traceback (CI saw
    rank 0 blamed when rank 1 published its failed state before the abort)."""
    prog = program(tmp_path, '''
        if rank == 1:
            real_abort = shmrma_job.World.abort
            def slow_abort(world, culprit):
                time.sleep(0.5)  # a waiter polls several times meanwhile
                real_abort(world, culprit)
            shmrma_job.World.abort = slow_abort
            raise ValueError("boom from rank one")
        comm.Barrier()
    ''')
    result = run_shmrma(["-n", "2", prog], timeout=30)
    assert result.returncode == 1
    assert result.stderr.count("Traceback (most recent call last)") == 1
    assert "rank 0 stopped" in result.stderr
    assert culprit_lines(result.stderr) == [
        "shmrma-run: rank 1 exited with status 1; the job was ended"]


@pytest.mark.timeout(60)
def test_rank_sys_exit_status(run_shmrma, tmp_path):
    """sys.exit(3) on one rank gives status 3, named, without a traceback."""
    prog = program(tmp_path, '''
        if rank == 1:
            sys.exit(3)
        comm.Barrier()
    ''')
    result = run_shmrma(["-n", "2", prog], timeout=30)
    assert result.returncode == 3
    assert "Traceback" not in result.stderr
    assert culprit_lines(result.stderr) == [
        "shmrma-run: rank 1 exited with status 3; the job was ended"]


@pytest.mark.timeout(120)
def test_rank_killed_by_signal(run_shmrma, tmp_path):
    """A rank killed by SIGKILL gives 137, named with the signal;
    the rank blocked on a recv from it is ended (the job does not hang); no segment
    is left."""
    prog = program(tmp_path, '''
        leave_segment()
        if rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        comm.recv(source=1, tag=3)
    ''')
    result = run_shmrma(["-n", "2", prog], timeout=HANG_S)
    assert result.returncode == 128 + signal.SIGKILL
    lines = culprit_lines(result.stderr)
    assert len(lines) == 1 and "rank 1" in lines[0] and "SIGKILL" in lines[0]
    assert "137" in lines[0]
    assert_swept(tmp_path)


@pytest.mark.timeout(120)
def test_rank_outside_any_wait_is_ended(run_shmrma, tmp_path):
    """A rank busy outside shmrma (sleeping far longer than the test waits)
    when another fails is still ended, and the status stays the failing rank's."""
    prog = program(tmp_path, '''
        comm.Barrier()
        if rank == 0:
            time.sleep(0.2)
            raise RuntimeError("rank zero fails")
        time.sleep(%d)
    ''' % (10 * HANG_S))
    result = run_shmrma(["-n", "2", prog], timeout=HANG_S)
    assert result.returncode == 1
    assert culprit_lines(result.stderr) == [
        "shmrma-run: rank 0 exited with status 1; the job was ended"]


@pytest.mark.timeout(120)
def test_dead_peer_is_noticed(run_shmrma, tmp_path):
    """A recv from a rank that already exited raises instead of
    hanging; the waiting rank is the one named."""
    prog = program(tmp_path, '''
        if rank == 0:
            comm.recv(source=1, tag=11)
    ''')
    result = run_shmrma(["-n", "2", prog], timeout=HANG_S)
    assert result.returncode == 1
    assert "rank 1 has exited" in result.stderr
    assert culprit_lines(result.stderr) == [
        "shmrma-run: rank 0 exited with status 1; the job was ended"]


@pytest.mark.timeout(120)
def test_abort_status(run_shmrma, tmp_path):
    """COMM_WORLD.Abort(5) ends the job with status 5 naming the rank."""
    prog = program(tmp_path, '''
        leave_segment()
        if rank == 1:
            comm.Abort(5)
        comm.Barrier()
    ''')
    result = run_shmrma(["-n", "2", prog], timeout=HANG_S)
    assert result.returncode == 5
    assert "rank 1 called MPI_Abort(MPI_COMM_WORLD, 5)" in result.stderr
    assert culprit_lines(result.stderr) == [
        "shmrma-run: rank 1 exited with status 5; the job was ended"]
    assert_swept(tmp_path)


INTERRUPTIBLE = '''
leave_segment()
ready()
if rank == 0:
    comm.recv(source=1, tag=3)
else:
    time.sleep(%d)      # far longer than a test waits for the job to end
''' % (10 * HANG_S)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("signum,said", [(signal.SIGINT, "interrupted (Ctrl-C)"),
                                         (signal.SIGTERM, "terminated by SIGTERM")])
def test_ctrl_c_or_sigterm_to_launcher(popen, tmp_path, signum, said):
    """SIGINT to the launcher ends the job with 130, ranks blocked
    in recv or sleeping included; no segment is left. SIGTERM (a batch system ending
    the job) does the same with 143."""
    prog = program(tmp_path, INTERRUPTIBLE)
    job = popen(["-n", "2", prog])
    wait_for_files(tmp_path, "ready.*", 2)
    job.proc.send_signal(signum)
    out, err = job.communicate()
    assert job.proc.returncode == 128 + signum
    assert culprit_lines(err) == ["shmrma-run: %s; the job was ended" % said]
    assert "Traceback" not in err
    assert_swept(tmp_path)


def test_a_directory_as_the_program_says_so(run_shmrma, tmp_path):
    result = run_shmrma(["-n", "2", str(tmp_path)], timeout=30)
    assert result.returncode == 2
    assert "is a directory" in result.stderr and "no such file" not in result.stderr


@pytest.mark.timeout(180)
def test_ctrl_c_to_process_group(popen, tmp_path):
    """Ctrl-C in a terminal (SIGINT to the whole process group)
    ends the job with 130, reported as an interrupt, not a rank failure."""
    prog = program(tmp_path, INTERRUPTIBLE)
    job = popen(["-n", "2", prog])
    wait_for_files(tmp_path, "ready.*", 2)
    os.killpg(job.proc.pid, signal.SIGINT)
    out, err = job.communicate()
    assert job.proc.returncode == 130
    assert culprit_lines(err) == ["shmrma-run: interrupted (Ctrl-C); the job was ended"]
    assert "Traceback" not in err
    assert_swept(tmp_path)


@pytest.mark.timeout(180)
def test_ctrl_c_rank_that_ignores_it(popen, tmp_path):
    """A rank that swallows KeyboardInterrupt (and would go on far longer
    than the test waits) is killed after the grace period; the job still ends with
    130."""
    prog = program(tmp_path, '''
        ready()
        deadline = time.time() + %d
        while time.time() < deadline:
            try:
                time.sleep(0.05)
            except KeyboardInterrupt:
                pass
    ''' % (10 * HANG_S))
    job = popen(["-n", "2", prog])
    wait_for_files(tmp_path, "ready.*", 2)
    os.killpg(job.proc.pid, signal.SIGINT)
    out, err = job.communicate()
    assert job.proc.returncode == 130


@pytest.mark.timeout(240)
def test_launcher_killed_takes_ranks_down(popen, tmp_path):
    """SIGKILL to the launcher kills every rank (PR_SET_PDEATHSIG) and the
    segment a rank created mid-job is still swept."""
    prog = program(tmp_path, INTERRUPTIBLE)
    job = popen(["-n", "2", prog])
    wait_for_files(tmp_path, "ready.*", 2)
    pids = [int((tmp_path / ("pid.%d" % r)).read_text()) for r in range(2)]
    assert all(pid_alive(pid) for pid in pids)
    job.proc.kill()  # the launcher only, not its group
    job.communicate()
    deadline = time.monotonic() + HANG_S
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not [pid for pid in pids if pid_alive(pid)], "ranks survived their launcher"
    assert_swept(tmp_path, wait=HANG_S)


@pytest.mark.timeout(120)
def test_timeout_reports_every_rank(run_shmrma, tmp_path):
    """--timeout prints each rank's Python stack and what it waits
    for (a recv names its source and tag), then ends the job with 124."""
    prog = program(tmp_path, '''
        leave_segment()
        def stuck_in_recv():
            comm.recv(source=2, tag=42)
        def stuck_in_barrier():
            comm.Barrier()
        if rank == 0:
            stuck_in_recv()
        elif rank == 1:
            stuck_in_barrier()
        else:
            time.sleep(60)
    ''')
    start = time.monotonic()
    result = run_shmrma(["-n", "3", "--timeout", "1.5", prog], timeout=HANG_S)
    assert time.monotonic() - start >= 1.5      # not before its timeout
    assert result.returncode == 124
    err = result.stderr
    blocks = re.split(r"^--- ", err, flags=re.M)[1:]
    assert len(blocks) == 3, err
    assert blocks[0].startswith("rank 0") and "waiting for a message from rank 2 with tag 42" \
        in blocks[0].splitlines()[0]
    assert blocks[1].startswith("rank 1") and "waiting for Barrier" in blocks[1].splitlines()[0]
    assert blocks[2].startswith("rank 2") and "not waiting" in blocks[2].splitlines()[0]
    assert re.search(r'prog\.py", line \d+ in stuck_in_recv', blocks[0])
    assert re.search(r'prog\.py", line \d+ in stuck_in_barrier', blocks[1])
    assert re.search(r'prog\.py", line \d+ in <module>', blocks[2])
    assert "timed out after 1.5 s" in culprit_lines(err)[-1]
    assert_swept(tmp_path)


@pytest.mark.timeout(60)
def test_timeout_report_names_who_holds_the_lock_a_rank_waits_for(run_shmrma, tmp_path):
    """Issue (drop-in): a rank waiting for a window lock is reported with the rank(s)
    holding it, exclusively or shared (control.py's hold matrix), on either engine."""
    prog = program(tmp_path, '''
        leave_segment()
        win = MPI.Win.Allocate(8, comm=comm)
        if rank == 0:
            win.Lock(2, MPI.LOCK_EXCLUSIVE)
            win.Lock(1, MPI.LOCK_SHARED)
        elif rank == 3:
            win.Lock(1, MPI.LOCK_SHARED)
        comm.Barrier()
        if rank == 1:
            win.Lock(2, MPI.LOCK_SHARED)
        elif rank == 2:
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
        time.sleep(60)
    ''')
    for engine in ("1", "0"):
        result = run_shmrma(["-n", "4", "--timeout", "2", prog], timeout=30,
                            env={"SHMRMA_NATIVE": engine})
        assert result.returncode == 124
        firsts = [block.splitlines()[0] for block in
                  re.split(r"^--- ", result.stderr, flags=re.M)[1:]]
        assert "a shared lock on rank 2's window (held exclusively by rank 0)" in firsts[1]
        assert "an exclusive lock on rank 1's window (held shared by ranks 0, 3)" in firsts[2]


# --- output, scale, process model -------------------------------------------------

@pytest.mark.timeout(60)
def test_tag_output(run_shmrma, tmp_path):
    """-l/--tag-output prefixes every stdout and stderr line with "[rank] "."""
    prog = program(tmp_path, '''
        print("line one of", rank)
        print("line two of", rank, flush=True)
        print("to stderr from", rank, file=sys.stderr)
        sys.stdout.write("no newline from %d" % rank)
    ''')
    for flag in ("-l", "--tag-output"):
        result = run_shmrma(["-n", "2", flag, prog], timeout=30)
        assert result.returncode == 0, result.stderr
        out = result.stdout.splitlines()
        assert len(out) == 6
        for r in range(2):
            assert "[%d] line one of %d" % (r, r) in out
            assert "[%d] line two of %d" % (r, r) in out
            assert "[%d] no newline from %d" % (r, r) in out
            assert "[%d] to stderr from %d" % (r, r) in result.stderr.splitlines()
        assert all(re.match(r"\[[01]\] ", line) for line in out)
    plain = run_shmrma(["-n", "2", prog], timeout=30)
    assert "line one of 0" in plain.stdout and "[0]" not in plain.stdout


@pytest.mark.timeout(60)
def test_leftover_message_segment_swept_on_success(run_shmrma, tmp_path):
    """A 1 MiB message never received leaves a named segment while the job
    runs; the launcher removes it when the job ends with status 0."""
    prog = program(tmp_path, 'leave_segment()\n')
    result = run_shmrma(["-n", "2", prog], timeout=30)
    assert result.returncode == 0, result.stderr
    assert_swept(tmp_path)


@pytest.mark.timeout(120)
def test_eight_ranks_on_two_cores_run_barriers_and_allreduce(run_shmrma, tmp_path):
    """8 ranks on 2 cores: 300 Barriers and 300 allreduce finish, with the
    right sums. (How fast: benchmarks/bench_runtime.py's Barrier at 8 ranks, and
    shmrma-bench compare --suite messages.)"""
    prog = program(tmp_path, '''
        for i in range(300):
            comm.Barrier()
        total = 0
        for i in range(300):
            total += comm.allreduce(rank + i)
        assert total == sum(28 + 8 * i for i in range(300)), total
        if rank == 0:
            print("done", flush=True)
    ''')
    result = run_shmrma(["-n", "8", prog], timeout=HANG_S)
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout


@pytest.mark.timeout(60)
def test_ranks_start_without_threads(run_shmrma, tmp_path):
    """The launcher forks before any thread: a rank has one thread at start."""
    path = tmp_path / "threads.py"
    path.write_text(textwrap.dedent('''
        import os, sys, threading
        counts = (threading.active_count(), len(os.listdir("/proc/self/task")))
        from shmrma import MPI
        sys.stdout.write("rank %d threads %r\\n" % (MPI.COMM_WORLD.Get_rank(), counts))
    '''))
    result = run_shmrma(["-n", "3", path], timeout=30)
    assert result.returncode == 0, result.stderr
    for r in range(3):
        assert "rank %d threads (1, 1)" % r in result.stdout


@pytest.mark.timeout(60)
def test_singleton_without_launcher(tmp_path):
    """`python prog.py` is a world of one rank and leaves no segment,
    not even one still named at exit: the counter segment of a window never freed (R152),
    nor anything a large message to itself never received left behind."""
    path = tmp_path / "single.py"
    path.write_text(textwrap.dedent('''
        import os
        from shmrma import MPI
        c = MPI.COMM_WORLD
        c.Send(bytearray(1 << 20), dest=0, tag=1)
        win = MPI.Win.Allocate(1 << 16, comm=c)
        syncs = win.Alloc_sync_objects(2)
        from shmrma.core import job as j
        job = j.current().job_id
        named = [n for n in os.listdir("/dev/shm") if n.startswith("shmrma.%s." % job)]
        print("rank", c.Get_rank(), "size", c.Get_size(), "job", job, "named", len(named))
    '''))
    env = dict(os.environ)
    env.pop("SHMRMA_JOB", None)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=30, env=env)
    assert result.returncode == 0, result.stderr
    match = re.search(r"rank 0 size 1 job (\w+) named (\d+)", result.stdout)
    assert match, result.stdout
    assert int(match.group(2)) >= 1
    assert job_segments(match.group(1)) == []
