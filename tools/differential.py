"""Compare shmrma with an MPI library byte for byte on seeded collective cases.

    python tools/differential.py [--ranks 2,3,4] [--seeds 1-20] [--cases 300]
                                 [--program tests/programs/collective_bytes.py]

For every rank count and seed, runs the program with --dump under shmrma-run and
under mpiexec with mpi4py (shmrma-run --backend mpi), and prints the cases whose
buffers (or errors) differ, both backends' lines one under the other, then how
many cases were compared. Exit status 1 when any differs or a run fails.

The test suite does not need this script: tests/test_collective_bytes.py runs the
same program, one seed a rank count; this is the wider sweep, for changes to
buffer parsing, datatypes or collectives.
"""
import argparse
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def seeds(text):
    """"1-5,9" -> [1, 2, 3, 4, 5, 9]."""
    out = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        out += list(range(int(first), int(last or first) + 1))
    return out


def dump(backend, ranks, seed, cases, program):
    """The program's --dump lines on one backend, or None (and why) when it failed."""
    command = [sys.executable, "-m", "shmrma.run", "--backend", backend, "-n", str(ranks),
               "--timeout", "300", str(program), "--seed", str(seed), "--cases", str(cases),
               "--dump"]
    env = dict(os.environ, PYTHONUNBUFFERED="")
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400)
    if result.returncode != 0:
        return None, result.stderr[-2000:]
    return result.stdout.splitlines(), None


def compare(ranks, seed, cases, program):
    """(cases compared, differing line pairs); raises RuntimeError on a failed run."""
    lines = {}
    for backend in ("shm", "mpi"):
        lines[backend], error = dump(backend, ranks, seed, cases, program)
        if lines[backend] is None:
            raise RuntimeError("%s at %d ranks, seed %d: %s" % (backend, ranks, seed, error))
    pairs = list(zip(lines["shm"], lines["mpi"]))
    if len(lines["shm"]) != len(lines["mpi"]):
        pairs.append(("%d lines" % len(lines["shm"]), "%d lines" % len(lines["mpi"])))
    return len(lines["shm"]) // ranks, [pair for pair in pairs if pair[0] != pair[1]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,3,4")
    parser.add_argument("--seeds", type=seeds, default=seeds("1-5"))
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--program", type=pathlib.Path,
                        default=ROOT / "tests" / "programs" / "collective_bytes.py")
    args = parser.parse_args()
    compared, failed = 0, False
    for ranks in (int(n) for n in args.ranks.split(",")):
        for seed in args.seeds:
            try:
                count, differ = compare(ranks, seed, args.cases, args.program)
            except RuntimeError as exc:
                print("FAILED RUN %s" % exc)
                failed = True
                continue
            compared += count
            for ours, theirs in differ:
                print("shm: %s\nmpi: %s" % (ours, theirs))
            failed = failed or bool(differ)
    print("%d cases compared, %s" % (compared, "differences above" if failed else "all equal"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
