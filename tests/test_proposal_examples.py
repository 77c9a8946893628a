"""The proposals' own examples (the 2008 proposal's halo Examples A1-A3, the Ibarrier
amendment's loop) and a
counter-signalled pipeline, run as real jobs from scripts/proposal/.

Each program checks its results itself (against a serial numpy computation or the
serial value of every block) and exits non-zero on failure; here every rank must
finish and print its "ok" line.
"""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROPOSAL = ROOT / "scripts" / "proposal"

# program -> rank counts to run it at (the first is its own; halos: 4 = 2 x 2 torus
# with repeated neighbours, 3 = 3 x 1 torus where a rank is its own west/east,
# 9 = 3 x 3 torus where all four neighbours are distinct ranks)
RANKS = {
    "halo_a1_barrier.py": [4, 3, 9],    # Example A1: R152-R158, R165, R166, A14, A19
    "halo_a2_messages.py": [3, 4, 9],   # Example A2: R152-R158, R57, R162, A19
    "halo_a3_counters.py": [4, 3, 9],   # Example A3: R155-R157, R160, R163, A16-A19, A22, A23
    "ibarrier_loop.py": [3, 4],      # amendment: R166-R170, R172, A1, A3
    "counter_pipeline.py": [4, 3],   # R155-R158, R163, R165, A14-A16, A22, A23
}
CASES = [(program, ranks) for program in sorted(RANKS) for ranks in RANKS[program]]


def test_every_proposal_program_is_listed():
    # torus.py is the grid the halo examples share, not a program
    assert sorted(p.name for p in PROPOSAL.glob("*.py") if p.name != "torus.py") == sorted(RANKS)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("program,ranks", CASES,
                         ids=["%s-n%d" % case for case in CASES])
def test_proposal_program_runs(run_shmrma, program, ranks):
    result = run_shmrma(["-n", ranks, "--timeout", 60, PROPOSAL / program], timeout=80)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.endswith(" ok")]
    assert sorted(int(line.split()[1].rstrip(":")) for line in lines) == \
        list(range(ranks)), result.stdout
