"""The numbered examples of MPI-3.1 chapter 11 and the README programs, run as real jobs.

Each program asserts its rules itself and exits non-zero on failure; here every
rank must finish and report success.
"""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "scripts" / "examples"

# program -> ranks (a count the example suits; 2 where the example needs exactly 2)
RANKS = {
    "ex11_01_indirect_get_derived.py": 4,    # R3, R39, R60, R75
    "ex11_02_indirect_get.py": 4,            # R3, R75
    "ex11_03_accumulate_scatter.py": 4,      # R43, R135
    "ex11_04_start_put_complete.py": 2,      # R83-R85, R88, R89 (also Fig. 11.2/11.3, 11.7)
    "ex11_05_lock_put_unlock.py": 3,         # R96, R100, R101
    "ex11_06_owner_store_then_get.py": 2,    # R96, R99, R120, R121 (also 11.8)
    "ex11_07_unified_visibility.py": 2,      # R62, R111, R131, R134 (also 11.9, 11.10)
    "ex11_11_pscw_local_put.py": 2,          # R120, R121, R133, MPI-3.1 §11.7 rule 3
    "ex11_12_pscw_load_after_wait.py": 2,    # R96, R121
    "ex11_13_fence_halo.py": 4,              # R74-R78, R115 (also 11.14)
    "ex11_15_pscw_halo.py": 4,               # R81-R88, R69, R91
    "ex11_16_pscw_split_phase.py": 4,        # R81-R89, R115
    "ex11_17_double_buffer.py": 4,           # R114, R67, R115, R81-R88
    "ex11_18_counting_semaphore.py": 4,      # R107, R111, R135, R141
    "ex11_19_peterson.py": 2,                # R107, R135, R141
    "ex11_20_spinlock.py": 4,                # R50, R107, R137
    "ex11_21_shared_pingpong.py": 2,         # R7, R12, R131
    "ex11_22_overlap_requests.py": 4,        # R53-R58
    "ex11_23_linked_list.py": 4,             # R14-R20, R50, R141
    "ex11_fig05_pscw_groups.py": 4,          # R81, R88, R92, R69, R91 (Figure 11.5)
    "ex11_fig06_symmetric_pscw.py": 2,       # R85, R86, R88 (Figure 11.6 never deadlocks)
    "ex11_fig08_complete_does_not_wait.py": 2,  # R148, R85, R88 (Figure 11.8)
}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("ex11_*.py")) == sorted(RANKS)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("program", sorted(RANKS))
def test_example_runs(run_shmrma, program):
    ranks = RANKS[program]
    result = run_shmrma(["-n", ranks, "--timeout", 60, EXAMPLES / program], timeout=80)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(" ok") == ranks, result.stdout


@pytest.mark.timeout(60)
@pytest.mark.parametrize("program", ["rma_hello.py", "hello.py"])
def test_readme_programs_run(run_shmrma, program):
    result = run_shmrma(["-n", 4, ROOT / "scripts" / program], timeout=50)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) >= 4
