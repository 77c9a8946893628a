"""MPI info objects: ordered string key/value hints, with mpi4py 4.x's mapping protocol.

An `Info` refers to a store; ``Info(other)`` shares it (one MPI handle, two
Python objects), so equality is store identity, updates through one object
show through the other, and freeing through one invalidates the others.
Behaviour follows mpi4py's Info.pyx on MPICH, except that a null info raises
ERR_INFO where MPICH says ERR_ARG (ERR_INFO is the standard's class for an
invalid info handle). Lengths are checked in UTF-8 bytes, as MPICH sees them;
both limits are inclusive (a 255-byte key and a 1024-byte value are fine).
"""
import collections.abc
import operator

from .constants import MAX_INFO_KEY, MAX_INFO_VAL
from .errors import ERR_ARG, ERR_INFO, ERR_INFO_KEY, ERR_INFO_NOKEY, ERR_INFO_VALUE, fail
from .handle import Handle, constant, reduce_named


class InfoStore:
    """What an info handle refers to: the ordered items and whether users may change them."""

    def __init__(self, items=(), readonly=False):
        self.items = dict(items)
        self.readonly = readonly
        self.freed = False


class Info(Handle):
    """``MPI.Info``: key-value hints; ``Info()`` is null, ``Info.Create()`` an empty one."""

    def __init__(self, info=None):
        if info is not None and not isinstance(info, Info):
            raise TypeError("Argument 'info' has incorrect type (expected Info, got %s)"
                            % type(info).__name__)
        self._store = None if info is None else info._store

    # -- handle protocol: handle.Handle; representation ---------------------

    @property
    def _handle(self):
        return self._store

    @_handle.setter
    def _handle(self, store):
        self._store = store

    def __repr__(self):
        if self._store is None:
            return "MPI.INFO_NULL"
        if self is INFO_ENV:
            return "MPI.INFO_ENV"
        return "<MPI.Info %r>" % (self._store.items,)

    def __reduce__(self):
        named = reduce_named(self, {"INFO_NULL": INFO_NULL, "INFO_ENV": INFO_ENV})
        if named is not None:
            return named
        # as mpi4py: a subclass's info unpickles as one of its class
        return (type(self).Create, (list(self._live("pickle").items.items()),))

    def _live(self, action):
        store = self._store
        if store is None:
            fail(ERR_INFO, "cannot %s INFO_NULL" % action)
        if store.freed:
            fail(ERR_INFO, "cannot %s an info that was freed" % action)
        return store

    def _writable(self, action):
        store = self._live(action)
        if store.readonly:
            fail(ERR_INFO, "cannot %s INFO_ENV: it is read-only" % action)
        return store.items

    # -- MPI calls -----------------------------------------------------------

    @classmethod
    def Create(cls, items=None):
        """A new info holding ``items`` (an Info, a mapping or (key, value) pairs)."""
        created = cls()
        created._store = InfoStore()
        if items is not None:
            created.update(items)  # may raise: then no info was created
        return created

    @classmethod
    def Create_env(cls, args=None):
        """Create an info object describing how the program was started.

        A new info describing how a program was started (MPI 4.0 §11.2.3), as
        MPICH fills it: ``command`` is ``args[0]`` and ``argv`` the other arguments
        joined by spaces; a key without a value (no args, one arg) is left out."""
        args = _argv(args)
        created = cls.Create()
        if args:
            created.Set("command", args[0])
        if len(args) > 1:
            created.Set("argv", " ".join(args[1:]))
        return created

    def Free(self):
        """Free an info object."""
        self._writable("free")
        self._store.freed = True
        self._store = None

    def _predefined(self):
        return self._store.readonly

    def Dup(self):
        """Duplicate an existing info object."""
        duplicate = type(self)()
        duplicate._store = InfoStore(self._live("duplicate").items)
        return duplicate

    def Get(self, key):
        """The value of ``key``, or None when it is not set."""
        store = self._live("get a key of")
        return store.items.get(_checked_key(key))

    def Set(self, key, value):
        """Store a value associated with a key."""
        items = self._writable("set a key of")
        key, value = _checked_key(key), _checked_value(value)
        items[key] = value  # an existing key keeps its position, as in MPICH

    def Delete(self, key):
        """Remove a (key, value) pair from info."""
        items = self._writable("delete a key of")
        key = _checked_key(key)
        if key not in items:
            fail(ERR_INFO_NOKEY, "info key %r is not set, so it cannot be deleted" % key)
        del items[key]

    def Get_nkeys(self):
        """Return the number of currently defined keys in info."""
        return len(self._live("count the keys of").items)

    def Get_nthkey(self, n):
        """Return the ``n``-th defined key in info."""
        keys = list(self._live("get a key of").items)
        n = operator.index(n)
        if not 0 <= n < len(keys):
            fail(ERR_ARG, "Get_nthkey(%d): n must be at least 0 and less than the number "
                          "of keys, %d" % (n, len(keys)))
        return keys[n]

    # -- mapping protocol, as mpi4py's Info.pyx -------------------------------------

    def __len__(self):
        return self.Get_nkeys() if self else 0

    def __contains__(self, key):
        return bool(self) and self.Get(key) is not None

    def __iter__(self):
        return iter(self.keys())

    def __getitem__(self, key):
        value = self.Get(key) if self else None
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        if not self:
            raise KeyError(key)
        self.Set(key, value)

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self.Delete(key)

    def get(self, key, default=None):
        """Retrieve value by key, or ``default``."""
        value = self.Get(key) if self else None
        return default if value is None else value

    def keys(self):
        """Return list of keys."""
        return list(self._live("list the keys of").items) if self else []

    def values(self):
        """Return list of values."""
        return list(self._live("list the values of").items.values()) if self else []

    def items(self):
        """Return list of items."""
        return list(self._live("list the items of").items.items()) if self else []

    def update(self, items=(), **kwds):
        """Update contents from a mapping or (key, value) pairs and keywords."""
        if not self:
            raise KeyError
        pairs = [(key, items[key]) for key in items.keys()] if hasattr(items, "keys") else items
        for key, value in pairs:
            self.Set(key, value)
        for key, value in kwds.items():
            self.Set(key, value)

    def pop(self, key, *default):
        """Pop value by key (KeyError unless a default is given)."""
        value = self.Get(key) if self else None
        if value is not None:
            self.Delete(key)
            return value
        if default:
            (value,) = default
            return value
        raise KeyError(key)

    def popitem(self):
        """Remove and return the *last* item (as mpi4py's code does; its docstring says first)."""
        if not self or not self.Get_nkeys():
            raise KeyError
        key = self.Get_nthkey(self.Get_nkeys() - 1)
        value = self.Get(key)
        self.Delete(key)
        return (key, value)

    def copy(self):
        """Copy contents into a new info."""
        return self.Dup() if self else type(self)()

    def clear(self):
        """Clear contents."""
        if self:
            for key in self.keys():
                self.Delete(key)


