"""Requests: one completion protocol for every kind (point-to-point, RMA,
persistent synchronization counters, window barriers).

A request kind implements ``_poll()`` (make progress, return True once done,
never block). Waiting is shared: progress the mailbox, poll, and sleep on this
rank's doorbell, which every event that can complete a request of this rank
rings (a message arriving, a counter reaching zero, a barrier opening).
"""
import copyreg
import inspect
import operator
import weakref

from ..core import constants, errors
from ..core.handle import HandleBase, IntHandle, constant
from ..types.status import Status


class Request(HandleBase, IntHandle):
    """``MPI.Request``: a communication request. The base class is also REQUEST_NULL's type.

    ``Request(request)`` (and ``Prequest(prequest)``, as in mpi4py) is another
    handle to ``request``: it forwards every method to it, so both see the request
    complete; ``handle`` and ``fromhandle`` go between a live request and an int."""

    _null = True        # completed-and-reported requests become null, as in MPI
    _persistent = False
    _inactive = False   # a persistent request not started: any/some calls skip it
    _done = True
    _error = None
    _status = None
    _result = None
    _alias = None       # the request this handle was made from

    def __init__(self, request=None):
        if request is None:
            return
        if not isinstance(request, Request):
            raise TypeError("%s() takes a Request, not %s"
                            % (type(self).__name__, type(request).__name__))
        kind = _public_class(self)
        if request and not isinstance(request, kind):
            raise TypeError("%s() takes a %s, not %s" % (
                type(self).__name__, kind.__name__, _public_class(request).__name__))
        if request:
            self._alias = target = _real(request)
            self._null = False
            for name, method in _methods(target):
                setattr(self, name, method)

    def __bool__(self):
        alias = self._alias
        return not self._null if alias is None else bool(alias)

    def __eq__(self, other):
        # as mpi4py compares handles: every null request is REQUEST_NULL
        if not isinstance(other, Request):
            return NotImplemented
        return _real(self) is _real(other) or (not self and not other)

    __hash__ = None  # unhashable, as in mpi4py (a request turns null when it completes)

    def __reduce__(self):
        # as mpi4py: REQUEST_NULL by name, another null request as a new one of its
        # class made as mpi4py's __newobj__ makes it (the class's defaults are a null
        # request, the runtime's own kinds' too); a live request means nothing in
        # another process
        if self is REQUEST_NULL:
            return "REQUEST_NULL"
        if not self:
            return (copyreg.__newobj__, (type(self),))
        raise ValueError("cannot serialize '%s.%s' instance"
                         % (type(self).__module__, type(self).__name__))

    # --- integer handles (handle, py2f: handle.IntHandle) ---
    def toint(self):
        """An int naming the request while it lives (0: REQUEST_NULL)."""
        target = _real(self)
        if not target:
            return 0
        _handles[id(target)] = target
        return id(target)

    @classmethod
    def fromint(cls, number):
        """Translate integer handle to object.

        A new handle to the request ``number`` names, of the MPI class of ``cls``
        (Request, Prequest or Grequest), as mpi4py's New(Request) makes it."""
        number = operator.index(number)
        kind = _public_class(cls)
        if number == 0:
            return kind()
        target = _handles.get(number)
        if target is None:
            errors.fail(errors.ERR_REQUEST, "%d is not the handle of a live request; take "
                        "handles from Request.handle" % number)
        return kind(target)

    def _poll(self):
        return self._done

    def _describe(self):
        return "waiting for a request"

    def _peers(self):
        return ()

    def _finish(self, status):
        """Report completion once: fill ``status``, raise a deferred error."""
        if status is not None:
            self._report_to(status)
        if not self._persistent:
            self._null = True
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _block(self):
        if not self._poll():
            from . import transport as mailbox
            mailbox.wait_for(mailbox.mailbox(), self._poll, self._describe, self._peers())

    def Wait(self, status=None):
        """Wait for a nonblocking operation to complete."""
        self._block()
        self._finish(status)
        return True

    def Test(self, status=None):
        """Test for the completion of a nonblocking operation."""
        if not self._poll():
            from . import transport as mailbox
            mailbox.mailbox().progress()
            if not self._poll():
                return False
        self._finish(status)
        return True

    def wait(self, status=None):
        """Wait for a nonblocking operation to complete; return its object."""
        self.Wait(status)
        return _take_result(self)

    def test(self, status=None):
        """Test for completion: (done, its object or None)."""
        done = self.Test(status)
        return done, (_take_result(self) if done else None)

    def _report_to(self, status):
        """Fill ``status`` with what completing this request reports."""
        if self._status is None:
            status._clear()
        else:
            status._copy_from(self._status)

    def Get_status(self, status=None):
        """Non-destructive test for the completion of a request.

        Test without completing: progress is made, the request stays as it is."""
        if not _counts(self):
            _clear(status)
            return True
        done = self._poll()
        if not done:
            _progress()
            done = self._poll()
        if done and status is not None:
            self._report_to(status)
        return done

    get_status = Get_status

    def Free(self):
        """Free a communication request."""
        if not self:
            errors.fail(errors.ERR_REQUEST, "REQUEST_NULL cannot be freed (a completed "
                        "request is null: check bool(request) first)")
        self._null = True

    def Cancel(self):
        """Cancel a request; Status.Is_cancelled then tells whether it was."""
        if not self:
            errors.fail(errors.ERR_REQUEST, "REQUEST_NULL cannot be cancelled (a completed "
                        "request is null: check bool(request) first)")

    def cancel(self):
        """Cancel a request; Status.Is_cancelled then tells whether it was."""
        self.Cancel()

    # --- many requests ---------------------------------------------------------
    # Null and inactive requests count as complete with an empty status; the
    # any/some forms skip them, and answer UNDEFINED/None when nothing else is left.

    @classmethod
    def Waitall(cls, requests, statuses=None):
        """Wait for all previously initiated requests to complete.

        Complete every request, then raise the first one's error, if any (so no
        receive stays posted behind a failed one to take a later message)."""
        error = None
        index = 0           # not enumerate: without statuses (the common case, a halo
        for request in requests:    # exchange's) Waitall of two requests 0.20 -> 0.14 us
            try:
                if statuses is None:
                    request.Wait()
                else:
                    request.Wait(_status_at(statuses, index))
            except errors.JobAborted:
                raise
            except errors.Exception as exc:
                error = error or exc
            index += 1
        if error is not None:
            raise error
        return True

    @classmethod
    def waitall(cls, requests, statuses=None):
        """Wait for all previously initiated requests; return their objects."""
        cls.Waitall(requests, statuses)
        return [_take_result(request) for request in requests]

    @classmethod
    def Testall(cls, requests, statuses=None):
        """Test for completion of all previously initiated requests."""
        if not _all_done(requests):
            return False
        return cls.Waitall(requests, statuses)

    @classmethod
    def testall(cls, requests, statuses=None):
        """Test for completion of all requests: (done, their objects or None)."""
        if cls.Testall(requests, statuses):
            return True, [_take_result(r) for r in requests]
        return False, None

    @classmethod
    def Get_status_all(cls, requests, statuses=None):
        """Non-destructive test for the completion of all requests."""
        if not _all_done(requests):
            return False
        for index, request in enumerate(requests):
            request.Get_status(_status_at(statuses, index))
        return True

    get_status_all = Get_status_all

    @classmethod
    def Waitany(cls, requests, status=None):
        """Wait for any previously initiated request to complete; return its index."""
        if not any(map(_counts, requests)):
            _clear(status)
            return constants.UNDEFINED
        index = []
        _wait_until(lambda: _first_done(requests, index), requests)
        requests[index[0]].Wait(status)
        return index[0]

    @classmethod
    def waitany(cls, requests, status=None):
        """Wait for any previously initiated request: (index, its object)."""
        index = cls.Waitany(requests, status)
        return index, (_take_result(requests[index]) if index != constants.UNDEFINED else None)

    @classmethod
    def Testany(cls, requests, status=None):
        """Test for completion of any previously initiated request: (index, done)."""
        index, done = cls.Get_status_any(requests)
        if done and index != constants.UNDEFINED:
            requests[index].Wait(status)
        elif done:
            _clear(status)
        return index, done

    @classmethod
    def testany(cls, requests, status=None):
        """Test for completion of any request: (index, done, its object)."""
        index, done = cls.Testany(requests, status)
        found = done and index != constants.UNDEFINED
        return index, done, (_take_result(requests[index]) if found else None)

    @classmethod
    def Get_status_any(cls, requests, status=None):
        """Non-destructive test for the completion of any request.

        (index, True) of the first complete request, leaving it as it is;
        (UNDEFINED, True) when none is active; (UNDEFINED, False) when none is done."""
        if not any(map(_counts, requests)):
            _clear(status)
            return constants.UNDEFINED, True
        index = []
        if not _first_done(requests, index):
            _progress()
            if not _first_done(requests, index):
                return constants.UNDEFINED, False
        if status is not None:
            requests[index[0]]._report_to(status)
        return index[0], True

    get_status_any = Get_status_any

    @classmethod
    def Waitsome(cls, requests, statuses=None):
        """Wait for some previously initiated requests to complete; return indices."""
        if not any(map(_counts, requests)):
            return None
        _wait_until(lambda: _first_done(requests, []), requests)
        return cls.Testsome(requests, statuses)

    @classmethod
    def waitsome(cls, requests, statuses=None):
        """Wait for some previously initiated requests: (indices, their objects)."""
        return _with_results(requests, cls.Waitsome(requests, statuses))

    @classmethod
    def Testsome(cls, requests, statuses=None):
        """Test for completion of some previously initiated requests; return indices."""
        done = cls.Get_status_some(requests)
        for position, index in enumerate(done or ()):
            requests[index].Wait(_status_at(statuses, position))
        return done

    @classmethod
    def testsome(cls, requests, statuses=None):
        """Test for completion of some requests: (indices, their objects)."""
        return _with_results(requests, cls.Testsome(requests, statuses))

    @classmethod
    def Get_status_some(cls, requests, statuses=None):
        """Non-destructive test for the completion of some requests.

        The indices of the complete requests (None when none is active), left as
        they are; their statuses go to ``statuses`` in that order."""
        if not any(map(_counts, requests)):
            return None
        _progress()
        done = [i for i, r in enumerate(requests) if _counts(r) and r._poll()]
        for position, index in enumerate(done):
            status = _status_at(statuses, position)
            if status is not None:
                requests[index]._report_to(status)
        return done

    get_status_some = Get_status_some


