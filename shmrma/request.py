"""Requests: one completion protocol for every kind (point-to-point, RMA,
persistent synchronization counters, window barriers).

A request kind implements ``_poll()`` (make progress, return True once done,
never block). Waiting is shared: progress the mailbox, poll, and sleep on this
rank's doorbell, which every event that can complete a request of this rank
rings (a message arriving, a counter reaching zero, a barrier opening).
"""
from . import constants, errors


class Status:
    """``MPI.Status``: source, tag, error and byte count of a completed operation."""

    def __init__(self, status=None):
        self.source = constants.ANY_SOURCE
        self.tag = constants.ANY_TAG
        self.error = errors.SUCCESS
        self.count = 0
        self.cancelled = False
        if status is not None:
            self._copy_from(status)

    def _copy_from(self, other):
        self.source, self.tag, self.error = other.source, other.tag, other.error
        self.count, self.cancelled = other.count, other.cancelled

    def _fill(self, source, tag, count, error=errors.SUCCESS):
        self.source, self.tag, self.count, self.error = source, tag, count, error

    def Get_source(self):
        return self.source

    def Set_source(self, source):
        self.source = source

    def Get_tag(self):
        return self.tag

    def Set_tag(self, tag):
        self.tag = tag

    def Get_error(self):
        return self.error

    def Set_error(self, error):
        self.error = error

    def Get_count(self, datatype=None):
        size = 1 if datatype is None else _datatype_size(datatype)
        if size == 0:
            return 0
        return self.count // size if self.count % size == 0 else constants.UNDEFINED

    Get_elements = Get_count

    def Is_cancelled(self):
        return self.cancelled

    def Set_cancelled(self, flag):
        self.cancelled = bool(flag)

    def __repr__(self):
        return "<Status source=%d tag=%d count=%d error=%d>" % (
            self.source, self.tag, self.count, self.error)


def _datatype_size(datatype):
    from . import buffers
    from . import datatype as datatypes
    return buffers.item_bytes(datatypes.lookup(datatype))


