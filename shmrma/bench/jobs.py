"""Running benchmark jobs side by side: launch commands, child environments,
machine facts, tables and the JSON report.

Every implementation runs as a separate job started from here: shmrma under
``shmrma-run``, shmrma's extensions on the mpi backend (the same rank program,
counters included, on mpi4py) under ``shmrma-run --backend mpi``, and the
reference, mpi4py on MPICH, under ``mpiexec``. Children
run without PYTHONDONTWRITEBYTECODE: real users have bytecode caches, and
without them every start recompiles shmrma.
"""
import atexit
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ..core.settings import BACKEND_VARIABLE

INSTALL_HINT = 'pip install -e ".[bench]"'
KILL_GRACE_S = 5
IMPL_VARIABLE = "SHMRMA_BENCH_IMPL"
# shmrma's backend under each implementation that runs shmrma's code path
BACKEND_OF = {"shmrma": "shm", "shmrma-mpi": "mpi", "shmrma-check": "shm",
              "shmrma-check-no-local": "shm", "shmrma-trace": "shm", "shmrma-profile": "shm"}
# where the runs of "shmrma-trace" and "shmrma-profile" leave what they write, each
# run over the last one's (removed when this process ends)
OBSERVED_FILE = os.path.join(tempfile.gettempdir(), "shmrma-bench-%d.json" % os.getpid())
atexit.register(lambda: os.path.exists(OBSERVED_FILE) and os.unlink(OBSERVED_FILE))
LAUNCHER_FLAGS = {"shmrma-check": ["--check"], "shmrma-check-no-local": ["--check=no-local"],
                  "shmrma-trace": ["--trace", OBSERVED_FILE],
                  "shmrma-profile": ["--profile=%s" % OBSERVED_FILE],
                  "shmrma-mpi": ["--backend", "mpi"]}


class RunFailed(RuntimeError):
    pass


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


class Progress:
    """Where a long run is: on a terminal one bar redrawn in place, elsewhere (a log,
    CI) one line per step; both with the time left, from the mean step so far."""

    WIDTH = 24

    def __init__(self, total, stream=None, unit=""):
        self.total, self.done_steps, self.started = total, 0, time.time()
        self.unit = " " + unit if unit else ""
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()

    def step(self, what):
        self.done_steps += 1
        elapsed = time.time() - self.started
        left = elapsed / self.done_steps * (self.total - self.done_steps)
        filled = self.WIDTH * self.done_steps // max(self.total, 1)
        line = "[%s%s] %d/%d%s, %s left  %s" % (
            "#" * filled, "." * (self.WIDTH - filled), self.done_steps, self.total, self.unit,
            _duration(left), what)
        if self.live:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self):
        if self.live:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds):
    seconds = int(round(seconds))
    return "%dm%02ds" % divmod(seconds, 60) if seconds >= 60 else "%ds" % seconds


def find_tool(name):
    """The tool next to sys.executable, else on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which(name)


def reference_missing():
    """None when mpi4py and an ``mpiexec`` are usable, else the reason they are not."""
    import importlib.util
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    if find_tool("mpiexec") is None:
        return "mpiexec (MPICH) was not found"
    return None


def current_impl():
    """The implementation this rank program runs on: "shmrma", "shmrma-mpi" (shmrma's
    extensions on the mpi backend), "mpi4py" or "numpy"."""
    return os.environ.get(IMPL_VARIABLE, "shmrma")


def mpi_module():
    """The ``MPI`` namespace of the implementation this rank program runs on.

    "shmrma" and "shmrma-mpi" both take ``from shmrma import MPI`` (SHMRMA_BACKEND,
    set by the launcher, picks the backend), so their rank programs run shmrma's
    code path, counters included; "mpi4py" takes mpi4py's own namespace."""
    if current_impl() == "mpi4py":
        from mpi4py import MPI
    else:
        from shmrma import MPI
    return MPI


