"""``shmrma-run --trace FILE`` and ``--profile``: the timeline and the report
say what the program did (docs/observe.md).

Rules: one process per rank and a track per thread; an event per outermost MPI
call, named as written, with its call site, peer, tag and bytes; the time a
call waited as a slice inside it; the report's counts and bytes per call site;
the C recorder and its Python fallback record the same calls; a crashed or
killed rank leaves a valid trace; bad paths are refused before the job runs.
"""
import collections
import json
import os
import subprocess
import sys
import textwrap

import pytest

from test_backends import needs_mpi

PROGRAM = textwrap.dedent('''
    import threading
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    data = np.full(100, rank, dtype="f8")
    got = np.empty_like(data)
    for i in range(ROUNDS):
        comm.Sendrecv(data, (rank + 1) % size, 7, got, (rank - 1) % size, 7)   # line 10
    total = comm.allreduce(rank)                                               # line 11
    win = MPI.Win.Allocate(64, 8, comm=comm)
    win.Fence()
    win.Put([data, 8, MPI.DOUBLE], (rank + 1) % size)                         # line 14
    win.Fence()
    win.Free()
    if rank == 0:
        def helper():
            for i in range(5):
                MPI.COMM_SELF.Barrier()                                        # line 20
        thread = threading.Thread(target=helper, name="helper")
        thread.start()
        thread.join()
    if rank == size - 1:
        comm.Send(data, 0, tag=3)                                              # line 25
    if rank == 0:
        comm.Recv(got, size - 1, 3)                                            # line 27
    assert total == size * (size - 1) // 2
''')
ROUNDS = 20


def _program(tmp_path, text=PROGRAM, name="prog.py"):
    path = tmp_path / name
    path.write_text(text.replace("ROUNDS", str(ROUNDS)))
    return path


def _trace(path):
    with open(path) as f:
        return json.load(f)


def _calls(trace, rank=None):
    return [event for event in trace["traceEvents"] if event.get("cat") == "mpi"
            and (rank is None or event["pid"] == rank)]


def _leftovers(directory):
    return [name for name in os.listdir(directory) if name.startswith(".shmrma-records-")]


