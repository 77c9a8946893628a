"""Starting ranks and ending jobs cleanly: shared by ``shmrma-run`` and ``launch``.

The launcher creates the world segment, forks every rank before any thread
exists (numpy is not imported here: its BLAS pool would be a thread), and
watches them. The first rank that fails (exception, non-zero exit, signal)
aborts the job: waits in the other ranks raise within a wait slice, anything
still running after a grace period is killed, and every segment of the job
still named in /dev/shm is unlinked, however the job ended.
"""
import ctypes
import errno
import faulthandler
import fcntl
import os
import selectors
import signal
import sys
import time
import traceback

from .. import check
from ..core import errors, job, segments, settings
from . import mpi4py_alias

GRACE_SECONDS = 1.0
DIAGNOSTIC_SECONDS = 1.0
TIMEOUT_STATUS = 124
PR_SET_PDEATHSIG = 1
PR_SET_PTRACER = 0x59616D61
PR_SET_PTRACER_ANY = -1


class Outcome:
    """How a job ended: ``status`` for the shell, the failing rank, and why."""

    def __init__(self):
        self.status = 0
        self.culprit = None
        self.reason = None
        self.timed_out = False
        self.timeout_report = ""
        self.interrupted = False
        self.exit_codes = {}
        self.wait_statuses = {}


def exit_status(wait_status):
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def describe_status(wait_status):
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return "was killed by %s (status %d)" % (name, 128 + number)
    return "exited with status %d" % os.WEXITSTATUS(wait_status)


