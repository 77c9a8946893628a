"""Shared-memory segments: the one place that knows /dev/shm.

Rules: names carry the job id and are unguessable, mode 0600, space reserved
with fallocate, unlinked once mapped, the launcher sweeps its job's names; no
leftovers; a full /dev/shm is an error, never SIGBUS (sparse files fail at first
touch); no unmap while a view is exported; no name collisions between jobs.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

import shmrma
from shmrma import MPI
from shmrma.core import job, segments


@pytest.fixture
def job_id():
    """A fresh job id whose names are swept after the test."""
    ident = job.new_job_id()
    yield ident
    segments.sweep(ident)


def path_of(segment):
    return os.path.join(segments.SHM_DIR, segment.name.lstrip("/"))


def test_create_attach_unlink_close(job_id):
    """A segment is shared by whoever maps it, and stays usable after
    unlink; close unmaps and is idempotent."""
    seg = segments.Segment.create(job_id, 8192)
    other = segments.Segment.attach(seg.name, 8192)
    try:
        assert seg.size == other.size == 8192
        assert seg.address and other.address and seg.address != other.address
        view, other_view = seg.buffer, other.buffer
        view[100:105] = b"hello"
        assert bytes(other_view[100:105]) == b"hello"
        assert len(view) == 8192
        seg.unlink()
        assert not os.path.exists(path_of(seg))
        seg.unlink()  # a second unlink is harmless
        other_view[8000:8003] = b"abc"  # still shared after the name is gone
        assert bytes(view[8000:8003]) == b"abc"
        view.release()
        other_view.release()
    finally:
        seg.close()
        other.close()
    assert seg.closed and other.closed and seg.address == 0
    seg.close()  # idempotent
    assert segments.job_segments(job_id) == []


def test_attach_missing_segment_is_err_rma_shared(job_id):
    """ERR_RMA_SHARED: mapping a segment that is gone is an MPI error, not OSError."""
    with pytest.raises(MPI.Exception) as info:
        segments.Segment.attach(segments.new_name(job_id), 4096)
    assert info.value.Get_error_class() == MPI.ERR_RMA_SHARED


def test_name_prefix_random_part_and_mode(job_id):
    """Names carry the job id and a random part; mode 0600;
    the space is reserved at creation (fallocate), not at first touch."""
    size = 3 * 4096 + 5
    first = segments.Segment.create(job_id, size)
    second = segments.Segment.create(job_id, size)
    try:
        for seg in (first, second):
            assert re.fullmatch(r"/shmrma\.%s\.[0-9a-f]{16}" % job_id, seg.name), seg.name
            info = os.stat(path_of(seg))
            assert stat.S_IMODE(info.st_mode) == 0o600
            assert info.st_size == size
            assert info.st_blocks * 512 >= size  # reserved before anyone touched it
        assert first.name != second.name
        assert segments.job_segments(job_id) == sorted(
            s.name.lstrip("/") for s in (first, second))
    finally:
        for seg in (first, second):
            seg.unlink()
            seg.close()


def test_request_larger_than_dev_shm_is_err_no_mem(job_id):
    """More than /dev/shm can hold is MPI.Exception ERR_NO_MEM naming /dev/shm
    and the byte count, at creation (never SIGBUS later), and leaves no file behind."""
    stats = os.statvfs(segments.SHM_DIR)
    if stats.f_blocks == 0:
        pytest.skip("/dev/shm has no size limit")
    # Larger than the whole file system, so the kernel refuses at once without
    # allocating anything even when other users hold part of it.
    size = stats.f_blocks * stats.f_frsize + (1 << 20)
    with pytest.raises(MPI.Exception) as info:
        segments.Segment.create(job_id, size)
    error = info.value
    assert error.Get_error_class() == MPI.ERR_NO_MEM
    assert "/dev/shm" in str(error) and str(size) in str(error)
    assert segments.job_segments(job_id) == []


def test_close_with_exported_view_raises_and_mapping_survives(job_id):
    """Closing while a view is exported raises BufferError and never unmaps
    memory still in use; once the view is released, close works."""
    seg = segments.Segment.create(job_id, 4096)
    seg.unlink()
    view = seg.buffer
    view[0:4] = b"live"
    address = seg.address
    with pytest.raises(BufferError):
        seg.close()
    assert not seg.closed and seg.address == address
    assert bytes(view[0:4]) == b"live"
    view[4:8] = b"more"
    again = seg.buffer
    assert bytes(again[0:8]) == b"livemore"
    again.release()
    with pytest.raises(BufferError):
        seg.close()  # the first view is still out
    view.release()
    seg.close()
    assert seg.closed


def test_sweep_removes_only_the_given_job(job_id):
    """sweep(job) unlinks that job's names only, even when another job id
    starts with the same characters."""
    other_job = job_id + "ff"  # prefix shmrma.<job_id>ff. is not shmrma.<job_id>.
    mine = [segments.Segment.create(job_id, 4096) for _ in range(2)]
    theirs = segments.Segment.create(other_job, 4096)
    try:
        assert segments.sweep(job_id) == 2
        assert segments.job_segments(job_id) == []
        assert segments.job_segments(other_job) == [theirs.name.lstrip("/")]
        assert os.path.exists(path_of(theirs))
        assert segments.sweep(job_id) == 0
        for seg in mine:  # mapped memory survives the sweep
            seg.buffer[0:2] = b"ok"
    finally:
        assert segments.sweep(other_job) == 1
        for seg in mine + [theirs]:
            seg.close()
    assert segments.job_segments(other_job) == []


def test_world_segment_is_unlinked_at_creation(job_id):
    """The world segment is unlinked right after creation, so
    a crash at any later moment cannot leak it."""
    world = job.World.create(job_id, 3)
    try:
        assert segments.job_segments(job_id) == []
        assert world.size == 3 and not world.aborted()
        assert world.state(0) == job.STARTING
    finally:
        world.mem.release()
        world.segment.close()


@pytest.mark.parametrize("nranks", [0, job.MAX_RANKS + 1])
def test_world_size_out_of_range(job_id, nranks):
    """A world has 1 to MAX_RANKS ranks; anything else is ERR_ARG, nothing named."""
    with pytest.raises(MPI.Exception) as info:
        job.World.create(job_id, nranks)
    assert info.value.Get_error_class() == MPI.ERR_ARG
    assert segments.job_segments(job_id) == []


# --- a small /dev/shm, end to end -------------------------------------------------

def small_dev_shm(command, size="1m"):
    """Run ``command`` in a private mount namespace where /dev/shm is a ``size`` tmpfs."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to mount a small /dev/shm")
    script = 'mount -t tmpfs -o size=%s tmpfs /dev/shm && exec "$@"' % size
    result = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c", script,
                             "sh", *command], capture_output=True, text=True, timeout=60)
    if "mount" in result.stderr and "ermission" in result.stderr:
        pytest.skip("cannot mount a tmpfs here: " + result.stderr.strip())
    return result


