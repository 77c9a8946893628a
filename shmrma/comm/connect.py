"""Ports, name publishing, Accept/Connect and Join (MPI-3.1 §10.4) between the
processes of one job.

A port is a name this process opened, ``shmrma-port:<job>:<world rank>:<n>``:
``Accept`` on it at its owner waits for the first connecting group's request,
which ``Connect`` sends to the owner over the job's world-spanning channel
(intracomm._SESSIONS) with the port's own tag; from then on the two roots meet
as Create_intercomm's leaders do (intercomm.meet), and each hands the outcome
to its group. ``Join`` swaps the two processes' world ranks over the socket
and makes an intercommunicator of the two. Published names live in a table in
a segment of the job (a lock word, then fixed-size entries), so every rank
sees every name; a process of another job cannot connect (ERR_PORT).
"""
import os
import pickle
import struct

from ..core import atomic, constants, errors, job, segments
from ..core.info import to_dict
from ..types.status import Status
from ..p2p.transport import CONNECT
from .comm import MADE_ABOVE
from .intercomm import led, meet
from .intracomm import _SESSIONS

_PREFIX = "shmrma-port"
_PORT_TAGS = -(1 << 24)     # port n's tag is _PORT_TAGS - n: below every other tag
_JOIN_TAG = -(1 << 23)
_open_ports = set()         # the n of each port this process opened and did not close
_next_port = [0]

_NAMES_BYTES = 1 << 16      # the name table: a lock word, then entries
_ENTRIES_AT = 64
_FIELD = 256                # an entry: the service name, then the port, NUL-padded
_names_region = []


# --- ports --------------------------------------------------------------------------

def open_port(info=None):
    """``MPI.Open_port``: a new port name of this process."""
    to_dict(info)
    _next_port[0] += 1
    number = _next_port[0]
    _open_ports.add(number)
    world = job.current()
    return "%s:%s:%d:%d" % (_PREFIX, world.job_id, world.rank, number)


def close_port(port_name):
    """``MPI.Close_port``: release a port this process opened."""
    owner, number = _parsed(port_name, "Close_port")
    if owner != job.world_rank() or number not in _open_ports:
        errors.fail(errors.ERR_PORT, "Close_port: %r is not a port open on this process"
                    % (port_name,))
    _open_ports.discard(number)


def _parsed(port_name, call):
    """(owner's world rank, port number) of a port name of this job, else ERR_PORT."""
    parts = str(port_name).split(":") if isinstance(port_name, str) else []
    world = job.current()
    try:
        prefix, job_id, owner, number = parts
        owner, number = int(owner), int(number)
    except ValueError:
        errors.fail(errors.ERR_PORT, "%s: %r is not a port name; use what Open_port "
                    "returned" % (call, port_name))
    if prefix != _PREFIX or job_id != str(world.job_id) or not 0 <= owner < world.size:
        errors.fail(errors.ERR_PORT, "%s: %r is not a port of this job; a shmrma job "
                    "connects only its own ranks" % (call, port_name))
    return owner, number


def accept(comm, port_name, info=None, root=0):
    """``comm.Accept``: the group connecting to ``port_name`` (open at ``root``)."""
    to_dict(info)

    def meet_connector(local_ranks):
        owner, number = _parsed(port_name, "Accept")
        if owner != job.world_rank() or number not in _open_ports:
            errors.fail(errors.ERR_PORT, "Accept: %r is not open on this process; Accept "
                        "on a port the root opened" % (port_name,))
        tag, status = _PORT_TAGS - number, Status()
        remote_ranks = _SESSIONS._irecv(constants.ANY_SOURCE, tag, None, CONNECT,
                                        loads=pickle.loads).wait(status)
        return meet(local_ranks, _SESSIONS, status.Get_source(), tag, remote_ranks)
    return led(comm, root, "root", meet_connector)


def connect(comm, port_name, info=None, root=0):
    """``comm.Connect``: the group accepting on ``port_name``."""
    to_dict(info)

    def meet_acceptor(local_ranks):
        owner, number = _parsed(port_name, "Connect")
        if owner in local_ranks:
            errors.fail(errors.ERR_PORT, "Connect: port %r belongs to a process of this "
                        "group; the accepting group must be another" % (port_name,))
        return meet(local_ranks, _SESSIONS, owner, _PORT_TAGS - number)
    return led(comm, root, "root", meet_acceptor)