class Job:
    """A set of forked ranks sharing one world segment."""

    def __init__(self, nranks, timeout=None, tag_output=False, universe=None,
                 spawned_body=None):
        settings.mpi4py_alias()     # a bad SHMRMA_MPI4PY fails here, not in every rank
        self.gathering = None       # --trace, --profile: where the ranks leave records
        if settings.observing():    # first: a file it cannot write leaves nothing behind
            from ..observe import session
            self.gathering = session.Gathering()
        self.nranks = nranks
        self.timeout = timeout
        self.tag_output = tag_output
        self.job_id = job.new_job_id()
        # a job that can spawn has DEFAULT_SLOTS slots at least, --universe-size exactly;
        # under the race checker, whose clocks are sized for every slot up front (12 MB
        # for 16), only those asked for
        spare = spawned_body is not None and not settings.checking()
        slots = universe or (max(nranks, job.DEFAULT_SLOTS) if spare else nranks)
        self.world = job.World.create(self.job_id, nranks, slots, universe)
        self.race_check = None
        if settings.checking():
            from ..check import clock
            self.race_check = clock.start_session(self.job_id, self.world.size)
        if self.gathering is not None:
            os.environ.update(self.gathering.environment())     # the ranks inherit it
        self.sweeper_fd = _start_sweeper(self.job_id)
        self.pids = {}
        self.diagnostics = {}
        self.readers = {}
        self.outcome = Outcome()
        # Spawn (comm/spawn.py): a rank writes its request down this pipe, and the
        # launcher forks the children, which run spawned_body(argv) (shmrma-run's)
        self.spawned_body = spawned_body
        self.spawn_read = self.spawn_pending = None
        if spawned_body is not None and self.world.size > nranks:
            self.spawn_read, self.world.spawn_fd = os.pipe()
            self.world.spawn_program = spawned_body    # the root checks a request with it
            self.spawn_pending = b""

    def summaries(self, status):
        """The job's exit status, after the race checker's summary when it ran and
        the timeline and profile when asked for."""
        self._observed()
        if self.race_check is None:
            return status
        from ..check import clock
        text, found = clock.summary(self.race_check)
        sys.stderr.write(text)
        return status or (check.RACE_STATUS if found else 0)

    def _observed(self):
        if self.gathering is None:
            return
        for name in self.gathering.environment():
            os.environ.pop(name, None)
        statuses = {rank: describe_status(wait_status)
                    for rank, wait_status in self.outcome.wait_statuses.items()}
        self.gathering.finish(self.nranks, statuses)

    # --- starting ------------------------------------------------------------------
    def start(self, rank_main):
        """Fork every rank; ``rank_main(rank)`` runs in the child and returns its exit code."""
        for rank in range(self.nranks):
            self._fork(rank, rank_main)

    def _fork(self, rank, rank_main, selector=None, setup=None):
        """Fork ``rank``; ``setup(world)`` first, in the child (a spawned one's world)."""
        diag_read, diag_write = os.pipe()
        outputs = [os.pipe(), os.pipe()] if self.tag_output else None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(diag_read)
            if setup is not None:
                setup(self.world)
            self._in_child(rank, rank_main, diag_write, outputs)
        os.close(diag_write)
        _nonblocking(diag_read)
        self.pids[pid] = rank
        self.diagnostics[rank] = diag_read
        if outputs:
            for stream, (read_end, write_end) in zip((sys.stdout, sys.stderr), outputs):
                os.close(write_end)
                self.readers[read_end] = _LinePrefixer(rank, stream)
                if selector is not None:
                    _nonblocking(read_end)
                    selector.register(read_end, selectors.EVENT_READ)

    def _spawn(self, selector):
        """Start the children of every complete request in the pipe (comm/spawn.py
        writes each as its length, then its pickle)."""
        import pickle
        import struct
        try:
            self.spawn_pending += os.read(self.spawn_read, 65536)
        except BlockingIOError:
            return
        while len(self.spawn_pending) >= 4:
            size, = struct.unpack_from("<I", self.spawn_pending)
            if len(self.spawn_pending) < 4 + size:
                return
            request = pickle.loads(self.spawn_pending[4:4 + size])
            self.spawn_pending = self.spawn_pending[4 + size:]
            for rank, argv, workdir in request["children"]:
                self._fork(rank, self._spawned_main(argv, workdir), selector,
                           _spawned_world(request))

    def _spawned_main(self, argv, workdir):
        def main(rank):
            if workdir:
                os.chdir(workdir)
            return run_rank_body(self.world, rank, self.spawned_body(argv, workdir))[0]
        return main

    def _in_child(self, rank, rank_main, diag_write, outputs):
        code = 1
        try:
            _die_with_parent()
            if outputs:
                for fd, (read_end, write_end) in zip((1, 2), outputs):
                    os.close(read_end)
                    os.dup2(write_end, fd)
                    os.close(write_end)
            for fd in list(self.diagnostics.values()) + list(self.readers):
                os.close(fd)
            if self.spawn_read is not None:
                os.close(self.spawn_read)
            _whole_lines(sys.stdout, sys.stderr)
            signal.signal(signal.SIGINT, _interrupted)
            faulthandler.register(signal.SIGUSR1, file=diag_write, all_threads=True)
            import atexit
            atexit._clear()
            job.become_rank(self.world, rank)
            _inherited_mpi4py[:] = [sys.modules.get("mpi4py.MPI")]
            mpi4py_alias.install()
            code = rank_main(rank)
        except KeyboardInterrupt:
            code = 128 + signal.SIGINT  # a second Ctrl-C while the rank was ending
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    # --- watching ------------------------------------------------------------------
    def supervise(self):
        """Wait for every rank; abort on the first failure; returns the Outcome."""
        selector = selectors.DefaultSelector()
        wake_read, wake_write = os.pipe()
        _nonblocking(wake_read)
        _nonblocking(wake_write)
        previous = _install_wakeups(wake_write, self)
        selector.register(wake_read, selectors.EVENT_READ)
        if self.spawn_read is not None:
            _nonblocking(self.spawn_read)
            selector.register(self.spawn_read, selectors.EVENT_READ)
        for fd in self.readers:
            _nonblocking(fd)
            selector.register(fd, selectors.EVENT_READ)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        kill_at = None
        try:
            while self.pids:
                self._reap()
                if not self.pids:
                    break
                now = time.monotonic()
                if self._interrupt_pending and not self.outcome.interrupted:
                    self._interrupted()
                    kill_at = now + GRACE_SECONDS
                if deadline is not None and now >= deadline and not self.outcome.timed_out:
                    self._timed_out()
                    kill_at = now
                if self.outcome.culprit is not None and kill_at is None:
                    kill_at = now + GRACE_SECONDS
                if kill_at is not None and now >= kill_at:
                    self._kill_all(signal.SIGKILL)
                wait = [t - now for t in (deadline, kill_at) if t is not None]
                for key, _ in selector.select(max(0.0, min(wait)) if wait else None):
                    if key.fd == wake_read:
                        _drain(wake_read)
                    elif key.fd == self.spawn_read:
                        if self.outcome.culprit is None:
                            self._spawn(selector)
                    else:
                        self._relay(selector, key.fd)
        finally:
            _restore_wakeups(previous)
            for fd in list(self.readers):
                self._relay(selector, fd, final=True)
            selector.close()
            os.close(wake_read)
            os.close(wake_write)
            for fd in self.diagnostics.values():
                os.close(fd)
            self.diagnostics.clear()
            for fd in (self.spawn_read, self.world.spawn_fd):
                if fd is not None:
                    os.close(fd)
            self.spawn_read = self.world.spawn_fd = None
            segments.sweep(self.job_id)
            if self.sweeper_fd is not None:
                os.close(self.sweeper_fd)
                self.sweeper_fd = None
        return self.outcome

    _interrupt_pending = 0      # the signal (SIGINT, SIGTERM) that asks the job to end

    def _reap(self):
        while self.pids:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.pids.clear()
                return
            if pid == 0:
                return
            rank = self.pids.pop(pid, None)
            if rank is not None:
                self._rank_ended(rank, wait_status)

    def _rank_ended(self, rank, wait_status):
        status = exit_status(wait_status)
        self.outcome.exit_codes[rank] = status
        self.outcome.wait_statuses[rank] = wait_status
        if status == 0:
            if self.world.state(rank) != job.EXITED:
                self.world.set_state(rank, job.EXITED)
            return
        self._blame(rank, status, wait_status)
        # after the abort, so a rank waiting on this one stops as a follower
        self.world.set_state(rank, job.FAILED)

    def _blame(self, rank, status, wait_status):
        """Name ``rank`` as the job's culprit unless another rank or Ctrl-C came first."""
        if self._interrupt_pending and not self.outcome.interrupted:
            self._interrupted()  # Ctrl-C reached the ranks too: the job was interrupted
        if self.outcome.culprit is not None:
            return
        aborted_by = self.world.abort_rank()
        if aborted_by >= 0 and aborted_by != rank:
            return  # a follower of the abort; the rank that caused it is reported when reaped
        self.world.abort(rank)
        self.outcome.culprit = rank
        self.outcome.status = status
        self.outcome.reason = "rank %d %s" % (rank, describe_status(wait_status))

    def _interrupted(self):
        """Ctrl-C (SIGINT) or SIGTERM reached the launcher: end the job with it."""
        signum = self._interrupt_pending
        self.outcome.interrupted = True
        if self.outcome.culprit is None:
            self.outcome.status = 128 + signum
            self.outcome.culprit = -1
            self.outcome.reason = ("interrupted (Ctrl-C)" if signum == signal.SIGINT
                                   else "terminated by %s" % signal.Signals(signum).name)
        self.world.abort(-1)
        self._kill_all(signum)

    def _timed_out(self):
        self.outcome.timed_out = True
        self.outcome.status = TIMEOUT_STATUS
        self.outcome.culprit = -1
        self.outcome.reason = "timed out after %g s" % self.timeout
        self.outcome.timeout_report = self.timeout_report()
        self.world.abort(-1)

    def timeout_report(self):
        """Each live rank's Python stack and what it waits for."""
        lines = ["shmrma: the job timed out after %g s; what every rank was doing:\n"
                 % self.timeout]
        for pid, rank in sorted(self.pids.items(), key=lambda item: item[1]):
            waiting = self.world.waiting_text(rank)
            doing = ("waiting for " + waiting if waiting
                     else "not waiting in shmrma (computing, sleeping or in other code)")
            lines.append("--- rank %d (pid %d): %s\n" % (rank, pid, doing))
            lines.append(self._stack_of(pid, rank))
        return "".join(lines)

    def _stack_of(self, pid, rank):
        fd = self.diagnostics[rank]
        _drain(fd)
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            return "(the process is gone)\n"
        chunks = []
        end = time.monotonic() + DIAGNOSTIC_SECONDS
        while time.monotonic() < end:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                if chunks and not _more_soon(fd, 0.05):
                    break
                _more_soon(fd, 0.05)
                continue
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks).decode("utf-8", "replace") or "(no stack received)\n"

    def _kill_all(self, signum):
        for pid in list(self.pids):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def _relay(self, selector, fd, final=False):
        prefixer = self.readers.get(fd)
        if prefixer is None:
            return
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            if not data:
                prefixer.close()
                del self.readers[fd]
                if not final:
                    selector.unregister(fd)
                os.close(fd)
                return
            prefixer.feed(data)


