"""Spawn, Spawn_multiple and Comm.Get_parent (shmrma/comm/spawn.py; issue 30): the
children are ranks of the same job, started in the slots ``shmrma-run
--universe-size`` reserves (16 by default), and supervised as any rank; the errors a user can
cause are ERR_SPAWN at the spawning ranks, never a hang."""
import subprocess
import sys
import textwrap

import pytest

from mpitest import HANG_S

CHILD = textwrap.dedent("""\
    import os, sys
    from mpi4py import MPI
    parent = MPI.Comm.Get_parent()
    world = MPI.COMM_WORLD
    assert parent.Is_inter() and parent is MPI.Comm.Get_parent()
    first = parent.bcast(None, 0)
    parent.gather((world.rank, world.size, sys.argv[1:], os.path.basename(os.getcwd()),
                   first, world.allreduce(1)), 0)
    merged = parent.Merge(True)
    merged.Barrier()
    merged.Free()
    parent.Disconnect()
    assert MPI.Comm.Get_parent() == MPI.COMM_NULL
    """)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.timeout(HANG_S + 30)
def test_spawn_starts_children_that_talk_to_their_parents(run_shmrma, tmp_path):
    """Spawn from COMM_WORLD at 2 ranks: 3 children with their own COMM_WORLD, the
    arguments given, the working directory of the info key wdir; the parents'
    intercommunicator reaches them (bcast, gather), Merge puts the parents first;
    UNIVERSE_SIZE is --universe-size; errcodes are filled; Spawn_multiple gives
    one COMM_WORLD to several programs and one errcodes list per command."""
    _write(tmp_path, "child.py", CHILD)
    (tmp_path / "elsewhere").mkdir()
    parent = _write(tmp_path, "parent.py", textwrap.dedent("""\
        import sys
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        root = MPI.ROOT if world.rank == 0 else MPI.PROC_NULL
        info = MPI.Info.Create()
        info.Set("wdir", %r)
        errcodes = []
        inter = world.Spawn(sys.executable, [%r, "a", "b"], 3, info, 0, errcodes)
        inter.bcast("hello", root)
        got = inter.gather(None, root)
        merged = inter.Merge(False)
        print(world.rank, world.Get_attr(MPI.UNIVERSE_SIZE), inter.remote_size, errcodes,
              merged.rank, got, flush=True)
        merged.Barrier()
        merged.Free()
        inter.Disconnect()
        errcodes = []
        inter = world.Spawn_multiple([sys.executable] * 2, [[%r, "x"], [%r, "y"]], [1, 2],
                                     MPI.INFO_NULL, 0, errcodes)
        inter.bcast("again", root)
        got = inter.gather(None, root)
        merged = inter.Merge(False)
        print(world.rank, "multiple", errcodes, got, flush=True)
        merged.Barrier()
        merged.Free()
        inter.Disconnect()
        """) % (str(tmp_path / "elsewhere"), str(tmp_path / "child.py"),
                str(tmp_path / "child.py"), str(tmp_path / "child.py")))
    result = run_shmrma(["-n", 2, "--universe-size", 8, "--timeout", HANG_S, parent],
                        timeout=HANG_S + 20, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    children = [(rank, 3, ["a", "b"], "elsewhere", "hello", 3) for rank in range(3)]
    assert lines[0] == "0 8 3 [0, 0, 0] 0 %r" % children
    assert lines[2] == "1 8 3 [0, 0, 0] 1 None"
    again = [(0, 3, ["x"], tmp_path.name, "again", 3), (1, 3, ["y"], tmp_path.name, "again", 3),
             (2, 3, ["y"], tmp_path.name, "again", 3)]
    assert lines[1] == "0 multiple [[0], [0, 0]] %r" % again
    assert lines[3] == "1 multiple [[0], [0, 0]] None"


@pytest.mark.timeout(HANG_S + 30)
def test_spawn_errors_are_err_spawn_at_every_spawning_rank(run_shmrma, tmp_path):
    """No free slot (a job started by shmrma.launch, or more children than slots left), a command
    that is not a Python interpreter, a script that does not exist, a wdir that is
    not a directory: ERR_SPAWN, saying what to do, at every rank of the spawning
    communicator; nothing is started; the job goes on."""
    program = _write(tmp_path, "bad.py", textwrap.dedent("""\
        import sys
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        info = MPI.Info.Create()
        info.Set("wdir", "/no/such/dir")
        cases = [(sys.executable, ["child.py"], 9, MPI.INFO_NULL),
                 ("/bin/true", [], 1, MPI.INFO_NULL),
                 (sys.executable, ["no_such_script.py"], 1, MPI.INFO_NULL),
                 (sys.executable, ["-m", "no_such_module_here"], 1, MPI.INFO_NULL),
                 (sys.executable, ["child.py"], 1, info)]
        for command, args, count, hints in cases:
            try:
                world.Spawn(command, args, count, hints)
                print("spawned!")
            except MPI.Exception as exc:
                print(world.rank, exc.Get_error_class() == MPI.ERR_SPAWN, str(exc),
                      flush=True)
        print(world.rank, "slots", world.Get_attr(MPI.UNIVERSE_SIZE), flush=True)
        """))
    _write(tmp_path, "child.py", CHILD)
    result = run_shmrma(["-n", 2, "--universe-size", 4, "--timeout", HANG_S, program],
                        timeout=HANG_S + 20, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "spawned!" not in result.stdout
    lines = result.stdout.splitlines()
    assert len([line for line in lines if " True " in line]) == 10, result.stdout
    said = [line for line in lines if line.startswith("0 True")]
    for words in ("9 processes asked, 2 slots left", "is not a Python interpreter",
                  "can't open file 'no_such_script.py'", "no module named 'no_such_module_here'",
                  "wdir names '/no/such/dir', which is not a directory"):
        assert any(words in line for line in said), (words, said)
    assert "0 slots 4" in lines and "1 slots 4" in lines
    launched = subprocess.run([sys.executable, "-c", textwrap.dedent("""\
        import sys, shmrma
        def body():
            from shmrma import MPI
            try:
                MPI.COMM_SELF.Spawn(sys.executable, ['x.py'])
            except MPI.Exception as e:
                return e.Get_error_class() == MPI.ERR_SPAWN, 'universe-size' in str(e)
        print(shmrma.launch(body, 2))
        """)], capture_output=True, text=True, timeout=HANG_S)
    assert launched.stdout.split() == ["[(True,", "True),", "(True,", "True)]"], \
        launched.stderr


@pytest.mark.timeout(HANG_S + 60)
def test_a_job_has_16_slots_without_universe_size(run_shmrma, tmp_path):
    """As MPICH starts spawned processes without asking, a job started without
    --universe-size has 16 process slots (UNIVERSE_SIZE still says -n, as a
    universe nobody declared): Spawn fills them, then says how many are left."""
    _write(tmp_path, "bye.py", "from mpi4py import MPI\nMPI.Comm.Get_parent().Disconnect()\n")
    program = _write(tmp_path, "fill.py", textwrap.dedent("""\
        import sys
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        for count in (4, 10, 1):
            try:
                inter = world.Spawn(sys.executable, ["bye.py"], count)
                print(world.rank, "spawned", inter.remote_size, flush=True)
                inter.Disconnect()
            except MPI.Exception as exc:
                print(world.rank, exc.Get_error_class() == MPI.ERR_SPAWN, str(exc),
                      flush=True)
        print(world.rank, "universe", world.Get_attr(MPI.UNIVERSE_SIZE), flush=True)
        """))
    result = run_shmrma(["-n", 2, "--timeout", HANG_S, program], timeout=HANG_S + 20,
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for rank in "01":
        said = [line[2:] for line in result.stdout.splitlines() if line[0] == rank]
        assert said[:2] + said[3:] == ["spawned 4", "spawned 10", "universe 2"], said
        assert said[2].startswith("True") and "0 slots left of this job's 16" in said[2]


@pytest.mark.timeout(HANG_S + 60)
def test_a_child_that_crashes_ends_the_job_and_leaves_nothing(run_shmrma, tmp_path):
    """A spawned child that fails ends the job as a failing rank does: the parents
    waiting for it stop, the status is the child's, named by its world rank."""
    _write(tmp_path, "crash.py", "from mpi4py import MPI\nMPI.Comm.Get_parent()\n"
                                 "raise SystemExit(7)\n")
    program = _write(tmp_path, "parent.py", textwrap.dedent("""\
        import sys
        from mpi4py import MPI
        inter = MPI.COMM_WORLD.Spawn(sys.executable, [%r], 1)
        inter.recv(source=0)    # never sent: the child dies
        """) % str(tmp_path / "crash.py"))
    result = run_shmrma(["-n", 2, "--universe-size", 3, "--timeout", HANG_S, program],
                        timeout=HANG_S + 20)
    assert result.returncode == 7, result.stderr
    assert "rank 2 exited with status 7" in result.stderr


@pytest.mark.timeout(HANG_S + 60)
def test_a_plain_mpipoolexecutor_spawns_its_workers(run_shmrma, tmp_path):
    """mpi4py.futures' MPIPoolExecutor in a program started without -m mpi4py.futures
    spawns its workers: UNIVERSE_SIZE minus the world's size by default, or
    max_workers; a second pool takes new slots (slots are not given back)."""
    pytest.importorskip("mpi4py.futures")
    program = _write(tmp_path, "pool.py", textwrap.dedent("""\
        import sys
        from mpi4py.futures import MPIPoolExecutor

        def square(x):
            return x * x

        if __name__ == "__main__":
            sizes = [None] if sys.argv[1:] == ["default"] else [2, 2]
            for size in sizes:
                with MPIPoolExecutor(max_workers=size) as pool:
                    print(sum(pool.map(square, range(10))), pool.num_workers, flush=True)
        """))
    for universe, how, expected in ((4, "default", ["285 3"]), (5, "two", ["285 2"] * 2)):
        result = run_shmrma(["-n", 1, "--universe-size", universe, "--timeout", HANG_S,
                             program, how], timeout=HANG_S + 20, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == expected
