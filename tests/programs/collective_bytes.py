"""Every collective, byte for byte: seeded cases of Bcast, Gather(v), Scatter(v),
Allgather(v), Alltoall(v, w), Reduce, Allreduce, Reduce_scatter(_block), Scan and
Exscan, each blocking, nonblocking and persistent, with IN_PLACE where MPI allows
it, the message as a bare buffer, [buf, T], [buf, count, T], [buf, (count, displ),
T] or the vector forms, of INT, DOUBLE, DOUBLE_INT (padding between its items), a
vector of INT (a gap in each item) or a type of size 0. Receive buffers start as
0xEE (IN_PLACE: the rank's data, other bytes 0x20 + rank); a rank checks every byte
of them against what it computes here, from the type maps written out below (not
from any library's), so the bytes outside the type maps must stay as they were.

    collective_bytes.py [--seed N] [--cases N] [--dump]

Runs as is on shmrma (shmrma-run) and on mpi4py (SHMRMA_BACKEND=mpi mpiexec);
rank 0 prints one line a case ("ok", or what was wrong), or with --dump the bytes
of every receive buffer, for comparing the two backends byte for byte.
"""
import argparse
import random
import struct

import numpy as np

from shmrma import MPI

SENTINEL = 0xEE

# name: (constructor, extent, members of one item as (byte offset, struct format),
#        numpy format of a bare buffer or None, reduction ops)
TYPES = {
    "INT": (lambda: MPI.INT, 4, [(0, "i")], "i4", ["SUM", "MAX", "BXOR", "PROD"]),
    "DOUBLE": (lambda: MPI.DOUBLE, 8, [(0, "d")], "f8", ["SUM", "MIN"]),
    "DOUBLE_INT": (lambda: MPI.DOUBLE_INT, 16, [(0, "d"), (8, "i")], None,
                   ["MINLOC", "MAXLOC"]),
    # no reductions of derived types: MPICH 5.0 refuses any predefined op on them
    # (ERR_OP, even on a Dup of INT), which MPI allows and shmrma does
    "VECTOR": (lambda: MPI.INT.Create_vector(2, 1, 2).Commit(), 12, [(0, "i"), (8, "i")],
               None, []),
    "ZERO": (lambda: MPI.INT.Create_contiguous(0).Commit(), 0, [], None, []),
    "ZERO8": (lambda: MPI.INT.Create_contiguous(0).Create_resized(0, 8).Commit(), 8, [],
              None, []),
}
MOVES = ["Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv",
         "Alltoall", "Alltoallv", "Alltoallw"]
FOLDS = ["Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan"]
VECTOR_CALLS = {"Gatherv", "Scatterv", "Allgatherv", "Alltoallv"}


# --- the data: item k of rank r's buffer, member m --------------------------------

def member_value(case, rank, item, member, fmt):
    """Small values (1..3), so sums and products of them are exact; a pair's index
    (its int member) names the rank and item, as MINLOC expects."""
    if fmt == "i" and member == 1 and case.type == "DOUBLE_INT":
        return 100 * rank + item
    value = (3 * rank + 5 * item + 7 * member + case.number) % 3 + 1
    return float(value) if fmt == "d" else value


class Layout:
    """Items of a case's type at byte offsets of a buffer of ``nbytes``."""

    def __init__(self, case, nbytes, offsets):
        self.case, self.nbytes, self.offsets = case, nbytes, offsets

    def filled(self, rank, fill):
        """A buffer with this rank's values in its items, ``fill`` elsewhere."""
        buf = bytearray([fill]) * self.nbytes
        for item, offset in enumerate(self.offsets):
            for member, (at, fmt) in enumerate(self.case.members):
                struct.pack_into(fmt, buf, offset + at,
                                 member_value(self.case, rank, item, member, fmt))
        return buf

    def pack(self, buf, items):
        """The member bytes of the given items, in type-map order."""
        out = bytearray()
        for item in items:
            for at, fmt in self.case.members:
                start = self.offsets[item] + at
                out += buf[start:start + struct.calcsize(fmt)]
        return bytes(out)

    def unpack(self, buf, items, data):
        """Write member bytes into the given items (and nothing else)."""
        pos = 0
        for item in items:
            for at, fmt in self.case.members:
                size = struct.calcsize(fmt)
                start = self.offsets[item] + at
                buf[start:start + size] = data[pos:pos + size]
                pos += size

    def values(self, buf, items):
        """[[member values] per item]."""
        return [[struct.unpack_from(fmt, buf, self.offsets[item] + at)[0]
                 for at, fmt in self.case.members] for item in items]

    def store(self, buf, items, values):
        for item, members in zip(items, values):
            for (at, fmt), value in zip(self.case.members, members):
                struct.pack_into(fmt, buf, self.offsets[item] + at, value)