def test_trace_has_a_process_per_rank_and_an_event_per_call(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 3, "--trace", out, _program(tmp_path)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    trace = _trace(out)
    names = {event["pid"]: event["args"]["name"] for event in trace["traceEvents"]
             if event["name"] == "process_name"}
    assert [names[rank] for rank in range(3)] == ["rank 0", "rank 1", "rank 2"]
    for rank in range(3):
        sites = collections.Counter((event["name"], event["args"]["site"].split()[0])
                                    for event in _calls(trace, rank))
        assert sites[("Comm.Sendrecv", "prog.py:10")] == ROUNDS
        assert sites[("Comm.allreduce", "prog.py:11")] == 1
        assert sites[("Win.Put", "prog.py:14")] == 1
        assert sites[("Win.Fence", "prog.py:13")] == 1
        # the calls inside a call (Sendrecv's Isend, Free's barrier) are not events
        assert not [name for name, _ in sites if name in ("Comm.Isend", "Comm.Irecv",
                                                          "Request.Wait")]
    sendrecv = [event for event in _calls(trace, 1) if event["name"] == "Comm.Sendrecv"]
    # a Sendrecv's peer and tag are what it receives; dest and sendtag where it sends
    assert sendrecv[0]["args"] == {"site": "prog.py:10 <module>", "on": "MPI_COMM_WORLD",
                                   "peer": 0, "tag": 7, "dest": 2, "sendtag": 7,
                                   "bytes": 800}
    put = [event for event in _calls(trace, 2) if event["name"] == "Win.Put"][0]
    assert put["args"]["peer"] == 0 and put["args"]["bytes"] == 64
    assert not _leftovers(tmp_path)


def test_trace_gives_each_thread_its_track(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, _program(tmp_path)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    trace = _trace(out)
    threads = {(event["pid"], event["tid"]): event["args"]["name"]
               for event in trace["traceEvents"] if event["name"] == "thread_name"}
    helper = [tid for (pid, tid), name in threads.items() if pid == 0 and name == "helper"]
    assert len(helper) == 1 and threads[(0, 0)] == "MainThread"
    barriers = [event for event in _calls(trace, 0) if event["name"] == "Comm.Barrier"]
    assert len(barriers) == 5 and {event["tid"] for event in barriers} == set(helper)
    assert {event["tid"] for event in _calls(trace, 1)} == {0}


# rank 0 waits in Recv for rank 1, which sleeps first
LATE_SENDER = textwrap.dedent('''
    import time
    import numpy as np
    from shmrma import MPI
    comm = MPI.COMM_WORLD
    data = np.zeros(4)
    if comm.Get_rank() == 1:
        time.sleep(0.2)
        comm.Send(data, 0, 5)
    else:
        comm.Recv(data, 1, 5)
''')


def test_waits_are_slices_inside_their_call(run_shmrma, tmp_path):
    """Rank 0 waits in Recv for rank 1, which sleeps first: the wait is inside the
    Recv, for rank 1, about as long as the sleep, and (longer than a slice of the
    wait policy) says what it waited for as --timeout does."""
    program = _program(tmp_path, LATE_SENDER)
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, program], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events = _trace(out)["traceEvents"]
    receive = [event for event in events if event["name"] == "Comm.Recv"][0]
    waits = [event for event in events if event["name"] == "wait" and event["pid"] == 0]
    assert len(waits) == 1
    wait = waits[0]
    assert wait["args"] == {"for": "rank 1 of MPI_COMM_WORLD", "in": "Comm.Recv",
                            "waiting for": "a message from rank 1 with tag 5"}
    assert receive["ts"] <= wait["ts"] and (wait["ts"] + wait["dur"]
                                            <= receive["ts"] + receive["dur"] + 0.01)
    assert wait["dur"] > 0.5 * receive["dur"] and receive["dur"] > 100000


def test_trace_shows_the_job_and_each_ranks_start_and_end(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, _program(tmp_path)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events = _trace(out)["traceEvents"]
    assert [event["ts"] for event in events if event["name"] == "job start"] == [0.0]
    for rank in range(2):
        mine = {event["name"]: event for event in events if event["pid"] == rank
                and event.get("cat") == "job"}
        assert mine["start-up"]["ts"] == 0.0
        assert mine["rank %d" % rank]["ts"] == mine["start-up"]["dur"]
        assert mine["end"]["args"] == {"status": "exited with status 0"}
        first = min(event["ts"] for event in _calls({"traceEvents": events}, rank))
        assert mine["rank %d" % rank]["ts"] <= first <= mine["end"]["ts"]


def test_profile_reports_counts_bytes_and_time_per_call_site(run_shmrma, tmp_path):
    out = tmp_path / "profile.json"
    result = run_shmrma(["-n", 3, "--profile=%s" % out, _program(tmp_path)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "shmrma profile: 3 rank(s)" in result.stderr
    assert "Top " in result.stderr and "prog.py:10 <module>" in result.stderr
    report = json.loads(out.read_text())
    assert [rank["rank"] for rank in report["ranks"]] == [0, 1, 2]
    for rank in report["ranks"]:
        assert 0 < rank["mpi_s"] < rank["wall_s"]
        assert 0 < rank["mpi_share"] < 1
    sites = {(site["call"], site["site"]): site for site in report["sites"]}
    sendrecv = sites[("Comm.Sendrecv", "prog.py:10 <module>")]
    assert sendrecv["count"] == 3 * ROUNDS and sendrecv["bytes"] == 3 * ROUNDS * 800
    assert sorted(sendrecv["per_rank_s"]) == ["0", "1", "2"]
    assert sendrecv["min_us"] <= sendrecv["mean_us"] <= sendrecv["max_us"]
    assert sites[("Comm.Send", "prog.py:25 <module>")]["count"] == 1
    assert sites[("Comm.Barrier", "prog.py:20 helper")]["count"] == 5
    # the launcher's own calls in a rank are not the program's
    assert not [site for site in sites.values() if "mpi4py_alias" in site["site"]]
    assert not _leftovers(tmp_path)


def test_profile_says_on_whom_a_rank_waited(run_shmrma, tmp_path):
    program = _program(tmp_path, LATE_SENDER)
    result = run_shmrma(["-n", 2, "--profile", program], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    row = [line for line in result.stderr.splitlines() if line.split()[:1] == ["0"]][0]
    assert "rank 1 of MPI_COMM_WORLD" in row


DIFFERENTIAL = textwrap.dedent('''
    import numpy as np
    from shmrma import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    data = np.arange(16, dtype="i4")
    got = np.empty_like(data)
    for i in range(10):
        request = comm.Irecv([got, 4, MPI.INT], (rank - 1) % size, tag=i)
        comm.Send([data, 4, MPI.INT], dest=(rank + 1) % size, tag=i)
        request.Wait()
        comm.Bcast(data, root=i % size)
        MPI.Request.Waitall([comm.Isend(data, (rank + 1) % size, 99),
                             comm.Irecv(got, (rank - 1) % size, 99)])
    comm.Set_name("renamed")
    comm.Barrier()
    win = MPI.Win.Create(got, comm=comm)
    win.Lock(0)
    win.Get(data[:2], 0)
    win.Unlock(0)
    comm.Barrier()
    group = win.Get_group()
    for i in range(3):
        win.Post(group.Incl([(rank + 1) % size]))
        win.Start(group.Incl([(rank - 1) % size]))
        win.Complete()
        win.Wait()
    win.Free()
    comm.bcast({"any": "object"}, root=0)
    try:
        comm.Send(data, size + 5)
    except MPI.Exception as exc:
        assert exc.Get_error_class() == MPI.ERR_RANK
    else:
        raise AssertionError("Send to a rank past the size did not fail")
''')


def _recorded(run_shmrma, tmp_path, native):
    program = _program(tmp_path, DIFFERENTIAL, "differential.py")
    trace, profile = tmp_path / ("t%d.json" % native), tmp_path / ("p%d.json" % native)
    result = run_shmrma(["-n", 2, "--trace", trace, "--profile=%s" % profile, program],
                        cwd=tmp_path, env={"SHMRMA_NATIVE": str(native)}, timeout=120)
    assert result.returncode == 0, result.stderr
    events = collections.Counter(
        (event["pid"], event["tid"], event["name"], json.dumps(event["args"], sort_keys=True))
        for event in _calls(_trace(trace)))
    sites = {(site["call"], site["site"]): (site["count"], site["bytes"])
             for site in json.loads(profile.read_text())["sites"]}
    arrows = collections.Counter(
        (source, first["name"], first["args"]["site"], target, second["name"],
         second["args"]["site"]) for kind in ("message", "post")
        for source, first, target, second in _flows(_trace(trace), kind))
    # which rank arrives last at a collective is the run's, not the recorder's
    arrows.update(("either", first["name"], first["args"]["site"], "way",
                   second["name"], second["args"]["site"])
                  for _, first, _, second in _flows(_trace(trace), "last arrival"))
    return events, sites, arrows


def test_c_and_python_recorders_agree(run_shmrma, tmp_path):
    """The same program recorded by the C recorder and by the fallback (SHMRMA_NATIVE=0):
    the same events with the same arguments, the same sums per call site."""
    events_c, sites_c, arrows_c = _recorded(run_shmrma, tmp_path, 1)
    events_py, sites_py, arrows_py = _recorded(run_shmrma, tmp_path, 0)
    assert events_c == events_py
    assert sites_c == sites_py
    assert arrows_c == arrows_py
    # the Irecv's message ends at the Wait of its request, the Waitall's at the Waitall
    ends = {(second, site) for _, _, _, _, second, site in arrows_c}
    assert {("Request.Wait", "differential.py:11 <module>"),
            ("Request.Waitall", "differential.py:13 <module>")} <= ends
    assert sum(count for key, count in arrows_c.items() if key[1] == "Win.Post") == 2 * 3
    names = {key[2] for key in events_c}
    assert {"Comm.Irecv", "Comm.Send", "Request.Wait", "Comm.Bcast", "Request.Waitall",
            "Comm.Set_name", "Win.Get", "Comm.bcast"} <= names
    # Set_name renamed the communicator for the calls after it
    barrier = [json.loads(key[3]) for key in events_c if key[2] == "Comm.Barrier"]
    assert barrier and all(args["on"] == "renamed" for args in barrier)
    send = [json.loads(key[3]) for key in events_c if key[2] == "Comm.Send"]
    assert {args["bytes"] for args in send} == {16, 64}     # [data, 4, INT], then data


def test_a_killed_rank_leaves_a_valid_trace(run_shmrma, tmp_path):
    program = _program(tmp_path, textwrap.dedent('''
        import os, signal
        from shmrma import MPI
        comm = MPI.COMM_WORLD
        for i in range(10):
            comm.Barrier()
        if comm.Get_rank() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        comm.Barrier()
    '''))
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, program], cwd=tmp_path)
    assert result.returncode == 137
    trace = _trace(out)
    killed = [event for event in _calls(trace, 1) if event["name"] == "Comm.Barrier"]
    assert len(killed) == 10
    end = [event for event in trace["traceEvents"] if event["name"] == "end"
           and event["pid"] == 1][0]
    assert "SIGKILL" in end["args"]["status"] and "killed or crashed" in end["args"]["note"]
    assert not _leftovers(tmp_path)


def test_a_failing_rank_leaves_a_trace_and_a_profile(run_shmrma, tmp_path):
    program = _program(tmp_path, textwrap.dedent('''
        from shmrma import MPI
        comm = MPI.COMM_WORLD
        comm.Barrier()
        if comm.Get_rank() == 0:
            raise RuntimeError("stop here")
        comm.Barrier()
    '''))
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, "--profile", program], cwd=tmp_path)
    assert result.returncode == 1 and "stop here" in result.stderr
    assert "shmrma profile: " in result.stderr
    ends = {event["pid"]: event["args"]["status"] for event in _trace(out)["traceEvents"]
            if event["name"] == "end"}
    assert ends[0] == "exited with status 1"


def test_events_past_the_limit_are_counted_and_said(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, _program(tmp_path)], cwd=tmp_path,
                        env={"SHMRMA_TRACE_EVENTS": "5"})
    assert result.returncode == 0, result.stderr
    assert "dropped" in result.stderr and "SHMRMA_TRACE_EVENTS" in result.stderr
    trace = _trace(out)
    assert len(_calls(trace, 0)) == 5
    dropped = trace["otherData"]["dropped"]
    assert int(dropped["0"]) > 0 and int(dropped["1"]) > 0


