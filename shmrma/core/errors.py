"""MPI error classes and the exception every shmrma call raises.

The numeric values follow MPICH so that messages and logs read the same on
both runtimes; programs compare against the ``MPI.ERR_*`` names, never numbers.
"""

import operator

from . import atomic

SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_ROOT = 7
ERR_GROUP = 8
ERR_OP = 9
ERR_TOPOLOGY = 10
ERR_DIMS = 11
ERR_ARG = 12
ERR_UNKNOWN = 13
ERR_TRUNCATE = 14
ERR_OTHER = 15
ERR_INTERN = 16
ERR_PENDING = 18
ERR_REQUEST = 19
ERR_ACCESS = 20
ERR_AMODE = 21
ERR_BAD_FILE = 22
ERR_CONVERSION = 23
ERR_DUP_DATAREP = 24
ERR_FILE_EXISTS = 25
ERR_FILE_IN_USE = 26
ERR_FILE = 27
ERR_INFO = 28
ERR_INFO_KEY = 29
ERR_INFO_VALUE = 30
ERR_INFO_NOKEY = 31
ERR_IO = 32
ERR_NAME = 33
ERR_NO_MEM = 34
ERR_NOT_SAME = 35
ERR_NO_SPACE = 36
ERR_NO_SUCH_FILE = 37
ERR_PORT = 38
ERR_QUOTA = 39
ERR_READ_ONLY = 40
ERR_SERVICE = 41
ERR_SPAWN = 42
ERR_UNSUPPORTED_DATAREP = 43
ERR_UNSUPPORTED_OPERATION = 44
ERR_WIN = 45
ERR_BASE = 46
ERR_LOCKTYPE = 47
ERR_KEYVAL = 48
ERR_RMA_CONFLICT = 49
ERR_RMA_SYNC = 50
ERR_SIZE = 51
ERR_DISP = 52
ERR_ASSERT = 53
ERR_RMA_RANGE = 55
ERR_RMA_ATTACH = 56
ERR_RMA_SHARED = 57
ERR_RMA_FLAVOR = 58
ERR_SESSION = 75
ERR_ERRHANDLER = 80
ERR_WIN_COUNTER = 100
ERR_LASTCODE = 0x3FFFFFFF

_CLASS_TEXT = {
    SUCCESS: "no error",
    ERR_BUFFER: "invalid buffer pointer",
    ERR_COUNT: "invalid count argument",
    ERR_TYPE: "invalid datatype",
    ERR_TAG: "invalid tag",
    ERR_COMM: "invalid communicator",
    ERR_RANK: "invalid rank",
    ERR_ROOT: "invalid root",
    ERR_GROUP: "invalid group",
    ERR_OP: "invalid reduce operation",
    ERR_TOPOLOGY: "invalid topology",
    ERR_DIMS: "invalid dimension argument",
    ERR_ARG: "invalid argument of some other kind",
    ERR_UNKNOWN: "unknown error",
    ERR_TRUNCATE: "message truncated",
    ERR_OTHER: "other error",
    ERR_INTERN: "internal error",
    ERR_PENDING: "pending request",
    ERR_REQUEST: "invalid request",
    ERR_ACCESS: "access denied to file",
    ERR_AMODE: "invalid amode value in MPI_File_open",
    ERR_BAD_FILE: "invalid file name",
    ERR_CONVERSION: "error in data conversion",
    ERR_DUP_DATAREP: "the requested datarep name has already been registered",
    ERR_FILE_EXISTS: "file exists",
    ERR_FILE_IN_USE: "file in use by some process",
    ERR_FILE: "invalid MPI_File",
    ERR_IO: "other I/O error",
    ERR_NOT_SAME: "inconsistent arguments to collective routine",
    ERR_NO_SPACE: "not enough space for file",
    ERR_NO_SUCH_FILE: "file does not exist",
    ERR_QUOTA: "quota exceeded for files",
    ERR_READ_ONLY: "read-only file or filesystem name",
    ERR_UNSUPPORTED_DATAREP: "unsupported data representation",
    ERR_UNSUPPORTED_OPERATION: "unsupported file operation",
    ERR_INFO: "invalid info object",
    ERR_INFO_KEY: "invalid info key",
    ERR_INFO_VALUE: "invalid info value",
    ERR_INFO_NOKEY: "info key not defined",
    ERR_NO_MEM: "out of memory",
    ERR_NAME: "invalid service name (see MPI_Publish_name)",
    ERR_PORT: "invalid port",
    ERR_SERVICE: "attempt to lookup an unknown service name",
    ERR_SPAWN: "error in spawn call",
    ERR_WIN: "invalid window",
    ERR_BASE: "invalid base argument",
    ERR_LOCKTYPE: "invalid lock type",
    ERR_KEYVAL: "invalid keyval",
    ERR_RMA_CONFLICT: "conflicting accesses to window",
    ERR_RMA_SYNC: "invalid synchronization of RMA calls",
    ERR_SIZE: "invalid size argument",
    ERR_DISP: "invalid displacement argument",
    ERR_ASSERT: "invalid assertion argument",
    ERR_RMA_RANGE: "target memory is not part of the window",
    ERR_RMA_ATTACH: "memory cannot be attached",
    ERR_RMA_SHARED: "memory cannot be shared",
    ERR_RMA_FLAVOR: "wrong window flavor for this call",
    ERR_SESSION: "invalid session",
    ERR_ERRHANDLER: "invalid error handler",
    ERR_WIN_COUNTER: "synchronization counter went negative",
}


