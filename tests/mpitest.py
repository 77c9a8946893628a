"""Helpers the test files share."""
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
    left = [message.tag for queue in box.unexpected for message in queue], len(box.posted)
    comm.Barrier()
    assert left == ([], 0), left