def child_env(impl, extra_path=None):
    """The environment of a benchmark job; ``extra_path`` goes first on PYTHONPATH."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env[IMPL_VARIABLE] = impl
    # shmrma's jobs run on their own backend whatever SHMRMA_BACKEND the caller set
    if impl in BACKEND_OF:
        env[BACKEND_VARIABLE] = BACKEND_OF[impl]
    else:
        env.pop(BACKEND_VARIABLE, None)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(extra_path)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def launcher_argv(impl, nranks, program):
    """The command running ``program`` (argv after ``python``) on ``nranks`` ranks.

    ``impl`` "shmrma" uses shmrma-run, "shmrma-check" ``shmrma-run --check`` (the
    race checker on; "shmrma-check-no-local" without watching the ranks' own
    stores), "shmrma-trace" and "shmrma-profile" ``--trace`` and ``--profile``, "shmrma-mpi" ``shmrma-run --backend mpi``
    (which runs MPICH's mpiexec with ``python -m mpi4py``), "mpi4py" MPICH's
    mpiexec; "numpy" (a single-process reference) runs the program once with
    plain Python.
    """
    program = [str(a) for a in program]
    if impl in BACKEND_OF:
        run = find_tool("shmrma-run")
        head = [run] if run else [sys.executable, "-m", "shmrma.run"]
        return head + LAUNCHER_FLAGS.get(impl, []) + ["-n", str(nranks)] + program
    if impl == "mpi4py":
        return [find_tool("mpiexec"), "-n", str(nranks), sys.executable] + program
    return [sys.executable] + program


def from_checkout(argv):
    """``argv`` with the installed shmrma-run replaced by ``python -m shmrma.run``, for a
    checkout given with --shmrma-path: the installed console script names an entry
    point of the installed checkout, which another one (an older layout) may lack."""
    run = find_tool("shmrma-run")
    if run and argv and argv[0] == run:
        return [sys.executable, "-m", "shmrma.run"] + argv[1:]
    return argv


def run_job(argv, env, timeout, cwd=None):
    """Run argv to its end; return (wall seconds, exit status, stdout, stderr).

    On timeout the launcher gets SIGINT, as from Ctrl-C (both launchers then
    stop their ranks and remove their shared-memory segments; signalling the
    ranks directly leaves MPICH's segment in /dev/shm).  The job has its own
    process group, which gets SIGKILL if still alive after KILL_GRACE_S; then
    RunFailed is raised.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise RunFailed("timed out after %ss: %s" % (timeout, " ".join(argv)))
    return time.perf_counter() - t0, proc.returncode, out, err


def run_once(argv, env, timeout, cwd=None):
    """Run argv; return (wall seconds, stdout).  Raises RunFailed on error or timeout."""
    wall, status, out, err = run_job(argv, env, timeout, cwd)
    if status != 0:
        raise RunFailed("exit status %d: %s\n%s" % (status, " ".join(argv), err.strip()[-2000:]))
    return wall, out


# ---------------------------------------------------------------- machine facts

def machine_facts(with_reference):
    from .. import __version__
    from ..core import atomic
    facts = {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "numpy": _version_of("numpy"),
        "shmrma_version": __version__,
        "shmrma_native_backend": atomic.BACKEND,
        "shmrma_run": find_tool("shmrma-run"),
        "loadavg_start": os.getloadavg(),
        "mpi4py": None,
        "mpi_library": None,
        "mpiexec": find_tool("mpiexec") if with_reference else None,
    }
    if with_reference:
        facts["mpi4py"], facts["mpi_library"] = _mpi_versions()
    return facts


def describe(facts):
    """Two lines on what ran where, for the head of a results table."""
    who = ("shmrma vs mpi4py %s on %s" % (facts["mpi4py"], facts["mpi_library"])
           if facts["mpi_library"] else "shmrma alone")
    return ("%s on %s (%s CPUs), Python %s, numpy %s, shmrma backend %s\n"
            "load average %.2f at start, %.2f at end (the machine may be shared)"
            % (who, facts["cpu_model"], facts["nproc"], facts["python"], facts["numpy"],
               facts["shmrma_native_backend"], facts["loadavg_start"][0],
               facts.get("loadavg_end", facts["loadavg_start"])[0]))


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _version_of(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def _mpi_versions():
    # Get_library_version is allowed before MPI_Init; ask a child so this process stays clean.
    code = ("import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; "
            "print(mpi4py.__version__); print(MPI.Get_library_version().splitlines()[0])")
    try:
        _, out = run_once([sys.executable, "-c", code], child_env("mpi4py"), 60)
        lines = out.splitlines()
        return lines[0].strip(), " ".join(lines[1].split()).replace("Version: ", "")
    except (RunFailed, IndexError) as exc:
        return None, "unknown (%s)" % str(exc).splitlines()[0]


# ---------------------------------------------------------------- report

def table_cells(rows, columns=("shmrma", "mpi4py")):
    """(head, body) of a results table. rows: dicts with metric, the columns, ratio
    and target (None means n/a). Every ratio is shmrma / reference as a time (below
    1 shmrma is faster), so a row passes when its ratio is at most its target."""
    head = ("measurement",) + tuple(columns) + ("ratio", "target", "")
    body = []
    for r in rows:
        ratio, target = r["ratio"], r["target"]
        body.append((r["metric"],) + tuple(r.get(c) or "-" for c in columns)
                    + ("-" if ratio is None else "%.2f" % ratio,
                       "-" if target is None else "<= %.2f" % target,
                       status(r)))
    return head, body


def status(row):
    """PASS, MISS, or n/a (no ratio or no target) for one table row."""
    ratio, target = row["ratio"], row["target"]
    if ratio is None or target is None:
        return "n/a"
    return "PASS" if ratio <= target else "MISS"


def print_table(rows, columns=("shmrma", "mpi4py")):
    head, body = table_cells(rows, columns)
    widths = [max(len(str(row[i])) for row in [head] + body) for i in range(len(head))]
    fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w for i, w in enumerate(widths))
    print(fmt % head)
    print("  ".join("-" * w for w in widths))
    for row in body:
        print(fmt % row)


def markdown_table(head, body):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in body])


def write_report(path, facts, options, results, rows, sweeps=()):
    """The JSON of a benchmark run: machine facts, options, raw results, the table
    (each row's numbers under "stats"), the sweeps per size."""
    doc = {"facts": facts, "options": options, "results": results, "table": rows,
           "sweeps": list(sweeps)}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    print("raw numbers: %s" % path)
