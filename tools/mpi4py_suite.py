"""Run mpi4py's own test suite against shmrma: how much of the drop-in promise holds.

    python tools/mpi4py_suite.py [--ranks 1,2,3] [--modules test_win,test_rma,test_rma_nb]
                                 [--source DIR] [--timeout SECONDS] [--json FILE]

The suite comes from mpi4py 4.1.2's source distribution (fetched once with pip
into ~/.cache/shmrma, or taken from --source, the sdist's folder). At each rank
count every module runs under ``shmrma-run`` in every rank, where ``from mpi4py
import MPI`` is ``shmrma.MPI`` (shmrma/run/mpi4py_alias.py; mpi4py's other modules,
such as mpi4py.util, come from the installed mpi4py). Each rank
reports every test method's outcome; a method passes when it passed on every
rank (its subtests included). A module that cannot be imported counts all its
tests as failed, and one that hangs is ended by the launcher's --timeout, its
tests failed. The suite's fake-GPU buffers are left out, since shmrma refuses
device memory (TypeError): arrayimpl's fake-GPU array backends
(``__cuda_array_interface__`` over host memory) are dropped from its loops, and
test_msgspec's tests of its fake-GPU buffers (``CAIBuf``, ``DLPackGPUBuf``: a
class or method named after one) are reported as skipped, "device memory:
shmrma refuses it", and counted in neither the passed nor the total.

Prints ``module ranks passed/total`` per line, then how many tests were left
out; exit status 1 when a rank count ran nothing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

from shmrma.bench import programs

VERSION = programs.MPI4PY_VERSION
CACHE = programs.CACHE


def fetch(cache=CACHE):
    """The folder of mpi4py's sdist, downloaded and unpacked once."""
    return programs.mpi4py_sources(cache)


# --- in every rank --------------------------------------------------------------------

class _Outcomes(unittest.TestResult):
    """Each test method's outcome; a failing subtest fails its method."""

    def __init__(self):
        super().__init__()
        self.outcomes = {}
        self.left_out = set()

    def _mark(self, test, passed):
        key = test.id()
        self.outcomes[key] = self.outcomes.get(key, True) and passed

    def addSuccess(self, test):
        self._mark(test, True)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if reason == LEFT_OUT:
            self.left_out.add(test.id())
        else:
            self._mark(test, True)

    def addExpectedFailure(self, test, err):
        self._mark(test, True)

    def addFailure(self, test, err):
        self._mark(test, False)

    def addError(self, test, err):
        self._mark(getattr(test, "test_case", test), False)

    def addUnexpectedSuccess(self, test):
        self._mark(test, False)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._mark(test, False)


def _host_backends_only(arrayimpl):
    """Leave out the suite's fake-GPU arrays: shmrma refuses device memory."""
    fake = getattr(arrayimpl, "BaseFakeGPUArray", None)
    if fake is not None:
        arrayimpl.ArrayBackends[:] = [cls for cls in arrayimpl.ArrayBackends
                                      if not issubclass(cls, fake)]


# test_msgspec's buffers that pose as device memory; a test class or method named
# after one tests them
FAKE_GPU_BUFFERS = ("CAIBuf", "DLPackGPUBuf")
LEFT_OUT = "device memory: shmrma refuses it"


def _tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests(item)
        else:
            yield item


def _is_fake_gpu(test):
    name = "%s.%s" % (type(test).__name__, getattr(test, "_testMethodName", ""))
    return any(buffer in name for buffer in FAKE_GPU_BUFFERS)


def run_module(module):
    """The _Outcomes of a module's tests, its fake-GPU buffer tests skipped unrun."""
    result = _Outcomes()
    kept = unittest.TestSuite()
    for test in _tests(unittest.defaultTestLoader.loadTestsFromModule(module)):
        if _is_fake_gpu(test):
            result.addSkip(test, LEFT_OUT)
        else:
            kept.addTest(test)
    kept.run(result)
    return result


