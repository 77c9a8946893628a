"""Generalized requests (MPI-3.1 §12.2): ``MPI.Grequest.Start`` and ``Complete``.

The user's operation runs elsewhere (another thread, a file, a tool); the request
completes when the user calls Complete (or mpi4py's ``complete(obj)``, whose object
``wait()`` returns). At the Wait or Test that reports it, ``query_fn(status, *args,
**kwargs)`` fills the status and ``free_fn(*args, **kwargs)`` runs; Cancel calls
``cancel_fn(completed, *args, **kwargs)``. An exception in one of them is reported
as mpi4py does: its traceback on stderr and an MPI.Exception of its class (ERR_OTHER
for a Python exception).
"""
import sys
import traceback

from . import constants, errors
from .request import Request, Status


class Grequest(Request):
    """``MPI.Grequest``."""

    @classmethod
    def Start(cls, query_fn=None, free_fn=None, cancel_fn=None, args=None, kwargs=None):
        request = cls.__new__(cls)
        request._null = False
        request._done = False
        request._status = Status()
        request._calls = (query_fn, free_fn, cancel_fn, tuple(args or ()), dict(kwargs or {}))
        return request

    def Complete(self):
        if self._null or self._done:
            errors.fail(errors.ERR_REQUEST, "Grequest.Complete: the request is %s"
                        % ("null" if self._null else "completed already"))
        self._done = True
        from . import mailbox
        mailbox.wake_own_waits()    # a Wait in another thread looks again

    def complete(self, obj=None):
        self.Complete()
        self._result = obj

    def _describe(self):
        return "a generalized request to be completed (Grequest.Complete)"

    def _finish(self, status):
        query_fn, free_fn, cancel_fn, args, kwargs = self._calls
        self._status._fill(constants.ANY_SOURCE, constants.ANY_TAG, 0)
        error = None
        if query_fn is not None:
            error = _called(query_fn, (self._status,) + args, kwargs)
            if cancel_fn is None:
                self._status.cancelled = False
        if free_fn is not None:
            error = _called(free_fn, args, kwargs) or error
        self._error = error
        super()._finish(status)

    def Cancel(self):
        super().Cancel()
        _, _, cancel_fn, args, kwargs = self._calls
        if cancel_fn is not None:
            error = _called(cancel_fn, (self._done,) + args, kwargs)
            if error is not None:
                raise error


def _called(function, args, kwargs):
    """Run a user's function: None, or the MPI.Exception its exception becomes."""
    try:
        function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - user code: report whatever it raised
        traceback.print_exc(file=sys.stderr)
        if isinstance(exc, errors.Exception):
            return exc
        return errors.Exception(errors.ERR_OTHER, "a generalized request's function "
                                "raised %s (traceback above)" % type(exc).__name__)
    return None
