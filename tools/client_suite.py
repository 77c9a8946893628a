"""Run a client project's own test suite on shmrma, the way the project's CI runs it.

    python tools/client_suite.py dask-mpi [--timeout SECONDS] [-- pytest arguments]

Once per Python version, in ~/.cache/shmrma/clients/NAME: a virtualenv with
shmrma's dependencies, the client at a pinned version and what its tests need, the
client's source distribution unpacked for its tests. shmrma's ``mpiexec`` and
``mpirun`` (``shmrma-mpiexec --links``) go into the virtualenv's scripts folder,
first on ``PATH`` and where distributed's test helper looks for ``mpirun``. The
suite then runs with that virtualenv's pytest: every ``mpirun -np N ...`` it
starts is a shmrma job. The exit status is pytest's.

The first run needs the package index (pip); later ones do not, whatever
checkout runs them (the virtualenv imports shmrma from the checkout running the
tool, whose C extension must be built: pip install -e . builds it). When the client
cannot be installed, the exit status is 75 and the last line says why.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tarfile

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "shmrma", "clients")
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANNOT_INSTALL = 75     # sysexits' EX_TEMPFAIL: try again where the index is reachable

# name: (pinned requirement, what its tests need besides, its tests' folder in the sdist)
CLIENTS = {
    "dask-mpi": ("dask-mpi==2026.3.0", ["bokeh", "requests", "pytest", "pytest-timeout"],
                 "dask_mpi/tests"),
}


def _run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def prepare(name):
    """The client's folder and Python: its virtualenv and unpacked sdist, made once
    for this Python version, importing shmrma from this checkout."""
    requirement, test_needs, _ = CLIENTS[name]
    folder = os.path.join(CACHE, name)
    python = os.path.join(folder, "venv", "bin", "python")
    ready = os.path.join(folder, "ready")
    made_for = "python %d.%d" % sys.version_info[:2]
    try:
        if _read(ready) != made_for or _venv_python(folder) != made_for:
            if os.path.exists(ready):   # a make that fails must leave no stamp behind
                os.remove(ready)
            _make(folder, python, requirement, test_needs)
            with open(ready, "w") as done:
                done.write(made_for)
        _use_checkout(python)
    except (OSError, subprocess.CalledProcessError) as exc:
        print("client_suite: cannot install %s and its tests' needs: %s"
              % (requirement, exc), file=sys.stderr)
        raise SystemExit(CANNOT_INSTALL)
    return folder, python


def _venv_python(folder):
    """'python X.Y' of the virtualenv as its pyvenv.cfg says, or None."""
    text = _read(os.path.join(folder, "venv", "pyvenv.cfg")) or ""
    found = re.search(r"^version(?:_info)?\s*=\s*(\d+)\.(\d+)", text, re.M)
    return "python %s.%s" % found.groups() if found else None


def _read(path):
    try:
        with open(path) as text:
            return text.read()
    except FileNotFoundError:
        return None


def _make(folder, python, requirement, test_needs):
    """A new virtualenv with the client, its tests' needs and shmrma's dependencies
    (from an install of this checkout), shmrma's links, and the client's sdist."""
    os.makedirs(folder, exist_ok=True)
    _run([sys.executable, "-m", "venv", "--clear", os.path.join(folder, "venv")])
    _run([python, "-m", "pip", "install", "--quiet", "-e", CHECKOUT, requirement]
         + test_needs)
    _run([python, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
          ":all:", requirement, "-d", folder])
    for archive in glob.glob(os.path.join(folder, "*.tar.gz")):
        with tarfile.open(archive) as sdist:
            sdist.extractall(folder, filter="data") if hasattr(tarfile, "data_filter") \
                else sdist.extractall(folder)
    scripts = os.path.dirname(python)
    _run([os.path.join(scripts, "shmrma-mpiexec"), "--links", scripts],
         stdout=subprocess.DEVNULL)


def _use_checkout(python):
    """Make the virtualenv import shmrma from this checkout (whose extension its
    install built in place), ahead of the install it was made with: a .pth file
    read before the install's own, so a new checkout costs no reinstall."""
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True)
    with open(os.path.join(site.stdout.strip(), "000-shmrma-checkout.pth"), "w") as pth:
        pth.write(CHECKOUT + "\n")
    where = subprocess.run([python, "-c", "import shmrma; print(shmrma.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(os.path.join(CHECKOUT, "")):
        raise OSError("the virtualenv imports shmrma from %s, not from %s"
                      % (where, CHECKOUT))


def source_folder(folder, requirement):
    """The unpacked sdist: NAME-VERSION/, with the name's '-' as '_' or not."""
    project, version = requirement.split("==")
    for spelling in (project.replace("-", "_"), project):
        candidate = os.path.join(folder, "%s-%s" % (spelling, version))
        if os.path.isdir(candidate):
            return candidate
    raise SystemExit("client_suite: no unpacked sources of %s in %s" % (requirement, folder))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("client", choices=sorted(CLIENTS))
    parser.add_argument("--timeout", type=int, default=180,
                        help="pytest-timeout's limit per test, in seconds (default 180)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    options = parser.parse_args(argv)
    requirement, _, tests = CLIENTS[options.client]
    folder, python = prepare(options.client)
    environment = dict(os.environ)
    environment["PATH"] = os.path.dirname(python) + os.pathsep + environment.get("PATH", "")
    environment.pop("PYTHONPATH", None)
    sources = source_folder(folder, requirement)
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--timeout", str(options.timeout), tests] + options.pytest_args
    print("+ cd %s && %s" % (sources, " ".join(command)), flush=True)
    return subprocess.run(command, cwd=sources, env=environment).returncode


if __name__ == "__main__":
    sys.exit(main())