def as_mpi_string(text, what):
    """What every MPI string argument accepts (object names, info keys and values).

    str as is, bytes decoded from UTF-8, like mpi4py's asmpistr; anything else is
    a TypeError, and a NUL character a ValueError (C would cut the string there).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if not isinstance(text, str):
        raise TypeError("%s must be str, not %s" % (what, type(text).__name__))
    if "\0" in text:
        raise ValueError("%s %r has an embedded null character" % (what, text))
    return text


def _argv(args):
    """mpi4py's asarray_argv: None is no arguments, one string is one argument,
    anything else an iterable of strings (TypeError otherwise)."""
    if args is None:
        return []
    if isinstance(args, (str, bytes)):
        args = [args]
    return [as_mpi_string(arg, "argument") for arg in args]


def _checked_key(key):
    key = as_mpi_string(key, "info key")
    if not key.strip():
        fail(ERR_INFO_KEY, "info key %r is empty or blank" % key)
    if len(key.encode("utf-8")) > MAX_INFO_KEY:
        fail(ERR_INFO_KEY, "info key %r... is %d bytes long; the limit is MPI.MAX_INFO_KEY = %d"
             % (key[:20], len(key.encode("utf-8")), MAX_INFO_KEY))
    return key


def _checked_value(value):
    value = as_mpi_string(value, "info value")
    if len(value.encode("utf-8")) > MAX_INFO_VAL:
        fail(ERR_INFO_VALUE, "info value %r... is %d bytes long; the limit is MPI.MAX_INFO_VAL = %d"
             % (value[:20], len(value.encode("utf-8")), MAX_INFO_VAL))
    return value


def _dict_value(value):
    """Values of a plain dict: text as is, booleans as MPI hints spell them, others via str."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, bytes)):
        return value
    return str(value)


def to_dict(info):
    """What every call taking ``info`` uses: a new dict of its hints.

    Accepts None, INFO_NULL (both give {}), an Info, or a mapping with str keys
    (shmrma's extension: mpi4py takes only Info). Keys and values are checked
    like Info.Set.
    """
    if info is None:
        return {}
    if isinstance(info, Info):
        return dict(info.items())
    if isinstance(info, collections.abc.Mapping):
        return {_checked_key(key): _checked_value(_dict_value(value))
                for key, value in info.items()}
    raise TypeError("info must be an MPI.Info, a dict or None, not %s %r"
                    % (type(info).__name__, info))


INFO_NULL = constant(Info())
INFO_ENV = constant(Info())
INFO_ENV._store = InfoStore(readonly=True)  # MPICH leaves it empty for a singleton

__all__ = ["Info", "INFO_NULL", "INFO_ENV"]  # what MPI may re-export
