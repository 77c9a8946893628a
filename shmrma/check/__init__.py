"""``shmrma-run --check``: an on-the-fly data-race checker for RMA programs.

Two RMA accesses to the same window bytes, at least one writing, race unless MPI's
synchronization orders them (MPI-3.1 §11.7). The checker sees every RMA call and
every synchronization call of the job and decides that with vector clocks:

- clock.py: each rank's vector clock, and the job's checking segment where ranks
  publish the clock a synchronization carries (keyed releases for matched events,
  cells for "the last one" events), the code sites, and the count of races.
- threads.py: a clock for each thread of a rank that takes part, and the threading
  module's synchronization (start, join, locks and what is built on them) as the
  edges between them.
- accesses.py: per window, the log of RMA accesses per target rank in shared
  memory, the conflict rules, and the completion of pending accesses.
- report.py: what a race report says.
- windowcheck.py: the checker's view of one window on one rank.
- rmacalls.py, synccalls.py, messages.py, completion.py: the wrappers around the
  RMA calls, the synchronization calls, the messages and collectives, and the
  requests' completions; hooks.py installs them on Win, Comm and the requests
  when ``SHMRMA_CHECK=1`` (``shmrma-run --check`` sets it). Nothing of it runs, and
  the fast paths keep their cost, when checking is off.

- origin.py: the origin's buffers until the call completes there (R35).
- stores.py: the ranks' own stores to their window memory, found by comparing it
  with a shadow copy RMA keeps up to date (off with ``SHMRMA_CHECK=no-stores``).
- loads.py: the ranks' own loads of their window memory, the first of each page
  in an epoch, found by taking the pages away (off with ``SHMRMA_CHECK=no-loads``).

``SHMRMA_CHECK=no-local`` leaves both out. What each cannot see: docs/check.md,
"What it cannot see".
"""
RACE_STATUS = 66        # the exit status of a job that reported a race (ThreadSanitizer's)
