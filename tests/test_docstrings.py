"""Docstrings of the MPI namespace: ``help(MPI.Win.Put)`` says what the call does.

Every public class of ``shmrma.MPI`` has a docstring, and at least 90% of the
public members shmrma defines (methods, class methods, properties of those
classes and of the mixins they are made of, plus the module's functions) have one
of their own. A member is counted once however many classes or names share it
(``Comm.Send`` is also ``Comm.Rsend``); what a class inherits from object, int or
numpy is not shmrma's, so it is not counted.
"""
import inspect

import pytest

from shmrma import MPI

MINIMUM_COVERAGE = 0.90
# on the mpi backend the namespace is mpi4py's, whose docstrings are its own
pytestmark = pytest.mark.skipif(MPI.__name__ != "shmrma.MPI",
                                reason="shmrma.MPI is mpi4py's namespace (mpi backend)")


def public_classes(namespace):
    """{name: class} of the public classes shmrma defines in ``namespace``."""
    names = {name for name in dir(namespace) if not name.startswith("_")}
    names.add("buffer")     # built on first use (MPI.__getattr__), so not in dir()
    found = {}
    for name in sorted(names):
        value = getattr(namespace, name, None)
        if inspect.isclass(value) and value.__module__.startswith("shmrma."):
            found[name] = value
    return found


def public_functions(namespace):
    """{name: function} of the public functions of ``namespace`` (MPI.Wtime is a builtin)."""
    return {name: value for name, value in vars(namespace).items()
            if not name.startswith("_") and (inspect.isfunction(value) or
                                             inspect.isbuiltin(value))}


def _target(member):
    """What carries a member's docstring: the property itself, or the function."""
    if isinstance(member, (classmethod, staticmethod)):
        return member.__func__
    return member


def members(classes, functions):
    """{id: (qualified name, member)} of every public member the classes define in
    shmrma's own classes of their MRO, and of the functions; each counted once."""
    found = {}
    # the simplest class first, so a member is named as the class that has it first
    # (Comm.Bcast, not Cartcomm.Bcast)
    for class_name, cls in sorted(classes.items(), key=lambda item: (len(item[1].__mro__),
                                                                      item[0])):
        for base in cls.__mro__:
            if not base.__module__.startswith("shmrma."):
                continue        # object, int, RuntimeError, numpy.ndarray...
            for name, member in vars(base).items():
                if name.startswith("_"):
                    continue
                if not (inspect.isfunction(member) or
                        isinstance(member, (classmethod, staticmethod, property))):
                    continue    # constants and other plain values
                target = _target(member)
                found.setdefault(id(target), ("%s.%s" % (class_name, name), target))
    for name, function in sorted(functions.items()):
        found.setdefault(id(function), (name, function))
    return found


def undocumented(found):
    """The qualified names of the members in ``found`` without a docstring of their own."""
    return sorted(name for name, target in found.values()
                  if not (getattr(target, "__doc__", None) or "").strip())


def coverage():
    found = members(public_classes(MPI), public_functions(MPI))
    missing = undocumented(found)
    return len(found), missing


def test_the_walk_finds_the_namespace():
    classes = public_classes(MPI)
    for name in ("Comm", "Intracomm", "Cartcomm", "Win", "Request", "Datatype", "File",
                 "Sync", "buffer"):
        assert name in classes, name
    functions = public_functions(MPI)
    for name in ("Init", "Finalize", "Wtime", "Get_version", "Alloc_mem"):
        assert name in functions, name
    total, _ = coverage()
    assert total > 400, "the walk found only %d members; is it looking at MPI?" % total


def test_the_count_sees_a_missing_docstring():
    class Bare:
        """Documented class, undocumented members."""

        def Call(self):
            return 1

        @classmethod
        def Make(cls):
            return cls()

        @property
        def value(self):
            return 1

        def Said(self):
            """Documented."""

    Bare.__module__ = "shmrma.fake"
    found = members({"Bare": Bare}, {"loose": lambda: None})
    assert undocumented(found) == ["Bare.Call", "Bare.Make", "Bare.value", "loose"]


def test_most_members_have_a_docstring():
    total, missing = coverage()
    documented = total - len(missing)
    print("docstrings: %d of %d public members (%.1f%%)"
          % (documented, total, 100.0 * documented / total))
    assert documented >= MINIMUM_COVERAGE * total, (
        "only %d of %d public members of shmrma.MPI have a docstring (%.1f%%, at least "
        "%d%% wanted); these have none:\n  %s"
        % (documented, total, 100.0 * documented / total, 100 * MINIMUM_COVERAGE,
           "\n  ".join(missing)))


def test_every_public_class_has_a_docstring():
    bare = [name for name, cls in public_classes(MPI).items()
            if not (cls.__dict__.get("__doc__") or "").strip()]
    assert not bare, "public classes of shmrma.MPI without a docstring: %s" % bare
