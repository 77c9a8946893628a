"""``shmrma-mpiexec``: the ``mpiexec``/``mpirun`` command line of MPICH and Open MPI.

Clients' tests start their programs as ``mpirun -np 4 python -m pytest``,
``mpiexec -n 2 coverage run -m unittest`` or ``mpirun --np 4 dask-mpi ...``.
Under the names ``mpiexec`` and ``mpirun`` (``--links DIR``), this command takes
those lines on shmrma: the options both launchers' users pass, and a first word
that is a Python interpreter, a Python script, a console script of this Python
(run in the ranks as a script, as its shebang would), or any other program (run
once per rank outside MPI, with the launchers' rank variables).
"""
import os
import shutil
import socket
import sys
import sysconfig

from .. import __version__
from ..onmpi.launch import is_shmrma_mpiexec
from . import cli
from .cli import UsageError

USAGE = """\
usage: shmrma-mpiexec -n N [options] python [python options] prog.py [args...]
       shmrma-mpiexec -n N [options] (prog.py | console-script | program) [args...]
       shmrma-mpiexec --links DIR

The command line of MPICH's and Open MPI's mpiexec and mpirun, on shmrma: N
ranks on this machine, sharing memory. The program is `python ...` (run by this
Python), a Python script, or a console script of this Python such as pytest,
coverage or dask-mpi: each rank runs it with `from mpi4py import MPI` being
shmrma's MPI. Any other program runs once per rank outside MPI, with the rank
variables of those launchers (PMI_RANK, PMI_SIZE, OMPI_COMM_WORLD_RANK, ...).

options:
  -n, -np, --np, -c N     number of ranks (default 1, or -ppn's)
  -ppn, -npernode N       ranks per node: on one node, the number of ranks
                          when -n is not given
  -host, -hosts, --host, -H LIST
                          the hosts (name[:slots],...): names of this machine
                          only (localhost, its host name or address)
  -f, -hostfile, --hostfile, -machinefile, --machinefile FILE
                          the same, one host per line
  -x VAR[=VALUE]          set VAR in the ranks (Open MPI); without a value, this
                          environment's (which the ranks inherit anyway)
  -env, -genv VAR VALUE   set VAR in the ranks (MPICH)
  -envall, -genvall       pass this environment (the default: accepted)
  -wdir, --wdir, -wd DIR  the ranks' working directory
  -l, -prepend-rank, --tag-output, -tag-output
                          prefix every output line with the rank: [0] ...
  --bind-to, -bind-to WHAT
                          none: leave the ranks to the scheduler
                          (SHMRMA_BIND=0); anything else: one rank per CPU
                          when there are enough CPUs (shmrma's default)
  --timeout SEC           end the job after SEC seconds, printing every rank's
                          Python stack; exit status 124
  -usize, --universe-size N
                          the job's process slots, Spawn's children included
                          (MPICH's -usize; default 16 slots, or -n)
  --check[=MODE]          report data races (shmrma-run --help says more)
  --backend NAME          shm (default) or mpi (the installed MPI's mpiexec)
  --no-mpi4py-alias       leave `import mpi4py` to the installed mpi4py
  --links DIR             make DIR/mpiexec and DIR/mpirun run this command and
                          print DIR: `export PATH="$(shmrma-mpiexec --links DIR):$PATH"`
  --version               print shmrma's version and exit
  -h, --help              show this help and exit

accepted and ignored, as they mean nothing on one machine of shmrma's:
  --oversubscribe, --allow-run-as-root, --use-hwthread-cpus, -q, --quiet,
  --report-bindings, --map-by X, --rank-by X, --mca K V, --gmca K V,
  -launcher X, -bootstrap X, -iface X

Not supported: several programs separated by ':' (MPMD), hosts other than this
machine. The exit status is shmrma-run's: 0 when every rank exits 0, otherwise
that of the first rank that failed.
"""

