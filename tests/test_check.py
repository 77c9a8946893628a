"""``shmrma-run --check``: the data-race checker (shmrma/check/).

Rules: MPI-3.1 §11.7 (R126-R130 conflicting accesses, R135/R136/R140 concurrent
atomics, R141 same-origin accumulate ordering), the synchronization that orders
accesses (Fence R65-R70, PSCW R84-R91, locks and flushes R96-R111, the window
barrier R166-R168, synchronization counters R152-R160), messages and
collectives between epochs, and the origin's buffers until local completion (R35,
R109, R116). The case programs in tests/programs/check mark each
line that takes part in a race with ``# race NAME`` (``(3)``: only at 3 ranks or
more); the checker must report exactly the marked pairs, each once, and end the
job with status 66; every program under scripts/ must run clean.
"""
import os
import pathlib
import re
import signal
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
CASES = HERE / "programs" / "check"
ROOT = HERE.parent
SCRIPTS = sorted((ROOT / "scripts").rglob("*.py"))
ONLY_AT = {"ex11_fig05_pscw_groups.py": 4}
REPORT = re.compile(r"^  \w+ by rank \d+(?:'s thread .+?)? at (?P<path>.+):(?P<line>\d+), ",
                    re.M)
MARK = re.compile(r"race (?P<name>\w+)(?P<more> \(3\))?")
UNSEEN = "to its own window memory, made since its last synchronization call"


def check_run(program, nranks, *extra, env=None):
    environment = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "shmrma.run", *extra, "-n", str(nranks),
                           str(program)], capture_output=True, text=True, timeout=120,
                          cwd=str(program.parent), env=environment)


def marks(program, nranks):
    """line number -> the names of the races it takes part in at ``nranks`` (a store
    is found at the call after it, which may take part in several)."""
    found = {}
    for number, text in enumerate(program.read_text().splitlines(), 1):
        names = {m.group("name") for m in MARK.finditer(text.partition("#")[2])
                 if not m.group("more") or nranks >= 3}
        if names:
            found[number] = names
    return found


def racing_lines(tmp_path, source, nranks, mode="--check"):
    """Run ``source`` under the checker, expecting races: (stderr, the line pairs
    of its reports, each sorted)."""
    program = tmp_path / "program.py"
    program.write_text(source)
    result = check_run(program, nranks, mode)
    assert result.returncode == 66, result.stderr
    return result.stderr, [tuple(sorted(p, key=str)) for p in reported_pairs(result.stderr)]


def reported_pairs(stderr):
    """The line pairs of the reports; (None, line) for an RMA that met a store its
    target had not synchronized yet (the store's line is not known)."""
    pairs = []
    for block in stderr.split("shmrma-check: data race on ")[1:]:
        lines = [int(m.group("line")) for m in REPORT.finditer(block)]
        if UNSEEN in block:
            lines = [None] + lines
        assert len(lines) == 2, block
        pairs.append(tuple(lines))
    return pairs


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("program", ["fence_cases.py", "passive_cases.py", "active_cases.py",
                                     "buffer_cases.py", "local_cases.py",
                                     "local_cases.py allocate", "load_cases.py",
                                     "load_cases.py alloc_mem", "load_cases.py private",
                                     "dynamic_cases.py", "shared_cases.py",
                                     "accumulate_cases.py", "result_cases.py"])
def test_reports_exactly_the_marked_races(program, nranks):
    assert_marked_races(program, nranks)


@pytest.mark.parametrize("program", ["fence_cases.py", "active_cases.py",
                                     "local_cases.py allocate", "accumulate_cases.py",
                                     "thread_cases.py"])
def test_reports_exactly_the_marked_races_on_the_python_path(program):
    """SHMRMA_NATIVE=0: the checker's Python fallbacks (the access log in numpy, the
    clocks' releases, counter cells and joins, the store compare) report the same
    races, counters' signals included (A15, R152-R160)."""
    assert_marked_races(program, 3, {"SHMRMA_NATIVE": "0"})


@pytest.mark.parametrize("nranks", [2, 3])
def test_reports_races_between_the_threads_of_a_rank(nranks):
    """A rank's threads are unordered unless the program orders them (MPI-3.1
    section 12.4; check/threads.py): the target's main thread synchronizing with the
    origin does not order another thread's load (TL), nor the origin's Barrier
    another thread's Put (TO), nor one thread's Flush another thread's Put to the
    same word (TP), nor the target's Barrier a store its unjoined thread made (TS);
    an Event, a Lock hand-over or a join after (or before) the MPI synchronization
    does, and each such variant runs clean."""
    assert_marked_races("thread_cases.py", nranks)


def test_an_ended_threads_clock_goes_to_a_later_thread():
    """With 4 clocks for threads, fewer than the cases start (8 at rank 0, 4 at
    rank 1, at most 2 at a time per rank): a thread that comes after an ended one
    (it was joined) takes its clock, and every race is still reported, each naming
    the thread that made the access."""
    assert_marked_races("thread_cases.py", 2, {"SHMRMA_CHECK_THREADS": "4"})
    result = check_run(CASES / "thread_cases.py", 2, "--check",
                       env={"SHMRMA_CHECK_THREADS": "4"})
    assert "warning" not in result.stderr, result.stderr
    assert "Put by rank 0's thread first at " in result.stderr, result.stderr


def test_threads_race_reports_name_the_thread():
    """A report names the thread beside its rank, and for two threads of one rank
    says how to order them."""
    result = check_run(CASES / "thread_cases.py", 2, "--check")
    assert result.returncode == 66, result.stderr
    assert "Load by rank 1's thread load_late at " in result.stderr, result.stderr
    assert ("two threads of rank 0, which nothing orders: order rank 0's thread first's "
            "Put before the other access with a threading Lock" in result.stderr), result.stderr


@pytest.mark.parametrize("run", range(3))
@pytest.mark.parametrize("nranks, threads", [(2, 2), (3, 4)])
def test_threads_taking_turns_run_clean(run, nranks, threads):
    """Threads of one rank taking turns through a Lock (Put and Flush each turn) and
    threads of another through a Queue (a load each): ordered whatever the
    interleaving, so no report in any run."""
    result = check_run(CASES / "thread_stress.py", nranks, "--check",
                       env={"THREADS": str(threads)})
    assert result.returncode == 0, result.stderr
    assert "shmrma-check: no data race found in %d RMA accesses checked" % (threads * 20) \
        in result.stderr, result.stderr


THREAD_POOL = """
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(64 * 8 if comm.rank == 1 else 0, 8, comm=comm)
if comm.rank == 0:
    win.Lock_all()
    def put(i):
        win.Put(np.array([i], "i8"), 1, i)
        return i
    with ThreadPoolExecutor(4) as pool:
        for turn in range(3):
            list(pool.map(put, range(turn * 16, turn * 16 + 16)))
            win.Flush(1)
    win.Unlock_all()
comm.Barrier()
if comm.rank == 1:
    assert list(np.frombuffer(win.tomemory(), "i8")[:48]) == list(range(48))
win.Free()
"""


@pytest.mark.parametrize("run", range(3))
def test_a_thread_pool_putting_then_a_flush_runs_clean(tmp_path, run):
    """concurrent.futures' pool threads make the Puts (work handed over through its
    queue, results through its futures), the main thread flushes after it has every
    result: the Flush completes the workers' Puts, ordered before rank 1's loads."""
    program = tmp_path / "pool.py"
    program.write_text(THREAD_POOL)
    result = check_run(program, 2, "--check")
    assert result.returncode == 0, result.stderr
    assert "shmrma-check: no data race found in 48 RMA accesses checked" in result.stderr


def test_threads_beyond_the_slots_count_as_the_main_thread():
    """SHMRMA_CHECK_THREADS=0: no thread has a clock of its own; the checker says
    so once and runs on, the threads taken as one (no false report; a race between
    two threads of a rank then goes unseen)."""
    result = check_run(CASES / "thread_stress.py", 2, "--check",
                       env={"SHMRMA_CHECK_THREADS": "0"})
    assert result.stderr.count("more threads take part than the checker follows "
                               "(SHMRMA_CHECK_THREADS=0)") == 1, result.stderr
    assert result.returncode == 0, result.stderr


def test_a_wrong_thread_count_is_refused(tmp_path):
    program = tmp_path / "nothing.py"
    program.write_text("from shmrma import MPI\n")
    result = check_run(program, 1, "--check", env={"SHMRMA_CHECK_THREADS": "many"})
    assert result.returncode != 0
    assert "SHMRMA_CHECK_THREADS must be a number of threads from 0 to 1024, not 'many'" \
        in result.stderr


