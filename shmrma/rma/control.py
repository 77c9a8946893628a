"""The layout of a window's control segment, which every rank maps: one
cache-line-padded block per rank (so ranks never false-share a line), then
the post matrix. The C fast path receives these offsets once
(fastpath.py), so Python and C read the same words."""

CONTROL_HEADER = 64
RANK_CONTROL = 256         # one block per rank, four cache lines
OFF_LOCK_TICKET = 0        # next ticket of the reader-writer lock
OFF_LOCK_READ = 64         # wait cell: ticket allowed in as a reader
OFF_LOCK_WRITE = 72        # wait cell: ticket allowed in as a writer
OFF_ACCUMULATE_LOCK = 128  # wait cell: 0 free, 1 held
OFF_COMPLETES = 192        # wait cell: Completes received from origins, ever (mod 2**32)
OFF_EXPOSED = 200          # 1 between Post and Wait (R102: never exposed and locked)
OFF_BARRIER_ENTERED = 208  # wait cell: window barriers (Ibarrier) this rank entered, ever
POST_CELL = 8              # the post matrix: one wait cell per (origin, target) pair
HOLD_CELL = 4              # the hold matrix: what lock each rank holds on each target
                           # (HELD_*, written by the holder only; read by timeout reports)

COUNT_WRAP = 1 << 32       # the counts in these words (completes, posts, barriers) wrap


def count_reached(count, goal):
    """count >= goal for counts that wrap at 2**32 (never 2**31 apart); either may be a
    signed or unsigned reading of the word."""
    return (count - goal) % COUNT_WRAP < COUNT_WRAP // 2