@pytest.mark.parametrize("args, message", [
    (["--trace", "/nonexistent-dir/trace.json"], "--trace: cannot write"),
    (["--trace", "."], "is a directory"),
    (["--profile=/nonexistent-dir/p.json"], "--profile: cannot write"),
    (["--trace", "t.json", "--backend", "mpi"], "shm backend only"),
    (["--trace", "same.json", "--profile=same.json"], "name the same file"),
])
def test_bad_paths_are_refused_before_the_job_runs(run_shmrma, tmp_path, args, message):
    program = _program(tmp_path, "open('ran', 'w').close()\n")
    result = run_shmrma(["-n", 2] + args + [program], cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "ran").exists() and not _leftovers(tmp_path)


def test_a_singleton_and_launch_record_too(tmp_path):
    """SHMRMA_TRACE and SHMRMA_PROFILE without the launcher: ``python prog.py`` and
    shmrma.launch gather their own records."""
    program = _program(tmp_path, textwrap.dedent('''
        import shmrma
        from shmrma import MPI

        def body():
            MPI.COMM_WORLD.Barrier()
            return MPI.COMM_WORLD.Get_rank()

        if __name__ == "__main__":
            MPI.COMM_WORLD.Barrier()
    '''))
    env = dict(os.environ, SHMRMA_TRACE=str(tmp_path / "t.json"), SHMRMA_PROFILE="1")
    result = subprocess.run([sys.executable, str(program)], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "shmrma profile: 1 rank(s)" in result.stderr
    assert [event["name"] for event in _calls(_trace(tmp_path / "t.json"))] == ["Comm.Barrier"]
    launched = subprocess.run(
        [sys.executable, "-c", "import shmrma, prog; print(shmrma.launch(prog.body, 3))"],
        env=dict(env, SHMRMA_TRACE=str(tmp_path / "l.json")), cwd=tmp_path,
        capture_output=True, text=True, timeout=60)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout.strip() == "[0, 1, 2]"
    assert "shmrma profile: 3 rank(s)" in launched.stderr
    trace = _trace(tmp_path / "l.json")
    assert sorted(event["pid"] for event in _calls(trace)
                  if event["name"] == "Comm.Barrier") == [0, 1, 2]
    assert not _leftovers(tmp_path)


def test_an_unwritable_trace_in_the_environment_stops_the_job_before_it_starts(
        run_shmrma, tmp_path):
    program = _program(tmp_path, "open('ran', 'w').close()\n")
    result = run_shmrma(["-n", 2, program], cwd=tmp_path,
                        env={"SHMRMA_TRACE": "/nonexistent-dir/t.json"})
    assert result.returncode == 1
    assert "SHMRMA_TRACE: cannot write /nonexistent-dir/t.json" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_an_unwritable_trace_stops_a_singleton_with_a_clear_error(tmp_path):
    program = _program(tmp_path, "from shmrma import MPI\nMPI.COMM_WORLD.Barrier()\n")
    env = dict(os.environ, SHMRMA_TRACE="/nonexistent-dir/t.json")
    result = subprocess.run([sys.executable, str(program)], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "SHMRMA_TRACE: cannot write /nonexistent-dir/t.json" in result.stderr


@pytest.mark.parametrize("threads, native, jobs", [(2, 1, 20), (8, 1, 20), (4, 0, 8)])
def test_threads_record_every_call_under_repetition(run_shmrma, tmp_path, threads, native,
                                                    jobs):
    """Threads calling at once (THREAD_MULTIPLE) each get their own track and lose no
    call: the counts are exact, job after job, in the C recorder and in the fallback."""
    program = _program(tmp_path, textwrap.dedent('''
        import sys, threading
        from shmrma import MPI
        THREADS = int(sys.argv[1])
        comms = [MPI.COMM_WORLD.Dup() for _ in range(THREADS)]

        def work(comm):
            for i in range(50):
                comm.Barrier()
                comm.Get_size()

        workers = [threading.Thread(target=work, args=(comm,)) for comm in comms]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    '''))
    for attempt in range(jobs):
        out = tmp_path / "trace.json"
        result = run_shmrma(["-n", 2, "--trace", out, "--profile", program, threads],
                            cwd=tmp_path, env={"SHMRMA_NATIVE": str(native)})
        assert result.returncode == 0, result.stderr
        calls = _calls(_trace(out))
        for rank in range(2):
            per_thread = collections.Counter(event["tid"] for event in calls
                                             if event["pid"] == rank
                                             and event["name"] == "Comm.Barrier")
            assert sorted(per_thread.values()) == [50] * threads, attempt
        barrier = [line for line in result.stderr.splitlines()
                   if line.startswith("Comm.Barrier")]
        assert barrier and barrier[0].split()[3] == str(2 * threads * 50)


def test_no_recorder_when_not_asked():
    """Without SHMRMA_TRACE and SHMRMA_PROFILE the calls are the classes' own."""
    from shmrma import MPI
    from shmrma.comm.comm import Comm
    if os.environ.get("SHMRMA_TRACE") or os.environ.get("SHMRMA_PROFILE"):
        pytest.skip("this run records")
    assert getattr(Comm.__dict__["Send"], "about", None) is None
    assert MPI.COMM_WORLD.Send.__func__ is Comm.__dict__["Send"]


def test_timeline_picture_of_a_real_trace(run_shmrma, tmp_path):
    """shmrma-bench timeline draws a lane per rank and per thread of a rank that
    used several, from the trace's JSON."""
    pytest.importorskip("matplotlib")
    from shmrma.bench import cli, timeline
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, _program(tmp_path)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lanes = timeline.lanes(_trace(out))
    assert list(lanes.values()) == ["rank 0 t0", "rank 0 t1", "rank 1"]
    picture = tmp_path / "timeline.png"
    assert cli.main(["timeline", str(out), str(picture), "--title", "prog"]) == 0
    with open(picture, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["--window", "5:2"], "END must be after START"),
    (["--window", "soon"], "START:END in ms"),
])
def test_timeline_refuses_a_bad_window(tmp_path, capsys, args, message):
    from shmrma.bench import cli
    with pytest.raises(SystemExit) as stop:
        cli.main(["timeline", str(tmp_path / "t.json"), str(tmp_path / "t.png")] + args)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_timeline_says_what_is_wrong_with_its_input(tmp_path, capsys):
    from shmrma.bench import cli
    (tmp_path / "empty.json").write_text('{"traceEvents": []}')
    assert cli.main(["timeline", str(tmp_path / "missing.json"), str(tmp_path / "p.png")]) == 1
    assert "No such file" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    assert cli.main(["timeline", str(tmp_path / "empty.json"), str(tmp_path / "p.png")]) == 1
    assert "no MPI call" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()


