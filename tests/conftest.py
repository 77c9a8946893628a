"""Shared test fixtures.

- The session fails if it leaves a shmrma segment in /dev/shm (a crash must not leak one).
- ``run_shmrma(args, ...)`` runs ``python -m shmrma.run *args`` with a hard timeout.
"""
import os
import subprocess
import sys
import time

import pytest

SHM_DIR = "/dev/shm"
# This session's jobs, and only they, have ids that start with its own prefix: a
# test run beside it (another checkout's, a benchmark's) is not its leak.
os.environ["SHMRMA_JOB_PREFIX"] = "t%x" % os.getpid()
SEGMENT_PREFIX = "shmrma." + os.environ["SHMRMA_JOB_PREFIX"]
# Segments of a job that is still ending (or of a sweeper still at work) may
# linger a moment, longer on a loaded machine; a leak is what is still there after
# this long (waited for only when some are left: a clean session does not wait).
LEAK_GRACE_SECONDS = 60.0

_names_at_start = None


def shmrma_segments():
    """The shmrma names present in /dev/shm now."""
    try:
        return {name for name in os.listdir(SHM_DIR) if name.startswith(SEGMENT_PREFIX)}
    except FileNotFoundError:
        return set()


@pytest.fixture(scope="session", autouse=True)
def _record_segments_at_start():
    """Remember which shmrma segments existed before the session."""
    global _names_at_start
    if _names_at_start is None:
        _names_at_start = shmrma_segments()
    yield


def pytest_sessionfinish(session, exitstatus):
    """Fail the session, listing them, if new shmrma segments remain."""
    if _names_at_start is None:
        return
    leaked = shmrma_segments() - _names_at_start
    deadline = time.monotonic() + LEAK_GRACE_SECONDS
    while leaked and time.monotonic() < deadline:
        time.sleep(0.05)
        leaked &= shmrma_segments()
    if not leaked:
        return
    message = ("shmrma segments left in %s by this test session:\n  %s\n"
               % (SHM_DIR, "\n  ".join(sorted(leaked))))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(message, red=True, bold=True)
    else:
        sys.stderr.write(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def run_shmrma():
    """``run_shmrma(args, timeout=60, input=None, env=None, cwd=None)`` -> CompletedProcess.

    Runs ``[sys.executable, "-m", "shmrma.run", *args]`` with text output captured.
    ``env`` entries are added to the current environment. A run that outlasts
    ``timeout`` is killed (its ranks die with it) and raises TimeoutExpired.
    """
    def run(args, timeout=60, input=None, env=None, cwd=None):
        full_env = None
        if env is not None:
            full_env = dict(os.environ)
            full_env.update(env)
        return subprocess.run([sys.executable, "-m", "shmrma.run", *map(str, args)],
                              input=input, capture_output=True, text=True,
                              timeout=timeout, env=full_env, cwd=cwd)
    return run
