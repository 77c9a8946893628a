"""Spawn, Spawn_multiple and Comm.Get_parent (MPI-3.1 §10.3) in a shmrma job.

The children are ranks of the same job: the root takes free process slots of the
job (``shmrma-run --universe-size N``, else 16 at least; a slot is never given back), plans
their COMM_WORLD and the parent intercommunicator (contexts and barrier slots, as
intercomm.py plans any), and asks the launcher, down its request pipe, to fork
them; the launcher supervises them as any rank (a crash ends the job, --timeout
reports them, nothing is left in /dev/shm). Each child runs a Python program,
read as ``shmrma-run python ...`` reads one (run/cli.py's spawned_program), in its
own working directory when the info key ``wdir`` gives one; other info keys are
hints. The parents' intercommunicator is returned at once: messages to children
that have not started yet wait in their channels.
"""
import os
import pickle
import struct

from ..core import atomic, errors, job
from ..core.info import to_dict
from .comm import MADE_ABOVE
from .intercomm import Intercomm, _made, _pair_sizes, led
from .intracomm import _allocate_or_error, _planned

_parent = []        # a spawned process's parent intercommunicator, made at first ask


def spawn(comm, command, args=None, maxprocs=1, info=None, root=0, errcodes=None):
    """``comm.Spawn``: start ``maxprocs`` copies of a Python program."""
    made = _spawned(comm, root, lambda: [(command, _argv(args), maxprocs, info)])
    if errcodes is not None:
        errcodes[:] = [errors.SUCCESS] * made.Get_remote_size()
    return made


def spawn_multiple(comm, command, args=None, maxprocs=None, info=None, root=0,
                   errcodes=None):
    """``comm.Spawn_multiple``: start several programs, one COMM_WORLD for all.

    As mpi4py reads them: ``args`` None, one string for every command, or one
    argument list (or None) per command; ``maxprocs`` None (1), an int for every
    command, or one per command; ``info`` one Info for all, or one per command;
    ``errcodes`` gets one list per command."""
    def programs():
        if isinstance(command, (str, bytes, os.PathLike)):
            raise ValueError("Spawn_multiple: expecting a sequence of commands, not one")
        commands = list(command)
        count = len(commands)
        return list(zip(commands, _per_command(args, count, "args", _argvs),
                        _per_command(maxprocs, count, "maxprocs", _counts),
                        _per_command(info, count, "info", _infos)))
    made = _spawned(comm, root, programs)
    if errcodes is not None:
        counts = _per_command(maxprocs, len(list(command)), "maxprocs", _counts)
        errcodes[:] = [[errors.SUCCESS] * n for n in counts]
    return made


def _argv(args):
    """mpi4py's argv: None is none, a string the only argument, else a sequence."""
    if args is None:
        return []
    return [args] if isinstance(args, (str, bytes)) else list(args)


def _argvs(args, count):
    if args is None or isinstance(args, (str, bytes)):
        return [_argv(args)] * count
    return [_argv(item) for item in args]


def _counts(maxprocs, count):
    if maxprocs is None or isinstance(maxprocs, int):
        return [1 if maxprocs is None else maxprocs] * count
    return list(maxprocs)


def _infos(info, count):
    from ..core.info import Info
    if info is None or isinstance(info, Info):
        return [info] * count
    return list(info)


def _per_command(value, count, what, spread):
    values = spread(value, count)
    if len(values) != count:
        raise ValueError("Spawn_multiple: expecting %d %s (one per command), got %d"
                         % (count, what, len(values)))
    return values


def _spawned(comm, root, programs):
    """The intercommunicator of ``comm`` and the children the root starts: ``programs()``
    (read at the root only, as MPI reads the arguments) -> [(command, args, count, info)]."""
    def start_children(parent_ranks):
        world = job.current()
        if world.spawn_fd is None:
            errors.fail(errors.ERR_SPAWN, "Spawn: this job has no process slot to spare; "
                        "start it with shmrma-run --universe-size N, N above -n (a program "
                        "run by shmrma.launch or without the launcher cannot spawn)")
        children = [child for entry in programs() for child in _children_of(world, *entry)]
        first = world.claim_ranks(len(children))
        if first is None:
            errors.fail(errors.ERR_SPAWN, "Spawn: %d processes asked, %d slots left of "
                        "this job's %d (slots are not given back); start it with a "
                        "larger shmrma-run --universe-size"
                        % (len(children), world.size - world.processes(), world.size))
        ranks = list(range(first, first + len(children)))
        base, slots = _planned(_allocate_or_error(4, [len(ranks)] +
                                                  _pair_sizes(parent_ranks, ranks)))
        plan = (base + 1, slots[1:])
        _ask_launcher(world, {
            "children": [(rank, argv, workdir) for rank, (argv, workdir)
                         in zip(ranks, children)],
            "group": ranks, "context": base, "slot": slots[0],
            "parent": (plan, list(parent_ranks))})
        return ranks, plan
    return led(comm, root, "root", start_children)


def _children_of(world, command, args, count, info):
    """[(argv, working directory)] of ``count`` copies, checked as the launcher will
    read them (ERR_SPAWN, saying why, when they cannot run)."""
    argv = [os.fspath(command)] + [str(arg) for arg in args]
    count = int(count)
    if count < 1:
        errors.fail(errors.ERR_ARG, "Spawn: maxprocs must be at least 1, not %d" % count)
    hints = to_dict(info)
    workdir = hints.get("wdir") or None
    if workdir is not None and not os.path.isdir(workdir):
        errors.fail(errors.ERR_SPAWN, "Spawn: the info key wdir names %r, which is not a "
                    "directory" % workdir)
    try:
        world.spawn_program(argv, workdir)
    except Exception as exc:  # noqa: BLE001 - the command line parser's own complaint
        errors.fail(errors.ERR_SPAWN, "Spawn: cannot run %s: %s" % (" ".join(argv), exc))
    return [(argv, workdir)] * count


def _ask_launcher(world, request):
    """Write the request down the launcher's pipe, whole: a lock word in the world
    segment keeps two roots' requests apart (a pipe keeps only short writes whole)."""
    data = pickle.dumps(request, pickle.HIGHEST_PROTOCOL)
    data = struct.pack("<I", len(data)) + data
    lock = world.base + job.OFF_SPAWN_LOCK
    while atomic.cas32(lock, 0, 1) != 0:
        os.sched_yield()
    try:
        while data:
            data = data[os.write(world.spawn_fd, data):]
    finally:
        atomic.store32(lock, 0)


def get_parent():
    """``Comm.Get_parent``: the intercommunicator with the parents of a spawned
    process (the same handle each time, until it is freed or disconnected), else
    the null intercommunicator."""
    world = job.current()
    if world.parent is None:
        return Intercomm()
    if not _parent:
        plan, parent_ranks = world.parent
        _parent.append(Intercomm(_made(plan, world.group, parent_ranks, None)))
    return _parent[0] if _parent[0] else Intercomm()


MADE_ABOVE.update(Spawn=spawn, Spawn_multiple=spawn_multiple, Get_parent=get_parent)