def test_reports_the_benchmark_atomicity_cases():
    """RMARaceBench's atomicity scenarios (different basic types, one origin's two
    types, displacements that put elements across each other; and the race-free
    ones: a contiguous type of INT against INTs, one grid, one type)."""
    assert_marked_races("atomic_cases.py", 3)
    assert_marked_races("atomic_cases.py", 3, {"SHMRMA_NATIVE": "0"})


def assert_marked_races(program, nranks, env=None):
    """The checker reports exactly the races the program's lines mark, each once."""
    program, _, flavor = program.partition(" ")
    path = CASES / program
    expected = marks(path, nranks)
    result = check_run(path, nranks, "--check", env=dict(env or {}, CASE_FLAVOR=flavor))
    pairs = reported_pairs(result.stderr)
    names = []
    for first, second in pairs:
        assert second in expected and first in (None, *expected), (first, second,
                                                                  result.stderr)
        common = expected[second] & expected.get(first, expected[second])
        assert len(common) == 1, (first, second, result.stderr)
        names += common
    assert sorted(names) == sorted(set().union(*expected.values())), result.stderr  # once
    assert result.returncode == 66, result.stderr
    assert "%d data race%s found" % (len(names), "" if len(names) == 1 else "s") \
        in result.stderr


@pytest.mark.parametrize("program, flavor, check", [
    ("fence_cases.py", "", "--check"), ("passive_cases.py", "", "--check"),
    ("local_cases.py", "allocate", "--check"), ("passive_cases.py", "", "--check=no-local")])
def test_quick_put_and_get_report_what_the_general_path_reports(program, flavor, check):
    """Differential: the quick path of a Put or Get of a contiguous array
    (windowcheck.WindowCheck.quick_access) reports the same races as the general path
    (R126-R130), the target's stores it meets included, with the stores checked or
    not, and is taken."""
    runs = {mode: check_run(CASES / "quick_switch.py", 2, check,
                            env={"QUICK": mode, "CASE": program, "CASE_FLAVOR": flavor})
            for mode in ("off", "count")}
    for result in runs.values():
        assert result.returncode == 66, result.stderr
    pairs = {mode: sorted(tuple(sorted(pair, key=str)) for pair in
                          reported_pairs(result.stderr)) for mode, result in runs.items()}
    assert pairs["off"] == pairs["count"], runs["count"].stderr
    taken = [int(line.split()[-1]) for line in runs["count"].stderr.splitlines()
             if line.startswith("quick accesses: ")]
    assert taken and max(taken) > 0, runs["count"].stderr


def test_dynamic_window_reports_name_addresses():
    """A dynamic window's displacements are addresses (R14): its reports name the
    addresses, in hex, of the regions the rank attached, not offsets."""
    result = check_run(CASES / "dynamic_cases.py", 2, "--check")
    heads = [line for line in result.stderr.splitlines()
             if line.startswith("shmrma-check: data race on ")]
    assert heads and all(re.search(r", addresses 0x[0-9a-f]+\.\.0x[0-9a-f]+ of rank 0's "
                                   r"attached memory$", line) for line in heads), heads


REATTACH_PROGRAM = """
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Create_dynamic(comm=comm)
for round_ in range(30):
    region = np.zeros(64)
    if comm.rank == 0:
        win.Attach(region)
    address = comm.bcast(MPI.Get_address(region), 0)
    win.Fence()
    if comm.rank == 1:
        win.Put(np.full(1, float(round_)), 0, address + 8)
    win.Fence()
    if comm.rank == 0:
        assert region[1] == round_
        win.Detach(region)
    comm.Barrier()
if comm.rank == 1:
    print("mapped", len(win._race_check.stores.shadow.mapped))
win.Free()
"""


def test_dynamic_regions_attached_again_and_again_keep_one_shadow_mapped(tmp_path):
    """R15, R19: a region attached, written by RMA and detached 30 times: the writer
    maps the shadow of the regions attached now only, not of every one before."""
    program = tmp_path / "program.py"
    program.write_text(REATTACH_PROGRAM)
    result = check_run(program, 2, "--check")
    assert result.returncode == 0, result.stderr
    assert "mapped 1" in result.stdout, result.stdout + result.stderr


def test_report_names_both_accesses_and_what_would_order_them():
    result = check_run(CASES / "fence_cases.py", 2, "--check")
    block = next(text for text in result.stderr.split("shmrma-check: data race on ")
                 if "bytes 0..7 " in text)
    assert block.startswith("the window created at fence_cases.py:11, bytes 0..7 of "
                            "rank 0's memory"), block
    first, second = sorted(line for line, names in marks(CASES / "fence_cases.py", 2).items()
                           if "PP" in names)
    assert "Put by rank 1 at fence_cases.py:%d, in a fence epoch" % first in block
    assert "Put by rank 0 at fence_cases.py:%d, in a fence epoch" % second in block
    assert "a Fence between the two calls orders them" in block


def test_buffer_report_names_the_call_its_completion_and_the_changed_elements():
    """R35: a column Put's origin buffer changed in the column (not beside it) before
    the Fence completed the Put: the report gives the changed element's bytes."""
    result = check_run(CASES / "buffer_cases.py", 2, "--check")
    first, second = sorted(line for line, names in marks(CASES / "buffer_cases.py", 2).items()
                           if "DT" in names)
    block = next(text for text in result.stderr.split("shmrma-check: data race on ")
                 if "buffer_cases.py:%d," % first in text)
    assert block.startswith("the origin buffer of Put (to rank 0 on the window created at "
                            "buffer_cases.py:12), bytes 64..71 of the buffer"), block
    assert "Put by rank 1 at buffer_cases.py:%d, which reads that buffer" % first in block
    assert "completed by rank 1 at buffer_cases.py:%d, which found" % second in block
    assert "leave the buffer unchanged until the Put completes at the origin" in block