def join(fd):
    """``Comm.Join``: an intercommunicator with the process at the other end of ``fd``."""
    from .intracomm import COMM_SELF
    world = job.current()
    mine = struct.pack("<q32s", world.rank, str(world.job_id).encode()[:32])
    _write_all(fd, mine)
    rank, job_id = struct.unpack("<q32s", _read_all(fd, len(mine)))
    if job_id != mine[8:] or not 0 <= rank < world.size or rank == world.rank:
        errors.fail(errors.ERR_PORT, "Join: the process at the other end of the socket is "
                    "not another rank of this job; shmrma joins only its own ranks")
    return led(COMM_SELF, 0, "root", lambda local_ranks: meet(local_ranks, _SESSIONS, rank,
                                                               _JOIN_TAG))


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _read_all(fd, nbytes):
    got = b""
    while len(got) < nbytes:
        chunk = os.read(fd, nbytes - len(got))
        if not chunk:
            errors.fail(errors.ERR_PORT, "Join: the socket closed before the other "
                        "process answered")
        got += chunk
    return got


# --- name publishing ---------------------------------------------------------------

def publish_name(service_name, port_name, info=None):
    """``MPI.Publish_name``: make ``port_name`` known as ``service_name`` in the job."""
    to_dict(info)
    service, port = _field(service_name, "service name"), _field(port_name, "port name")
    with _NameTable() as table:
        if table.find(service) is not None:
            errors.fail(errors.ERR_NAME, "Publish_name: %r is already published; "
                        "Unpublish_name it first" % (service_name,))
        table.add(service, port)


def unpublish_name(service_name, port_name, info=None):
    """``MPI.Unpublish_name``: withdraw ``service_name``."""
    to_dict(info)
    service = _field(service_name, "service name")
    with _NameTable() as table:
        if table.find(service) is None:
            errors.fail(errors.ERR_SERVICE, "Unpublish_name: %r is not published"
                        % (service_name,))
        table.remove(service)


def lookup_name(service_name, info=None):
    """``MPI.Lookup_name``: the port published as ``service_name``."""
    to_dict(info)
    service = _field(service_name, "service name")
    with _NameTable() as table:
        port = table.find(service)
    if port is None:
        errors.fail(errors.ERR_NAME, "Lookup_name: no service %r is published in this job"
                    % (service_name,))
    return port.decode()


def _field(text, what):
    data = str(text).encode()
    if not data or len(data) >= _FIELD or b"\0" in data:
        errors.fail(errors.ERR_ARG, "a %s is 1 to %d bytes with no NUL, not %r"
                    % (what, _FIELD - 1, text))
    return data


class _NameTable:
    """The job's name table, held under its lock (a spin on the lock word: every
    holder keeps it for one scan of the table)."""

    def __enter__(self):
        if not _names_region:
            _names_region.append(segments.Region.create_or_attach(
                job.current().shared_name("names"), _NAMES_BYTES))
        self.region = _names_region[0]
        while atomic.cas32(self.region.address, 0, 1) != 0:
            os.sched_yield()
        return self

    def __exit__(self, *exc):
        atomic.store32(self.region.address, 0)
        return False

    def _entries(self):
        memory = self.region.buffer
        for offset in range(_ENTRIES_AT, _NAMES_BYTES - 2 * _FIELD + 1, 2 * _FIELD):
            yield memory, offset

    def find(self, service):
        for memory, offset in self._entries():
            if bytes(memory[offset:offset + _FIELD]).rstrip(b"\0") == service:
                return bytes(memory[offset + _FIELD:offset + 2 * _FIELD]).rstrip(b"\0")
        return None

    def add(self, service, port):
        for memory, offset in self._entries():
            if memory[offset] == 0:
                memory[offset:offset + 2 * _FIELD] = (service.ljust(_FIELD, b"\0") +
                                                      port.ljust(_FIELD, b"\0"))
                return
        errors.fail(errors.ERR_NO_MEM, "Publish_name: the job's name table is full (%d "
                    "names); Unpublish_name some" % ((_NAMES_BYTES - _ENTRIES_AT)
                                                     // (2 * _FIELD)))

    def remove(self, service):
        for memory, offset in self._entries():
            if bytes(memory[offset:offset + _FIELD]).rstrip(b"\0") == service:
                memory[offset:offset + 2 * _FIELD] = bytes(2 * _FIELD)


MADE_ABOVE.update(Accept=accept, Connect=connect, Join=join)
