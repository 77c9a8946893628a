"""--trace and --profile from start to end: a recorder in each rank, and the
gathering of their records into the timeline and the report once the ranks
have ended (by the launcher; by a singleton itself, at its exit)."""
import atexit
import json
import os
import shutil
import sys
import tempfile
import time

from ..core import job, settings
from . import calls, recorder, records, report, timeline


SAY_WRITING = 500000        # calls: a timeline this long takes seconds to write


def install():
    """Record the MPI calls of every rank this process becomes (once)."""
    calls.install()
    job.on_new_rank(_start_rank)
    job.on_long_wait(_noted)


def _noted(text):
    log = recorder.current()
    if log is not None:
        log.wait_noted(text)


def _start_rank():
    gathering = None
    parts = settings.observe_parts()
    if parts is None:           # no launcher gathers: a singleton does it at exit
        gathering = Gathering()
        parts = gathering.parts
    log = recorder.Recorder(job.current().rank, parts, settings.trace_file() is not None,
                            settings.profile_target() is not None)
    recorder.active[0] = log
    os.register_at_fork(after_in_child=recorder.forget_in_child)
    atexit.register(_end_rank, log, gathering)


def _end_rank(log, gathering):
    if recorder.current() is not log:
        return
    log.end()
    recorder.active[0] = None
    if gathering is not None:
        gathering.finish(1, {0: "exited"})


class Gathering:
    """Where a job's ranks leave their records (a directory beside the trace, or
    a temporary one), made before they start so that a path that cannot be
    written is said before the job runs (OSError, naming it)."""

    def __init__(self):
        self.trace, self.profile = settings.trace_file(), settings.profile_target()
        self.started = time.monotonic_ns()
        for path, what in ((self.trace, settings.TRACE_VARIABLE),
                           (self.profile, settings.PROFILE_VARIABLE)):
            if path:
                check_writable(path, what)
        where = os.path.dirname(os.path.abspath(self.trace)) if self.trace else None
        self.parts = tempfile.mkdtemp(prefix=".shmrma-records-", dir=where)

    def environment(self):
        """What the ranks need to find it."""
        return {settings.OBSERVE_PARTS_VARIABLE: self.parts}

    def finish(self, nranks, statuses, stream=None):
        """Write the timeline and the report from the ranks' records; says on
        ``stream`` (stderr) the report and anything to note."""
        stream = stream or sys.stderr
        try:
            if self.trace:
                parts = records.parts(self.parts)
                count = sum(len(part.events) for part in parts)
                if count >= SAY_WRITING:    # some seconds: say what the wait is for
                    stream.write("shmrma: --trace: writing %d calls to %s\n"
                                 % (count, self.trace))
                    stream.flush()
                notes = timeline.write(self.trace, parts, self.started, statuses, nranks)
                for note in notes:
                    stream.write("shmrma: --trace: %s\n" % note)
            if self.profile is not None:
                summary = report.summary(report.read(self.parts), nranks)
                stream.write(report.text(summary))
                if self.profile:
                    with open(self.profile, "w") as f:
                        json.dump(summary, f, indent=1)
                        f.write("\n")
        finally:
            shutil.rmtree(self.parts, ignore_errors=True)


class Unwritable(Exception):
    """A file --trace or --profile names cannot be written."""


def check_writable(path, what):
    """Refuse, before the job, a file ``what`` names that cannot be written."""
    if os.path.isdir(path):
        raise Unwritable("%s: %s is a directory; name a file" % (what, path))
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        raise Unwritable("%s: cannot write %s: %s" % (what, path, exc.strerror)) from None
    if not existed:
        os.unlink(path)