# --- the cases ---------------------------------------------------------------------

class Case:
    """One seeded case; the same on every rank."""

    def __init__(self, number, seed, size):
        rng = random.Random("%d/%d" % (seed, number))
        self.number, self.size = number, size
        self.call = rng.choice(MOVES + FOLDS)
        types = [name for name in TYPES if self.call in MOVES or TYPES[name][4]]
        self.type = rng.choice(types)
        _, self.extent, self.members, self.fmt, ops = TYPES[self.type]
        self.op = rng.choice(ops) if self.call in FOLDS else None
        self.form = rng.choice(["blocking", "nonblocking", "persistent"])
        self.in_place = rng.random() < 0.4 and self.call not in ("Bcast",)
        self.root = rng.randrange(size)
        self.count = rng.randrange(1, 4)
        self.spec = rng.choice(self._specs())
        self.shift = rng.randrange(3)

    def _specs(self):
        if self.call in VECTOR_CALLS:
            return ["full", "pair", "counts"]
        if self.call == "Alltoallw":
            return ["w"]
        specs = ["typed", "counted"] if self.extent else ["counted"]
        if self.fmt:
            specs.append("bare")
        if self.extent:
            specs.append("displaced")
        return specs

    def __str__(self):
        return "%s %s %s%s %s %s root %d count %d" % (
            self.form, self.call, self.type, " " + self.op if self.op else "",
            "IN_PLACE" if self.in_place else "buffers", self.spec, self.root, self.count)

    def datatype(self):
        return TYPES[self.type][0]()

    def part_counts(self, sender, receiver):
        """Items ``sender`` sends ``receiver`` in a vector call (0 to 2)."""
        if self.call in ("Gatherv", "Allgatherv"):
            return (sender + self.shift) % 3
        if self.call == "Scatterv":
            return (receiver + self.shift) % 3
        if self.call in ("Alltoallv", "Alltoallw"):    # IN_PLACE: as much each way
            return (sender + (1 if self.in_place else 2) * receiver + self.shift) % 3
        return self.count


# --- messages: a layout and how the call is told of it ------------------------------

def block_message(case, datatype, parts):
    """A message of ``parts`` equal parts of case.count items in case.spec's form:
    (the spec to pass, its Layout, [items of part i])."""
    per, extent = case.count, case.extent
    total = per * parts
    before = 1 if case.spec == "displaced" else 0
    extra = 2 if case.spec in ("counted", "displaced") else 0
    nbytes = max(extent, 1) * (before + total + extra) if extent else 8
    layout = Layout(case, nbytes, [(before + k) * extent for k in range(total)])
    items = [list(range(i * per, (i + 1) * per)) for i in range(parts)]
    # mpi4py's counts: one part's where the call splits the buffer in parts, but
    # Reduce_scatter's buffers are whole
    count = total if case.call == "Reduce_scatter" else per
    return _block_spec(case, datatype, layout, count, before), layout, items


def _block_spec(case, datatype, layout, count, before):
    buf = bytearray(layout.nbytes)
    if case.spec == "bare":
        return buf, np.frombuffer(buf, case.fmt)
    if case.spec == "typed":
        return buf, [buf, datatype]
    if case.spec == "counted":
        return buf, [buf, count, datatype]
    return buf, [buf, (count, before), datatype]


def vector_message(case, datatype, counts):
    """A vector message with a gap of one item before each part."""
    extent = case.extent
    displs = [sum(counts[:i]) + i + 1 for i in range(len(counts))]
    if case.spec == "counts":
        displs = [sum(counts[:i]) for i in range(len(counts))]
    slots = (displs[-1] + counts[-1] + 1) if counts else 1
    nbytes = max(slots * extent, 8)
    layout = Layout(case, nbytes, [k * extent for k in range(slots)])
    items = [list(range(d, d + c)) for c, d in zip(counts, displs)]
    buf = bytearray(nbytes)
    spec = {"full": [buf, counts, displs, datatype], "pair": [buf, (counts, displs), datatype],
            "counts": [buf, counts, datatype]}[case.spec]
    return (buf, spec), layout, items


def w_message(case, datatype, counts):
    """Alltoallw's message: byte displacements with a gap of 3 bytes before each part."""
    extent = case.extent
    displs, at, offsets, items = [], 3, [], []
    for count in counts:
        displs.append(at)
        items.append(list(range(len(offsets), len(offsets) + count)))
        offsets += [at + k * extent for k in range(count)]
        at += max(count * extent, 1) + 3
    layout = Layout(case, max(at, 8), offsets)
    buf = bytearray(layout.nbytes)
    return (buf, [buf, counts, displs, [datatype] * len(counts)]), layout, items