_handles = weakref.WeakValueDictionary()    # id -> request, for Request.fromhandle


def _real(request):
    """The request a handle refers to (itself unless made by Request(request))."""
    alias = request._alias
    return request if alias is None else alias


def _take_result(request):
    """The object a completed request received (wait's result), handed out once:
    waiting again on the request, now null, gives None, as in mpi4py."""
    request = _real(request)
    result, request._result = request._result, None
    return result


def _methods(request):
    """(name, bound method) of every method ``request`` has, for a handle to forward."""
    kind = type(request)
    for name in dir(kind):
        if name.startswith("__"):
            continue
        static = inspect.getattr_static(kind, name)
        if isinstance(static, (classmethod, staticmethod, property)):
            continue
        method = getattr(request, name)
        if callable(method):
            yield name, method


def _public_class(request):
    """The MPI class of ``request`` (or of the request class ``request``):
    Prequest, Grequest or Request."""
    kind = request if isinstance(request, type) else type(request)
    return next(cls for cls in kind.__mro__ if cls in (Prequest, Grequest, Request))


def _clear(status):
    if status is not None:
        status._clear()


def _status_at(statuses, index):
    """The status for the ``index``-th request: a list grows to hold it, as mpi4py
    grows it; another sequence too short gets none."""
    if statuses is None:
        return None
    if index >= len(statuses):
        if not isinstance(statuses, list):
            return None
        statuses.extend(Status() for _ in range(index + 1 - len(statuses)))
    return statuses[index]


