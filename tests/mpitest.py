"""Helpers the test files share."""
import pytest

from shmrma import MPI
from shmrma.rma import fastpath
from shmrma.p2p import transport as mailbox

# A job still running after this long hangs: a test's guard against a hang, never a
# bound on how long a correct run takes (the machine may be loaded).
HANG_S = 60


def raises_mpi(error_class, match=None):
    """pytest.raises(MPI.Exception) that also checks the error class."""
    return pytest.raises(MPI.Exception, match=match,
                         check=lambda exc: exc.Get_error_class() == error_class)


def job_segments():
    """This job's names still in /dev/shm (the world segment never is; another
    program's names are not this job's), but the collective areas', which stay
    for the next communicators while the job runs (coll/area.py's pool)."""
    import os
    from shmrma.core import job, segments
    from shmrma.coll.area import AREA_KIND
    prefix = "%s%s." % (segments.NAME_PREFIX, job.current().job_id)
    return sorted(n for n in os.listdir(segments.SHM_DIR)
                  if n.startswith(prefix) and not n.startswith(prefix + AREA_KIND))


def nothing_left_behind(comm):
    """No message waits unmatched and no receive is still posted on this rank; the
    barriers keep the peers from sending anything new meanwhile."""
    comm.Barrier()
    box = mailbox.mailbox()
    box.progress()
    left = box.leftovers()
    comm.Barrier()
    assert left == ([], 0), left


def dead_rank_ends_the_job(run_shmrma, tmp_path, call):
    """Rank 1 exits with status 4 at once while rank 0 runs ``call`` (a line of code
    on ``comm``) that waits for it: the job must end with rank 1's status, not hang
    until its timeout (which would end it with 124)."""
    program = tmp_path / "dead_rank.py"
    program.write_text("import os\nfrom shmrma import MPI\ncomm = MPI.COMM_WORLD\n"
                       "if comm.rank == 1:\n    os._exit(4)\n%s\n" % call)
    result = run_shmrma(["-n", 2, "--timeout", HANG_S, program], timeout=HANG_S + 30)
    assert result.returncode == 4, result.stderr


def fatal_error_ends_the_job(body, capfd, *words):
    """``body`` on 2 ranks, where rank 1 makes a call fail under ERRORS_ARE_FATAL while
    rank 0 waits in a Barrier: the job ends naming rank 1 (not by its timeout, which
    names no rank), and stderr says "fatal" and each of ``words``."""
    import shmrma
    with pytest.raises(shmrma.LaunchError) as info:
        shmrma.launch(body, 2, timeout=HANG_S)
    assert info.value.rank == 1
    err = capfd.readouterr().err
    assert "fatal" in err and "rank 1" in err and all(word in err for word in words), err


# --- differential runs of the fast paths against the Python path -------------------

def outcome(fn):
    """What calling ``fn`` ends in, comparable across ranks and runs."""
    import numpy as np
    try:
        result = fn()
    except MPI.Exception as exc:
        return ("MPI.Exception", exc.Get_error_class())
    except Exception as exc:  # noqa: BLE001 - the exact exception is what we compare
        return (type(exc).__name__,)
    if isinstance(result, np.ndarray):
        return ("ok", result.tobytes())
    return ("ok", result)


def run_in_every_mode(scenarios, spy):
    """Every scenario of ``scenarios(comm)`` (name -> call) with the fast paths on at
    every rank, off at every rank, then on at even ranks only: [(outcomes, taken)]
    for the three, ``taken`` being what ``spy.take()`` recorded of each call."""
    comm = MPI.COMM_WORLD
    runs = []
    for fast in (True, False, comm.rank % 2 == 0):
        fastpath.enable(fast)
        outcomes, taken = {}, {}
        try:
            for name, call in scenarios(comm).items():
                comm.Barrier()
                spy.take()
                outcomes[name] = outcome(call)
                taken[name] = spy.take()
        finally:
            fastpath.enable(True)
        runs.append((outcomes, taken))
    return runs


def assert_every_mode_agrees(results, missed):
    """Each rank ended every scenario the same in the three modes, and the Python-only
    mode took no fast path (``missed(record)`` tells a record that did not)."""
    for fast, slow, mixed in results:
        for name in fast[0]:
            assert fast[0][name] == slow[0][name] == mixed[0][name], name
        assert all(missed(record) for records in slow[1].values() for record in records)