def message(case, datatype, side, rank):
    """(buffer, spec, Layout, items of each part) of rank's ``side`` ("send" or
    "recv") in the case's call."""
    size, call = case.size, case.call
    if call in VECTOR_CALLS or call == "Alltoallw":
        one = (call in ("Gatherv", "Allgatherv") and side == "send") or \
            (call == "Scatterv" and side == "recv")
        if one:
            case_count = case.part_counts(rank, rank)
            return _single(case, datatype, case_count)
        counts = [case.part_counts(rank, k) if side == "send" else case.part_counts(k, rank)
                  for k in range(size)]
        make = w_message if call == "Alltoallw" else vector_message
        (buf, spec), layout, items = make(case, datatype, counts)
        return buf, spec, layout, items
    parts = _block_parts(case, side)
    (buf, spec), layout, items = block_message(case, datatype, parts)
    return buf, spec, layout, items


def _single(case, datatype, count):
    """The one part of a vector call's send (Gatherv) or receive (Scatterv) side."""
    layout = Layout(case, max(count * case.extent, 8), [k * case.extent for k in range(count)])
    buf = bytearray(layout.nbytes)
    return buf, [buf, count, datatype], layout, [list(range(count))]


def _block_parts(case, side):
    """How many parts of case.count items a block call's buffer holds."""
    size, call = case.size, case.call
    if call in ("Gather", "Allgather", "Alltoall"):
        return size if side == "recv" or call == "Alltoall" else 1
    if call == "Scatter":
        return size if side == "send" else 1
    if call == "Reduce_scatter_block":
        return size if side == "send" or case.in_place else 1
    if call == "Reduce_scatter":
        return size if side == "send" or case.in_place else 1
    return 1


# --- running a case ----------------------------------------------------------------

ROOTED = {"Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Reduce"}


def in_place_here(case, rank, side):
    """Does this rank pass IN_PLACE for ``side``? (Only the root, in the rooted calls.)"""
    if not case.in_place:
        return False
    if case.call in ("Scatter", "Scatterv"):
        return side == "recv" and rank == case.root
    if case.call in ROOTED:
        return side == "send" and rank == case.root
    return side == "send"


def unused(case, rank, side):
    """Is this side of no use at this rank (None is passed)?"""
    if case.call in ("Gather", "Gatherv", "Reduce"):
        return side == "recv" and rank != case.root
    if case.call in ("Scatter", "Scatterv"):
        return side == "send" and rank != case.root
    return case.call == "Bcast" and side == "send"


def initial(case, datatype, side, rank):
    """Rank's (buffer, spec, layout, parts) for ``side`` as the call starts, or None."""
    if unused(case, rank, side) or in_place_here(case, rank, side):
        return None
    buf, spec, layout, parts = message(case, datatype, side, rank)
    sends = side == "send" or (case.call == "Bcast" and rank == case.root)
    if sends:
        buf[:] = layout.filled(rank, 0x10 + rank)
    elif in_place_here(case, rank, "send"):
        buf[:] = layout.filled(rank, 0x20 + rank)
    else:
        buf[:] = bytes([SENTINEL]) * len(buf)
    return buf, spec, layout, parts


def call_args(case, send, recv):
    """The arguments of case.call, IN_PLACE or None where this rank passes them."""
    op = getattr(MPI, case.op) if case.op else None
    root, size = case.root, case.size
    return {"Bcast": lambda: (recv, root),
            "Reduce": lambda: (send, recv, op, root),
            "Reduce_scatter": lambda: (send, recv, [case.count] * size, op)}.get(
        case.call, lambda: (send, recv, root) if case.call in ROOTED else
        (send, recv, op) if case.op else (send, recv))()


def run(case, comm, args):
    name = case.call
    if case.form == "blocking":
        getattr(comm, name)(*args)
    elif case.form == "nonblocking":
        getattr(comm, "I" + name[0].lower() + name[1:])(*args).Wait()
    else:
        request = getattr(comm, name + "_init")(*args)
        request.Start()
        request.Wait()
        request.Free()


def spec_of(case, rank, side, made):
    if made is not None:
        return made[1]
    return MPI.IN_PLACE if in_place_here(case, rank, side) else None


def run_case(case, comm):
    """Run ``case`` here: [(what, bytes after, bytes expected)] of this rank's
    buffers, or the error it raised."""
    datatype = case.datatype()
    rank = comm.rank
    send = initial(case, datatype, "send", rank)
    recv = initial(case, datatype, "recv", rank)
    args = call_args(case, spec_of(case, rank, "send", send), spec_of(case, rank, "recv", recv))
    try:
        run(case, comm, args)
    except Exception as exc:  # noqa: BLE001 - what it raised is the outcome compared
        error = exc.Get_error_class() if isinstance(exc, MPI.Exception) else ""
        return "error %s %s" % (type(exc).__name__, error)
    finally:
        if not datatype.is_predefined:
            datatype.Free()
    got = []
    for side, made in (("send", send), ("recv", recv)):
        if made is not None:
            got.append((side, bytes(made[0]), expected(case, side, rank)))
    return got


