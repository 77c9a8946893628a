"""``shmrma-run``: start N ranks of a Python program on this machine.

Usage: shmrma-run -n N [options] (script.py | -m module | -c code) [args...]
"""
import os
import sys

from .. import __version__

USAGE = """\
usage: shmrma-run -n N [options] script.py [args...]
       shmrma-run -n N [options] -m module [args...]
       shmrma-run -n N [options] -c code [args...]
       shmrma-run -n N [options] python [-u] [-B] [-W arg] (script.py | -m module | -c code) [args...]

Start N ranks of a Python program that uses `from shmrma import MPI`
or `from mpi4py import MPI` (shmrma's MPI inside the job) on this machine;
ranks are processes sharing memory.

options:
  -n, -np N          number of ranks (default 1)
  --universe-size N  the job's process slots, Spawn's children included
                     (MPI.UNIVERSE_SIZE says it); without it, 16 slots (or -n;
                     -n under --check) and UNIVERSE_SIZE is -n; Spawn takes
                     new slots, which are not given back when children exit
  --timeout SEC      end the job after SEC seconds, printing every rank's Python
                     stack and what it waits for; exit status 124
  -l, --tag-output   prefix every output line with the rank: [0] ...
  --check            report data races: RMA accesses and a rank's own loads
                     and stores to the same window bytes, one writing, that no
                     synchronization orders (MPI-3.1 §11.7), and origin
                     buffers changed before their call completed; one
                     report per race on stderr, a summary at the end, exit
                     status 66 when a race was found (shm backend only;
                     SHMRMA_CHECK=1 does the same for a singleton or shmrma.launch)
  --check=no-stores  the same without watching the ranks' own stores (faster)
  --check=no-loads   the same without watching the ranks' own loads (faster)
  --check=no-local   neither: RMA calls and origin buffers only (fastest)
  --trace FILE       write a timeline of the job to FILE: every MPI call of
                     every rank and thread with its wait, arrows from each
                     call to the calls it let return (a send to its receive,
                     a collective's last arrival, a Post, a counter signal),
                     and the windows' epochs, as trace-event JSON that
                     ui.perfetto.dev and chrome://tracing open
                     (docs/observe.md; SHMRMA_TRACE=FILE does the same for a
                     singleton or shmrma.launch)
  --profile[=FILE]   at the end, a report on stderr: per rank the time in
                     MPI and waiting (on whom), the top call sites by time
                     and by bytes; with FILE, as JSON there too (SHMRMA_PROFILE);
                     on the mpi backend too, without the waits
  --backend NAME     shm (default: processes sharing memory) or mpi (the
                     installed MPI's mpiexec with mpi4py; see "Running on a
                     cluster" in the README); SHMRMA_BACKEND sets the default
  --no-mpi4py-alias  leave `import mpi4py` to the installed mpi4py, whose
                     MPI is then a world of one in each rank (SHMRMA_MPI4PY=0)
  --version          print shmrma's version and exit
  -h, --help         show this help and exit

The exit status is 0 when every rank exits 0; otherwise that of the first rank
that failed (128+N for a rank killed by signal N), named on one line of stderr;
66 when every rank exited 0 but --check reported a data race.
"""


class UsageError(Exception):
    pass


class Options:
    def __init__(self):
        self.nranks = 1
        self.timeout = None
        self.tag_output = False
        self.mode = None      # "script", "module", "code" or "exec" (not Python)
        self.target = None
        self.args = []
        self.backend = None   # "shm" or "mpi"; None: SHMRMA_BACKEND's
        self.check = None     # --check: SHMRMA_CHECK's value for the race checker
        self.mpi4py_alias = True    # --no-mpi4py-alias: SHMRMA_MPI4PY=0
        self.python_flags = set()   # the interpreter's -u, -B before the program
        self.warnoptions = []       # its -W options
        self.environment = {}       # variables to set in the ranks (mpiexec's -x, -env)
        self.workdir = None         # the ranks' working directory (mpiexec's -wdir)
        self.universe = None        # --universe-size: process slots, Spawn's included
        self.trace = None           # --trace FILE: SHMRMA_TRACE
        self.profile = None         # --profile: SHMRMA_PROFILE's value ("1" or a path)

    def python_argv(self):
        """The interpreter options given before the program, as python takes them."""
        flags = {name: flag for flag, name in _PYTHON_FLAGS.items()}
        return ([flags[name] for name in sorted(self.python_flags)] +
                ["-W" + option for option in self.warnoptions])

    def apply_python_options(self):
        """Give this interpreter, which the ranks fork from, those options."""
        import warnings
        if "dont_write_bytecode" in self.python_flags:
            sys.dont_write_bytecode = True
        if "unbuffered" in self.python_flags:
            for stream in (sys.stdout, sys.stderr):
                stream.reconfigure(write_through=True)
        sys.warnoptions.extend(self.warnoptions)
        warnings._processoptions(self.warnoptions)