class Request:
    """``MPI.Request``. The base class is also REQUEST_NULL's type."""

    _null = True        # completed-and-reported requests become null, as in MPI
    _persistent = False
    _inactive = False   # a persistent request not started: any/some calls skip it
    _done = True
    _error = None
    _status = None
    _result = None

    def __bool__(self):
        return not self._null

    def __eq__(self, other):
        # as mpi4py compares handles: every null request is REQUEST_NULL
        if not isinstance(other, Request):
            return NotImplemented
        return self is other or (self._null and other._null)

    __hash__ = None  # unhashable, as in mpi4py (a request turns null when it completes)

    def _poll(self):
        return self._done

    def _describe(self):
        return "waiting for a request"

    def _peers(self):
        return ()

    def _finish(self, status):
        """Report completion once: fill ``status``, raise a deferred error."""
        if status is not None:
            status._copy_from(self._status if self._status is not None else Status())
        if not self._persistent:
            self._null = True
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _block(self):
        if not self._poll():
            from . import mailbox
            mailbox.wait_for(mailbox.mailbox(), self._poll, self._describe, self._peers())

    def Wait(self, status=None):
        self._block()
        self._finish(status)
        return True

    def Test(self, status=None):
        if not self._poll():
            from . import mailbox
            mailbox.mailbox().progress()
            if not self._poll():
                return False
        self._finish(status)
        return True

    def wait(self, status=None):
        self.Wait(status)
        return self._result

    def test(self, status=None):
        done = self.Test(status)
        return done, (self._result if done else None)

    def Get_status(self, status=None):
        """Test without completing: progress is made, the request stays as it is."""
        done = self._poll()
        if not done:
            _progress()
            done = self._poll()
        if done and status is not None and self._status is not None:
            status._copy_from(self._status)
        return done

    def Free(self):
        if not self:
            errors.fail(errors.ERR_REQUEST, "REQUEST_NULL cannot be freed (a completed "
                        "request is null: check bool(request) first)")
        self._null = True

    def Cancel(self):
        if not self:
            errors.fail(errors.ERR_REQUEST, "REQUEST_NULL cannot be cancelled (a completed "
                        "request is null: check bool(request) first)")

    # --- many requests ---------------------------------------------------------
    @classmethod
    def Waitall(cls, requests, statuses=None):
        """Complete every request, then raise the first one's error, if any (so no
        receive stays posted behind a failed one to take a later message)."""
        error = None
        for index, request in enumerate(requests):
            try:
                request.Wait(_status_at(statuses, index))
            except errors.JobAborted:
                raise
            except errors.Exception as exc:
                error = error or exc
        if error is not None:
            raise error
        return True

    @classmethod
    def waitall(cls, requests, statuses=None):
        cls.Waitall(requests, statuses)
        return [request._result for request in requests]

    @classmethod
    def Testall(cls, requests, statuses=None):
        if not all(r._poll() for r in requests):
            _progress()
            if not all(r._poll() for r in requests):
                return False
        return cls.Waitall(requests, statuses)

    @classmethod
    def testall(cls, requests, statuses=None):
        if cls.Testall(requests, statuses):
            return True, [r._result for r in requests]
        return False, None

    @classmethod
    def Waitany(cls, requests, status=None):
        if not any(map(_counts, requests)):
            return constants.UNDEFINED
        index = []
        _wait_until(lambda: _first_done(requests, index), requests)
        requests[index[0]].Wait(status)
        return index[0]

    @classmethod
    def waitany(cls, requests, status=None):
        index = cls.Waitany(requests, status)
        return index, (requests[index]._result if index != constants.UNDEFINED else None)

    @classmethod
    def Testany(cls, requests, status=None):
        if not any(map(_counts, requests)):
            return constants.UNDEFINED, True
        index = []
        if not _first_done(requests, index):
            _progress()
            if not _first_done(requests, index):
                return constants.UNDEFINED, False
        requests[index[0]].Wait(status)
        return index[0], True

    @classmethod
    def Waitsome(cls, requests, statuses=None):
        if not any(map(_counts, requests)):
            return None
        _wait_until(lambda: _first_done(requests, []), requests)
        return cls.Testsome(requests, statuses)

    @classmethod
    def Testsome(cls, requests, statuses=None):
        if not any(map(_counts, requests)):
            return None
        _progress()
        done = [i for i, r in enumerate(requests) if _counts(r) and r._poll()]
        for position, index in enumerate(done):
            requests[index].Wait(_status_at(statuses, position))
        return done


def _status_at(statuses, index):
    if statuses is None:
        return None
    while len(statuses) <= index:
        statuses.append(Status())
    return statuses[index]


def _counts(request):
    """Do Waitany/Testany/Waitsome/Testsome consider it (neither null nor inactive)?"""
    return bool(request) and not request._inactive


def _first_done(requests, found):
    for index, request in enumerate(requests):
        if _counts(request) and request._poll():
            found.append(index)
            return True
    return False


def _progress():
    from . import mailbox
    mailbox.mailbox().progress()


def _wait_until(condition, requests):
    from . import mailbox
    live = [r for r in requests if _counts(r)]
    what = lambda: "any of %d requests (%s)" % (len(live), live[0]._describe())  # noqa: E731
    mailbox.wait_for(mailbox.mailbox(), condition, what)


class Prequest(Request):
    """A persistent request: inactive until ``Start``."""

    # partitioned communication (partitioned.py): the calls of other requests
    def Pready(self, partition):
        _not_partitioned("Pready", "send")

    def Pready_range(self, partition_low, partition_high):
        _not_partitioned("Pready_range", "send")

    def Pready_list(self, partitions):
        _not_partitioned("Pready_list", "send")

    def Parrived(self, partition):
        _not_partitioned("Parrived", "receive")

    @classmethod
    def Startall(cls, requests):
        for request in requests:
            request.Start()


def _not_partitioned(call, kind):
    errors.fail(errors.ERR_REQUEST, "%s: the request is not a partitioned %s (Psend_init "
                "/ Precv_init make those)" % (call, kind))


REQUEST_NULL = Request()