def _with_results(requests, indices):
    """(indices, their objects) of waitsome/testsome; (None, None) when none was active."""
    if indices is None:
        return None, None
    return indices, [_take_result(requests[index]) for index in indices]


def _counts(request):
    """Do Waitany/Testany/Waitsome/Testsome consider it (neither null nor inactive)?"""
    return bool(request) and not _real(request)._inactive


def _all_done(requests):
    if all(r._poll() for r in requests if _counts(r)):
        return True
    _progress()
    return all(r._poll() for r in requests if _counts(r))


def _first_done(requests, found):
    for index, request in enumerate(requests):
        if _counts(request) and request._poll():
            found.append(index)
            return True
    return False


def _progress():
    from . import transport as mailbox
    mailbox.mailbox().progress()


def _wait_until(condition, requests):
    from . import transport as mailbox
    live = [r for r in requests if _counts(r)]
    what = lambda: "any of %d requests (%s)" % (len(live), live[0]._describe())  # noqa: E731
    from ..core.job import Alternatives
    mailbox.wait_for(mailbox.mailbox(), condition, what,
                     Alternatives(tuple(r._peers()) for r in live))


class Prequest(Request):
    """A persistent request: inactive until ``Start``."""

    def Start(self):
        """Start a persistent request.

        Start the request (each kind of persistent request defines it; a handle
        made by ``Prequest(request)`` starts ``request``)."""
        if self._alias is None:
            errors.fail(errors.ERR_REQUEST, "Start on REQUEST_NULL or a freed persistent "
                        "request; make one with a *_init call")
        self._alias.Start()

    def _check_startable(self, active):
        """ERR_REQUEST unless Start may start it now: neither freed nor ``active``."""
        if self._null:
            errors.fail(errors.ERR_REQUEST, "Start on a freed persistent request")
        if active:
            errors.fail(errors.ERR_REQUEST, "Start on an active persistent request: "
                        "complete it with Wait or Test first")

    @classmethod
    def Startall(cls, requests):
        """Start a collection of persistent requests."""
        for request in requests:
            request.Start()