class _LinePrefixer:
    """Writes a rank's output line by line behind ``[rank] ``."""

    def __init__(self, rank, stream):
        self.prefix = ("[%d] " % rank).encode()
        self.stream = stream
        self.partial = b""

    def feed(self, data):
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if lines:
            self._write(b"".join(self.prefix + line + b"\n" for line in lines))

    def close(self):
        if self.partial:
            self._write(self.prefix + self.partial + b"\n")
            self.partial = b""

    def _write(self, data):
        self.stream.flush()
        os.write(self.stream.fileno(), data)


def _whole_lines(*streams):
    """Write each line in one system call, so lines of ranks sharing a terminal never mix.

    Python's unbuffered mode (PYTHONUNBUFFERED) writes a print's text and its newline
    separately; line buffering keeps a line together and still flushes at its end.
    """
    for stream in streams:
        try:
            stream.reconfigure(line_buffering=True, write_through=False)
        except (AttributeError, ValueError):
            pass  # replaced by the program's caller with something that is not a TextIOWrapper


def _nonblocking(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)


def _drain(fd):
    try:
        while os.read(fd, 65536):
            pass
    except (BlockingIOError, OSError):
        pass


def _more_soon(fd, seconds):
    import select
    ready, _, _ = select.select([fd], [], [], seconds)
    return bool(ready)