def test_observe_suite_rows_compare_each_option_with_the_run_without():
    from shmrma.bench import compare, jobs
    halo = compare.OBSERVE_SUITE[0]
    assert halo.impls(True) == ["shmrma", "shmrma-trace", "shmrma-profile"]
    traced = jobs.launcher_argv("shmrma-trace", 4, halo.inner.program(True))
    assert traced[traced.index("--trace") + 1] == jobs.OBSERVED_FILE
    assert "--profile=%s" % jobs.OBSERVED_FILE in jobs.launcher_argv("shmrma-profile", 4, [])
    rows = compare.table([halo], {halo.title: {"shmrma": [40.0, 40.0],
                                               "shmrma-trace": [50.0, 50.0],
                                               "shmrma-profile": [42.0, 42.0]}})
    assert [(r["metric"], r["against"], r["ratio"], r["target"]) for r in rows] == [
        ("--trace: " + halo.title, "shmrma without it", 1.25, 1.3),
        ("--profile: " + halo.title, "shmrma without it", 1.05, 1.1)]


def test_timeline_without_matplotlib_says_what_to_install(tmp_path, capsys, monkeypatch):
    from shmrma.bench import cli
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "rank 0"}},
        {"name": "Comm.Barrier", "cat": "mpi", "ph": "X", "pid": 0, "tid": 0, "ts": 1.0,
         "dur": 2.0, "args": {}}]}))
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["timeline", str(trace), str(tmp_path / "t.png")]) == 2
    err = capsys.readouterr().err
    assert "shmrma-bench timeline needs matplotlib" in err and "pip install" in err