@pytest.mark.timeout(90)
def test_full_dev_shm_gives_err_no_mem_never_sigbus(tmp_path):
    """In a 1 MiB /dev/shm a 512 KiB message fails on its sender with ERR_NO_MEM
    naming /dev/shm and the bytes asked for; no rank dies of SIGBUS."""
    prog = tmp_path / "full.py"
    prog.write_text(textwrap.dedent('''
        import sys
        from shmrma import MPI
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 0:
            try:
                comm.Send(bytearray(512 * 1024), dest=1)
            except MPI.Exception as exc:
                sys.stdout.write("class %d: %s\\n" % (exc.Get_error_class(), exc))
            comm.send("small", dest=1)
        else:
            sys.stdout.write("got %s\\n" % comm.recv(source=0))
    '''))
    result = small_dev_shm([sys.executable, "-m", "shmrma.run", "-n", "2", str(prog)])
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("class"))
    assert line.startswith("class %d:" % MPI.ERR_NO_MEM)
    assert "/dev/shm" in line and str(512 * 1024) in line
    assert "got small" in result.stdout


CHECKED_WINDOW = """
import os
import numpy as np
import shmrma
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(int(os.environ["WINDOW_BYTES"]), 8, comm=comm)
mine = np.frombuffer(win.tomemory(), "f8")
win.Fence()
mine[0] = 1.0
win.Fence()
win.Free()
print("rank %d done" % comm.rank)
"""