def _spawned_world(request):
    """What makes a forked process one of a Spawn's children: its COMM_WORLD is
    their group, with the context and barrier slot the spawning root planned,
    and its parent intercommunicator's plan (comm/spawn.py)."""
    def setup(world):
        world.group = tuple(request["group"])
        world.world_context, world.world_slot = request["context"], request["slot"]
        world.parent = request["parent"]
    return setup


def _die_with_parent():
    """A rank must not outlive its launcher, whatever kills the launcher."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # Ranks reach each other's private memory (Win.Create) with process_vm_*.
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


def _start_sweeper(job_id):
    """Start a detached process that sweeps the job's names once nobody holds the pipe.

    The launcher and every rank (through fork) hold the returned write end. The
    launcher sweeps at the end of supervise(); the sweeper covers a launcher
    killed by SIGKILL, whose ranks die with it and leave nobody to clean up.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()  # out of the job's process group: Ctrl-C does not reach it
            if os.fork() == 0:
                _sweep_when_orphaned(read_end, job_id)
        finally:
            os._exit(0)
    os.close(read_end)
    os.waitpid(pid, 0)
    return write_end


def _sweep_when_orphaned(read_end, job_id):
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # never keep a caller's pipe open
        os.closerange(3, read_end)
        os.closerange(read_end + 1, 65536)
        while os.read(read_end, 4096):
            pass
        segments.sweep(job_id)
    finally:
        os._exit(0)


def _install_wakeups(wake_write, owner):
    def on_interrupt(signum, frame):
        owner._interrupt_pending = signum

    previous = {
        "fd": signal.set_wakeup_fd(wake_write),
        signal.SIGCHLD: signal.signal(signal.SIGCHLD, lambda s, f: None),
    }
    if _in_main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_interrupt)
    return previous