@pytest.mark.parametrize("native", ["1", "0"])
def test_recorded_calls_keep_their_docstrings_and_signatures(native):
    code = ("import inspect\nfrom shmrma import MPI\n"
            "print(MPI.Comm.Send.about.label, MPI.Comm.Send.__name__)\n"
            "print(inspect.signature(MPI.Comm.Send))\n"
            "print(MPI.COMM_WORLD.Recv.__doc__.splitlines()[0])\n"
            "print(MPI.Win.Allocate.__doc__.splitlines()[0])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, SHMRMA_PROFILE="1", SHMRMA_NATIVE=native),
                            timeout=60)
    assert result.returncode == 0, result.stderr
    from shmrma import MPI
    assert result.stdout.splitlines() == [
        "Comm.Send Send", "(self, buf, dest, tag=0)",
        MPI.COMM_WORLD.Recv.__doc__.splitlines()[0],
        MPI.Win.Allocate.__doc__.splitlines()[0]]


def _flows(trace, kind):
    """[(from rank, from call, to rank, to call)] of the arrows named ``kind``: each
    "s" and "f" bound to the call slice around its time."""
    events = trace["traceEvents"]
    slices = [event for event in events if event.get("cat") == "mpi"]

    def around(flow):
        found = [event for event in slices if event["pid"] == flow["pid"]
                 and event["tid"] == flow["tid"]
                 and event["ts"] <= flow["ts"] <= event["ts"] + event["dur"]]
        assert len(found) == 1, flow
        return found[0]
    starts = {event["id"]: around(event) for event in events
              if event.get("cat") == "flow" and event["ph"] == "s" and event["name"] == kind}
    ends = {event["id"]: around(event) for event in events
            if event.get("cat") == "flow" and event["ph"] == "f" and event["name"] == kind}
    assert sorted(starts) == sorted(ends)
    return [(starts[n]["pid"], starts[n], ends[n]["pid"], ends[n]) for n in sorted(starts)]