# --- user error classes, codes and strings (MPI_Add_error_class and friends) ------
# They number upwards from above ERR_LASTCODE, as MPICH's do; a user class is its
# own class, a user code maps to the class it was added to.

_user_class_of = {}     # user class or code -> its class
_user_strings = {}      # user class or code -> the string Add_error_string gave it
_last_used = [ERR_LASTCODE]


def error_class_of(code):
    """Error class of an error code; shmrma's own codes are their classes."""
    code = int(code)
    if code in _CLASS_TEXT:
        return code
    return _user_class_of.get(code, ERR_UNKNOWN)


def error_string(code):
    code = int(code)
    if code in _user_class_of:
        return _user_strings.get(code, "")
    return _CLASS_TEXT.get(code, "unknown error code %d" % code)


def last_used_code():
    """MPI.LASTUSEDCODE's value: the largest user class or code yet."""
    return _last_used[0]


def _new_user_code(error_class):
    with atomic.mpi_lock:       # one new code per call, whichever threads call
        _last_used[0] += 1
        code = _last_used[0]
        _user_class_of[code] = code if error_class is None else error_class
    return code


def add_error_class():
    return _new_user_code(None)


def add_error_code(error_class):
    error_class = int(error_class)
    if error_class not in _CLASS_TEXT and _user_class_of.get(error_class) != error_class:
        fail(ERR_ARG, "Add_error_code: %d is not an error class; pass a predefined one "
             "(MPI.ERR_*) or one from Add_error_class" % error_class)
    return _new_user_code(error_class)


def add_error_string(code, string):
    code = _user_code(code, "Add_error_string")
    _user_strings[code] = str(string)


def remove_error_class(error_class):
    error_class = _user_code(error_class, "Remove_error_class", want_class=True)
    if error_class in _user_strings or any(
            code != error_class and owner == error_class
            for code, owner in _user_class_of.items()):
        fail(ERR_ARG, "Remove_error_class: class %d still has a string or codes; remove "
             "them first" % error_class)
    del _user_class_of[error_class]


def remove_error_code(code):
    code = _user_code(code, "Remove_error_code", want_class=False)
    if code in _user_strings:
        fail(ERR_ARG, "Remove_error_code: code %d still has a string; remove it first"
             % code)
    del _user_class_of[code]


def remove_error_string(code):
    _user_strings.pop(_user_code(code, "Remove_error_string"), None)


def _user_code(code, call, want_class=None):
    """``code`` when it is a user class (want_class True), a user code (False) or
    either (None); else ERR_ARG."""
    code = int(code)
    owner = _user_class_of.get(code)
    if owner is None or (want_class is not None and (owner == code) != want_class):
        kind = {True: "class", False: "code", None: "class or code"}[want_class]
        fail(ERR_ARG, "%s: %d is not a user error %s; only what Add_error_class and "
             "Add_error_code made can be changed" % (call, code, kind))
    return code


class Exception(RuntimeError):  # noqa: A001 - mpi4py's name, on purpose
    """``MPI.Exception``: carries an error class and a message saying what to fix."""

    def __init__(self, ierr=SUCCESS, message=None):
        self.ierr = int(ierr)
        if self.ierr < SUCCESS:     # as mpi4py: no code is negative
            self.ierr = ERR_UNKNOWN
        self.message = message
        RuntimeError.__init__(self, self.ierr)

    def Get_error_code(self):
        """Error code."""
        return self.ierr

    def Get_error_class(self):
        """Error class."""
        return error_class_of(self.ierr)

    def Get_error_string(self):
        """Error string."""
        return error_string(self.ierr)

    error_code = property(Get_error_code)
    error_class = property(Get_error_class)
    error_string = property(Get_error_string)

    def __int__(self):
        return self.ierr

    def _compare(self, other, compare):
        if isinstance(other, (Exception, int)):
            return compare(self.ierr, int(other))
        return NotImplemented

    def __eq__(self, other):
        return self._compare(other, operator.eq)

    def __ne__(self, other):
        return self._compare(other, operator.ne)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)

    def __hash__(self):
        return hash(self.ierr)

    def __bool__(self):
        return self.ierr != SUCCESS

    def __str__(self):
        text = error_string(self.ierr)
        return "%s: %s" % (text, self.message) if self.message else text

    def __repr__(self):
        return "MPI.Exception(%d)" % self.ierr

    def __reduce__(self):
        return (type(self), (self.ierr, self.message))


class JobAborted(Exception):
    """Raised in a wait when the job is ending because another rank failed."""

    def __init__(self, message="the job was aborted"):
        Exception.__init__(self, ERR_OTHER, message)

    def __reduce__(self):
        return (type(self), (self.message,))


def fail(error_class, message):
    """Raise ``MPI.Exception(error_class)`` with a message that says what to fix."""
    raise Exception(error_class, message)


# what ``from .errors import *`` gives the MPI namespace: the error classes and
# Exception, not the helpers above (mpi4py's namespace has no such names)
__all__ = ["Exception", "SUCCESS"] + [name for name in dict(globals()) if name.startswith("ERR_")]