def parse(argv):
    options = Options()
    items = list(argv)
    while items:
        item = items.pop(0)
        if item in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if item == "--version":
            sys.stdout.write("shmrma-run (shmrma) %s\n" % __version__)
            sys.exit(0)
        if item in ("-l", "--tag-output"):
            options.tag_output = True
        elif item == "--check" or item.startswith("--check="):
            options.check = _check_mode(item.partition("=")[2])
        elif item in ("-n", "-np", "--np") or item.startswith(("-n=", "--timeout=")):
            name, _, value = item.partition("=")
            options_value = value or _next(items, name)
            if name == "--timeout":
                options.timeout = _positive(options_value, name, float)
            else:
                options.nranks = _positive(options_value, name, int)
        elif item == "--timeout":
            options.timeout = _positive(_next(items, item), item, float)
        elif item == "--universe-size" or item.startswith("--universe-size="):
            options.universe = _positive(item.partition("=")[2] or _next(items, item), item,
                                         int)
        elif item == "--backend" or item.startswith("--backend="):
            options.backend = _backend_name(item.partition("=")[2] or _next(items, item))
        elif item == "--trace" or item.startswith("--trace="):
            options.trace = item.partition("=")[2] or _next(items, item)
        elif item == "--profile" or item.startswith("--profile="):
            options.profile = item.partition("=")[2] or "1"
        elif item == "--no-mpi4py-alias":
            options.mpi4py_alias = False
        elif item.startswith("-") and item not in ("-", "-m", "-c"):
            raise UsageError("unknown option %s" % item)
        else:
            if _is_python(item):     # `python prog.py`, as after mpiexec -n N
                _python_options(items, options)
            else:
                items.insert(0, item)
            _program(items, options)
            return options
    raise UsageError("no program given: name a script, -m module or -c code")


def _program(items, options):
    """The program: ``-m module``, ``-c code`` or a script, and its arguments."""
    if not items:
        raise UsageError("no program given: name a script, -m module or -c code")
    item = items.pop(0)
    if item in ("-m", "-c"):
        options.mode = "module" if item == "-m" else "code"
        options.target = _next(items, item)
    else:
        options.mode, options.target = "script", item
    options.args = items


def _is_python(word):
    """Whether ``word`` names a Python interpreter (python, python3, python3.11, or
    this one's path): its ranks then run in shmrma-run's own interpreter."""
    name = os.path.basename(word)
    return (name.startswith("python") and name[6:].replace(".", "").isdigit() or
            name == "python" or os.path.realpath(word) == os.path.realpath(sys.executable))


# Python's own options that shmrma-run takes after the interpreter's name: each
# acts in the ranks, which are forks of shmrma-run's interpreter
_PYTHON_FLAGS = {"-u": "unbuffered", "-B": "dont_write_bytecode"}


def _python_options(items, options):
    while items and items[0].startswith("-") and items[0] not in ("-m", "-c", "-"):
        flag = items.pop(0)
        if flag in _PYTHON_FLAGS:
            options.python_flags.add(_PYTHON_FLAGS[flag])
        elif flag == "-W":
            options.warnoptions.append(_next(items, flag))
        elif flag.startswith("-W"):
            options.warnoptions.append(flag[2:])
        else:
            raise UsageError(
                "python %s: the ranks run in shmrma-run's own Python, which cannot take "
                "that option now; give it to that Python instead: python %s -m shmrma.run "
                "-n N ..." % (flag, flag))


def _checked_environment():
    """SHMRMA_CHECK, when --check does not set it, must hold a value it takes."""
    from ..core import settings
    try:
        settings.checking()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _check_writable(option, path):
    """A file the job will write must be writable before the job runs."""
    if path:
        from ..observe.session import Unwritable, check_writable
        try:
            check_writable(path, option)
        except Unwritable as exc:
            raise UsageError(str(exc)) from None


def _check_mode(value):
    from ..core.settings import CHECK_MODES
    if value in ("",) + CHECK_MODES:
        return value or "1"
    raise UsageError("--check=%s: expected --check or --check=%s" % (
        value, ", --check=".join(CHECK_MODES)))