ARROWS = textwrap.dedent('''
    import time
    import numpy as np
    from shmrma import MPI
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    data = np.zeros(4)
    if rank == 1:
        time.sleep(0.2)
    comm.Barrier()                                  # line 10: rank 1 arrives last
    if rank == 2:
        comm.Send(data, 0, tag=4)                   # line 12
        comm.Send(data, 0, tag=4)
    elif rank == 0:
        comm.Recv(data, 2, 4)                       # line 15
        comm.Recv(data, 2, 4)
    if rank == 2:
        comm.Isend(data, 1, tag=6).Wait()           # line 18
    elif rank == 1:
        request = comm.Irecv(data, 2, 6)
        MPI.Request.Waitall([request])              # line 21: the arrow ends here
    other = comm.Dup()
    if rank == 1:
        other.Send(data, 0, 9)
    elif rank == 0:
        other.Recv(data, MPI.ANY_SOURCE, 9)         # a wildcard: no arrow on `other`
    win = MPI.Win.Allocate(8, 1, comm=comm)
    win.Fence()
    win.Fence()
    win.Fence(MPI.MODE_NOSUCCEED)
    if rank == 0:
        win.Lock(1)
        win.Unlock(1)
    comm.Barrier()                                  # the lock ends before the Post
    group = win.Get_group()
    if rank == 0:
        win.Start(group.Incl([1]))
        win.Complete()
    elif rank == 1:
        win.Post(group.Incl([0]))
        win.Wait()
    win.Free()
''')