def worker(test_dir, modules, out_dir):
    sys.path[:0] = [test_dir]
    from shmrma import MPI
    import arrayimpl
    _host_backends_only(arrayimpl)
    report = {}
    for name in modules:
        try:
            module = __import__(name)
        except Exception as exc:  # noqa: BLE001 - an import failure fails the module
            report[name] = {"import_error": "%s: %s" % (type(exc).__name__, exc)}
            continue
        result = run_module(module)
        report[name] = {"tests": result.outcomes, "left_out": sorted(result.left_out)}
    path = os.path.join(out_dir, "rank%d.json" % MPI.COMM_WORLD.Get_rank())
    with open(path, "w") as out:
        json.dump(report, out)


# --- the driver ---------------------------------------------------------------------

def count_tests(test_dir, name):
    """How many test methods the module holds, counted on mpi4py itself (for a module
    that failed everywhere, even at import)."""
    code = ("import sys, unittest; sys.path[:0] = [%r]\n"
            "try:\n    m = __import__(%r)\n"
            "    print(unittest.defaultTestLoader.loadTestsFromModule(m).countTestCases())\n"
            "except Exception:\n    print(0)\n" % (test_dir, name))
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=test_dir, timeout=120)
        return int(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, subprocess.TimeoutExpired):
        return 0


def run(ranks, modules, source, timeout, flags=(), stderrs=None):
    """{(module, ranks): (passed, total, note)}: each module in a job of its own, so
    one that hangs or crashes costs only its own tests. ``flags`` go to shmrma-run
    (``--check``); ``stderrs``, a dict, gets each job's stderr."""
    test_dir = os.path.join(source, "test")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in ranks:
            for name in modules:
                out_dir = os.path.join(tmp, "%s-%d" % (name, n))
                os.makedirs(out_dir)
                launcher = [sys.executable, "-m", "shmrma.run", "-n", str(n), *flags,
                            "--timeout", str(timeout), os.path.abspath(__file__),
                            "--worker", "--source", source, "--out",
                            out_dir, "--modules", name]
                proc = subprocess.run(launcher, cwd=test_dir, capture_output=True,
                                      text=True, timeout=timeout + 60)
                if stderrs is not None:
                    stderrs[name, n] = proc.stderr
                reports = []
                for rank in range(n):
                    path = os.path.join(out_dir, "rank%d.json" % rank)
                    if os.path.exists(path):
                        with open(path) as src:
                            reports.append(json.load(src))
                results[name, n] = _merge(name, reports, n, proc, test_dir)
    return results


def _merge(name, reports, n, proc, test_dir):
    if len(reports) < n:
        note = "ended: %s" % (proc.stderr.strip().splitlines() or ["no report"])[-1]
        return 0, count_tests(test_dir, name), note
    parts = [report[name] for report in reports]
    for part in parts:
        if "import_error" in part:
            return 0, count_tests(test_dir, name), part["import_error"]
    tests = parts[0]["tests"]
    passed = sum(all(part["tests"].get(test, False) for part in parts) for test in tests)
    left_out = len(parts[0].get("left_out", ()))
    return passed, len(tests), "%d left out (%s)" % (left_out, LEFT_OUT) if left_out else ""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="1,2,3", help="rank counts (default 1,2,3)")
    parser.add_argument("--modules", default="test_win,test_rma,test_rma_nb",
                        help="the suite's modules, comma-separated")
    parser.add_argument("--source", help="mpi4py's sdist folder (default: fetched)")
    parser.add_argument("--timeout", type=int, default=300, help="per run, seconds")
    parser.add_argument("--json", help="write the counts here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    if args.worker:
        worker(os.path.join(args.source, "test"), modules, args.out)
        return 0
    source = os.path.abspath(args.source) if args.source else fetch()
    ranks = [int(r) for r in args.ranks.split(",")]
    results = run(ranks, modules, source, args.timeout)
    for (name, n), (passed, total, note) in sorted(results.items()):
        print("%-20s %2d ranks %4d/%-4d %s" % (name, n, passed, total, note), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"%s@%d" % key: value[:2] for key, value in results.items()}, out)
    return 0 if all(total for _, total, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