def _next(items, name):
    if not items:
        raise UsageError("%s needs a value" % name)
    return items.pop(0)


def _backend_name(text=None):
    """The backend --backend names (``text``), else SHMRMA_BACKEND's."""
    from ..core import settings
    try:
        return settings.backend() if text is None else settings.checked_backend(text,
                                                                              "--backend")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _positive(text, name, kind):
    try:
        value = kind(text)
    except ValueError:
        raise UsageError("%s expects a number, not %r" % (name, text)) from None
    if value <= 0:
        raise UsageError("%s must be positive, not %r" % (name, text))
    return value


def program_body(options):
    """A function that runs the program in a rank as ``__main__``."""
    import runpy
    if options.mode == "script":
        path = os.path.abspath(options.target)
        argv = [options.target] + options.args

        def body():
            sys.argv = argv
            sys.path[0] = os.path.dirname(path)
            runpy.run_path(argv[0], run_name="__main__")  # argv[0] as typed, like python
    elif options.mode == "module":
        def body():
            sys.argv = [options.target] + options.args
            sys.path[0] = os.getcwd()
            runpy.run_module(options.target, run_name="__main__", alter_sys=True)
    else:
        def body():
            sys.argv = ["-c"] + options.args
            sys.path[0] = ""
            import types
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(options.target, "<string>", "exec"), main.__dict__)
    return body


def spawned_program(argv, workdir=None):
    """The body of a program that a Spawn starts (comm/spawn.py): ``argv`` is its
    command and arguments, read as shmrma-run reads its own after ``python``: a
    Python interpreter, its -u, -B and -W options, then a script, -m module or
    -c code. UsageError, saying why, when it cannot run in this job."""
    items = [str(item) for item in argv]
    command = items.pop(0) if items else ""
    if not _is_python(command) and _python_shebang(os.path.join(workdir or "", command)):
        items.insert(0, command)    # an executable Python script: run as the OS would
        command = sys.executable
    if not _is_python(command):
        raise UsageError("%r is not a Python interpreter: a shmrma job spawns Python "
                         "programs (pass sys.executable as the command)" % command)
    options = Options()
    _drop_flags_in_effect(items)
    _python_options(items, options)
    _program(items, options)
    where = workdir or os.getcwd()
    if options.mode == "script" and not os.path.isfile(os.path.join(where, options.target)):
        raise UsageError("can't open file %r in %s: no such file" % (options.target, where))
    if options.mode == "module" and not _module_exists(options.target):
        raise UsageError("no module named %r" % options.target)
    body = program_body(options)

    def run():
        options.apply_python_options()
        body()
    return run


# Python's single-letter options and the sys.flags each sets: a spawned program
# forks from this interpreter, so one already in effect here (mpi4py.futures
# passes its parent's own, such as -R) asks for nothing new
_SYS_FLAGS = {"d": "debug", "O": "optimize", "s": "no_user_site", "S": "no_site",
              "E": "ignore_environment", "v": "verbose", "b": "bytes_warning", "q": "quiet",
              "R": "hash_randomization", "I": "isolated", "P": "safe_path"}


def _drop_flags_in_effect(items):
    """Remove from the interpreter's options at the front of ``items`` those this
    interpreter already runs with."""
    kept, index = [], 0
    while index < len(items) and items[index][:1] == "-" and \
            items[index] not in ("-m", "-c", "-"):
        item = items[index]
        index += 1
        if item == "-W" and index < len(items):     # -W takes the next word
            kept += [item, items[index]]
            index += 1
        elif not all(letter in _SYS_FLAGS and getattr(sys.flags, _SYS_FLAGS[letter], 0) >=
                     item.count(letter) for letter in item[1:]):
            kept.append(item)
    items[:index] = kept


def _python_shebang(path):
    """Whether ``path`` is a file whose first line runs a Python interpreter
    (``#!/usr/bin/python3``, ``#!/usr/bin/env python``)."""
    try:
        with open(path, "rb") as script:
            line = script.readline(256)
    except OSError:
        return False
    words = line[2:].split() if line.startswith(b"#!") else []
    if words and os.path.basename(words[0]) == b"env":
        words = words[1:]
    return bool(words) and _is_python(os.fsdecode(words[0]))


def _module_exists(name):
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def main(argv=None):
    return parse_and_run(parse, "shmrma-run", USAGE, argv)