def test_arrows_go_from_the_last_arrival_and_from_each_send(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 3, "--trace", out, _program(tmp_path, ARROWS)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    trace = _trace(out)
    barrier = [(source, target) for source, call, target, _ in _flows(trace, "last arrival")
               if call["args"]["site"] == "prog.py:10 <module>"]
    assert sorted(barrier) == [(1, 0), (1, 2)]
    fences = [(source, target) for source, call, target, _ in _flows(trace, "last arrival")
              if call["name"] == "Win.Fence"]
    assert len(fences) == 3 * 2 and all(source != target for source, target in fences)
    messages = _flows(trace, "message")
    assert sorted((source, first["name"], target, second["name"], second["args"]["site"])
                  for source, first, target, second in messages) == [
        (2, "Comm.Isend", 1, "Request.Waitall", "prog.py:21 <module>"),
        (2, "Comm.Send", 0, "Comm.Recv", "prog.py:15 <module>"),
        (2, "Comm.Send", 0, "Comm.Recv", "prog.py:16 <module>")]
    # each arrow goes forward: the receive returns after the send began
    assert all(second["ts"] + second["dur"] >= first["ts"] for _, first, _, second in messages)
    assert [(source, first["name"], target, second["name"])
            for source, first, target, second in _flows(trace, "post")] == [
        (1, "Win.Post", 0, "Win.Start")]


def test_epochs_are_slices_of_their_own(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 3, "--trace", out, _program(tmp_path, ARROWS)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events = _trace(out)["traceEvents"]
    begins = {event["id"]: event for event in events
              if event.get("cat") == "epoch" and event["ph"] == "b"}
    ends = {event["id"]: event for event in events
            if event.get("cat") == "epoch" and event["ph"] == "e"}
    assert sorted(begins) == sorted(ends)
    assert all(begins[n]["ts"] <= ends[n]["ts"] for n in begins)
    names = collections.Counter((event["pid"], event["name"].split(" (")[0])
                                for event in begins.values())
    for rank in range(3):
        assert names[(rank, "fence epoch")] == 2     # between the three fences
    assert names[(0, "lock on rank 1")] == 1
    assert names[(0, "access epoch")] == 1 and names[(1, "exposure epoch")] == 1
    assert sum(names.values()) == 3 * 2 + 3


COUNTERS = textwrap.dedent('''
    import sys
    import numpy as np
    from shmrma import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate(64, 8, comm=comm)
    (arrived,) = win.Alloc_sync_objects(1)
    theirs = comm.sendrecv(arrived, dest=(rank - 1) % size, source=(rank + 1) % size)
    restart = {"restart": "true"}
    signal = win.Sync_ops_init((rank + 1) % size, MPI.MODE_WIN_PUT, theirs, restart)
    wait = win.Sync_object_init(arrived, 1, restart)
    MPI.Prequest.Startall([signal, wait])   # both restart themselves
    data = np.full(8, rank, dtype="f8")
    for i in range(int(sys.argv[1])):
        win.Put(data, (rank + 1) % size)
        MPI.Request.Waitall([signal])       # line 17: the signal
        wait.Wait()                         # line 18: the round it ends
        comm.Barrier()                      # no signal runs a round ahead
    wait.Free()
    signal.Free()
    comm.Barrier()
    win.Free_sync_objects([arrived])
    win.Free()
''')


def test_arrows_go_from_a_counter_signal_to_the_wait_it_ended(run_shmrma, tmp_path):
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 3, "--trace", out, _program(tmp_path, COUNTERS), 10],
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    arrows = _flows(_trace(out), "signal")
    ends = collections.Counter(
        (source, first["name"], first["args"]["site"].split()[0], target, second["name"],
         second["args"]["site"].split()[0]) for source, first, target, second in arrows)
    # every round waits for its one signal, from the rank before; the arrows stop
    # only where two signals' calls overlap in time, never pointing wrong
    assert set(ends) <= {((target - 1) % 3, "Request.Waitall", "prog.py:17", target,
                          "Request.Wait", "prog.py:18") for target in range(3)}
    assert sum(ends.values()) >= 3 * 10 // 2
    assert all(second["ts"] + second["dur"] >= first["ts"] for _, first, _, second in arrows)


def test_counter_arrows_are_the_same_from_the_c_recorder_and_the_fallback(
        run_shmrma, tmp_path):
    program = _program(tmp_path, COUNTERS)
    found = {}
    for native in (1, 0):
        out = tmp_path / ("t%d.json" % native)
        result = run_shmrma(["-n", 2, "--trace", out, program, 5], cwd=tmp_path,
                            env={"SHMRMA_NATIVE": str(native)}, timeout=120)
        assert result.returncode == 0, result.stderr
        trace = _trace(out)
        # which rounds waited is the run's; what each arrow joins is the recorder's
        found[native] = {(source, first["args"]["site"], target, second["args"]["site"])
                         for source, first, target, second in _flows(trace, "signal")}
    assert found[1] == found[0] == {(0, "prog.py:17 <module>", 1, "prog.py:18 <module>"),
                                    (1, "prog.py:17 <module>", 0, "prog.py:18 <module>")}


ON_MPI = textwrap.dedent('''
    import mpi4py
    mpi4py.rc.thread_level = "serialized"   # before the import: still heard
    import numpy as np
    from mpi4py import MPI
    assert MPI.Query_thread() == MPI.THREAD_SERIALIZED, MPI.Query_thread()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    buf = np.zeros(100, dtype="i")
    for _ in range(ROUNDS):
        if rank == 0:
            comm.Send([buf, 8, MPI.BYTE], dest=1, tag=3)               # line 12
        elif rank == 1:
            comm.Recv([buf, 8, MPI.BYTE], source=0, tag=3)             # line 14
    request = comm.Isend(buf, dest=(rank + 1) % size)                  # line 15
    comm.Recv(buf, source=(rank - 1) % size)
    request.Wait()                                                     # line 17
    win = MPI.Win.Allocate(64, comm=comm)                              # line 18
    win.Fence()
    win.Free()
''')


@needs_mpi
@pytest.mark.parametrize("native", ["1", "0"])
def test_profile_on_the_mpi_backend_times_mpi4pys_calls(run_shmrma, tmp_path, native):
    """--profile with --backend mpi: mpi4py's own calls (a C extension's methods,
    and requests mpi4py makes) summed per call site, bytes of [buf, count, type]
    counted; the program's mpi4py.rc still heard; waits said not measured. The
    same counts from the C recorder and from the fallback's."""
    out = tmp_path / "profile.json"
    result = run_shmrma(["-n", 2, "--backend", "mpi", "--profile=%s" % out,
                         _program(tmp_path, ON_MPI)], cwd=tmp_path,
                        env={"TMPDIR": str(tmp_path), "SHMRMA_NATIVE": native}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "shmrma profile: 2 rank(s)" in result.stderr
    assert "waiting: not measured on the mpi backend" in result.stderr
    with open(out) as f:
        report = json.load(f)
    assert [rank["rank"] for rank in report["ranks"]] == [0, 1]
    assert all(rank["waiting_s"] is None and rank["mpi_s"] > 0 for rank in report["ranks"])
    sites = {(site["call"], site["site"].rpartition(":")[2].split()[0]): site
             for site in report["sites"]}
    assert sites[("Comm.Send", "12")]["count"] == ROUNDS
    assert sites[("Comm.Send", "12")]["bytes"] == 8 * ROUNDS
    assert sites[("Comm.Recv", "14")]["bytes"] == 8 * ROUNDS
    assert sites[("Comm.Isend", "15")]["per_rank_s"].keys() == {"0", "1"}
    assert sites[("Request.Wait", "17")]["count"] == 2
    assert sites[("Win.Allocate", "18")]["count"] == 2
    assert not _leftovers(tmp_path)


@needs_mpi
def test_profile_on_the_mpi_backend_times_shmrmas_extensions(run_shmrma, tmp_path):
    """Through ``from shmrma import MPI`` the backend's own classes are timed too:
    the proposal's counters' calls and their requests' waits."""
    program = _program(tmp_path, textwrap.dedent('''
        from shmrma import MPI
        import numpy as np
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        left, right = (rank - 1) % size, (rank + 1) % size
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine, theirs = win.Alloc_sync_objects(1), [MPI.SYNC_NULL]
        comm.Sendrecv([mine, MPI.HANDLE_SYNC], left, 1, [theirs, MPI.HANDLE_SYNC], right, 1)
        arrived = win.Sync_object_init(mine[0], 1)
        signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, theirs[0])
        MPI.Prequest.Startall([arrived, signal])
        win.Put([np.array([rank], "i8"), MPI.INT64_T], right, 0)
        signal.Wait()
        arrived.Wait()                                                 # line 14
        win.Free()
    '''))
    result = run_shmrma(["-n", 2, "--backend", "mpi", "--profile", program], cwd=tmp_path,
                        env={"TMPDIR": str(tmp_path)}, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stderr.splitlines()]
    assert any(line[:1] == ["Win.Sync_ops_init"] for line in lines), result.stderr
    assert any(line[:1] == ["Request.Wait"] and line[1].endswith(":14") for line in lines)
    assert not _leftovers(tmp_path)


def test_profile_on_the_mpi_backend_without_the_c_extension_is_refused(monkeypatch):
    """The mpi backend's --profile sets its wrappers on mpi4py's classes with the
    C extension; an installation without it is told so before the job runs."""
    from shmrma.run import cli
    options = cli.parse(["-n", "2", "--backend", "mpi", "--profile", "prog.py"])
    monkeypatch.setattr(cli, "_has_native", lambda: False)
    with pytest.raises(cli.UsageError, match="needs shmrma's C extension"):
        cli.checked(options)


def test_a_long_collective_wait_says_what_it_waited_for(run_shmrma, tmp_path):
    """A collective's wait that outlasts a slice of the wait policy carries the
    text --timeout prints for it too (the messages' is in the test above)."""
    program = _program(tmp_path, LATE_SENDER + textwrap.dedent('''
        comm.Barrier()
        if comm.Get_rank() == 0:
            time.sleep(0.3)
        comm.Barrier()
    '''))
    out = tmp_path / "trace.json"
    result = run_shmrma(["-n", 2, "--trace", out, program], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    noted = [(event["pid"], event["args"]["in"], event["args"]["waiting for"])
             for event in _trace(out)["traceEvents"]
             if event.get("cat") == "wait" and "waiting for" in event["args"]]
    assert (1, "Comm.Barrier", "Barrier on MPI_COMM_WORLD (2 ranks)") in noted