def test_buffers_a_call_covers():
    """What the checker compares for each kind of buffer argument (origin.watched)."""
    import numpy as np
    from shmrma import MPI
    from shmrma.check import accesses, origin
    array = np.arange(16.0).reshape(4, 4)
    assert origin.watched(array)[1:] == (None, 8)
    assert origin.watched(b"immutable") is None
    assert origin.watched(np.zeros(0)) is None
    assert origin.watched([None, MPI.INT]) is None
    data, where, unit = origin.watched([bytearray(16), 2, MPI.INT])
    assert (where, unit) == (slice(0, 8), 4)
    column = MPI.DOUBLE.Create_vector(4, 1, 4).Commit()
    try:
        data, where, unit = origin.watched([array, 1, column])
        assert unit == 8 and sorted(set(where // 8)) == [0, 4, 8, 12]
        held = origin.Held(0, 1, accesses.READ, 0, data, where, unit)
        array[1, 1] = -1.0          # beside the column
        assert held.changed() is None
        array[3, 0] = -1.0          # in it
        assert held.changed() == (96, 103)
    finally:
        column.Free()
    assert origin.watched([array, 1, MPI.DATATYPE_NULL]) is None     # the call raises


@pytest.mark.parametrize("script", [pytest.param(s, id=str(s.relative_to(ROOT / "scripts")))
                                    for s in SCRIPTS])
def test_no_false_alarm_on_the_scripts(script):
    """The chapter's examples, the proposal's halos and pipeline are race-free (the
    load watch's budget, or its notes, may run out on Figure 11.6's 64 MiB windows,
    read whole)."""
    result = check_run(script, ONLY_AT.get(script.name, 2), "--check")
    assert result.returncode == 0, result.stderr
    assert "shmrma-check: no data race found" in result.stderr, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert all("watches only some synchronization periods" in line
               or "first loads of window pages" in line for line in warnings), warnings


UNSEEN_PROGRAM = """
import os, sys, time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(8 * 8, 8, comm=comm)
mine = np.frombuffer(win.tomemory(), dtype="f8")
stored, put = sys.argv[1] + "/stored", sys.argv[1] + "/put"

def await_file(path):
    while not os.path.exists(path):
        time.sleep(0.005)

win.Fence()
if comm.rank == 0:      # store, then tell rank 1 outside MPI: no synchronization
    mine[3] = 1.0
    open(stored, "w").close()
    await_file(put)
if comm.rank == 1:
    await_file(stored)
    win.Put(np.ones(1), 0, 3)
    open(put, "w").close()
win.Fence()
win.Free()
"""


def test_an_rma_meets_a_store_its_owner_has_not_synchronized(tmp_path):
    """Rank 0 stores into its window memory, then (through a file, which MPI does
    not see) lets rank 1 Put to the same bytes in the same fence epoch: the Put
    meets the store before rank 0 makes another MPI call (stores.py)."""
    program = tmp_path / "unseen.py"
    program.write_text(UNSEEN_PROGRAM)
    result = subprocess.run([sys.executable, "-m", "shmrma.run", "--check", "-n", "2",
                             str(program), str(tmp_path)], capture_output=True, text=True,
                            timeout=120, cwd=str(tmp_path))
    assert result.returncode == 66, result.stderr
    assert "data race on the window created at unseen.py:6, bytes 24..31 of rank 0's " \
        "memory" in result.stderr
    assert "Store by rank 0 " + UNSEEN in result.stderr
    assert "Put by rank 1 at unseen.py:21, in a fence epoch" in result.stderr
    assert "1 data race found" in result.stderr


# rank 0 polls its flag with loads after Win.Sync and resets it once rank 1 set it
FLAG_POLLER = """
import time
import numpy as np
from shmrma import MPI
from shmrma.check import stores
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(4, 4, comm=comm)
flag = np.frombuffer(win.tomemory(), "i")
comm.Barrier()
if comm.rank == 0:
    win.Lock_all()
    win.Sync()
    while flag[0] == 0:     # loads after Win.Sync: they see rank 1's write
        time.sleep(0)
    flag[0] = 0                                         # line 15: the flag reset
    win.Unlock_all()                                    # line 16
else:
"""
RESET_PROGRAM = FLAG_POLLER + """
    written = stores.Stores.written
    def slow(self, *args, **kwargs):      # the bookkeeping after the write, late
        time.sleep(0.3)
        return written(self, *args, **kwargs)
    stores.Stores.written = slow
    win.Lock_all()
    win.Accumulate(np.array([1], "i"), 0, 0, MPI.REPLACE)
    win.Flush(0)
    win.Put(np.array([5], "i"), 0, 0)                   # line 27: races with the reset
    win.Unlock_all()
comm.Barrier()
win.Free()
"""


def test_a_flag_reset_right_after_an_accumulate_wrote_it_is_seen(tmp_path):
    """Rank 0 polls a flag after Win.Sync and resets it the moment rank 1's
    Accumulate sets it, while rank 1's checker is still bringing the shadow up to
    date (made slow here, as a loaded machine makes it): the reset is a store the
    checker must see, so rank 1's later Put to the flag, which nothing orders after
    the reset, races with it. The shadow takes the value the Accumulate wrote, not
    the memory as it is afterwards (the reset), and rank 0's look does not take
    memory equal to the shadow for no store while an RMA holds the lock."""
    program = tmp_path / "reset.py"
    program.write_text(RESET_PROGRAM)
    result = check_run(program, 2, "--check")
    assert result.returncode == 66, result.stderr
    # seen by the page watch at its line, found by rank 0's look at its Unlock_all,
    # or by the Put if it comes first
    assert re.search(r"Store by rank 0 (at reset.py:1[56]|to its own window memory, made "
                     r"since its last synchronization call)", result.stderr), result.stderr
    assert "Put by rank 1 at reset.py:27" in result.stderr, result.stderr


POLL_PROGRAM = FLAG_POLLER + """
    time.sleep(0.2)
    win.Lock_all()
    win.Accumulate(np.array([1], "i"), 0, 0, MPI.REPLACE)
    win.Unlock_all()
comm.Barrier()
win.Free()
"""


def test_a_reset_after_polling_an_accumulate_is_no_race(tmp_path):
    """Rank 0 polls its flag after Win.Sync and resets it once rank 1's Accumulate
    set it: the reset comes after the Accumulate (the load saw it), so no race,
    however late after the Sync the Accumulate came (mpi4py.util.sync's Condition;
    it was reported when the Accumulate came between the last join of what the
    loads may see and the load that saw it, as a loaded machine makes it)."""
    program = tmp_path / "poll.py"
    program.write_text(POLL_PROGRAM)
    result = check_run(program, 2, "--check")
    assert result.returncode == 0, result.stderr
    assert "no data race found" in result.stderr


COUNTER_PROGRAM = """
import os, time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(4 if comm.rank == 0 else 0, 4, comm=comm)
first, between = os.environ["CASE_FIRST"], os.environ["CASE_BETWEEN"]
if comm.rank == 0:
    if first == "others":
        time.sleep(0.3)
    win.tomemory()[:] = bytes(4)    # line 11: the value already there
    if between == "barrier":
        comm.Barrier()
    win.Lock(0)                     # line 14
    win.Fetch_and_op(np.ones(1, "i"), np.zeros(1, "i"), 0, op=MPI.SUM)
    win.Unlock(0)
else:
    if first == "owner":
        time.sleep(0.3)
    if between == "barrier":
        comm.Barrier()
    win.Lock(0)
    win.Fetch_and_op(np.ones(1, "i"), np.zeros(1, "i"), 0, op=MPI.SUM)   # line 23
    win.Unlock(0)
comm.Barrier()
win.Free()
"""


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("first", ["owner", "others"])
def test_a_store_of_the_value_already_there_races_in_every_order(tmp_path, nranks, first):
    """mpi4py's demo nxtval-mpi3.py: the counter's owner sets it with a store (of the
    zero already there) while the others may already update it with atomics. The
    page watch sees the store at its line whatever it wrote; whichever came first,
    it races with the others' atomics: the word's atomics order what their callers
    completed before them, not a plain store to the word itself (MPI-3.1 §11.7)."""
    program = tmp_path / "counter.py"
    program.write_text(COUNTER_PROGRAM)
    result = check_run(program, nranks, "--check",
                       env={"CASE_FIRST": first, "CASE_BETWEEN": "nothing"})
    assert result.returncode == 66, result.stderr
    assert "Store by rank 0 at counter.py:11, to its own window memory, outside any " \
        "epoch" in result.stderr, result.stderr
    assert re.search(r"Fetch_and_op by rank [12] at counter.py:23", result.stderr), \
        result.stderr
    assert "1 data race found" in result.stderr, result.stderr


@pytest.mark.parametrize("first", ["owner", "others"])
def test_a_store_ordered_by_a_barrier_before_the_atomics_is_no_race(tmp_path, first):
    program = tmp_path / "counter.py"
    program.write_text(COUNTER_PROGRAM)
    result = check_run(program, 3, "--check", env={"CASE_FIRST": first,
                                                   "CASE_BETWEEN": "barrier"})
    assert result.returncode == 0, result.stderr
    assert "no data race found" in result.stderr, result.stderr


RANGE_PROGRAM = """
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
for make in (lambda: MPI.Win.Allocate(64, 8, comm=comm),
             lambda: MPI.Win.Create(np.zeros(8), 8, comm=comm)):
    win = make()
    win.Lock_all()
    for call in (lambda: win.Put(np.ones(2), 1 - comm.rank, 7),
                 lambda: win.Get(np.ones(1), 1 - comm.rank, 8)):
        try:
            call()
        except MPI.Exception as error:
            print(error.Get_error_class() == MPI.ERR_RMA_RANGE)
    win.Unlock_all()
    win.Free()
"""


def test_rma_outside_the_window_raises_its_error_under_the_checker(tmp_path):
    """R40: a Put or Get past the end of the target's memory raises ERR_RMA_RANGE
    under --check too, on mapped and on private memory; the checker neither reads
    those bytes nor records the call."""
    program = tmp_path / "range.py"
    program.write_text(RANGE_PROGRAM)
    result = check_run(program, 2, "--check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"] * 8, result.stdout + result.stderr
    assert "no data race found in 0 RMA accesses" in result.stderr


INITIAL_PROGRAM = """
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
for _ in range(20):
    memory = np.arange(1.0, 65.0) * (comm.rank + 1)
    win = MPI.Win.Create(memory, 8, comm=comm)
    win.Lock_all()              # right after the creation: nothing waits for the target
    got = np.zeros(64)
    win.Get(got, (comm.rank + 1) % comm.size)
    win.Unlock_all()
    assert got[-1] == 64.0 * ((comm.rank + 1) % comm.size + 1)
    win.Free()
"""


def test_memory_as_created_is_no_store(tmp_path):
    """The memory a window is created over holds data already: an RMA that comes
    right after the creation, before the target made another call, finds no store
    (every shadow is filled before any rank returns from the creation)."""
    program = tmp_path / "initial.py"
    program.write_text(INITIAL_PROGRAM)
    result = check_run(program, 3, "--check")
    assert result.returncode == 0, result.stderr
    assert "no data race found in 60 RMA accesses" in result.stderr, result.stderr


LOOKS_PROGRAM = """
import numpy as np
from shmrma import MPI
from shmrma.check import stores
looks = []
original = stores.Stores.look
stores.Stores.look = lambda self, stored=None: (looks.append(1), original(self, stored))[1]
win = MPI.Win.Allocate(1 << 16, 8, comm=MPI.COMM_WORLD)
mem = np.frombuffer(win.tomemory(), "f8")
win.Fence()
before = len(looks)
for _ in range(50):
    win.Fence()
untouched = len(looks) - before
for i in range(50):
    mem[0] = i + 1
    win.Fence()
print("looks", untouched, len(looks) - before - untouched)
win.Free()
"""


@pytest.mark.parametrize("mode", ["--check", "--check=no-loads"])
def test_a_look_after_no_access_compares_nothing(tmp_path, mode):
    """Before a synchronization call the rank looks for its own stores (R127): when
    no page of its memory was touched since its last look (the load watch took every
    page away and none faulted), or its memory equals the shadow, there is nothing
    to compare or record; a store in each period is still looked for each time."""
    program = tmp_path / "looks.py"
    program.write_text(LOOKS_PROGRAM)
    result = check_run(program, 2, mode)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["looks", "0", "50"] * 2, result.stdout


def test_a_file_read_into_window_memory_is_a_store(tmp_path):
    """A File read reaches window memory with a system call, past the load watch's
    fault handler: the rank's next look still finds it as a store, which races with
    the Put of the same epoch (R127)."""
    (tmp_path / "data").write_bytes(bytes(range(32)))
    stderr, pairs = racing_lines(tmp_path, (
        "import numpy as np\nfrom shmrma import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "win = MPI.Win.Allocate(4096 if comm.rank == 0 else 0, 8, comm=comm)\n"
        "mem = np.frombuffer(win.tomemory(), 'f8')\n"
        "f = MPI.File.Open(MPI.COMM_SELF, 'data', MPI.MODE_RDONLY)\n"
        "win.Fence()\n"
        "if comm.rank == 1:\n    win.Put(np.ones(1), 0, 0)\n"     # line 9
        "comm.Barrier()\n"
        "if comm.rank == 0:\n    f.Read_at(0, mem[:1])\n"
        "win.Fence()\n"                                             # line 13
        "f.Close()\nwin.Free()\n"), 2)
    assert pairs == [(13, 9)], stderr
    assert "Store by rank 0 at program.py:13" in stderr, stderr


def test_a_store_watch_that_costs_seconds_says_so(tmp_path):
    """The store watch compares a rank's window memory at each synchronization call
    that follows a store: once that has taken a second, the checker says so, and how
    to leave it out."""
    program = tmp_path / "large.py"
    program.write_text("import numpy as np\nfrom shmrma import MPI\n"
                       "win = MPI.Win.Allocate(64 << 20, 8, comm=MPI.COMM_WORLD)\n"
                       "mem = np.frombuffer(win.tomemory(), 'f8')\n"
                       "for i in range(1000):\n    mem[0] = i\n    win.Fence()\nwin.Free()\n")
    result = check_run(program, 1, "--check")
    assert result.returncode == 0, result.stderr
    assert re.search(r"shmrma-check: warning: rank 0 has spent \d+ s comparing its 64 MiB "
                     r"of window memory with its shadow copy", result.stderr), result.stderr
    assert "--check=no-stores leaves them out" in result.stderr
    assert "warning" not in check_run(program, 1, "--check=no-local").stderr


def test_the_load_watch_keeps_to_its_budget_and_says_so(tmp_path):
    """A loop that reads every page of its window memory after each Fence costs the
    load watch a fault per page and period: past a twentieth of the run time it
    watches only some periods, and says so; a race of the first period (a load and
    a Put, R127) is found."""
    program = tmp_path / "loop.py"
    program.write_text("import numpy as np\nfrom shmrma import MPI\n"
                       "comm = MPI.COMM_WORLD\n"
                       "win = MPI.Win.Allocate(256 * 4096, 8, comm=comm)\n"
                       "mem = np.frombuffer(win.tomemory(), 'f8')\nwin.Fence()\n"
                       "if comm.rank == 1:\n    win.Put(np.ones(1), 0, 0)\n"
                       "if comm.rank == 0:\n    import time; time.sleep(0.05)\n"
                       "    mem[0] + 1\n"
                       "for _ in range(300):\n    win.Fence()\n    mem[::512].sum()\n"
                       "win.Free()\n")
    result = check_run(program, 2, "--check=no-stores")
    assert result.returncode == 66, result.stderr
    assert reported_pairs(result.stderr) == [(8, 11)], result.stderr
    assert re.search(r"the watch on the ranks' loads of their window memory .* has cost "
                     r"5% of the run time on rank \d: from now on it watches only some "
                     r"synchronization periods \(--check=no-loads leaves it out\)",
                     result.stderr), result.stderr


def test_the_load_watch_grace_is_counted_in_periods(monkeypatch):
    """The load watch's first GRACE_PERIODS periods are watched whatever they cost
    (up to GRACE seconds of it), so a test is watched alike on any machine; past
    them a twentieth of the run time applies. The watch's clock is stopped here, so
    that the shares below do not depend on how fast the test runs."""
    import types
    from shmrma.check import loads
    now = 1000.0
    monkeypatch.setattr(loads, "time", types.SimpleNamespace(perf_counter=lambda: now))
    watch = types.SimpleNamespace(periods=0, spent=loads.GRACE / 2, started=now - 0.01)
    over = lambda: loads.Loads._over_budget(watch)      # noqa: E731
    assert not over()                                   # 50% of the run, in its grace
    watch.periods = loads.GRACE_PERIODS
    assert over()
    watch.periods, watch.spent = 1, loads.GRACE * 2     # a grace that cost too much
    assert over()
    watch.periods, watch.spent, watch.started = loads.GRACE_PERIODS, 0.001, now - 1.0
    assert not over()                                   # 0.1% of the run


def test_no_stores_leaves_out_the_ranks_own_stores():
    """--check=no-stores: the RMA calls and the origin buffers are checked, the ranks'
    own stores not (local_cases.py's races are all stores)."""
    result = check_run(CASES / "local_cases.py", 2, "--check=no-stores")
    assert result.returncode == 0, result.stderr
    assert "shmrma-check: no data race found" in result.stderr
    result = check_run(CASES / "buffer_cases.py", 2, "--check=no-stores")
    assert result.returncode == 66, result.stderr


def test_no_loads_and_no_local_leave_out_the_ranks_own_loads():
    """--check=no-loads: the ranks' own loads go unchecked (load_cases.py's races are
    all loads racing with RMA, R127), their stores not; --check=no-local leaves out
    both."""
    for mode in ("--check=no-loads", "--check=no-local"):
        result = check_run(CASES / "load_cases.py", 2, mode)
        assert result.returncode == 0, result.stderr
        assert "shmrma-check: no data race found" in result.stderr
    result = check_run(CASES / "local_cases.py", 2, "--check=no-loads",
                       env={"CASE_FLAVOR": "allocate"})
    assert result.returncode == 66, result.stderr
    result = check_run(CASES / "local_cases.py", 2, "--check=no-local",
                       env={"CASE_FLAVOR": "allocate"})
    assert result.returncode == 0, result.stderr


def test_a_load_report_names_its_line_page_and_bytes():
    """R127: a load is reported at its own line (not the next MPI call's), to the
    word it read; another word of the Put's page is no race."""
    result = check_run(CASES / "load_cases.py", 2, "--check")
    block = next(text for text in result.stderr.split("shmrma-check: data race on ")
                 if "bytes 0..7 " in text)
    line = next(n for n, names in marks(CASES / "load_cases.py", 2).items()
                if "LP" in names and "mine[" in (CASES / "load_cases.py").read_text()
                .splitlines()[n - 1])
    assert "Load by rank 0 at load_cases.py:%d, of its own window memory, in a fence " \
        "epoch" % line in block, block
    assert "a Fence between the two calls orders them" in block, block


def test_an_unknown_check_mode_is_a_usage_error():
    result = check_run(CASES / "local_cases.py", 2, "--check=stores")
    assert result.returncode == 2
    assert ("--check=stores: expected --check or --check=no-stores, --check=no-loads, "
            "--check=no-local") in result.stderr


def test_an_unknown_check_variable_value_is_an_error():
    """SHMRMA_CHECK with a value the checker does not know (a typo of no-stores) is
    refused at import, naming the values it takes."""
    result = subprocess.run([sys.executable, "-c", "from shmrma import MPI"],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, SHMRMA_CHECK="no-store"))
    assert result.returncode != 0
    assert ("ValueError: SHMRMA_CHECK='no-store': expected 1 (check), 0 (do not), or one "
            "of no-stores, no-loads, no-local") in result.stderr, result.stderr
    result = check_run(CASES / "fence_cases.py", 2, env={"SHMRMA_CHECK": "no-store"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("shmrma-run: SHMRMA_CHECK='no-store': expected 1"), \
        result.stderr


def test_without_check_nothing_is_checked():
    result = check_run(CASES / "fence_cases.py", 2)
    assert result.returncode == 0, result.stderr
    assert "shmrma-check" not in result.stderr


def test_singleton_under_the_environment_variable(tmp_path):
    program = tmp_path / "racy.py"
    program.write_text("import numpy as np\nfrom shmrma import MPI\n"
                       "win = MPI.Win.Allocate(8, 8)\nwin.Lock_all()\n"
                       "win.Put(np.ones(1), 0, 0)\nwin.Get(np.ones(1), 0, 0)\n"
                       "win.Unlock_all()\nwin.Free()\n")
    result = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, SHMRMA_CHECK="1"))
    assert result.returncode == 0, result.stderr
    assert reported_pairs(result.stderr) == [(5, 6)], result.stderr
    assert "rank 0 must complete its Put" in result.stderr
    assert "shmrma-check: 1 data race found in 2 RMA accesses checked" in result.stderr


def test_check_is_refused_on_the_mpi_backend():
    result = check_run(CASES / "fence_cases.py", 2, "--check", "--backend", "mpi")
    assert result.returncode == 2
    assert "--check works on the shm backend only" in result.stderr


def test_help_documents_check_and_its_exit_status():
    result = subprocess.run([sys.executable, "-m", "shmrma.run", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert "--check" in result.stdout and "66" in result.stdout


def _random_log(seed):
    """Two WindowLogs over private memory, filled alike with random records."""
    import types
    import numpy as np
    from shmrma.check import accesses
    nranks = 3
    logs = []
    for _ in range(2):
        memory = np.zeros(accesses.segment_bytes(nranks, nranks), np.uint8)
        segment = types.SimpleNamespace(buffer=memory.data, address=memory.ctypes.data,
                                        keep=memory)
        logs.append(accesses.WindowLog(segment, tuple(range(nranks)), nranks))
    return logs, np.random.default_rng(seed)


def _random_access(rng):
    import numpy as np
    from shmrma.check import accesses
    starts = np.sort(rng.choice(64, size=rng.integers(1, 4), replace=False)) * 4
    lows, highs = starts.astype(np.int64), (starts + rng.integers(1, 5, len(starts)) * 1)
    kind = int(rng.integers(accesses.STORE, accesses.COMPARE_AND_SWAP + 1))
    op = int(rng.choice([0, 7, accesses.NO_OP_CODE]))
    return accesses.Access(lows, highs.astype(np.int64), kind, op, int(rng.integers(0, 2)),
                           int(rng.integers(0, 5)), int(rng.integers(0, 8)))


@pytest.mark.parametrize("seed", range(3))
def test_acquire_in_c_matches_python(seed):
    """Differential: racecheck.c's acquire (and acquire_each, over several ranks'
    rings) joins what Clock.acquire_here (the fallback) joins, over a ring of random
    keyed releases: a key among the newest,
    an older one (the full scan), one released twice (the newest wins), one no
    longer there, after the ring wrapped."""
    import numpy as np
    from shmrma.check import clock as clocks
    if clocks._racecheck is None:
        pytest.skip("the C extension is not built")
    session = clocks.Session(_AnonymousSegment(clocks.Session._rank_size(3) * 3
                                               + clocks.HEADER + clocks.DEDUP * 8), 3)
    me = clocks.Clock(session, 0)
    _, ring_index, ring, _, _ = session.block(1)
    rng = np.random.default_rng(seed)
    released = clocks.RING + 300            # the ring wrapped
    for n in range(released):
        ring[n % clocks.RING] = [1 + int(rng.integers(0, 400))] + list(rng.integers(0, 99, 3))
    from shmrma.core import atomic
    atomic.store64(ring_index, released)
    for key in list(range(1, 420)) + [int(ring[(released - 1) % clocks.RING, 0])]:
        start = rng.integers(0, 50, 3).astype(np.int64)
        me.vc[:] = start
        found_c = me.acquire(1, key)
        joined_c = me.vc.copy()
        me.vc[:] = start
        found_python = me.acquire_here(1, key)
        assert found_c == found_python and np.array_equal(joined_c, me.vc), key
        me.vc[:] = start
        me.acquire_each((0, 1, 2), key)     # rank 2 released nothing
        assert np.array_equal(joined_c, me.vc), key


@pytest.mark.parametrize("seed", range(2))
def test_release_publish_and_join_in_c_match_python(seed):
    """Differential: racecheck.c's release (a keyed release into the ring), publish
    (a counter's cell), join and join_keyed (every rank's cell for a key, probing past
    another key's) write and join what Clock.release_here, publish_here and the
    Python probes with numpy's maximum (the fallbacks) do: the ring's rows and index,
    the cell, and the clock after, whose own entry grows by one at each release."""
    import numpy as np
    from shmrma.check import clock as clocks
    if clocks._racecheck is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(seed)
    made = []
    for native in (True, False):
        session = clocks.Session(_AnonymousSegment(clocks.Session._rank_size(3) * 3
                                                   + clocks.HEADER + clocks.DEDUP * 8), 3)
        me, other = clocks.Clock(session, 1), clocks.Clock(session, 2)
        if not native:
            me._c_ring = other._c_ring = ()
        made.append((session, me, other))
    for step in range(clocks.RING + 40):            # the ring wraps
        vc = rng.integers(0, 99, 3).astype(np.int64)
        # keys k and k + CELLS share a first cell: the later one probes on
        key, cell_key = int(rng.integers(1, 2**40)), 1 + step % 5 + clocks.CELLS * (step % 2)
        joined_key = 1 + step % 7 + clocks.CELLS * (step % 3 == 0)     # some never published
        theirs = rng.integers(0, 99, 3).astype(np.int64)
        for session, me, other in made:
            me.vc[:] = vc
            me._looks = []
            me.release(key) if step % 2 else me.publish(cell_key)
            other.vc[:] = theirs
            other.publish(cell_key)
            me.join_cell(2, cell_key)
            me.join_cells((0, 2), joined_key)       # rank 0 publishes nothing
        (c_session, c_me, _), (p_session, p_me, _) = made
        assert np.array_equal(c_me.vc, p_me.vc), step
        for rank in (1, 2):
            c_block, p_block = c_session.block(rank), p_session.block(rank)
            assert np.array_equal(c_block[2], p_block[2]), step      # the ring
            assert np.array_equal(c_block[3], p_block[3]), step      # the cells
            from shmrma.core import atomic
            assert atomic.load64(c_block[1]) == atomic.load64(p_block[1])


SITES_PROGRAM = """
def inner(clock, skip):
    return clock.site_here(skip)

def outer(clock, skip):
    return inner(clock, skip)
"""


def test_a_call_site_in_c_matches_python():
    """Differential: racecheck.c's user_site names the call site Clock.site_of of
    report.user_frame (the fallback) names: the innermost frame of the program's code,
    past shmrma's own frames, from a given number of frames up (the caller's when
    the stack is shallower), whether its site was named before or not."""
    from shmrma.check import clock as clocks, report
    if clocks._user_site is None:
        pytest.skip("no user_site in C (the extension is not built, or Python < 3.11)")
    session = clocks.Session(_AnonymousSegment(clocks.Session._rank_size(1)
                                               + clocks.HEADER + clocks.DEDUP * 8), 1)
    package = {}        # frames of shmrma's own code, between the program and the call
    exec(compile(SITES_PROGRAM, report.PACKAGE_DIR + "/check/_sites_test.py", "exec"), package)
    texts = {}
    for native in (True, False):
        me = clocks.Clock(session, 0)
        user_site = clocks._user_site
        if not native:
            clocks._user_site = None
        try:
            # map and a lambda, not a comprehension: a comprehension is a frame of
            # its own up to 3.11 and none from 3.12 on (PEP 709), so ``skip`` would
            # reach pytest's frame on some versions
            sites = list(map(lambda skip: package["outer"](me, skip), (0, 1, 0, 2, 500)))
            sites.append((lambda: package["outer"](me, 0))())
        finally:
            clocks._user_site = user_site
        texts[native] = [me.site_text(0, site) for site in sites]
    assert texts[True] == texts[False], texts
    assert all("test_check.py:" in text for text in texts[True]), texts
    assert len(set(texts[True])) == 2, texts       # the map's line, the last lambda's


@pytest.mark.parametrize("seed", range(2))
def test_a_signal_in_one_c_call_matches_complete_then_publish(seed):
    """Differential: racecheck.c's signal (a counter's signal: the covered RMA's
    records completed at the target, then the clock published into the counter's
    cell) leaves the records, the cell and the clock that WindowLog.complete on the
    numpy path followed by Clock.publish_here leave (A15), pure notifications
    (no modes) included."""
    import numpy as np
    from shmrma.check import accesses, clock as clocks
    if clocks._racecheck is None:
        pytest.skip("the C extension is not built")
    (c_log, numpy_log), rng = _random_log(seed)
    keep_all = (lambda target, rows: len(rows))
    sessions = [clocks.Session(_AnonymousSegment(clocks.Session._rank_size(3) * 3
                                                 + clocks.HEADER + clocks.DEDUP * 8), 3)
                for _ in range(2)]
    mes = [clocks.Clock(session, 1) for session in sessions]
    try:
        for step in range(150):
            access, origin = _random_access(rng), int(rng.integers(0, 3))
            for native, log in ((True, c_log), (False, numpy_log)):
                accesses.use_native(native)
                log.add(0, origin, access, keep_all)
            if step % 3:
                continue
            vc, modes, key = rng.integers(1, 50, 3).astype(np.int64), step % 8, 1 + step % 7
            for me in mes:
                me.vc[:] = vc
            accesses.use_native(True)
            c_me = mes[0]
            assert accesses._racecheck.signal(*c_log.cells[0], int(modes), c_me.own_cell(key),
                                              c_me.width, key, c_me.vc_address, c_me.me)
            accesses.use_native(False)
            p_me = mes[1]
            if modes:
                numpy_log.complete(0, p_me.me, p_me.epoch, int(modes))
            p_me.publish_here(p_me.cells[p_me._cell_index(p_me.me, key, claim=True)], key)
            assert np.array_equal(c_log.rows(0), numpy_log.rows(0)), step
            assert np.array_equal(c_me.vc, p_me.vc), step
            assert np.array_equal(sessions[0].block(1)[3], sessions[1].block(1)[3]), step
    finally:
        accesses.use_native(True)


def test_a_waitall_looks_once_in_its_own_thread_only():
    """Clock.one_look: in a Waitall the first release or acquire looks at the rank's
    own memory and the later ones do not, in the calling thread; another thread,
    which may have stored meanwhile, still looks before its releases (R127)."""
    import threading
    from shmrma.check import clock as clocks
    session = clocks.Session(_AnonymousSegment(clocks.Session._rank_size(2) * 2
                                               + clocks.HEADER + clocks.DEDUP * 8), 2)
    me, looks = clocks.Clock(session, 0), []
    me._looks = [lambda: looks.append(threading.get_ident())]
    before = me.one_look()
    me.look_at_stores()
    me.look_at_stores()
    assert len(looks) == 1
    other = threading.Thread(target=me.look_at_stores)
    other.start()
    other.join()
    assert len(looks) == 2 and looks[1] != looks[0]
    me.end_one_look(before)
    me.look_at_stores()
    assert len(looks) == 3


class _AnonymousSegment:
    """A stand-in for the checking segment: anonymous memory of this process."""

    def __init__(self, size):
        import mmap
        import numpy as np
        self.buffer = mmap.mmap(-1, size)
        self.address = np.frombuffer(self.buffer, np.uint8).ctypes.data


@pytest.mark.parametrize("seed", range(4))
def test_access_log_in_c_matches_numpy(seed):
    """Differential: csrc/check/racecheck.c's scan, add and complete give what the numpy
    path (the fallback) gives, on random records (R126-R141's conflict rules)."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._racecheck is None:
        pytest.skip("the C extension is not built")
    (c_log, numpy_log), rng = _random_log(seed)
    keep_all = (lambda target, rows: len(rows))
    try:
        previous = None
        for step in range(300):
            me, access = int(rng.integers(0, 3)), _random_access(rng)
            if previous is not None and step % 4 == 0:     # a loop over elements
                me, access = previous[0], accesses.Access(
                    previous[1].highs[-1:], previous[1].highs[-1:] + 4, previous[1].kind,
                    previous[1].op, previous[1].basic, previous[1].site, previous[1].epoch)
            previous = (me, access)
            vc = rng.integers(0, 6, 3).astype(np.int64)
            if step % 2:        # the separate calls, then record (lock, scan, add)
                accesses.use_native(True)
                found_c = c_log.conflicts(0, me, vc, access)
                added_c = c_log.add(0, me, access, keep_all)
                accesses.use_native(False)
                found_numpy = numpy_log.conflicts(0, me, vc, access)
                added_numpy = numpy_log.add(0, me, access, keep_all)
                assert added_c == added_numpy
            else:
                accesses.use_native(True)
                found_c = c_log.record(0, me, access, vc, vc.ctypes.data, keep_all)
                accesses.use_native(False)
                found_numpy = numpy_log.record(0, me, access, vc, vc.ctypes.data, keep_all)
            assert np.array_equal(found_c, found_numpy), step
            if step % 7 == 0:
                stamp, modes = int(rng.integers(1, 6)), int(rng.integers(1, 8))
                only = (None if step % 2 else
                        (int(access.lows[0]), int(access.highs[-1]), access.kind))
                accesses.use_native(True)
                c_log.complete(0, me, stamp, modes, only)
                accesses.use_native(False)
                numpy_log.complete(0, me, stamp, modes, only)
            assert np.array_equal(c_log.rows(0), numpy_log.rows(0)), step
    finally:
        accesses.use_native(True)


def test_one_run_given_as_two_ints_is_the_run_as_arrays():
    """racecheck.c takes an access's one run as two ints (the quick path's Put and
    Get) as it takes it in two arrays: the same racing records; an empty run is an
    error, not a record."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._racecheck is None:
        pytest.skip("the C extension is not built")
    (log, _), rng = _random_log(5)
    keep_all = (lambda target, rows: len(rows))
    for _ in range(40):
        log.add(0, int(rng.integers(0, 3)), _random_access(rng), keep_all)
    count = len(log.rows(0))
    for step in range(60):
        low = int(rng.integers(0, 256))
        high = low + int(rng.integers(1, 16))
        vc = rng.integers(0, 6, 3).astype(np.int64)
        kind, me = int(rng.integers(accesses.STORE, accesses.COMPARE_AND_SWAP + 1)), step % 3
        codes = (kind, 0, 0, 1, 0, me, vc.ctypes.data)
        as_ints = accesses._racecheck.scan(log._records_address(0), count, low, high, *codes)
        as_arrays = accesses._racecheck.scan(log._records_address(0), count,
                                             np.array([low]), np.array([high]), *codes)
        assert as_ints == as_arrays, step
    assert any(accesses._racecheck.scan(log._records_address(0), count, low, low + 64,
                                        accesses.PUT, 0, 0, 1, 0, 1, vc.ctypes.data)
               for low in range(0, 256, 64))    # the log holds races to find
    with pytest.raises(ValueError, match="low < high"):
        accesses._racecheck.scan(log._records_address(0), count, 8, 8, *codes)


@pytest.mark.parametrize("checked_stores", [True, False])
def test_quick_put_and_get_in_c_match_shadowed_and_record(checked_stores):
    """Differential: racecheck.c's quick (the quick path's Put and Get: run, call and
    record in one call) leaves the records, memory and shadow that shadowed() (or the
    call then record(), stores unchecked) leave, reports the same races and unseen
    stores, counts only the accesses that race with nothing; and declines, having
    done nothing, a buffer that is not C-contiguous or bytes outside the target's
    memory."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._racecheck is None:
        pytest.skip("the C extension is not built")
    native = accesses._racecheck
    (c_log, other_log), rng = _random_log(7)
    keep_all = (lambda target, rows: len(rows))
    memories = [np.zeros(512, np.uint8) for _ in range(2)]
    shadows = [np.zeros(512, np.uint8) for _ in range(2)]
    counter = np.zeros(1, np.int64)
    vc = np.zeros(3, np.int64)
    raced = unseen_met = clean = 0
    for step in range(200):
        origin, other = int(rng.integers(0, 3)), _random_access(rng)
        for log in (c_log, other_log):
            log.add(0, (origin + 1) % 3, other, keep_all)
        if step % 5 == 0:       # the target's own store, not looked at yet
            where = int(rng.integers(0, 512))
            for memory in memories:
                memory[where] ^= 0x5a
        kind = accesses.PUT if step % 2 else accesses.GET
        disp, data = int(rng.integers(0, 60)), rng.random(int(rng.integers(1, 4)))
        vc[:] = rng.integers(0, 6, 3)
        site, epoch = int(rng.integers(0, 8)), int(rng.integers(0, 8))
        results = []
        for log, memory, shadow, quick_one in ((c_log, memories[0], shadows[0], True),
                                               (other_log, memories[1], shadows[1], False)):
            at = memory[disp * 8:disp * 8 + data.nbytes]

            def perform(at=at):
                if kind == accesses.PUT:
                    at[:] = data.view(np.uint8)
            cells = log.cells[0]
            addresses = ((memory.ctypes.data, shadow.ctypes.data) if checked_stores
                         else (None, None))
            if quick_one:
                target = (*cells, *addresses, 8, len(memory))
                done = native.quick(target, kind, disp, data, 3, site, epoch, origin,
                                    vc.ctypes.data, accesses.CAPACITY, kind == accesses.PUT,
                                    True, perform, counter.ctypes.data)
                assert done is not False, step
                results.append(done)
                continue
            log_args = (cells[0], cells[1], disp * 8, disp * 8 + data.nbytes, kind, 0, 3,
                        site, epoch, origin, cells[2], vc.ctypes.data, accesses.CAPACITY)
            if checked_stores:
                _, found, unseen = native.shadowed(*log_args, *addresses, True,
                                                   kind == accesses.PUT, perform,
                                                   data if kind == accesses.PUT else None)
            else:
                perform()
                found, unseen = native.record(*log_args), None
            results.append(None if found == [] and unseen is None else (found, unseen))
        assert results[0] == results[1], step
        assert np.array_equal(c_log.rows(0), other_log.rows(0)), step
        assert np.array_equal(memories[0], memories[1]), step
        assert np.array_equal(shadows[0], shadows[1]), step
        raced += results[0] is not None and bool(results[0][0])
        unseen_met += results[0] is not None and results[0][1] is not None
        clean += results[0] is None
    assert counter[0] == clean              # the clean accesses, counted in C
    assert raced and clean and (unseen_met or not checked_stores), (raced, unseen_met)
    target = (*c_log.cells[0], None, None, 8, 512)
    for array, disp in ((np.ones(8)[::2], 0), (np.ones(4), 63), (np.ones(4), -1)):
        assert native.quick(target, accesses.PUT, disp, array, 3, 0, 0, 0, vc.ctypes.data,
                            accesses.CAPACITY, True, True, lambda: 1 / 0,
                            counter.ctypes.data) is False
    assert counter[0] == clean


def test_a_look_at_unchanged_memory_needs_no_lock():
    """racecheck.c's diff: memory equal to its shadow is no store, found without the
    target's checking lock (an RMA in progress changes the memory first); memory that
    differs waits for the lock, and while another holds it nothing is found or
    changed (None: the Python path waits)."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._racecheck is None:
        pytest.skip("the C extension is not built")
    memory = np.arange(4096, dtype=np.uint8)
    shadow, lock = memory.copy(), np.ones(1, np.int32)     # the lock held by another
    args = (memory.ctypes.data, shadow.ctypes.data, memory.nbytes, 8, 64, lock.ctypes.data)
    assert accesses._racecheck.diff(*args) == ([], [])
    memory[100] += 1
    assert accesses._racecheck.diff(*args) is None
    assert shadow[100] != memory[100]                       # left for the locked pass
    lock[0] = 0
    assert accesses._racecheck.diff(*args) == ([96], [104])
    assert shadow[100] == memory[100] and lock[0] == 0


@pytest.mark.parametrize("seed", range(3))
def test_store_finding_in_c_matches_numpy(seed):
    """Differential: csrc/check/racecheck.c's diff (the runs of words where memory differs
    from its shadow) and stores (forget ordered stores, scan, add) give what the
    numpy fallback gives."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._racecheck is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(seed)
    for grain in (1, 2, 4, 8):
        memory = rng.integers(0, 256, 9000, dtype=np.uint8)
        shadows = [memory.copy(), memory.copy()]
        for changed in rng.choice(9000, size=rng.integers(0, 60), replace=False):
            memory[changed] ^= np.uint8(rng.integers(1, 256))
        found = []
        for native, shadow in zip((True, False), shadows):
            accesses.use_native(native)
            found.append(accesses.diff(memory.ctypes.data, shadow.ctypes.data, len(memory),
                                       grain, 10 ** 6))
        accesses.use_native(True)
        assert found[0] == (list(found[1][0]), list(found[1][1])), grain
        assert np.array_equal(shadows[0], memory) and np.array_equal(shadows[1], memory)
        assert all(low % grain == 0 for low in found[0][0])     # whole words
    (c_log, numpy_log), rng = _random_log(seed)
    keep_all = (lambda target, rows: len(rows))
    try:
        for step in range(200):
            me, access = int(rng.integers(0, 3)), _random_access(rng)
            vc = rng.integers(0, 6, 3).astype(np.int64)
            stamp, seen = int(rng.integers(1, 6)), int(rng.integers(0, 6))
            if step % 3:
                for native, log in ((True, c_log), (False, numpy_log)):
                    accesses.use_native(native)
                    log.add(0, me, access, keep_all)
                continue
            store = accesses.Access(access.lows, access.highs, accesses.STORE, 0, 0,
                                    access.site, access.epoch)
            found = []
            for native, log in ((True, c_log), (False, numpy_log)):
                accesses.use_native(native)
                found.append(log.add_local(0, me, store, vc, vc.ctypes.data, stamp, seen,
                                            keep_all))
            assert np.array_equal(found[0], found[1]), step
            assert np.array_equal(c_log.rows(0), numpy_log.rows(0)), step
    finally:
        accesses.use_native(True)


@pytest.mark.parametrize("seed", range(2))
def test_a_look_in_one_c_call_matches_diff_then_record(seed):
    """Differential: racecheck.c's look_stores (Stores.look's C path: the diff and the
    record of the stores it finds under one lock) finds the runs, updates the shadow,
    leaves the records and reports the races that diff followed by the numpy
    fallback's add_local do, over random stores between other ranks' accesses; it
    names the call site only when the memory changed."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._racecheck is None:
        pytest.skip("the C extension is not built")
    (c_log, numpy_log), rng = _random_log(seed)
    keep_all = (lambda target, rows: len(rows))
    memory = rng.integers(0, 256, 4096, dtype=np.uint8)
    shadows = [memory.copy(), memory.copy()]
    clocks = np.zeros(3, np.int64)      # the ranks' clock entries for this rank
    entries = tuple(clocks.ctypes.data + 8 * rank for rank in range(3))
    named, raced = [], 0
    try:
        for step in range(120):
            me = int(rng.integers(0, 3))
            other = _random_access(rng)
            for native, log in ((True, c_log), (False, numpy_log)):
                accesses.use_native(native)
                log.add(0, (me + 1) % 3, other, keep_all)
            for changed in rng.choice(256, size=rng.integers(0, 4), replace=False):
                memory[changed] ^= np.uint8(rng.integers(1, 256))
            vc = rng.integers(0, 6, 3).astype(np.int64)
            clocks[:] = rng.integers(0, 6, 3)
            stamp, epoch = int(rng.integers(1, 6)), int(rng.integers(0, 8))
            grain = 2 ** (step % 4)
            accesses.use_native(True)
            lows, highs, found, site = accesses._racecheck.look_stores(
                memory.ctypes.data, shadows[0].ctypes.data, len(memory), grain, 10 ** 6,
                c_log.lock_cell(0), c_log._records_address(0), c_log._count_cell(0),
                accesses.STORE, epoch, lambda: named.append(step) or 7, me, vc.ctypes.data,
                accesses.CAPACITY, stamp, entries)
            expected = accesses.diff(memory.ctypes.data, shadows[1].ctypes.data, len(memory),
                                     grain, 10 ** 6)
            assert (lows, highs) == expected, step
            assert np.array_equal(shadows[0], shadows[1]), step
            assert (site == 7) == bool(lows) == (named[-1:] == [step]), step
            if not lows:
                continue
            accesses.use_native(False)
            store = accesses.Access(np.array(lows, np.int64), np.array(highs, np.int64),
                                    accesses.STORE, 0, 0, 7, epoch)
            races = numpy_log.add_local(0, me, store, vc, vc.ctypes.data, stamp,
                                        int(clocks.min()), keep_all)
            assert np.array_equal(c_log.records[0][found], races), step
            assert np.array_equal(c_log.rows(0), numpy_log.rows(0)), step
            raced += len(races) > 0
    finally:
        accesses.use_native(True)
    assert raced and 0 < len(named) < 120, (raced, len(named))   # races, and looks at nothing


@pytest.mark.timeout(600)
def test_generated_corpus_precision_and_recall():
    """tools/race_corpus.py: 49 ordered pairs of the seven RMA access kinds under
    ten synchronization forms, rank 0's own store before or after each kind under
    six, and each kind's buffer changed after or before its completion under eight
    (R35), ordered and racy, at 2 ranks: every race found, no false alarm (the tool
    exits 1 and lists the cases it got wrong)."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "race_corpus.py"),
                             "--ranks", "2"], capture_output=True, text=True, timeout=500)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "precision 1.000, recall 1.000" in result.stdout, result.stdout


@pytest.mark.parametrize("checking", ["0", "1"])
def test_the_runtime_imports_without_numpy_with_or_without_the_checker(checking):
    """The launcher forks its ranks after importing the runtime, before any thread
    exists: numpy (whose BLAS starts threads) must not load then, checker or not."""
    code = ("import sys; from shmrma import MPI; from shmrma.run import launcher; "
            "print('numpy' in sys.modules, 'shmrma.check.hooks' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, SHMRMA_CHECK=checking))
    assert result.stdout.split() == ["False", "True" if checking == "1" else "False"], \
        result.stdout + result.stderr


@pytest.mark.parametrize("run", range(3))
def test_no_false_alarm_on_a_recursive_mutex_handed_over(run):
    """An atomic's value and its record appear together: before, a holder's count
    (Fetch_and_op) was reported against the hand-over (Accumulate) in 2 of 3 runs."""
    pytest.importorskip("mpi4py.util.sync")
    result = check_run(CASES / "mutex_stress.py", 3, "--check")
    assert result.returncode == 0, result.stderr
    assert "shmrma-check: no data race found" in result.stderr, result.stderr


PAGEWATCH_PROGRAM = """
import ctypes, mmap, sys, threading
import numpy as np
from shmrma import _pagewatch
pages = mmap.mmap(-1, 4 * mmap.PAGESIZE)
values = np.frombuffer(pages, np.float64)
slot = _pagewatch.watch(values.ctypes.data + 8, values.nbytes - 8)   # 3 whole pages
_pagewatch.arm(slot)
first = values[520]                      # page 1: noted
values[521] = 1.0                        # page 1's first store, after the load: noted
values[522] = 1.0                        # its second: unseen
values[1100] = 2.0                       # page 2, a store first: noted
second = values[1101]                    # the same page after it: unseen
third = values[5]                        # page 0, not whole: not watched
noted, lost, faults = _pagewatch.take(slot)
print([(address - values.ctypes.data, frames[0][1], wrote)
       for address, frames, wrote, _ in noted], lost, faults,
      {thread == threading.get_native_id() for *_, thread in noted})
_pagewatch.unwatch(slot)
if sys.argv[1:] == ["crash"]:
    ctypes.string_at(0)
"""


def test_the_page_watch_notes_the_first_load_and_store_of_each_page_and_its_line(
        tmp_path):
    """csrc/check/pagewatch.c: the exact address and line (R127) of the first load and
    of the first store to each page, once per page and arming (a load gives the
    page back read-only, a store whole), and the thread that made it; the partial
    page at the start of the range is not taken away."""
    program = tmp_path / "watch.py"
    program.write_text(PAGEWATCH_PROGRAM)
    result = subprocess.run([sys.executable, "-X", "faulthandler", str(program)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == \
        "[(4160, 9, 0), (4168, 10, 1), (8800, 12, 1)] 0 3 {True}", result.stdout


def test_a_real_crash_under_the_page_watch_still_reaches_faulthandler(tmp_path):
    """A fault outside the watched pages goes to the handler installed before
    (Python's faulthandler here): the crash is reported as before."""
    program = tmp_path / "watch.py"
    program.write_text(PAGEWATCH_PROGRAM)
    result = subprocess.run([sys.executable, "-X", "faulthandler", str(program), "crash"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == -signal.SIGSEGV, result.stderr
    assert "Fatal Python error: Segmentation fault" in result.stderr, result.stderr


WORDWATCH_PROGRAM = """
import sys
import numpy as np
from shmrma import _pagewatch
values = np.zeros(4, "i8")
slots = _pagewatch.hw_watch(values.ctypes.data + 8, 16)     # words 1 and 2
if not slots:
    print("refused")
    sys.exit(0)
first = values[0]                                           # not watched
second = values[1]                                          # noted
values[1] = 5                                               # the word's second access
values.fill(7)                                              # noted (in numpy's C code)
print(len(slots), [(address - values.ctypes.data, length, frames[0][1])
                   for address, length, frames in _pagewatch.hw_unwatch(slots)])
values[2] = 1                                               # unwatched: nothing noted
print(_pagewatch.hw_unwatch(slots))
"""


def test_the_word_watch_notes_the_first_access_to_each_word_and_its_line(tmp_path):
    """csrc/check/pagewatch.c's word watch (hardware watchpoints): the first load or
    store of each watched word with its line, none of the words beside it; after
    hw_unwatch nothing more. Where perf events are refused here, it watches nothing
    and says so."""
    program = tmp_path / "words.py"
    program.write_text(WORDWATCH_PROGRAM)
    result = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    if result.stdout.strip() == "refused":
        pytest.skip("perf breakpoint events are refused on this machine")
    assert result.stdout.splitlines() == ["2 [(8, 8, 11), (16, 8, 13)]", "[]"], result.stdout


def test_the_word_watch_counts_the_programs_accesses_not_the_implementations():
    """wordwatch.by_the_program: an access made in the RMA calls' or the checker's
    code is the implementation's; one in the program, or in numpy on the program's
    behalf, or in a message call the program gave the buffer to, is the program's."""
    import os
    from shmrma.check import report, wordwatch
    package, numpy_file = report.PACKAGE_DIR, os.sep + os.path.join("np", "numpy", "x.py")
    assert wordwatch.by_the_program([("/home/u/prog.py", 3)])
    assert wordwatch.by_the_program([(numpy_file, 1), ("/home/u/prog.py", 3)])
    assert wordwatch.by_the_program([(os.path.join(package, "comm", "comm.py"), 9),
                                     ("/home/u/prog.py", 3)])
    for part in ("rma", "check"):
        assert not wordwatch.by_the_program([(numpy_file, 1),
                                             (os.path.join(package, part, "a.py"), 9),
                                             ("/home/u/prog.py", 3)])


LATE_RACE_PROGRAM = """import time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(8 * 4096, 8, comm=comm)
mem = np.frombuffer(win.tomemory(), 'f8')
for i in range(40):
    win.Fence()
    if comm.rank == 1:
        win.Put(np.ones(1), 0, 1024)
    if comm.rank == 0 and i == 37:
        time.sleep(0.02)
        x = mem[1024]
    elif comm.rank == 0:
        x = mem[1::512].sum()
win.Fence()
win.Free()
"""


def test_a_late_load_race_on_a_page_rma_writes_is_found(tmp_path):
    """After its first periods the load watch takes away only the pages other ranks'
    RMA wrote lately (and all of them one period in eight): a load racing with the
    Put of its period (R127) in period 38 is found; the loads of other words of the
    page in the other periods are no race."""
    stderr, pairs = racing_lines(tmp_path, LATE_RACE_PROGRAM, 2, "--check=no-stores")
    assert pairs == [(10, 13)], stderr


def test_written_pages_flags_the_pages_other_origins_write():
    """racecheck.c's written_pages: a page is flagged when a record of another origin
    writes into it (a Put across two pages flags both); reads and the origin's own
    records do not."""
    import numpy as np
    from shmrma.check import accesses
    if accesses._native is None:
        pytest.skip("the C extension is not built")
    rows = np.zeros(4, accesses.record_dtype())
    rows["low"], rows["high"] = [5000, 100, 21000, 16500], [9000, 108, 21008, 16508]
    rows["origin"] = [1, 1, 0, 2]
    rows["kind"] = [accesses.PUT, accesses.PUT, accesses.PUT, accesses.GET]
    flags = accesses._native.written_pages(rows.ctypes.data, len(rows), 0, 96, 4096, 6)
    assert list(flags) == [1, 1, 1, 0, 0, 0], list(flags)


CHANGE_COMM_PROGRAM = """import numpy as np
from shmrma import MPI
world = MPI.COMM_WORLD
rank = world.rank
pair = world.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
win = MPI.Win.Allocate(64, 8, comm=pair) if pair else MPI.WIN_NULL
win = win.Change_comm(world, 1)
one, out = np.ones(1), np.zeros(1)
win.Fence()
if rank == 2:
    win.Put(one, 0, 0)
if rank == 1:
    win.Get(out, 0, 0)
win.Fence()
if rank == 2:
    win.Put(one, 0, 1)
win.Fence()
if rank == 1:
    win.Get(out, 0, 1)
win.Fence()
win.Free()
"""


def test_a_window_stays_checked_after_change_comm(tmp_path):
    """R164: after Change_comm (a process joins), the window's accesses are checked
    in its new group: a Put of the joiner and a Get in one fence epoch race; the
    same in two epochs do not."""
    stderr, pairs = racing_lines(tmp_path, CHANGE_COMM_PROGRAM, 3)
    assert pairs == [(11, 13)], stderr
    assert "warning" not in stderr, stderr


LAST_LOAD_PROGRAM = """import time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(64, 8, comm=comm)
mem = np.frombuffer(win.tomemory(), 'f8')
comm.Barrier()
if comm.rank == 1:
    win.Lock(0, MPI.LOCK_SHARED)
    win.Put(np.ones(1), 0, 2)
    win.Unlock(0)
if comm.rank == 0:
    time.sleep(0.05)
    x = mem[2]
win.Free()
"""


def test_a_load_after_the_last_synchronization_is_checked_at_free(tmp_path):
    """A load made after its rank's last synchronization call on the window, racing
    with a Put its rank never synchronized with (R127), is found when the window
    is freed."""
    stderr, pairs = racing_lines(tmp_path, LAST_LOAD_PROGRAM, 2)
    assert pairs == [(10, 14)], stderr