class Grequest(Request):
    """``MPI.Grequest``: a generalized request, complete once the program calls
    Complete (from any thread). Its callbacks, called with ``*args, **kwargs``: the
    status that completion reports is ``query_fn(status)``'s, ``free_fn()`` releases
    its state once it is completed and freed, ``cancel_fn(completed)`` hears of
    Cancel. An exception in one is printed and raised as an MPI.Exception of its
    error class (ERR_OTHER for a non-MPI exception), as mpi4py does."""

    _callbacks = None   # (query_fn, free_fn, cancel_fn, args, kwargs) until freed

    @classmethod
    def Start(cls, query_fn=None, free_fn=None, cancel_fn=None, args=None, kwargs=None):
        """Create and return a user-defined request."""
        request = cls()
        request._null = request._done = False
        request._callbacks = (query_fn, free_fn, cancel_fn,
                              tuple(args) if args is not None else (),
                              dict(kwargs) if kwargs is not None else {})
        return request

    def Complete(self):
        """Notify that a user-defined request is complete."""
        if self._callbacks is None:
            errors.fail(errors.ERR_REQUEST, "Complete of a generalized request that is "
                        "not started (Grequest.Start) or already completed and freed")
        self._done = True
        if self._null:      # freed before completion: released now
            self._release()
        from ..core import atomic
        from . import transport as mailbox
        atomic.cell_add(mailbox.mailbox().doorbell, 1)    # a Wait in another thread wakes

    def complete(self, obj=None):
        """Notify that a user-defined request is complete, with result ``obj``."""
        self._result = obj
        self.Complete()

    def _describe(self):
        return "a generalized request's Complete"

    def _poll(self):
        return self._done or self._null

    def _report_to(self, status):
        status._clear()
        if self._null:      # freed, or completed and reported
            return
        query_fn, _, cancel_fn, args, kwargs = self._callbacks
        if query_fn is not None:
            _call_back(query_fn, status, *args, **kwargs)
            if cancel_fn is None:   # nothing could cancel it
                status.cancelled = False

    def _finish(self, status):
        if self._null:
            return super()._finish(status)
        try:
            self._report_to(status if status is not None else Status())
        finally:
            self._null = True
            self._release()

    def _release(self):
        free_fn, args, kwargs = self._callbacks[1], self._callbacks[3], self._callbacks[4]
        self._callbacks = None
        if free_fn is not None:
            _call_back(free_fn, *args, **kwargs)

    def Free(self):
        """Free a user-defined request (free_fn runs once it is complete)."""
        super().Free()
        if self._done:
            self._release()

    def Cancel(self):
        """Cancel a user-defined request: cancel_fn hears of it."""
        super().Cancel()
        cancel_fn, args, kwargs = self._callbacks[2], self._callbacks[3], self._callbacks[4]
        if cancel_fn is not None:
            _call_back(cancel_fn, self._done, *args, **kwargs)


def _call_back(function, *args, **kwargs):
    """Call a program's callback: its exception is printed (as mpi4py prints it) and
    raised as an MPI.Exception of its error class, ERR_OTHER for a non-MPI one."""
    try:
        function(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - every exception becomes an error code
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__)     # one argument: 3.10+
        error_class = (exc.Get_error_class() if isinstance(exc, errors.Exception)
                       else errors.ERR_OTHER)
        raise errors.Exception(error_class, "a generalized request's callback raised "
                               "%s: %s" % (type(exc).__name__, exc)) from exc


REQUEST_NULL = constant(Request())
