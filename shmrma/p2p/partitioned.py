"""Partitioned point-to-point communication (MPI-4 §4.2: Psend_init, Precv_init,
Pready, Pready_range, Pready_list, Parrived).

A partitioned send is a persistent request whose buffer is ``partitions`` blocks
of the message's count each (mpi4py's buffer specification). Each Pready sends
its block at once, as its own message in the communicator's PARTITIONED
sub-context, behind a header naming the block and the sender's number of blocks;
so sender and receiver may cut the same message into different numbers of
partitions, as MPI allows. The receiver takes the blocks of the current round
out of matching itself (no receive is posted, so blocks of the next round stay
unexpected until it starts again: per-pair order keeps the rounds apart) and
copies each into place; Parrived(i) holds once every sender block overlapping
its partition i is in.
"""
import operator
import struct

from ..types import buffers
from ..core import constants, errors
from . import transport as mailbox
from .request import Prequest
from ..types.status import Status

PARTITIONED = mailbox.PARTITIONED
HEADER = struct.Struct("<qq")   # the sender's block index, the sender's number of blocks


class _Partitioned(Prequest):
    """What both sides share: arguments checked at init (each side parses its buffer
    in ``_parse``), a round per Start."""

    _persistent = True
    _round = None       # the state of the started round; None while inactive

    def __init__(self, comm, buf, partitions, peer, tag, role):
        partitions = operator.index(partitions)
        if partitions < 1:
            errors.fail(errors.ERR_ARG, "partitions must be >= 1, not %d" % partitions)
        # no wildcards: a partitioned operation matches one peer and tag (MPI-4 §4.2.2)
        self._peer_rank = comm._peer(peer, role)
        self._tag = comm._tag(tag)
        self._comm, self._buf, self._partitions = comm, buf, partitions
        self._state = comm._s
        self._parse()           # the buffer is checked now, as MPI does
        self._null = False

    @property
    def _inactive(self):
        return self._round is None

    def _world_peer(self):
        return self._state.ranks[self._peer_rank]

    def Start(self):
        self._check_startable(self._round is not None)
        self._round = self._begin()

    def _partition(self, partition):
        partition = operator.index(partition)
        if self._round is None:
            errors.fail(errors.ERR_REQUEST, "the partitioned request is not started; "
                        "call Start first")
        if not 0 <= partition < self._partitions:
            errors.fail(errors.ERR_ARG, "partition %d is not one of 0..%d"
                        % (partition, self._partitions - 1))
        return partition

    def _peers(self):
        return () if self._peer_rank == constants.PROC_NULL else (self._world_peer(),)

    def _finish(self, status):
        self._round = None
        super()._finish(status)


class PartitionedSend(_Partitioned):
    """Psend_init's request: complete once every partition was marked ready and sent."""

    def __init__(self, comm, buf, partitions, dest, tag):
        super().__init__(comm, buf, partitions, dest, tag, "destination")

    def _parse(self):
        if self._peer_rank == constants.PROC_NULL:
            return None
        message = buffers.message(self._buf, writable=False, blocks=self._partitions)
        return message.data

    def _begin(self):
        return [None] * self._partitions    # each partition's send, once ready

    def Pready(self, partition):
        partition = self._partition(partition)
        sends = self._round
        if sends[partition] is not None:
            errors.fail(errors.ERR_ARG, "partition %d is marked ready already in this "
                        "round" % partition)
        data = self._parse()    # the buffer as it is now: the program filled it
        if data is None:
            payload = b""
        else:
            size = len(data) // self._partitions
            payload = HEADER.pack(partition, self._partitions) + data[
                partition * size:(partition + 1) * size]
        sends[partition] = self._comm._isend_bytes(payload, self._peer_rank, self._tag, False,
                                                   kind=PARTITIONED, hold=True)

    def Pready_range(self, partition_low, partition_high):
        for partition in range(operator.index(partition_low),
                               operator.index(partition_high) + 1):
            self.Pready(partition)

    def Pready_list(self, partitions):
        for partition in partitions:
            self.Pready(partition)

    def _poll(self):
        sends = self._round
        return sends is None or all(send is not None and send._poll() for send in sends)

    def _describe(self):
        sends = self._round or ()
        waiting = [i for i, send in enumerate(sends) if send is None]
        if waiting:
            return "Pready of partitions %s of a partitioned send" % waiting
        return "room to send partitions to rank %d" % self._peer_rank