def alltoallv_case(comm, alltoallv, scale=1, in_place=False, form="full", bad_here=False):
    """``alltoallv(sendbuf, recvbuf)`` (Alltoallv, or Ialltoallv and Wait) where rank r
    sends ((r + k) % 3) * scale int32 items to rank k (zeros among them) and receives
    into parts with a gap before each; the messages in ``form`` "full", "pair",
    "arrays" (counts and displacements in integer arrays) or "derived"; ``bad_here``: this rank passes one count short. What it received."""
    import numpy as np
    rank, size = comm.rank, comm.size
    sends = [(rank + k) % 3 * scale for k in range(size)]
    receives = [(k + rank) % 3 * scale for k in range(size)]
    if in_place:
        buf = np.arange(sum(receives), dtype="i4") + 100 * rank
        alltoallv(MPI.IN_PLACE, [buf, receives])
        return buf
    send = np.arange(sum(sends), dtype="i4") + 100 * rank
    out = np.full(sum(receives) + size, -1, "i4")
    displs = [sum(receives[:k]) + k for k in range(size)]
    if bad_here:
        sends = sends[:-1]      # ValueError here; the others raise too
    datatype = MPI.INT.Dup() if form == "derived" else MPI.INT
    if form == "arrays":
        from array import array
        sends, receives, displs = array("i", sends), np.array(receives), array("q", displs)
    try:
        alltoallv([send, sends] if form != "pair" else [send, (sends, None), MPI.INT32_T],
                  [out, receives, displs, datatype])
    finally:
        if form == "derived":
            datatype.Free()
    return out


def message_form_scenarios(comm, prefix, run):
    """The buffer collectives with their messages in mpi4py's list forms ([buf,
    datatype], [buf, count, datatype], [buf, (count, displ), datatype], [buf,
    count, displ, datatype]; a collective's count is one block's), named ``prefix``
    + call: ``run(name, *args)`` runs the blocking call or the nonblocking form and
    its Wait. What every buffer holds after."""
    import numpy as np
    rank, size = comm.rank, comm.size

    def listed(name, *args):
        """run(name, *args) and the contents of its messages' buffers."""
        arrays = [a[0] for a in args if isinstance(a, list)]
        run(name, *args)
        return [a.tolist() if isinstance(a, np.ndarray) else bytes(a) for a in arrays]

    def ints(n, scale=1):
        return np.arange(n, dtype="i4") * scale + 10 * rank

    def named(text):
        return prefix + text[0].lower() + text[1:] if prefix else text

    return {
        named("Bcast [buf, count, INT]"): lambda: listed(
            "Bcast", [ints(5, 1 - (rank > 0)), 3, MPI.INT], 0),
        named("Bcast [buf, (count, displ), BYTE]"): lambda: listed(
            "Bcast", [ints(4), (6, 2), MPI.BYTE], size - 1),
        named("Allreduce [buf, INT32_T]"): lambda: listed(
            "Allreduce", [ints(3), MPI.INT32_T], [np.zeros(3, "i4"), MPI.INT32_T], MPI.SUM),
        named("Allreduce [buf, count, displ, INT]"): lambda: listed(
            "Allreduce", [ints(5), 2, 1, MPI.INT], [np.full(4, -1, "i4"), (2, 2), MPI.INT],
            MPI.MAX),
        named("Allreduce int64 as DOUBLE"): lambda: listed(
            "Allreduce", [np.arange(2, dtype="i8"), MPI.DOUBLE], [np.zeros(2), MPI.DOUBLE],
            MPI.SUM),
        named("Allreduce INT64_T into LONG"): lambda: listed(
            "Allreduce", [np.ones(2, "i8"), MPI.INT64_T], [np.zeros(2, "i8"), MPI.LONG],
            MPI.SUM),
        named("Allreduce BYTE"): lambda: listed(
            "Allreduce", [bytearray(b"ab"), MPI.BYTE], [bytearray(2), MPI.BYTE], MPI.SUM),
        named("Reduce [buf, count, DOUBLE]"): lambda: listed(
            "Reduce", [np.full(4, rank + 0.5), 3, MPI.DOUBLE], [np.zeros(4), 3, MPI.DOUBLE],
            MPI.SUM, 0),
        named("Scan [buf, count, INT]"): lambda: listed(
            "Scan", [ints(4), 2, MPI.INT], [np.zeros(3, "i4"), 2, MPI.INT], MPI.SUM),
        named("Reduce_scatter_block counted per block"): lambda: listed(
            "Reduce_scatter_block", [ints(2 * size + 1), 2, MPI.INT],
            [np.zeros(3, "i4"), 2, MPI.INT], MPI.SUM),
        named("Reduce_scatter_block in place counted per block"): lambda: listed(
            "Reduce_scatter_block", MPI.IN_PLACE, [ints(2 * size + 1), 2, MPI.INT], MPI.SUM),
        named("Gather [buf, count, INT]"): lambda: listed(
            "Gather", [ints(3), 2, MPI.INT], [np.full(2 * size + 1, -1, "i4"), 2, MPI.INT], 0),
        named("Allgather [buf, BYTE]"): lambda: listed(
            "Allgather", [ints(2), MPI.BYTE], [np.full(2 * size, -1, "i4"), MPI.BYTE]),
        named("Scatter [buf, count, displ, INT]"): lambda: listed(
            "Scatter", [ints(2 * size + 1), 2, 1, MPI.INT], [np.full(3, -1, "i4"), 2, MPI.INT],
            0),
        named("Alltoall [buf, count, INT]"): lambda: listed(
            "Alltoall", [ints(2 * size + 2), 2, MPI.INT],
            [np.full(2 * size + 1, -1, "i4"), 2, MPI.INT]),
        named("Alltoall count past the buffer"): lambda: listed(
            "Alltoall", [ints(2 * size), 3, MPI.INT], [np.zeros(3 * size, "i4"), 3, MPI.INT]),
    }