def _restore_wakeups(previous):
    signal.set_wakeup_fd(previous.pop("fd"))
    for signum, handler in previous.items():
        signal.signal(signum, handler)


_interrupt_seen = False


def _interrupted(signum, frame):
    """A rank's SIGINT handler: Python's own, noting that the signal came."""
    global _interrupt_seen
    _interrupt_seen = True
    signal.default_int_handler(signum, frame)


def _in_main_thread():
    import threading
    return threading.current_thread() is threading.main_thread()


# --- the body of a rank ---------------------------------------------------------------

def run_rank_body(world, rank, body, print_failure=True):
    """Run ``body()`` as ``rank``: returns (exit code, value, failure text).

    A failure aborts the job so that the other ranks stop waiting; a rank that
    stops because of somebody else's failure says so in one line.
    """
    import atexit
    value = failure = None
    try:
        value = body()
        _join_threads()
        code = 0
    except SystemExit as exc:
        code, failure = _system_exit_code(exc)
        if code == 0:
            _join_threads()
    except errors.JobAborted as exc:
        code, failure = 1, "shmrma: rank %d stopped: %s\n" % (rank, exc.message)
    except KeyboardInterrupt as exc:
        if _in_main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the launcher's own SIGINT follows
        code = 128 + signal.SIGINT
        # Ctrl-C: one line per rank; a KeyboardInterrupt the program raised: its traceback
        failure = ("shmrma: rank %d interrupted\n" % rank if _interrupt_seen
                   else _user_traceback(exc))
    except BaseException as exc:
        code, failure = 1, _user_traceback(exc)
    if failure and print_failure:
        sys.stderr.write(failure)
    try:
        atexit._run_exitfuncs()
        _finalize_installed_mpi4py()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if job.abort_status():     # as COMM_WORLD.Abort(status) at exit (mpi4py.run)
        code = job.abort_status() & 0xFF or 1
        sys.stderr.write(job.abort_line(rank, "MPI_COMM_WORLD", job.abort_status()))
    if code == 0:
        world.set_state(rank, job.EXITED)
    else:
        world.fail(rank)
    return code, value, failure


def exec_rank(world, rank, path, args):
    """Replace this rank by a program that is not Python (``mpiexec -n 2 hostname``).

    It runs as an MPI launcher's process would, with the rank variables launchers
    set, but outside MPI: a Python it starts is not a rank of this job, and a
    shmrma it imports refuses to be a world of one (job.LAUNCHER_SIZE_VARIABLES).
    Returns only when the program cannot start: 127, not found; 126, not runnable.
    """
    environment = dict(os.environ)
    environment.update(job.launcher_variables(rank, len(world.group)))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(path, [path] + list(args), environment)
    except OSError as exc:
        sys.stderr.write("shmrma: rank %d cannot run %s: %s\n" % (rank, path, exc.strerror))
        return 127 if exc.errno == errno.ENOENT else 126


# The installed mpi4py.MPI the rank found loaded when it started (its launcher's,
# which the fork copied: not the rank's own to finalize)
_inherited_mpi4py = [None]


def _finalize_installed_mpi4py():
    """A rank that loaded the installed mpi4py (SHMRMA_MPI4PY=0) ends as Python would:
    with its MPI finalized, which mpi4py leaves to the interpreter's own exit (that a
    rank's os._exit skips), so that its MPI's shared memory goes with it."""
    installed = sys.modules.get("mpi4py.MPI")
    if installed is None or installed.__name__ != "mpi4py.MPI" or \
            installed is _inherited_mpi4py[0]:
        return      # none, shmrma's own under mpi4py's name, or the launcher's
    try:
        if installed.Is_initialized() and not installed.Is_finalized():
            installed.Finalize()
    except Exception as exc:  # noqa: BLE001 - the rank ends anyway; say why it could not
        sys.stderr.write("shmrma: the installed mpi4py's Finalize failed: %s\n" % exc)