# option spellings, each normalized to one name
_SYNONYMS = {
    "nranks": ("-n", "-np", "--np", "--n", "-c"),
    "ppn": ("-ppn", "--ppn", "-npernode", "--npernode"),
    "hosts": ("-host", "-hosts", "--host", "--hosts", "-H"),
    "hostfile": ("-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile",
                 "--default-hostfile"),
    "export": ("-x",),
    "env": ("-env", "-genv", "--env", "--genv"),
    "workdir": ("-wdir", "--wdir", "-wd", "--wd", "-gwdir"),
    "tag": ("-l", "-prepend-rank", "--prepend-rank", "--tag-output", "-tag-output"),
    "bind": ("--bind-to", "-bind-to"),
    "timeout": ("--timeout",),
    "universe": ("-usize", "--universe-size"),
    "backend": ("--backend",),
    "links": ("--links",),
    "ignored_flag": ("--oversubscribe", "-oversubscribe", "--allow-run-as-root",
                     "--use-hwthread-cpus", "-q", "--quiet", "--report-bindings",
                     "-envall", "-genvall"),
    "ignored_value": ("--map-by", "-map-by", "--rank-by", "-rank-by", "-launcher",
                      "-bootstrap", "-iface"),
    "ignored_pair": ("--mca", "-mca", "--gmca", "-gmca"),
}
_OPTION = {spelling: name for name, spellings in _SYNONYMS.items() for spelling in spellings}


def parse(argv):
    """The job an mpiexec command line asks for: cli.Options (UsageError if wrong)."""
    options = cli.Options()
    items = list(argv)
    nranks = ppn = None
    while items:
        item = items.pop(0)
        if item in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if item in ("--version", "-V"):
            sys.stdout.write("shmrma-mpiexec (shmrma) %s\n" % __version__)
            sys.exit(0)
        spelling, equals, value = item.partition("=")
        name = _OPTION.get(spelling if equals and spelling.startswith("--") else item)
        if name is None and item.startswith("--check"):
            options.check = cli._check_mode(item.partition("=")[2])
        elif item == "--no-mpi4py-alias":
            options.mpi4py_alias = False
        elif name is not None:
            if name in ("tag", "ignored_flag"):
                options.tag_output |= name == "tag"
                continue
            given = value if equals else cli._next(items, item)
            if name == "nranks":
                nranks = cli._positive(given, item, int)
            elif name == "ppn":
                ppn = cli._positive(given, item, int)
            else:
                _option(options, name, item, given, items)
        elif item.startswith("-"):
            raise UsageError("unknown option %s (shmrma-mpiexec --help lists those it "
                             "takes)" % item)
        else:
            if ":" in items or item == ":":
                raise UsageError("several programs separated by ':' (MPMD) are not "
                                 "supported: run one program, which may branch on its rank")
            options.nranks = nranks or ppn or 1
            _program([item] + items, options)
            return options
    raise UsageError("no program given: name python and a script, or a program")


def _option(options, name, item, value, items):
    """Apply the option ``name`` (typed as ``item``) whose value is ``value``."""
    if name == "hosts":
        for host in value.split(","):
            _local_host(host.rpartition(":")[0] if ":" in host else host, item)
    elif name == "hostfile":
        for host in _hostfile_hosts(value, item):
            _local_host(host, item)
    elif name == "export":
        variable, equals, setting = value.partition("=")
        if equals:
            options.environment[variable] = setting
    elif name == "env":
        options.environment[value] = cli._next(items, item)
    elif name == "workdir":
        if not os.path.isdir(value):
            raise UsageError("%s %s: no such directory" % (item, value))
        options.workdir = value
    elif name == "bind":
        if value == "none":
            options.environment["SHMRMA_BIND"] = "0"
    elif name == "timeout":
        options.timeout = cli._positive(value, item, float)
    elif name == "universe":
        options.universe = cli._positive(value, item, int)
    elif name == "backend":
        options.backend = cli._backend_name(value)
    elif name == "links":
        sys.stdout.write(make_links(value) + "\n")
        sys.exit(0)
    elif name == "ignored_pair":
        cli._next(items, item)