def vector_scenarios(comm, prefix, run):
    """The vector collectives' scenarios (name -> call) of the differential tests, named
    ``prefix`` + call: ``run(name, *args)`` runs Gatherv, Scatterv, Allgatherv or
    Alltoallv (blocking, or the nonblocking form and its Wait). Counts with zeros,
    parts with gaps, every root, each message form, IN_PLACE, derived datatypes, and
    mismatches and bad counts on one rank."""
    import numpy as np
    rank, size = comm.rank, comm.size
    last = size - 1
    counts = [(r * 2 + 1) % 3 for r in range(size)]        # zeros among them
    displs = [sum(counts[:r]) + r for r in range(size)]     # a gap before each part
    extent = sum(counts) + size

    def vector(values, form):
        """A vector message of ``values`` (int32) in one of the forms mpi4py takes."""
        from array import array
        return {"full": [values, counts, displs, MPI.INT32_T],
                "pair": [values, (counts, displs), MPI.INT],
                "arrays": [values, array("i", counts), np.array(displs, "u8"), MPI.INT],
                "counts": [values, counts],
                "int": [values, 1, MPI.INT],
                "derived": [values, counts, displs, MPI.INT.Create_contiguous(1).Commit()],
                "plain": values}[form]

    def every_root(at_root):
        """at_root(root) at each root in turn, each ending as it ends."""
        return [outcome(lambda: at_root(root)) for root in range(size)]

    def gatherv(form="full", in_place=False, sent=None):
        """At every root in turn; ``sent``: a rank's own count when it differs."""
        def at_root(root):
            own = counts[rank] if form not in ("int", "plain") else 1
            send = np.arange(own if sent is None else sent(root), dtype="i4") + 10 * rank
            out = np.full(extent if form not in ("int", "plain") else size, -1, "i4")
            if in_place and rank == root:
                np.copyto(out[displs[rank]:displs[rank] + own], send)
                send = MPI.IN_PLACE
            run("Gatherv", send, vector(out, form) if rank == root else None, root)
            return out.tolist()
        return every_root(at_root)

    def scatterv(form="full", in_place=False, received=None):
        def at_root(root):
            send = np.arange(extent, dtype="i4") + 100 * root
            own = counts[rank] if received is None else received(root)
            out = np.full(own, -1, "i4")
            recv = MPI.IN_PLACE if in_place and rank == root else out
            run("Scatterv", vector(send, form) if rank == root else None, recv, root)
            return out.tolist()
        return every_root(at_root)

    def allgatherv(form="full", in_place=False):
        send = np.arange(counts[rank], dtype="i4") + 10 * rank
        out = np.full(extent, -1, "i4")
        if in_place:
            np.copyto(out[displs[rank]:displs[rank] + counts[rank]], send)
            send = MPI.IN_PLACE
        run("Allgatherv", send, vector(out, form))
        return out

    def alltoallv(**case):
        return alltoallv_case(comm, lambda send, recv: run("Alltoallv", send, recv), **case)

    def named(text):
        return prefix + text if prefix else text.capitalize()

    return {
        named("gatherv"): lambda: gatherv(),
        named("gatherv pair form"): lambda: gatherv("pair"),
        named("gatherv array counts"): lambda: gatherv("arrays"),
        named("gatherv counts only"): lambda: gatherv("counts"),
        named("gatherv int count"): lambda: gatherv("int"),
        named("gatherv plain"): lambda: gatherv("plain"),
        named("gatherv derived"): lambda: gatherv("derived"),
        named("gatherv in place"): lambda: gatherv(in_place=True),
        named("gatherv mismatch"): lambda: gatherv(
            sent=lambda root: counts[rank] + (rank == last)),
        named("scatterv"): lambda: scatterv(),
        named("scatterv counts only"): lambda: scatterv("counts"),
        named("scatterv array counts"): lambda: scatterv("arrays"),
        named("scatterv plain"): lambda: scatterv(    # the first ranks get one more item
            "plain", received=lambda root: extent // size + (extent % size > rank)),
        named("scatterv derived"): lambda: scatterv("derived"),
        named("scatterv in place"): lambda: scatterv(in_place=True),
        named("scatterv short receive"): lambda: scatterv(
            received=lambda root: counts[rank] + (rank == 0 and root != 0)),
        named("allgatherv"): lambda: allgatherv(),
        named("allgatherv pair form"): lambda: allgatherv("pair"),
        named("allgatherv array counts"): lambda: allgatherv("arrays"),
        named("allgatherv derived"): lambda: allgatherv("derived"),
        named("allgatherv in place"): lambda: allgatherv(in_place=True),
        named("alltoallv"): lambda: alltoallv(),
        named("alltoallv in place"): lambda: alltoallv(in_place=True),
        named("alltoallv pair form"): lambda: alltoallv(form="pair"),
        named("alltoallv array counts"): lambda: alltoallv(form="arrays"),
        named("alltoallv derived"): lambda: alltoallv(form="derived"),
        named("alltoallv bad counts"): lambda: alltoallv(bad_here=rank == last),
    }