def _join_threads():
    """Wait for the threads the program left running, as Python does before it exits
    (a thread that is not a daemon outlives the main code: dask-mpi's client thread).

    Python's own exit calls threading._shutdown, which first runs the hooks that tell
    thread pools to stop (concurrent.futures' workers wait for them) and then joins
    every thread that is not a daemon; a rank calls the same function."""
    import threading
    if _in_main_thread() and hasattr(threading, "_shutdown"):
        threading._shutdown()
        return
    while True:
        running = [thread for thread in threading.enumerate() if not thread.daemon
                   and thread is not threading.current_thread() and thread.is_alive()]
        if not running:
            return
        for thread in running:
            thread.join()


def _user_traceback(exc):
    """The traceback as `python prog.py` would show it, without the launcher's frames."""
    tb = exc.__traceback__
    while tb is not None and _is_launcher_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _is_launcher_frame(filename):
    return (filename == __file__ or filename.endswith(("shmrma/run/cli.py", "<frozen runpy>"))
            or filename.endswith("runpy.py"))


def _system_exit_code(exc):
    if exc.code is None:
        return 0, None
    if isinstance(exc.code, int):
        return exc.code & 0xFF, None
    return 1, "%s\n" % exc.code


# --- running a Python function on N ranks ----------------------------------------

class LaunchError(RuntimeError):
    """A rank of ``launch`` failed; ``rank`` and ``details`` (its traceback) say how."""

    def __init__(self, message, rank=None, details="", status=None):
        RuntimeError.__init__(self, message + ("\n" + details if details else ""))
        self.rank = rank
        self.details = details
        self.status = status


def launch(fn, nprocs, args=(), kwargs=None, timeout=None):
    """Run ``fn(*args, **kwargs)`` on ``nprocs`` ranks; returns the per-rank results."""
    import pickle
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError("nprocs must be a positive int, not %r" % (nprocs,))
    kwargs = kwargs or {}
    runner = Job(nprocs, timeout=timeout)
    result_pipes = {}

    def rank_main(rank):
        for other, (_, write_end) in result_pipes.items():
            if other != rank:
                os.close(write_end)
        code, value, failure = run_rank_body(runner.world, rank, lambda: fn(*args, **kwargs),
                                             print_failure=False)
        report = (True, value) if code == 0 else (False, failure)
        try:
            data = pickle.dumps(report, pickle.HIGHEST_PROTOCOL)
        except Exception:
            data = pickle.dumps((False, "rank %d returned an object that cannot be pickled:\n%s"
                                 % (rank, traceback.format_exc())))
            code = 1
        _write_all(result_pipes[rank][1], data)
        return code

    for rank in range(nprocs):
        result_pipes[rank] = os.pipe()
    collected = {rank: [] for rank in range(nprocs)}
    for rank, (read_end, _) in result_pipes.items():
        runner.readers[read_end] = _Collector(collected[rank])
    try:
        runner.start(rank_main)
    finally:
        for _, write_end in result_pipes.values():
            os.close(write_end)
    outcome = runner.supervise()
    runner.summaries(0)     # the race checker's summary, --trace's; the results still return
    reports = {rank: pickle.loads(b"".join(chunks)) if chunks else None
               for rank, chunks in collected.items()}
    return _results_or_raise(outcome, reports, timeout)


class _Collector:
    def __init__(self, chunks):
        self.chunks = chunks

    def feed(self, data):
        self.chunks.append(data)

    def close(self):
        pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                return
            raise
        view = view[written:]


def _results_or_raise(outcome, reports, timeout):
    if outcome.timed_out:
        raise LaunchError("launch: the ranks did not finish within %g s" % timeout,
                          details=outcome.timeout_report, status=TIMEOUT_STATUS)
    if outcome.culprit is not None and outcome.culprit >= 0:
        rank = outcome.culprit
        report = reports.get(rank)
        details = report[1] if report and not report[0] else ""
        raise LaunchError("launch: %s" % outcome.reason, rank=rank, details=details,
                          status=outcome.status)
    if outcome.interrupted:
        raise KeyboardInterrupt
    return [report[1] for _, report in sorted(reports.items())]
