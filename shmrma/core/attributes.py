"""Attribute caching (MPI-3.1 §6.7): keyvals, and the attributes communicators,
windows and datatypes carry.

As in mpi4py, a value is any Python object. ``copy_fn(obj, keyval, value)`` runs
when a communicator or datatype is duplicated: it returns the copy's value, or
NotImplemented for no copy; True copies the value itself, None or False nothing.
``delete_fn(obj, keyval, value)`` runs when the value is replaced, deleted or its
object freed. An exception in either is ERR_OTHER, its traceback on stderr, as
mpi4py reports it. Keyvals are numbers local to the process, as in MPI; the
predefined ones (MPI.TAG_UB, MPI.WIN_BASE...) have MPICH's values and are read only.
"""
import itertools
import sys
import traceback

from . import constants, errors

_FIRST_USER_KEYVAL = 0x30000000
_numbers = itertools.count(_FIRST_USER_KEYVAL)
_keyvals = {}           # number -> _Keyval


class _Keyval:
    __slots__ = ("kind", "copy_fn", "delete_fn", "freed")

    def __init__(self, kind, copy_fn, delete_fn):
        self.kind = kind
        self.copy_fn = None if copy_fn is False else copy_fn
        self.delete_fn = None if delete_fn in (False, True) else delete_fn
        self.freed = False


def _user_keyval(kind, keyval, call):
    """The live keyval ``keyval`` of objects of ``kind``, or ERR_KEYVAL."""
    key = _keyvals.get(keyval)
    if key is None or key.freed or key.kind != kind:
        what = ("KEYVAL_INVALID" if keyval == constants.KEYVAL_INVALID
                else "a predefined attribute, which is read only" if keyval in _PREDEFINED
                else "not a %s keyval of this process (Create_keyval makes one)" % kind
                if key is None or key.kind != kind else "freed")
        errors.fail(errors.ERR_KEYVAL, "%s: keyval %d is %s" % (call, keyval, what))
    return key


def _run(function, obj, keyval, value, what):
    """Call a user's copy or delete function; its exception is ERR_OTHER."""
    try:
        return function(obj, keyval, value)
    except Exception:  # noqa: BLE001 - any exception of user code is reported
        traceback.print_exc(file=sys.stderr)
        errors.fail(errors.ERR_OTHER, "the %s function of attribute keyval %d raised "
                    "(traceback above)" % (what, keyval))


class Attributes:
    """Mixin of Comm, Win and Datatype. The class sets ``_attribute_kind``; the object
    gives ``_attributes()``, the dict of its attributes (kept on its shared state, so
    every handle to it sees them), and may answer predefined keyvals in
    ``_predefined_attribute`` (None when it has no such attribute)."""

    _attribute_kind = None

    @classmethod
    def Create_keyval(cls, copy_fn=None, delete_fn=None, nopython=False):
        """Create a new attribute key for objects of this class."""
        keyval = next(_numbers)
        _keyvals[keyval] = _Keyval(cls._attribute_kind, copy_fn, delete_fn)
        return keyval

    @classmethod
    def Free_keyval(cls, keyval):
        """Free an attribute key; return KEYVAL_INVALID."""
        # attributes set with it live on until deleted, and their delete_fn still runs
        _user_keyval(cls._attribute_kind, keyval, "Free_keyval").freed = True
        return constants.KEYVAL_INVALID

    def _predefined_attribute(self, keyval):
        return None

    def Get_attr(self, keyval):
        """Retrieve attribute value by key (None when not set)."""
        if keyval in _PREDEFINED:
            return self._predefined_attribute(keyval)
        entry = self._attributes().get(keyval)
        if entry is None:
            _user_keyval(self._attribute_kind, keyval, "Get_attr")
            return None
        return entry[1]

    def Set_attr(self, keyval, attrval):
        """Store attribute value associated with a key."""
        key = _user_keyval(self._attribute_kind, keyval, "Set_attr")
        self._drop_attribute(keyval)
        self._attributes()[keyval] = (key, attrval)

    def Delete_attr(self, keyval):
        """Delete attribute value associated with a key."""
        if keyval not in self._attributes():
            _user_keyval(self._attribute_kind, keyval, "Delete_attr")
        self._drop_attribute(keyval)

    def _drop_attribute(self, keyval):
        """Forget the attribute ``keyval`` (if set) and run its delete_fn: gone even if
        delete_fn raises, as in MPICH (else freeing its object would raise again)."""
        entry = self._attributes().pop(keyval, None)
        if entry is not None and entry[0].delete_fn is not None:
            _run(entry[0].delete_fn, self, keyval, entry[1], "delete")

    def _drop_attributes(self):
        """What freeing the object does: every attribute's delete_fn, newest first."""
        for keyval in reversed(list(self._attributes())):
            self._drop_attribute(keyval)

    def _copy_attributes_to(self, copy):
        """What duplicating does: the attributes whose copy_fn gives a value, on ``copy``."""
        store = copy._attributes()
        for keyval, (key, value) in list(self._attributes().items()):
            if key.copy_fn is None:
                continue
            new = value if key.copy_fn is True else _run(key.copy_fn, self, keyval, value,
                                                           "copy")
            if new is not NotImplemented:
                store[keyval] = (key, new)


# MPICH's predefined keyvals (mpi4py's MPI.TAG_UB... are these numbers)
TAG_UB = 0x64400001
IO = 0x64400005
WTIME_IS_GLOBAL = 0x64400007
UNIVERSE_SIZE = 0x64400009
LASTUSEDCODE = 0x6440000b
APPNUM = 0x6440000d
WIN_BASE = 0x66000001
WIN_SIZE = 0x66000003
WIN_DISP_UNIT = 0x66000005
WIN_CREATE_FLAVOR = 0x66000007
WIN_MODEL = 0x66000009
_PREDEFINED = {TAG_UB, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, LASTUSEDCODE, APPNUM, WIN_BASE,
               WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL}
