"""Programs written for mpi4py run under shmrma-run as they are: ``from mpi4py
import MPI`` in a rank is shmrma's MPI (shmrma/run/mpi4py_alias.py), ``mpi4py.rc``
takes effect as in mpi4py, and no way of starting N processes leaves each with a
silent world of one."""
import importlib.machinery
import os
import subprocess
import sys
import textwrap

import pytest

import shmrma
from shmrma import MPI
from shmrma.core import job, segments

from mpitest import raises_mpi


def write(tmp_path, text, name="prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def lines(result):
    return sorted(result.stdout.splitlines())


MPI4PY_SUM = '''
    import sys
    from mpi4py import MPI
    import shmrma.MPI
    comm = MPI.COMM_WORLD
    sys.stdout.write("%d %d %d %s\\n" % (comm.Get_rank(), comm.Get_size(),
                                         comm.allreduce(1), MPI is shmrma.MPI))
'''


def test_from_mpi4py_import_mpi_is_one_job_of_n_ranks(run_shmrma, tmp_path):
    """The issue's first program: four ranks, one world, the sum 4 (it was 1)."""
    result = run_shmrma(["-n", 4, write(tmp_path, MPI4PY_SUM)])
    assert result.returncode == 0, result.stderr
    assert lines(result) == ["%d 4 4 True" % rank for rank in range(4)]


def test_python_word_and_its_options_after_the_rank_count(run_shmrma, tmp_path):
    """`shmrma-run -n 2 python prog.py`, as `mpiexec -n 2 python prog.py` is typed;
    -u, -B and -W act in the ranks; other interpreter options are refused with a
    hint, changing nothing."""
    prog = write(tmp_path, MPI4PY_SUM + '''
    import warnings
    try:
        warnings.warn("boom", UserWarning)
    except UserWarning:
        sys.stdout.write("warning raised %d\\n" % comm.rank)
    ''')
    result = run_shmrma(["-n", 2, "python", "-u", "-B", "-W", "error::UserWarning", prog])
    assert result.returncode == 0, result.stderr
    assert lines(result) == ["0 2 2 True", "1 2 2 True", "warning raised 0",
                             "warning raised 1"]
    refused = run_shmrma(["-n", 2, sys.executable, "-O", prog])
    assert refused.returncode == 2 and refused.stdout == ""
    assert "python -O -m shmrma.run" in refused.stderr


def test_python_m_mpi4py_runs_the_program_and_aborts_on_its_error(run_shmrma, tmp_path):
    """`python -m mpi4py prog.py` (mpi4py.run) on shmrma: the program runs on every
    rank; an exit status it raises aborts the job with that status, saying
    MPI_Abort as MPICH does (mpi4py's demo/test-run looks for it)."""
    good = run_shmrma(["-n", 2, "-m", "mpi4py", write(tmp_path, MPI4PY_SUM)])
    assert good.returncode == 0, good.stderr
    assert lines(good) == ["0 2 2 True", "1 2 2 True"]
    failing = write(tmp_path, '''
        import sys
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 1:
            sys.exit(7)
        MPI.COMM_WORLD.Barrier()
    ''', "fails.py")
    bad = run_shmrma(["-n", 2, "python", "-m", "mpi4py", failing], timeout=30)
    assert bad.returncode == 7
    assert "rank 1 called MPI_Abort(MPI_COMM_WORLD, 7)" in bad.stderr


def test_a_keyboard_interrupt_the_program_raises_shows_its_traceback(run_shmrma,
                                                                      tmp_path):
    """Only a real Ctrl-C is reported as one line; a raised KeyboardInterrupt is an
    exception like another (status 130, as Python's)."""
    result = run_shmrma(["-n", 2, write(tmp_path, '''
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 0:
            raise KeyboardInterrupt("from the program")
        MPI.COMM_WORLD.Barrier()
    ''')], timeout=30)
    assert result.returncode == 130
    assert "KeyboardInterrupt: from the program" in result.stderr


def test_set_abort_status_ends_the_job_with_it(run_shmrma, tmp_path):
    """MPI._set_abort_status (mpi4py.run's helper): the job ends with that status once
    the rank exits, in a job and in a singleton."""
    prog = write(tmp_path, '''
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 0:
            MPI._set_abort_status(5)
    ''')
    in_job = run_shmrma(["-n", 2, prog], timeout=30)
    assert in_job.returncode == 5
    assert "rank 0 called MPI_Abort(MPI_COMM_WORLD, 5)" in in_job.stderr
    alone = subprocess.run([sys.executable, "-c", "from shmrma import MPI; "
                            "MPI.COMM_WORLD.Barrier(); MPI._set_abort_status(6)"],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == 6 and "MPI_Abort(MPI_COMM_WORLD, 6)" in alone.stderr


RC_PROGRAM = '''
    import sys, warnings
    from mpi4py import rc
    for setting in sys.argv[1:]:
        name, value = setting.split("=")
        setattr(rc, name, {"true": True, "false": False}.get(value, value))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from mpi4py import MPI
    comm = MPI.COMM_WORLD
    dup = comm.Dup()
    win = MPI.Win.Allocate(8, comm=comm)
    names = [(MPI.ERRORS_RETURN, "RETURN"), (MPI.ERRORS_ARE_FATAL, "FATAL"),
             (MPI.ERRORS_ABORT, "ABORT")]
    def named(obj):
        return [name for handler, name in names if handler == obj.Get_errhandler()][0]
    initialized = MPI.Is_initialized()
    if not initialized:
        MPI.Init_thread(MPI.THREAD_SERIALIZED)
    sys.stdout.write("%s %d %s %s %s %s %s\\n" % (
        initialized, MPI.Query_thread(), named(comm), named(MPI.COMM_SELF), named(dup),
        named(win), [str(w.message) for w in caught]))
    win.Free()
    dup.Free()
'''


@pytest.mark.parametrize("settings,env,expected", [
    ([], {}, "True 3 RETURN RETURN RETURN RETURN []"),
    (["thread_level=single"], {}, "True 0 RETURN RETURN RETURN RETURN []"),
    (["thread_level=serialized"], {}, "True 2 RETURN RETURN RETURN RETURN []"),
    (["threads=false"], {}, "True 0 RETURN RETURN RETURN RETURN []"),
    (["initialize=false"], {}, "False 2 RETURN RETURN RETURN RETURN []"),
    (["errors=default"], {}, "True 3 FATAL FATAL FATAL FATAL []"),
    (["errors=fatal"], {}, "True 3 FATAL FATAL FATAL FATAL []"),
    (["errors=abort"], {}, "True 3 ABORT ABORT ABORT ABORT []"),
    (["errors=default"], {"MPI4PY_RC_ERRORS": "abort"},
     "True 3 ABORT ABORT ABORT ABORT []"),
    (["thread_level=many"], {}, "True 3 RETURN RETURN RETURN RETURN "
     "[\"mpi4py.rc.thread_level: unexpected value 'many'\"]"),
])
def test_mpi4py_rc_takes_effect_at_import(run_shmrma, tmp_path, settings, env, expected):
    """mpi4py.rc and MPI4PY_RC_* (which win) act when mpi4py.MPI is imported, as in
    mpi4py: initialization, the thread level, the error handler of the predefined communicators and of every
    object made next; an unexpected value is mpi4py's RuntimeWarning."""
    result = run_shmrma(["-n", 2, write(tmp_path, RC_PROGRAM), *settings], env=env)
    assert result.returncode == 0, result.stderr
    assert lines(result) == [expected] * 2


def test_no_alias_leaves_the_installed_mpi4py(run_shmrma, tmp_path):
    """--no-mpi4py-alias (SHMRMA_MPI4PY=0): mpi4py is the installed package, whose MPI
    is its own world in each rank, as documented; an unknown SHMRMA_MPI4PY value is
    refused before any rank starts."""
    prog = write(tmp_path, '''
        import sys
        import mpi4py.MPI
        sys.stdout.write("%s\\n" % mpi4py.MPI.__name__)
    ''')
    result = run_shmrma(["-n", 2, "--no-mpi4py-alias", prog])
    assert result.returncode == 0, result.stderr
    assert lines(result) == ["mpi4py.MPI"] * 2
    refused = run_shmrma(["-n", 2, prog], env={"SHMRMA_MPI4PY": "yes"})
    assert refused.returncode == 1 and refused.stdout == ""
    assert "SHMRMA_MPI4PY must be 1" in refused.stderr


def test_a_foreign_launchers_process_is_no_silent_singleton(tmp_path):
    """A process that mpiexec started as one of N > 1 (its PMI_SIZE, Open MPI's
    OMPI_COMM_WORLD_SIZE...) fails at its first MPI call saying what to run
    instead, before it makes any segment; one of 1 is an ordinary singleton."""
    code = "from shmrma import MPI; print(MPI.COMM_WORLD.Get_size())"
    for name in job.LAUNCHER_SIZE_VARIABLES:
        # a job id of this session's (SHMRMA_JOB_PREFIX): its names, and no other
        # program's, are what the process would have left
        job_id = job.new_job_id()
        env = dict(os.environ, SHMRMA_JOB=job_id, **{name: "4"})
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1 and result.stdout == ""
        assert "shmrma-run -n 4" in result.stderr and "SHMRMA_BACKEND=mpi" in result.stderr
        assert segments.job_segments(job_id) == []
    alone = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PMI_SIZE="1"),
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == 0 and alone.stdout == "1\n", alone.stderr


def test_ranks_forked_from_a_process_that_loaded_mpi4py_get_shmrmas(tmp_path):
    """shmrma.launch from a process that had loaded the installed mpi4py (a test
    session, a notebook): the ranks' ``from mpi4py import MPI`` is shmrma's all the
    same, and they end without touching the launcher's MPI (finalizing the copy a
    fork made of it crashed)."""
    prog = write(tmp_path, '''
        import shmrma
        from mpi4py import MPI as installed     # the launcher's own, an MPICH singleton

        def body():
            from mpi4py import MPI
            return MPI.__name__, MPI.COMM_WORLD.allreduce(1)

        print(shmrma.launch(body, 2), installed.COMM_WORLD.Get_size())
    ''')
    result = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "[('shmrma.MPI', 2), ('shmrma.MPI', 2)] 1\n"


def _without_installed_mpi4py():
    """In a rank: mpi4py as if it were not installed."""
    from shmrma.run import mpi4py_alias
    for name in [n for n in sys.modules if n == "mpi4py" or n.startswith("mpi4py.")]:
        del sys.modules[name]
    real = importlib.machinery.PathFinder.find_spec

    def find_spec(name, path=None, target=None):
        return None if name == "mpi4py" else real(name, path, target)
    importlib.machinery.PathFinder.find_spec = find_spec
    mpi4py_alias.install()
    import mpi4py
    from mpi4py import MPI as aliased
    rc = mpi4py.rc
    with pytest.raises(TypeError):
        rc.no_such_option = 1
    return (aliased is MPI, mpi4py.__version__, rc.thread_level,
            aliased.COMM_WORLD.allreduce(1))


def test_without_mpi4py_installed_a_stand_in_holds_rc_and_mpi():
    assert shmrma.launch(_without_installed_mpi4py, 2) == [
        (True, "4.1.2", "multiple", 2)] * 2


def _inheritance_under_mpis_defaults():
    """rc.errors = "default": new communicators inherit their parent's handler
    (MPI-3.1 §8.3), by every way of making one; windows start ERRORS_ARE_FATAL."""
    from shmrma.run import mpi4py_alias

    class Rc:
        errors = "default"
    mpi4py_alias.start(Rc())
    try:
        world = MPI.COMM_WORLD
        assert world.Get_errhandler() == MPI.ERRORS_ARE_FATAL
        handler = MPI.Comm.Create_errhandler(lambda comm, code: None)
        world.Set_errhandler(handler)
        made = [world.Dup(), world.Split(0, 0), world.Create(world.Get_group()),
                world.Create_group(world.Get_group()), world.Create_cart([world.size])]
        idup, request = world.Idup()
        request.Wait()
        made.append(idup)
        inherited = [comm.Get_errhandler() == handler for comm in made]
        with raises_mpi(MPI.ERR_RANK):  # the user handler is called, then it raises
            made[0].Send(b"x", dest=99)
        win = MPI.Win.Allocate(8, comm=world)
        window = win.Get_errhandler() == MPI.ERRORS_ARE_FATAL
        win.Free()
        for comm in made:
            comm.Free()
        return inherited, window
    finally:
        mpi4py_alias.start(None)


def test_mpis_default_error_handlers_are_inherited():
    assert shmrma.launch(_inheritance_under_mpis_defaults, 2) == [([True] * 6, True)] * 2