class _Round:
    """A partitioned receive's round: the sender's blocks taken in so far."""

    __slots__ = ("arrived", "sender_blocks", "error")

    def __init__(self):
        self.arrived = set()
        self.sender_blocks = None   # known from the first block's header
        self.error = None


class PartitionedReceive(_Partitioned):
    """Precv_init's request: complete once all the sender's blocks are in; it reports
    the source, tag and byte count, as a receive does."""

    _message = None     # the round's receive buffer (None from PROC_NULL)

    def __init__(self, comm, buf, partitions, source, tag):
        super().__init__(comm, buf, partitions, source, tag, "source")

    def _parse(self):
        if self._peer_rank == constants.PROC_NULL:
            return None
        return buffers.message(self._buf, writable=True, blocks=self._partitions)

    def _begin(self):
        self._message = self._parse()
        return _Round()

    def _take_arrived(self):
        """Copy the blocks of this round that arrived into place."""
        round_ = self._round
        if round_ is None or self._message is None or self._complete_round(round_):
            return
        box = mailbox.mailbox()
        box.progress()
        context = self._state.subcontext(PARTITIONED)
        while not self._complete_round(round_):
            arrived = box.find(context, self._world_peer(), self._tag, True)
            if arrived is None:
                return
            self._place(round_, box.deliver(arrived, None).payload)

    def _place(self, round_, payload):
        block, blocks = HEADER.unpack_from(payload)
        data = memoryview(payload)[HEADER.size:]
        target = self._message.data
        start = block * len(data)
        if start + len(data) > len(target) and round_.error is None:
            round_.error = errors.Exception(
                errors.ERR_TRUNCATE, "a partitioned message of %d bytes does not fit the "
                "receive buffer of %d bytes" % (len(data) * blocks, len(target)))
        elif round_.error is None:
            target[start:start + len(data)] = data
        round_.sender_blocks = blocks
        round_.arrived.add(block)

    @staticmethod
    def _complete_round(round_):
        return round_.sender_blocks is not None and len(round_.arrived) == round_.sender_blocks

    def Parrived(self, partition):
        """Has partition ``partition`` arrived? (every sender block overlapping it;
        True on an inactive request, as MPICH answers)"""
        if self._round is None and not self._null:
            return True
        partition = self._partition(partition)
        if self._message is None:
            return True     # from PROC_NULL: nothing to wait for
        self._take_arrived()
        round_ = self._round
        blocks = round_.sender_blocks
        if blocks is None:
            return False
        mine = self._partitions
        # sender block j overlaps partition i when j/blocks < (i+1)/mine and
        # (j+1)/blocks > i/mine, in whole numbers
        return all(j in round_.arrived for j in range(blocks)
                   if j * mine < (partition + 1) * blocks and (j + 1) * mine > partition * blocks)

    def _poll(self):
        round_ = self._round
        if round_ is None or self._message is None:
            return True
        self._take_arrived()
        return self._complete_round(round_)

    def _describe(self):
        return "the partitions of a partitioned send from rank %d (tag %d)" % (
            self._peer_rank, self._tag)

    def _finish(self, status):
        round_, message, self._status = self._round, self._message, None
        if round_ is not None and message is not None:
            message.finish(len(message.data))
            self._error = round_.error
            self._status = Status()
            self._status._fill(self._peer_rank, self._tag, len(message.data),
                               round_.error.Get_error_class() if round_.error else 0)
        super()._finish(status)