@pytest.mark.timeout(90)
@pytest.mark.parametrize("window_bytes, unchecked", [(5 << 19, "the stores to window memory"),
                                                     (3 << 20, "the window created at")])
def test_the_race_checker_without_room_in_dev_shm_lets_the_program_run(
        tmp_path, window_bytes, unchecked):
    """Under --check: a window that fits in /dev/shm, whose shadow copy (or
    the checker's record) does not, is created all the same on every rank; the
    checker says once what it leaves unchecked, and why. (No clock for threads: the
    sizes are chosen for the checking segment of the ranks' clocks alone.)"""
    prog = tmp_path / "checked.py"
    prog.write_text(CHECKED_WINDOW)
    result = small_dev_shm(["env", "WINDOW_BYTES=%d" % window_bytes,
                            "SHMRMA_CHECK_THREADS=0", sys.executable, "-m",
                            "shmrma.run", "--check", "-n", "2", str(prog)], size="8m")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:2]) == ["rank 0 done", "rank 1 done"]
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and unchecked in warnings[0], result.stderr
    assert "/dev/shm" in warnings[0] and "not checked" in warnings[0]


@pytest.mark.timeout(90)
def test_world_too_large_for_dev_shm(tmp_path):
    """When even the world segment does not fit, the launcher says so (bytes,
    /dev/shm) and starts no rank."""
    prog = tmp_path / "never.py"
    prog.write_text("print('RAN')\n")
    result = small_dev_shm([sys.executable, "-m", "shmrma.run", "-n", "8", str(prog)])
    assert result.returncode == 1
    assert "RAN" not in result.stdout
    assert "cannot start the job" in result.stderr and "/dev/shm" in result.stderr
    assert re.search(r"cannot reserve \d+ bytes", result.stderr)


@pytest.mark.timeout(90)
def test_full_dev_shm_in_a_collective_fails_every_rank_with_err_no_mem(tmp_path):
    """Issue (drop-in): when the root of bcast/Bcast cannot get the shared memory a
    large collective needs, every rank raises ERR_NO_MEM (the root naming /dev/shm,
    the others pointing at it) instead of hanging or getting ERR_COUNT, and the
    communicator goes on working."""
    prog = tmp_path / "full_bcast.py"
    prog.write_text(textwrap.dedent('''
        import sys
        import numpy as np
        from shmrma import MPI
        comm = MPI.COMM_WORLD
        big = 900 * 1024
        for name, call in (
                ("bcast", lambda: comm.bcast(bytes(big) if comm.rank == 0 else None, 0)),
                ("Bcast", lambda: comm.Bcast(np.zeros(big // 8), 0))):
            try:
                call()
                sys.stdout.write("%d %s ok\\n" % (comm.rank, name))
            except MPI.Exception as exc:
                sys.stdout.write("%d %s class %d: %s\\n" % (comm.rank, name,
                                                            exc.Get_error_class(), exc))
        sys.stdout.write("%d after %d\\n" % (comm.rank, comm.allreduce(1)))
    '''))
    _every_rank_says_no_mem(prog, ["bcast", "Bcast"])


def _every_rank_says_no_mem(prog, labels):
    """Run ``prog`` at 3 ranks in a 2 MiB /dev/shm: each rank's line for each label
    says ERR_NO_MEM, rank 0 naming /dev/shm and the others pointing at its error,
    and each rank's "after" line shows a collective of all 3 working then."""
    result = small_dev_shm([sys.executable, "-m", "shmrma.run", "-n", "3", "--timeout",
                            "40", str(prog)], size="2m")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for rank in range(3):
        for label in labels:
            line = next(l for l in lines if l.startswith("%d %s " % (rank, label)))
            assert "class %d:" % MPI.ERR_NO_MEM in line, line
            assert ("/dev/shm" if rank == 0 else "see its own error") in line, line
        assert "%d after 3" % rank in lines


