"""Helpers the test files share."""
import time

import pytest

from shmrma import MPI, mailbox


def raises_mpi(error_class, match=None):
    """pytest.raises(MPI.Exception) that also checks the error class."""
    return pytest.raises(MPI.Exception, match=match,
                         check=lambda exc: exc.Get_error_class() == error_class)


def nothing_left_behind(comm):
    """No message waits unmatched and no receive is still posted on this rank; the
    barriers keep the peers from sending anything new meanwhile."""
    comm.Barrier()
    box = mailbox.mailbox()
    box.progress()
    left = box.leftovers()
    comm.Barrier()
    assert left == ([], 0), left


def dead_rank_ends_the_job(run_shmrma, tmp_path, call):
    """Rank 1 exits with status 4 at once while rank 0 runs ``call`` (a line of code
    on ``comm``) that waits for it: the job must end with rank 1's status within
    seconds, not hang until its timeout."""
    program = tmp_path / "dead_rank.py"
    program.write_text("import os\nfrom shmrma import MPI\ncomm = MPI.COMM_WORLD\n"
                       "if comm.rank == 1:\n    os._exit(4)\n%s\n" % call)
    started = time.monotonic()
    result = run_shmrma(["-n", 2, "--timeout", 30, program], timeout=50)
    assert result.returncode == 4, result.stderr
    assert time.monotonic() - started < 20
