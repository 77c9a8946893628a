"""The fallback engine: the message, collective, window, synchronization, counter
and race-checker tests again with SHMRMA_NATIVE=0.

shmrma runs on its C extension; without it (no compiler, or SHMRMA_NATIVE=0) the
`atomics` package, mailbox.Mailbox (the Python transport) and the Python paths of
the window calls take over. Both implement one protocol, so the same tests must
pass on both: this runs them in a child pytest on the fallback (the fast paths
then never take a call, so the differential tests compare the Python path with
itself there). The suite of this process covers the C engine.
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MESSAGE_TESTS = ("test_p2p.py", "test_collectives.py", "test_derived_messages.py",
                 "test_requests.py", "test_handle_sync.py", "test_large_messages.py",
                 "test_collectives_fastpath.py", "test_nbcarea.py",
                 "test_nbc_fastpath.py", "test_partitioned.py", "test_status.py",
                 "test_msgpickle.py")
# The child pytest's own per-test timeouts catch a test that hangs; this only guards
# the whole run, which took 85 to 275 s beside two CPU-bound programs on 2 cores.
ENGINE_HANG_S = 1500
WINDOW_TESTS = ("test_window.py", "test_rma.py", "test_pscw.py", "test_sync.py",
                "test_syncpath.py", "test_winbarrier.py", "test_counters.py")


def run_on_fallback(names, select=()):
    env = dict(os.environ, SHMRMA_NATIVE="0")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *select]
        + [os.path.join(HERE, name) for name in names],
        env=env, cwd=os.path.dirname(HERE), capture_output=True, text=True,
        timeout=ENGINE_HANG_S)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


@pytest.mark.timeout(ENGINE_HANG_S + 100)
def test_message_tests_pass_on_the_fallback_engine():
    run_on_fallback(MESSAGE_TESTS)


@pytest.mark.timeout(ENGINE_HANG_S + 100)
def test_window_and_counter_tests_pass_on_the_fallback_engine():
    run_on_fallback(WINDOW_TESTS)


@pytest.mark.timeout(ENGINE_HANG_S + 100)
def test_race_checker_cases_pass_on_the_fallback_engine():
    """The checker's access log, store finder and shadow in numpy (no _racecheck)."""
    run_on_fallback(["test_check.py"], ["-k", "marked or synchronized or created or "
                                              "outside or no_stores or names"])