@pytest.mark.timeout(90)
def test_no_room_for_a_new_communicators_area_fails_every_rank_then_works(tmp_path):
    """A new communicator's first collective when /dev/shm has no room for its area:
    every rank raises ERR_NO_MEM (rank 0 naming /dev/shm, the others pointing at
    it), none waits; the same call tried again once there is room works at every
    rank (each try's answer is its own, never the last failure's)."""
    prog = tmp_path / "full_area.py"
    prog.write_text(textwrap.dedent('''
        import os, sys
        from shmrma import MPI
        comm = MPI.COMM_WORLD
        comm.allreduce(1)           # COMM_WORLD's own area, made while there is room
        new = comm.Dup()
        filler = "/dev/shm/filler-%d" % os.getpid()
        if comm.rank == 0:
            with open(filler, "wb") as out:
                try:
                    while True:
                        out.write(bytes(64 * 1024))
                        out.flush()
                except OSError:
                    pass
        comm.Barrier()
        for turn in range(2):
            try:
                sys.stdout.write("%d try %d %d\\n" % (comm.rank, turn, new.allreduce(1)))
            except MPI.Exception as exc:
                sys.stdout.write("%d try %d class %d: %s\\n" % (comm.rank, turn,
                                                               exc.Get_error_class(), exc))
        comm.Barrier()
        if comm.rank == 0:
            os.remove(filler)
        comm.Barrier()
        sys.stdout.write("%d after %d\\n" % (comm.rank, new.allreduce(1)))
    '''))
    _every_rank_says_no_mem(prog, ["try 0", "try 1"])


@pytest.mark.timeout(90)
def test_spawn_reserves_its_slots_channels_or_says_there_is_no_room(tmp_path):
    """A job's spare process slots reserve nothing in /dev/shm until a Spawn takes
    them: in a 2 MiB /dev/shm a 2-rank job starts; a Spawn of 14 children, whose
    channels do not fit, fails with ERR_NO_MEM at every spawning rank (nothing
    started, no SIGBUS); a Spawn of one child then fits and runs."""
    (tmp_path / "child.py").write_text(
        "from shmrma import MPI\nparent = MPI.Comm.Get_parent()\n"
        "parent.send(MPI.COMM_WORLD.size, 0)\nparent.Disconnect()\n")
    prog = tmp_path / "spawn.py"
    prog.write_text(textwrap.dedent('''
        import sys
        from shmrma import MPI
        comm = MPI.COMM_WORLD
        for count in (14, 1):
            try:
                inter = comm.Spawn(sys.executable, [%r], count)
            except MPI.Exception as exc:
                sys.stdout.write("%%d class %%d: %%s\\n" %% (comm.rank, exc.Get_error_class(),
                                                            exc))
                continue
            got = inter.recv(source=0) if comm.rank == 0 else None
            sys.stdout.write("%%d spawned %%d %%s\\n" %% (comm.rank, inter.remote_size, got))
            inter.Disconnect()
    ''' % str(tmp_path / "child.py")))
    result = small_dev_shm([sys.executable, "-m", "shmrma.run", "-n", "2", "--timeout", "40",
                            str(prog)], size="2m")
    assert result.returncode == 0, result.stderr
    for rank, got in (("0", "1"), ("1", "None")):
        said = [line for line in result.stdout.splitlines() if line.startswith(rank + " ")]
        assert len(said) == 2 and said[1] == "%s spawned 1 %s" % (rank, got), said
        assert said[0].startswith("%s class %d:" % (rank, MPI.ERR_NO_MEM)), said
        assert "/dev/shm" in said[0] and "cannot reserve" in said[0], said


def test_the_channels_of_the_first_slots_come_first_in_c_and_python():
    """The world segment's channels are laid out by shells (core/job.channel_index):
    those among the first k slots are its first k * k, which a Spawn reserves; the
    C transport finds each channel where Python does."""
    from shmrma.core import job
    for capacity in (1, 2, 5, 16):
        indexes = {(s, d): job.channel_index(s, d)
                   for s in range(capacity) for d in range(capacity)}
        assert sorted(indexes.values()) == list(range(capacity * capacity))
        for k in range(capacity + 1):
            assert {i for (s, d), i in indexes.items() if max(s, d) < k} == set(range(k * k))

    def offsets():
        from shmrma.p2p import transport
        world = job.current()
        engine = transport.mailbox()
        if not hasattr(engine, "channel_offset"):
            return None     # the fallback engine: Python's offsets only
        return [(engine.channel_offset(s, d), world.channel_offset(s, d))
                for s in range(world.size) for d in range(world.size)]
    for pairs in shmrma.launch(offsets, 5):
        assert pairs is None or all(c == p for c, p in pairs)
