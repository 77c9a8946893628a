"""Partitioned point-to-point communication (MPI-4.0 §4): ``Psend_init``,
``Precv_init``, ``Pready``, ``Pready_range``, ``Pready_list``, ``Parrived``.

A partitioned send is a persistent send whose buffer is cut in ``partitions``
parts of ``count`` items each; the sender marks parts ready after Start, and the
message leaves once every part is ready: in shared memory one copy of the whole is
cheaper than one per part. So the receiver sees every part arrive at once, which
MPI allows (Parrived may say false until the whole has arrived).
"""
import operator

from . import constants, errors
from .comm import Persistent
from .info import to_dict
from .request import Request


class _NotReady(Request):
    """A started partitioned send waiting for its last Pready."""

    def __init__(self):
        self._null = False
        self._done = False

    def _describe(self):
        return "the partitions of a partitioned send to be marked ready (Pready)"


class PartitionedSend(Persistent):
    def __init__(self, operation, partitions):
        super().__init__(operation)
        self._partitions = partitions
        self._ready = None

    def Start(self):
        if self._null or self._inner is not None:
            super().Start()     # the errors of a freed or an active request
        self._inner = _NotReady()
        self._ready = [False] * self._partitions

    def Pready(self, partition):
        self.Pready_list([partition])

    def Pready_range(self, partition_low, partition_high):
        self.Pready_list(range(partition_low, partition_high + 1))

    def Pready_list(self, partitions):
        if not isinstance(self._inner, _NotReady):
            errors.fail(errors.ERR_REQUEST, "Pready: the partitioned send is not started "
                        "(or all its partitions are ready already); Start it first")
        marks = [_partition(p, self._partitions, "Pready") for p in partitions]
        for partition in marks:
            if self._ready[partition]:
                errors.fail(errors.ERR_ARG, "Pready: partition %d is marked ready already "
                            "in this round" % partition)
        for partition in marks:
            self._ready[partition] = True
        if all(self._ready):
            self._inner = self._operation()


class PartitionedReceive(Persistent):
    def __init__(self, operation, partitions):
        super().__init__(operation)
        self._partitions = partitions

    def Parrived(self, partition):
        _partition(partition, self._partitions, "Parrived")
        return self._inner is None or self._poll() or self._progressed()

    def _progressed(self):
        from . import mailbox
        mailbox.mailbox().progress()
        return self._poll()


def _partition(partition, partitions, call):
    partition = operator.index(partition)
    if not 0 <= partition < partitions:
        errors.fail(errors.ERR_ARG, "%s: partition %d is outside 0..%d"
                    % (call, partition, partitions - 1))
    return partition


class PartitionedCalls:
    """``Psend_init`` and ``Precv_init`` of a communicator."""

    def Psend_init(self, buf, partitions, dest, tag=0, info=None):
        partitions = self._partitions(partitions, info)
        self._send_data(buf, dest, partitions)      # arguments checked now
        self._tag(tag)
        return PartitionedSend(lambda: self._isend_bytes(
            self._send_data(buf, dest, partitions), dest, tag, False, hold=True), partitions)

    def Precv_init(self, buf, partitions, source=constants.ANY_SOURCE,
                   tag=constants.ANY_TAG, info=None):
        partitions = self._partitions(partitions, info)
        self._recv_message(buf, source, partitions)
        self._tag(tag, wildcard=True)
        return PartitionedReceive(lambda: self._irecv_message(
            self._recv_message(buf, source, partitions), source, tag), partitions)

    def _partitions(self, partitions, info):
        partitions = operator.index(partitions)
        if partitions < 1:
            errors.fail(errors.ERR_ARG, "partitioned communication needs 1 partition or "
                        "more, got %d" % partitions)
        to_dict(info)
        return partitions