# --- what the buffers must hold afterwards, computed here --------------------------

def expected(case, side, rank):
    """The bytes rank's ``side`` buffer must hold after the call: a send buffer as it
    was; a receive buffer as it was but for the type maps of what arrives."""
    buf, _, layout, parts = initial(case, None, side, rank)
    receives = side == "recv" and not (case.call == "Bcast" and rank == case.root)
    if receives and case.call in FOLDS:
        _fold_into(case, rank, buf, layout, parts)
    elif receives:
        for source, part, into in _arrivals(case, rank):
            layout.unpack(buf, parts[into], _sent(case, source, part))
    return bytes(buf)


def _arrivals(case, rank):
    """(source rank, its part, this rank's part) of what a data movement brings."""
    size, root, call = case.size, case.root, case.call
    everyone = range(size)
    if call == "Bcast":
        return [(root, 0, 0)]
    if call in ("Scatter", "Scatterv"):
        return [(root, rank, 0)]
    if call in ("Gather", "Gatherv"):
        return [(i, 0, i) for i in everyone if not (case.in_place and i == root)]
    if call in ("Allgather", "Allgatherv"):
        return [(i, i if case.in_place else 0, i) for i in everyone]
    return [(i, rank, i) for i in everyone]      # the Alltoalls


def _sent(case, source, part):
    """The type-map bytes of part ``part`` of what ``source`` sends: its send buffer,
    or the buffer it passed IN_PLACE (Bcast's one buffer)."""
    if case.call == "Bcast" or in_place_here(case, source, "send"):
        buf, _, layout, parts = initial(case, None, "recv", source)
    else:
        buf, _, layout, parts = initial(case, None, "send", source)
    return layout.pack(buf, parts[part])


def _contribution(case, source):
    """[member values] of every item a rank brings to a reduction, in order."""
    side = "recv" if in_place_here(case, source, "send") else "send"
    buf, _, layout, parts = initial(case, None, side, source)
    return layout.values(buf, [item for part in parts for item in part])


def _fold_into(case, rank, buf, layout, parts):
    call, count = case.call, case.count
    folded = {"Scan": range(rank + 1), "Exscan": range(rank)}.get(call, range(case.size))
    if not folded:
        return      # Exscan at rank 0: nothing arrives
    vectors = [_contribution(case, source) for source in folded]
    result = vectors[0]
    for vector in vectors[1:]:
        result = [_fold_item(case.op, a, b) for a, b in zip(result, vector)]
    if call.startswith("Reduce_scatter"):
        result = result[rank * count:(rank + 1) * count]
    layout.store(buf, parts[0][:len(result)], result)


def _fold_item(op, a, b):
    """One item of ``a op b`` (a from the lower rank), as MPI defines each op."""
    if op in ("MINLOC", "MAXLOC"):
        better = a[0] < b[0] if op == "MINLOC" else a[0] > b[0]
        if a[0] == b[0]:
            return a if a[1] < b[1] else b
        return a if better else b
    apply = {"SUM": lambda x, y: x + y, "PROD": lambda x, y: x * y, "MAX": max, "MIN": min,
             "BXOR": lambda x, y: x ^ y, "BOR": lambda x, y: x | y}[op]
    return [apply(x, y) for x, y in zip(a, b)]


# --- the program -------------------------------------------------------------------

def report(case, rank, outcome, dump):
    if isinstance(outcome, str):
        return "%d %d %s: %s" % (case.number, rank, case, outcome)
    if dump:
        return "%d %d %s: %s" % (case.number, rank, case, " ".join(
            "%s=%s" % (side, got.hex()) for side, got, _ in outcome))
    wrong = ["%s got %s want %s" % (side, got.hex(), want.hex())
             for side, got, want in outcome if got != want]
    return "%d %d %s: %s" % (case.number, rank, case, "; ".join(wrong) or "ok")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--dump", action="store_true",
                        help="print every buffer's bytes instead of checking them")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    lines = [report(case, comm.rank, run_case(case, comm), args.dump)
             for case in (Case(number, args.seed, comm.size) for number in range(args.cases))]
    everyone = comm.gather(lines, root=0)
    if comm.rank == 0:
        for number in range(args.cases):
            for rank_lines in everyone:
                print(rank_lines[number], flush=True)


if __name__ == "__main__":
    main()