def parse_and_run(parse_options, prog, usage, argv=None):
    """A launcher command's main: its command line parsed by ``parse_options``, then run."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        options = parse_options(argv)
    except UsageError as exc:
        return usage_error(prog, exc, usage)
    return run(options, prog, usage)


def usage_error(prog, exc, usage):
    """Say what is wrong with the command line, then the usage lines; status 2."""
    sys.stderr.write("%s: %s\n%s" % (prog, exc, usage.split("\n\n")[0] + "\n"))
    return 2


def _has_native():
    import importlib.util
    return importlib.util.find_spec("shmrma._native") is not None


def checked(options):
    """Refuse option combinations that cannot run (UsageError); sets the backend."""
    if options.backend is None:
        options.backend = _backend_name()
    from ..core.job import MAX_RANKS
    if options.nranks > MAX_RANKS and options.backend == "shm":
        raise UsageError("-n must be at most %d, not %d" % (MAX_RANKS, options.nranks))
    if options.universe is not None and not options.nranks <= options.universe <= MAX_RANKS:
        raise UsageError("--universe-size must be from -n (%d) to %d, not %d"
                         % (options.nranks, MAX_RANKS, options.universe))
    if options.check and options.backend != "shm":
        raise UsageError("--check works on the shm backend only: the race checker "
                         "watches the ranks' shared memory, which the mpi backend has "
                         "not; drop --backend mpi (or SHMRMA_BACKEND=mpi) to check")
    if options.check and options.mode == "exec":
        raise UsageError("--check watches Python ranks; %s is not a Python program"
                         % options.target)
    if options.trace and options.backend != "shm":
        raise UsageError("--trace works on the shm backend only; --profile works on both")
    if options.trace and options.trace == options.profile:
        raise UsageError("--trace and --profile=FILE name the same file %r" % options.trace)
    if (options.trace or options.profile) and options.mode == "exec":
        raise UsageError("--trace and --profile record Python ranks; %s is not a Python "
                         "program" % options.target)
    if options.profile and options.backend != "shm" and not _has_native():
        raise UsageError("--profile on the mpi backend needs shmrma's C extension, "
                         "which this installation lacks (rebuild it: pip install -e .)")
    _check_writable("--trace", options.trace)
    _check_writable("--profile", options.profile if options.profile != "1" else None)
    if not options.check:
        _checked_environment()


def run(options, prog, usage):
    """Run the parsed job (``prog`` names the command in messages); its exit status."""
    try:
        checked(options)
    except UsageError as exc:
        return usage_error(prog, exc, usage)
    if options.mode == "script" and not os.path.isfile(options.target):
        why = ("it is a directory; give the program's .py file, or -m MODULE"
               if os.path.isdir(options.target) else "no such file")
        sys.stderr.write("%s: can't open file %r: %s\n" % (prog, options.target, why))
        return 2
    if options.workdir is not None:
        os.chdir(options.workdir)
    os.environ.update(options.environment)
    from ..core import settings
    if options.profile:
        os.environ[settings.PROFILE_VARIABLE] = (
            options.profile if options.profile == "1" else os.path.abspath(options.profile))
    if options.backend == "mpi":
        from ..onmpi import launch as mpi_launch
        return mpi_launch.run(options)
    if options.check:
        os.environ[settings.CHECK_VARIABLE] = options.check
    if options.trace:
        os.environ[settings.TRACE_VARIABLE] = os.path.abspath(options.trace)
    if not options.mpi4py_alias:
        os.environ[settings.MPI4PY_VARIABLE] = "0"
    options.apply_python_options()
    # Import the runtime once here, before the fork, so no rank pays for it again;
    # it loads no numpy and starts no thread (forking after a thread is unsafe).
    from .. import MPI  # noqa: F401
    from . import launcher
    try:
        runner = launcher.Job(options.nranks, timeout=options.timeout,
                              tag_output=options.tag_output, universe=options.universe,
                              spawned_body=spawned_program)
    except Exception as exc:
        sys.stderr.write("%s: cannot start the job: %s\n" % (prog, exc))
        return 1
    if options.mode == "exec":
        runner.start(lambda rank: launcher.exec_rank(runner.world, rank, options.target,
                                                      options.args))
    else:
        body = program_body(options)
        runner.start(lambda rank: launcher.run_rank_body(runner.world, rank, body)[0])
    outcome = runner.supervise()
    sys.stderr.write(outcome.timeout_report)
    if outcome.reason:
        sys.stderr.write("%s: %s; the job was ended\n" % (prog, outcome.reason))
    return runner.summaries(outcome.status)


if __name__ == "__main__":
    sys.exit(main())