def _local_host(name, option):
    """Refuse a host that is not this machine: shmrma's ranks share its memory."""
    if name in _local_names():
        return
    raise UsageError("%s %s: shmrma runs every rank on this machine (%s); name it, or "
                     "localhost, or run on a cluster with --backend mpi"
                     % (option, name, socket.gethostname()))


def _local_names():
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    names.add(socket.gethostname().split(".")[0])
    try:
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return names


def _hostfile_hosts(path, option):
    """The host names of an MPICH (host[:n]) or Open MPI (host slots=n) host file."""
    try:
        with open(path) as lines:
            words = [line.split("#")[0].split() for line in lines]
    except OSError as exc:
        raise UsageError("%s %s: %s" % (option, path, exc.strerror)) from None
    return [first[0].partition(":")[0] for first in words if first]


def _program(items, options):
    """The program: ``python ...``, a script, a console script of this Python, or a
    program that is not Python (options.mode "exec"), and its arguments."""
    word = items[0]
    if cli._is_python(word):
        items.pop(0)
        cli._python_options(items, options)
        cli._program(items, options)
        return
    path = word if os.sep in word or os.path.isfile(word) else shutil.which(word)
    if path is None or not os.path.isfile(path):
        raise UsageError("%s: command not found" % word)
    interpreter = _python_of(path)
    if interpreter is not None and not _is_this_python(interpreter):
        raise UsageError(
            "%s runs in the Python at %s, and shmrma's ranks run in this one (%s): "
            "install shmrma in that environment and use its shmrma-mpiexec"
            % (word, interpreter, sys.executable))
    options.mode = "script" if interpreter or path.endswith(".py") else "exec"
    options.target, options.args = path, items[1:]


def _python_of(path):
    """The Python interpreter named by ``path``'s ``#!`` line, else None."""
    try:
        with open(path, "rb") as program:
            first = program.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-")]
        if words:
            words[0] = shutil.which(words[0]) or words[0]
    if words and os.path.basename(words[0]).startswith("python"):
        return words[0]
    return None


def _is_this_python(interpreter):
    """Whether ``interpreter`` is this Python in this environment: a path beside this
    one (a virtualenv's python, python3, python3.11), or the same program when this
    Python is not a virtualenv's."""
    here = os.path.dirname(os.path.abspath(sys.executable))
    if os.path.dirname(os.path.abspath(interpreter)) == here:
        return True
    return (sys.prefix == sys.base_prefix and os.path.exists(interpreter) and
            os.path.realpath(interpreter) == os.path.realpath(sys.executable))


def _this_command():
    """The shmrma-mpiexec of this Python: the one running, else the one installed beside
    this Python's scripts, else the one on PATH (whose Python may be another)."""
    candidates = [os.path.abspath(sys.argv[0]),
                  os.path.join(sysconfig.get_path("scripts"), "shmrma-mpiexec"),
                  shutil.which("shmrma-mpiexec")]
    for candidate in candidates:
        if candidate and os.path.basename(candidate) == "shmrma-mpiexec" and \
                os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def make_links(directory):
    """Make ``directory``/mpiexec and /mpirun this command (symbolic links to it);
    returns the directory's absolute path, to put first on PATH."""
    me = _this_command()
    if me is None:
        raise SystemExit("shmrma-mpiexec --links: the shmrma-mpiexec command is not on "
                         "PATH; activate the environment shmrma is installed in")
    directory = os.path.abspath(os.path.expanduser(directory))
    os.makedirs(directory, exist_ok=True)
    for name in ("mpiexec", "mpirun"):
        link = os.path.join(directory, name)
        if os.path.lexists(link):
            if not is_shmrma_mpiexec(link):     # an MPI's own mpiexec: keep it
                raise SystemExit("shmrma-mpiexec --links: %s is another program; choose "
                                 "a directory of its own, such as ~/.shmrma/bin" % link)
            os.remove(link)
        os.symlink(me, link)
    return directory


def main(argv=None):
    return cli.parse_and_run(parse, "shmrma-mpiexec", USAGE, argv)


if __name__ == "__main__":
    sys.exit(main())
